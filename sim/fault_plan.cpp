#include "sim/fault_plan.hpp"

#include <infiniband/verbs.h>

#include "device/verb_faults.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <fmt/format.h>

namespace rdmasim::sim {

namespace {

struct KindInfo {
    FaultKind kind;
    std::string_view name;
    // Keys the kind accepts besides the trigger's (p, every, nth, after) and device.
    std::string_view keys;
    bool one_shot; // fires once, at `after` frames
};

constexpr std::string_view kFrameKeys = "dir, filter";
constexpr std::array kKinds{
    KindInfo{FaultKind::drop, "drop", kFrameKeys, false},
    KindInfo{FaultKind::corrupt_fcs, "corrupt-fcs", kFrameKeys, false},
    KindInfo{FaultKind::flip, "flip", "dir, filter, bytes", false},
    KindInfo{FaultKind::truncate, "truncate", "dir, filter, len", false},
    KindInfo{FaultKind::duplicate, "duplicate", kFrameKeys, false},
    KindInfo{FaultKind::reorder, "reorder", "dir, filter, window", false},
    KindInfo{FaultKind::delay, "delay", "dir, filter, us", false},
    KindInfo{FaultKind::out_of_buffer, "out-of-buffer", "wq, qp, frames", false},
    KindInfo{FaultKind::cqe_error, "cqe-error", "wq, qp, status", false},
    KindInfo{FaultKind::wq_fatal, "wq-fatal", "wq, qp", true},
    KindInfo{FaultKind::cq_overrun, "cq-overrun", "wq, qp", true},
    KindInfo{FaultKind::delay_drop_timeout, "delay-drop-timeout", "wq", true},
    KindInfo{FaultKind::port_down, "port-down", "frames", true},
    KindInfo{FaultKind::device_fatal, "device-fatal", "", true},
    KindInfo{FaultKind::verb_fail, "verb-fail", "errno", false},
};

const KindInfo& info(FaultKind kind) noexcept {
    for (const KindInfo& k : kKinds)
        if (k.kind == kind) return k;
    return kKinds[0];
}

std::string all_kinds() {
    std::string s;
    for (const KindInfo& k : kKinds) s += (s.empty() ? "" : ", ") + std::string(k.name);
    return s;
}

std::string valid_keys(const KindInfo& k) {
    std::string s = k.one_shot ? "after, device" : "p, every, nth, after, device";
    if (!k.keys.empty()) s += ", " + std::string(k.keys);
    if (k.kind != FaultKind::verb_fail) s += ", port";
    return s;
}

bool accepts(const KindInfo& k, std::string_view key) {
    static constexpr std::array trigger{"p", "every", "nth"};
    if (key == "after" || key == "device") return true;
    if (key == "port") return k.kind != FaultKind::verb_fail; // frames and the device's one port
    if (!k.one_shot && std::find(trigger.begin(), trigger.end(), key) != trigger.end()) return true;
    // k.keys is a ", "-separated list
    std::string_view rest = k.keys;
    while (!rest.empty()) {
        const auto comma = rest.find(", ");
        if (rest.substr(0, comma) == key) return true;
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 2);
    }
    return false;
}

struct ErrnoName {
    std::string_view name;
    int value;
};
constexpr std::array kErrnos{
    ErrnoName{"EPERM", EPERM},     ErrnoName{"ENOENT", ENOENT},   ErrnoName{"EIO", EIO},
    ErrnoName{"EAGAIN", EAGAIN},   ErrnoName{"ENOMEM", ENOMEM},   ErrnoName{"EACCES", EACCES},
    ErrnoName{"EFAULT", EFAULT},   ErrnoName{"EBUSY", EBUSY},     ErrnoName{"ENODEV", ENODEV},
    ErrnoName{"EINVAL", EINVAL},   ErrnoName{"ENOSPC", ENOSPC},   ErrnoName{"ENOSYS", ENOSYS},
    ErrnoName{"EOPNOTSUPP", EOPNOTSUPP}, ErrnoName{"ETIMEDOUT", ETIMEDOUT},
};

struct StatusName {
    std::string_view name;
    int value;
};
// ibv_wc_status names, also with their IBV_WC_ prefix.
constexpr std::array kStatuses{
    StatusName{"LOC_LEN_ERR", IBV_WC_LOC_LEN_ERR},
    StatusName{"LOC_PROT_ERR", IBV_WC_LOC_PROT_ERR},
    StatusName{"GENERAL_ERR", IBV_WC_GENERAL_ERR},
};

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n')) s.remove_suffix(1);
    return s;
}

template <class T> std::optional<T> parse_uint(std::string_view v, T lo, T hi) {
    T out{};
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (ec != std::errc{} || p != v.data() + v.size() || out < lo || out > hi) return std::nullopt;
    return out;
}

// The parser keeps the whole text so that every error can say where it is.
class Parser {
public:
    explicit Parser(std::string_view text) : text_(text) {}

    Result<FaultPlan> run() {
        FaultPlan plan;
        bool seeded = false;
        std::size_t pos = 0;
        while (pos <= text_.size()) {
            const std::size_t end = std::min(text_.find(';', pos), text_.size());
            const std::string_view raw = text_.substr(pos, end - pos);
            const std::string_view item = trim(raw);
            const std::size_t at = pos + static_cast<std::size_t>(item.data() - raw.data());
            pos = end + 1;
            if (item.empty()) continue;
            if (item.starts_with("seed=") || item.starts_with("seed ")) {
                const auto eq = item.find('=');
                auto n = parse_uint<std::uint64_t>(trim(item.substr(eq + 1)), 0, UINT64_MAX);
                if (eq == std::string_view::npos || !n)
                    return fail(at, item, "seed must be a number like seed=7");
                if (seeded) return fail(at, item, "a second seed");
                plan.seed = *n;
                seeded = true;
                continue;
            }
            auto spec = parse_item(item, at);
            if (!spec) return spec.error();
            plan.faults.push_back(std::move(spec.value()));
        }
        return plan;
    }

private:
    Error fail(std::size_t at, std::string_view near, std::string_view why) const {
        return make_error(EINVAL, fmt::format("fault plan, column {} ('{}'): {}", at + 1, near, why));
    }

    Result<FaultSpec> parse_item(std::string_view item, std::size_t at) {
        const auto colon = item.find(':');
        const std::string_view name = trim(item.substr(0, colon));
        const KindInfo* kind = nullptr;
        for (const KindInfo& k : kKinds)
            if (k.name == name) kind = &k;
        if (!kind)
            return fail(at, name, fmt::format("unknown fault kind; valid kinds: {}", all_kinds()));
        FaultSpec spec;
        spec.kind = kind->kind;
        spec.column = at + 1;
        spec.dir = is_frame_fault(kind->kind) ? Direction::rx : Direction::both;
        int triggers = 0;
        std::size_t pos = colon == std::string_view::npos ? item.size() : colon + 1;
        bool first = true;
        while (pos < item.size()) {
            const std::size_t end = std::min(item.find(',', pos), item.size());
            const std::string_view raw = item.substr(pos, end - pos);
            const std::string_view param = trim(raw);
            const std::size_t p_at = at + pos + static_cast<std::size_t>(param.data() - raw.data());
            pos = end + 1;
            const auto eq = param.find('=');
            if (eq == std::string_view::npos) {
                // verb-fail names its verb first, bare: verb-fail:create_wq,nth=3
                if (kind->kind == FaultKind::verb_fail && first) {
                    const auto& verbs = failable_verbs();
                    if (std::find(verbs.begin(), verbs.end(), param) == verbs.end()) {
                        std::string list;
                        for (auto v : verbs) list += (list.empty() ? "" : ", ") + std::string(v);
                        return fail(p_at, param, fmt::format("not a verb that verb-fail knows; valid: {}", list));
                    }
                    spec.verb = std::string(param);
                    first = false;
                    continue;
                }
                return fail(p_at, param, "expected key=value");
            }
            first = false;
            const std::string_view key = trim(param.substr(0, eq));
            const std::string_view value = trim(param.substr(eq + 1));
            if (!accepts(*kind, key))
                return fail(p_at, key, fmt::format("unknown key for {}; valid keys: {}", kind->name,
                                                   valid_keys(*kind)));
            if (auto r = set(spec, key, value, triggers); !r) return fail(p_at, param, r.error().message);
        }
        if (kind->kind == FaultKind::verb_fail && spec.verb.empty())
            return fail(at, item, "verb-fail names a verb first, like verb-fail:create_wq,nth=3");
        if (kind->kind == FaultKind::verb_fail && spec.err == 0)
            return fail(at, item, "verb-fail needs errno=NAME, like errno=ENOMEM");
        if (kind->kind == FaultKind::wq_fatal && !spec.wq && !spec.qp)
            return fail(at, item, "wq-fatal needs wq=N or qp=QPN");
        if (spec.wq && spec.qp) return fail(at, item, "give wq= or qp=, not both");
        if (kind->kind == FaultKind::cqe_error && spec.status == 0)
            return fail(at, item, "cqe-error needs status=LOC_LEN_ERR, LOC_PROT_ERR or GENERAL_ERR");
        if (triggers == 0 && !kind->one_shot)
            return fail(at, item, "no trigger: give one of p=, every=, nth= or after=");
        if (triggers > 1) return fail(at, item, "more than one trigger: give one of p=, every=, nth=, after=");
        return spec;
    }

    // One key=value on `spec`; the error's message is the reason only.
    static Result<void> set(FaultSpec& s, std::string_view key, std::string_view v, int& triggers) {
        if (key == "p" || key == "every" || key == "nth" || key == "after") {
            ++triggers;
            return set_trigger(s.when, key, v);
        }
        if (key == "device" || key == "wq" || key == "qp" || key == "dir" || key == "port")
            return set_target(s, key, v);
        if (key == "status") return set_status(s, v);
        if (key == "errno") return set_errno(s, v);
        return set_shape(s, key, v);
    }

    static Error reason(std::string_view what) { return make_error(EINVAL, std::string(what)); }

    // p=, every=, nth=, after=: when the fault fires.
    static Result<void> set_trigger(FaultTrigger& when, std::string_view key, std::string_view v) {
        if (key == "p") {
            std::string text(v);
            char* end = nullptr;
            const double p = std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !(p > 0) || p > 1)
                return reason("p must be a probability in (0, 1], like p=0.01");
            when.p = p;
            return {};
        }
        auto n = parse_uint<std::uint64_t>(v, key == "after" ? 0 : 1, UINT64_MAX);
        if (!n) return reason(fmt::format("{} must be a whole number{}", key, key == "after" ? "" : " from 1"));
        (key == "every" ? when.every : key == "nth" ? when.nth : when.after) = *n;
        return {};
    }

    // device=, wq=, qp=, dir=, port=: where it fires.
    static Result<void> set_target(FaultSpec& s, std::string_view key, std::string_view v) {
        if (key == "dir") {
            if (v == "rx") s.dir = Direction::rx;
            else if (v == "tx") s.dir = Direction::tx;
            else if (v == "both") s.dir = Direction::both;
            else return reason("dir must be rx, tx or both");
            return {};
        }
        if (key == "port") {
            if (v != "1") return reason("port must be 1: the device has one port");
            return {};
        }
        auto n = parse_uint<std::uint32_t>(v, 0, key == "device" ? 15 : UINT32_MAX);
        if (!n) return reason(fmt::format("{} must be a number{}", key, key == "device" ? " 0..15" : ""));
        (key == "device" ? s.device : key == "wq" ? s.wq : s.qp) = *n;
        return {};
    }

    // filter=, bytes=, len=, window=, us=, frames=: what it does to a frame.
    static Result<void> set_shape(FaultSpec& s, std::string_view key, std::string_view v) {
        if (key == "filter") {
            if (v.empty()) return reason("filter must be a BPF expression");
            s.filter = std::string(v);
        } else if (key == "bytes") {
            auto n = parse_uint<std::uint32_t>(v, 1, 64);
            if (!n) return reason("bytes must be 1..64");
            s.bytes = *n;
        } else if (key == "len") {
            auto n = parse_uint<std::uint32_t>(v, 0, 65535);
            if (!n) return reason("len must be 0..65535");
            s.len = *n;
        } else if (key == "window") {
            auto n = parse_uint<std::uint32_t>(v, 2, 256);
            if (!n) return reason("window must be 2..256");
            s.window = *n;
        } else if (key == "us") {
            auto n = parse_uint<std::uint64_t>(v, 1, 60'000'000);
            if (!n) return reason("us must be 1..60000000 microseconds");
            s.delay_ns = *n * 1000;
        } else if (key == "frames") {
            auto n = parse_uint<std::uint32_t>(v, 1, 1u << 30);
            if (!n) return reason("frames must be a number from 1");
            s.frames = *n;
        }
        return {};
    }

    // status=: the error completion of cqe-error.
    static Result<void> set_status(FaultSpec& s, std::string_view v) {
        const std::string_view name = v.starts_with("IBV_WC_") ? v.substr(7) : v;
        for (const StatusName& st : kStatuses)
            if (st.name == name) s.status = st.value;
        if (s.status == 0)
            return reason("status must be LOC_LEN_ERR, LOC_PROT_ERR or GENERAL_ERR "
                          "(with or without IBV_WC_)");
        return {};
    }

    // errno=: a name or a number, what verb-fail's call returns.
    static Result<void> set_errno(FaultSpec& s, std::string_view v) {
        for (const ErrnoName& e : kErrnos)
            if (e.name == v) s.err = e.value;
        if (s.err != 0) return {};
        auto n = parse_uint<int>(v, 1, 4095);
        if (!n) {
            std::string list;
            for (const ErrnoName& e : kErrnos) list += (list.empty() ? "" : ", ") + std::string(e.name);
            return reason(fmt::format("errno must be a number or one of {}", list));
        }
        s.err = *n;
        return {};
    }

    std::string_view text_;
};

} // namespace

std::string_view fault_kind_name(FaultKind kind) noexcept { return info(kind).name; }

bool is_frame_fault(FaultKind kind) noexcept {
    return kind <= FaultKind::delay;
}

const std::vector<std::string_view>& failable_verbs() {
    static const std::vector<std::string_view> v(device::kVerbNames.begin(), device::kVerbNames.end());
    return v;
}

Result<FaultPlan> FaultPlan::parse(std::string_view text) { return Parser(text).run(); }

} // namespace rdmasim::sim
