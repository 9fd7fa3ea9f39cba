#include "sim/config.hpp"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <fmt/format.h>
#include <toml++/toml.h>

namespace rdmasim::sim {

namespace {

Error bad(std::string_view key, std::string_view value, std::string_view expected) {
    return make_error(EINVAL, fmt::format("configuration: {} = '{}': expected {}", key, value, expected));
}

template <class T>
std::optional<T> parse_uint(std::string_view v, T lo, T hi) {
    T out{};
    const auto* end = v.data() + v.size();
    auto [p, ec] = std::from_chars(v.data(), end, out);
    if (ec != std::errc{} || p != end || out < lo || out > hi) return std::nullopt;
    return out;
}

std::optional<bool> parse_bool(std::string_view v) {
    if (v == "1" || v == "true" || v == "on" || v == "yes") return true;
    if (v == "0" || v == "false" || v == "off" || v == "no") return false;
    return std::nullopt;
}

// "02:00:00:00:00:01": six two-digit hex bytes separated by colons.
std::optional<net::MacAddress> parse_mac(std::string_view v) {
    net::MacAddress mac{};
    if (v.size() != 17) return std::nullopt;
    for (std::size_t i = 0; i < mac.size(); ++i) {
        const std::string_view byte = v.substr(i * 3, 2);
        if (i + 1 < mac.size() && v[i * 3 + 2] != ':') return std::nullopt;
        if (!std::isxdigit(static_cast<unsigned char>(byte[0])) ||
            !std::isxdigit(static_cast<unsigned char>(byte[1])))
            return std::nullopt;
        std::from_chars(byte.data(), byte.data() + 2, mac[i], 16);
    }
    return mac;
}

// Capability switches by name.
bool* cap_switch(device::Capabilities& c, std::string_view key) {
    if (key == "caps.cvlan_stripping") return &c.cvlan_stripping;
    if (key == "caps.scatter_fcs") return &c.scatter_fcs;
    if (key == "caps.ip_csum") return &c.ip_csum;
    if (key == "caps.delay_drop") return &c.delay_drop;
    if (key == "caps.pci_write_end_padding") return &c.pci_write_end_padding;
    if (key == "caps.delay_drop_needs_rawio") return &c.delay_drop_needs_rawio;
    if (key == "caps.delay_drop_rearm") return &c.delay_drop_rearm;
    if (key == "caps.deliver_bad_fcs") return &c.deliver_bad_fcs;
    return nullptr;
}

} // namespace

std::string environment_name(std::string_view key) {
    std::string s = "RDMASIM_";
    for (char ch : key)
        s += ch == '.' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return s;
}

const std::vector<std::pair<std::string_view, std::string_view>>& Config::keys() {
    static const std::vector<std::pair<std::string_view, std::string_view>> k{
        {"devices", "number of emulated devices, 1..16 (rdmasim0, rdmasim1, ...)"},
        {"pcap", "capture file replayed into rdmasim0's port"},
        {"pcap.N", "capture file replayed into device N's port"},
        {"engine", "inline (deterministic, virtual time) or thread (real time)"},
        {"start", "when a replay starts: first-flow, now, a delay like 250ms, or manual (Engine::begin)"},
        {"speed", "topspeed, original, or a multiple of capture time like 2x"},
        {"burst", "frames per engine step, 1..4096"},
        {"source_fcs", "auto, 0 or 4: FCS bytes the capture's frames carry"},
        {"synth_dst_mac", "destination MAC of the Ethernet header synthesized for captures without one (default: the device's MAC)"},
        {"synth_src_mac", "source MAC of that header, unicast (default 02:00:00:00:00:01)"},
        {"idle_tick_us", "inline engine: virtual microseconds per idle poll, 1..1000000"},
        {"log_level", "trace, debug, info, warn, error or off"},
        {"caps.cvlan_stripping", "on/off"},
        {"caps.scatter_fcs", "on/off"},
        {"caps.ip_csum", "on/off"},
        {"caps.delay_drop", "on/off"},
        {"caps.pci_write_end_padding", "on/off"},
        {"caps.delay_drop_needs_rawio", "on/off: strict profile, DELAY_DROP needs CAP_SYS_RAWIO"},
        {"caps.delay_drop_rearm", "on/off: re-arm delay drop after a timeout (the driver's job)"},
        {"caps.deliver_bad_fcs", "on/off: deliver frames whose carried FCS is bad (counted in fcs_bad) instead of dropping them as fcs_errors"},
        {"caps.delay_drop_timeout_us", "100..100000 in steps of 100"},
        {"caps.pad_align", "64 or 128: end padding cache line"},
        {"caps.max_wr", "largest WQ, 1..1048576"},
        {"caps.max_sge", "largest SGE list, 1..64"},
    };
    return k;
}

Result<void> Config::set(std::string_view key, std::string_view v) {
    if (key == "devices") {
        auto n = parse_uint<std::uint32_t>(v, 1, 16);
        if (!n) return bad(key, v, "a number from 1 to 16");
        devices = *n;
    } else if (key == "pcap" || key.starts_with("pcap.")) {
        std::uint32_t idx = 0;
        if (key != "pcap") {
            auto n = parse_uint<std::uint32_t>(key.substr(5), 0, 15);
            if (!n) return bad(key, v, "pcap.N with N a device index 0..15");
            idx = *n;
        }
        if (pcap.size() <= idx) pcap.resize(idx + 1);
        pcap[idx] = std::string(v);
    } else if (key == "engine") {
        if (v == "inline") engine = EngineKind::inline_;
        else if (v == "thread") engine = EngineKind::thread;
        else return bad(key, v, "inline or thread");
    } else if (key == "start") {
        if (v == "first-flow") start = StartTrigger::first_flow;
        else if (v == "now") start = StartTrigger::now;
        else if (v == "manual") start = StartTrigger::manual;
        else if (v.ends_with("ms")) {
            auto n = parse_uint<std::uint64_t>(v.substr(0, v.size() - 2), 0, 3'600'000);
            if (!n) return bad(key, v, "first-flow, now, manual, or a delay in ms like 250ms");
            start = StartTrigger::delay;
            start_delay_ns = *n * 1'000'000;
        } else return bad(key, v, "first-flow, now, manual, or a delay in ms like 250ms");
    } else if (key == "speed") {
        if (v == "topspeed") speed = 0;
        else if (v == "original") speed = 1;
        else {
            double x = 0;
            std::string s(v);
            if (s.empty() || s.back() != 'x') return bad(key, v, "topspeed, original or a multiple like 2x");
            char* end = nullptr;
            x = std::strtod(s.c_str(), &end);
            if (end != s.c_str() + s.size() - 1 || !(x > 0) || x > 1e6)
                return bad(key, v, "topspeed, original or a multiple like 2x");
            speed = x;
        }
    } else if (key == "burst") {
        auto n = parse_uint<std::uint32_t>(v, 1, 4096);
        if (!n) return bad(key, v, "a number from 1 to 4096");
        burst = *n;
    } else if (key == "source_fcs") {
        if (v == "auto") source_fcs.reset();
        else if (v == "0") source_fcs = 0;
        else if (v == "4") source_fcs = 4;
        else return bad(key, v, "auto, 0 or 4");
    } else if (key == "synth_dst_mac") {
        auto mac = parse_mac(v);
        if (!mac) return bad(key, v, "a MAC address like 02:00:00:00:00:02");
        synth_dst_mac = *mac;
    } else if (key == "synth_src_mac") {
        auto mac = parse_mac(v);
        if (!mac || ((*mac)[0] & 1) != 0)
            return bad(key, v, "a unicast MAC address like 02:00:00:00:00:01");
        synth_src_mac = *mac;
    } else if (key == "idle_tick_us") {
        auto n = parse_uint<std::uint64_t>(v, 1, 1'000'000);
        if (!n) return bad(key, v, "a number of microseconds from 1 to 1000000");
        idle_tick_ns = *n * 1000;
    } else if (key == "log_level") {
        if (v != "trace" && v != "debug" && v != "info" && v != "warn" && v != "error" && v != "off")
            return bad(key, v, "trace, debug, info, warn, error or off");
        log_level = std::string(v);
    } else if (bool* sw = cap_switch(caps, key)) {
        auto b = parse_bool(v);
        if (!b) return bad(key, v, "on or off");
        *sw = *b;
    } else if (key == "caps.delay_drop_timeout_us") {
        auto n = parse_uint<std::uint64_t>(v, 100, 100'000);
        if (!n || *n % 100 != 0) return bad(key, v, "100..100000 microseconds in steps of 100");
        caps.delay_drop_timeout_ns = *n * 1000;
    } else if (key == "caps.pad_align") {
        if (v == "64") caps.pad_align = 64;
        else if (v == "128") caps.pad_align = 128;
        else return bad(key, v, "64 or 128");
    } else if (key == "caps.max_wr") {
        auto n = parse_uint<std::uint32_t>(v, 1, 1u << 20);
        if (!n) return bad(key, v, "a number from 1 to 1048576");
        caps.max_wr = *n;
    } else if (key == "caps.max_sge") {
        auto n = parse_uint<std::uint32_t>(v, 1, 64);
        if (!n) return bad(key, v, "a number from 1 to 64");
        caps.max_sge = *n;
    } else {
        return make_error(EINVAL, fmt::format("configuration: unknown key '{}' (value '{}')", key, v));
    }
    return {};
}

Result<void> Config::apply_environment() {
    if (const char* file = std::getenv("RDMASIM_CONFIG"); file && *file) {
        if (auto r = apply_toml_file(file); !r) return r;
    }
    for (const auto& [key, _] : keys()) {
        if (key == "pcap.N") {
            for (int i = 0; i < 16; ++i) {
                const std::string k = fmt::format("pcap.{}", i);
                if (const char* v = std::getenv(environment_name(k).c_str()))
                    if (auto r = set(k, v); !r)
                        return make_error(EINVAL, fmt::format("{} (from {})", r.error().message,
                                                              environment_name(k)));
            }
            continue;
        }
        if (const char* v = std::getenv(environment_name(key).c_str()))
            if (auto r = set(key, v); !r)
                return make_error(EINVAL, fmt::format("{} (from {})", r.error().message, environment_name(key)));
    }
    return {};
}

Result<void> Config::apply_toml_file(const std::string& path) {
    toml::table parsed;
    try { // Debian's toml++ reports parse errors as exceptions
        parsed = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
        return make_error(EINVAL, fmt::format("configuration file {}:{}:{}: {}", path,
                                              e.source().begin.line, e.source().begin.column,
                                              e.description()));
    }
    // Flatten one level of tables ("caps.ip_csum") and turn scalars into text.
    Result<void> result;
    auto visit = [&](const std::string& key, const toml::node& node) -> bool {
        std::string text;
        if (auto s = node.value<std::string>()) text = *s;
        else if (auto b = node.value_exact<bool>()) text = *b ? "on" : "off";
        else if (auto i = node.value_exact<int64_t>()) text = std::to_string(*i);
        else if (auto d = node.value_exact<double>()) text = fmt::format("{}", *d);
        else {
            result = make_error(EINVAL, fmt::format("configuration file {}: {} must be a string, number or boolean", path, key));
            return false;
        }
        if (auto r = set(key, text); !r) {
            result = make_error(EINVAL, fmt::format("{} (in {})", r.error().message, path));
            return false;
        }
        return true;
    };
    for (auto&& [k, node] : parsed) {
        if (const toml::table* t = node.as_table()) {
            for (auto&& [k2, n2] : *t)
                if (!visit(std::string(k.str()) + "." + std::string(k2.str()), n2)) return result;
        } else if (!visit(std::string(k.str()), node)) {
            return result;
        }
    }
    return result;
}

Result<void> Config::validate() const {
    for (std::size_t i = 0; i < pcap.size(); ++i)
        if (!pcap[i].empty() && i >= devices)
            return make_error(EINVAL, fmt::format("configuration: pcap.{} = '{}' names device {} but devices = {}",
                                                  i, pcap[i], i, devices));
    return {};
}

} // namespace rdmasim::sim
