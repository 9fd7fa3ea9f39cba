#include "sim/frame_faults.hpp"

#include <pcap/pcap.h>

#include <algorithm>
#include <cerrno>
#include <fmt/format.h>

#include "net/crc32.hpp"
#include "sim/trace.hpp"

namespace rdmasim::sim {

namespace {

// Compiles `expr` for Ethernet frames, offline (no interface involved).
Result<std::unique_ptr<bpf_program>> compile_filter(const std::string& expr, std::size_t column) {
    pcap_t* dead = pcap_open_dead(DLT_EN10MB, 262144);
    if (!dead) return make_error(ENOMEM, "fault plan: cannot compile filters (pcap_open_dead)");
    auto prog = std::make_unique<bpf_program>();
    const int rc = pcap_compile(dead, prog.get(), expr.c_str(), 1, PCAP_NETMASK_UNKNOWN);
    const std::string why = rc == 0 ? "" : pcap_geterr(dead);
    pcap_close(dead);
    if (rc != 0)
        return make_error(EINVAL, fmt::format("fault plan, column {}: filter '{}': {}", column, expr, why));
    return prog;
}

// The transmit side's streams: the receive side's seed mixed with a
// constant, so that the two sides of a dir=both item draw independently.
constexpr std::uint64_t kTxStream = 0x6a09e667f3bcc909ull;

} // namespace

FrameFaults::FrameFaults(std::uint32_t device, Direction side, Trace* trace, Hook hook)
    : device_(device), side_(side), trace_(trace), hook_(std::move(hook)),
      injected_(static_cast<std::size_t>(FaultKind::verb_fail) + 1, 0) {}

FrameFaults::~FrameFaults() {
    for (Active& a : faults_)
        if (a.filter) pcap_freecode(a.filter.get());
}

Result<void> FrameFaults::add(const FaultPlan& plan, std::size_t position) {
    const FaultSpec& spec = plan.faults.at(position);
    Active a{spec, FaultRng(stream_seed(plan.seed, position, side_)), 0, nullptr};
    if (!spec.filter.empty()) {
        auto prog = compile_filter(spec.filter, spec.column);
        if (!prog) return prog.error();
        a.filter = std::move(prog.value());
    }
    faults_.push_back(std::move(a));
    return {};
}

std::uint64_t FrameFaults::stream_seed(std::uint64_t seed, std::size_t position, Direction side) noexcept {
    return fault_stream_seed(side == Direction::tx ? seed ^ kTxStream : seed, position);
}

FrameFaults::Owned FrameFaults::copy(const net::Frame& f) {
    Owned o;
    o.bytes.assign(f.data, f.data + f.len);
    o.frame = f;
    return o;
}

bool FrameFaults::fires(Active& a, const net::Frame& f) noexcept {
    if (a.filter) {
        pcap_pkthdr h{};
        h.caplen = f.payload().size();
        h.len = h.caplen;
        if (pcap_offline_filter(a.filter.get(), &h, f.data) == 0) return false;
    }
    const std::uint64_t n = ++a.candidates;
    const FaultTrigger& t = a.spec.when;
    if (t.p > 0) return a.rng.unit() < t.p;
    if (t.every) return n % t.every == 0;
    if (t.nth) return n == t.nth;
    return n == t.after + 1;
}

void FrameFaults::count_fired(const FaultSpec& spec) {
    ++injected_[static_cast<std::size_t>(spec.kind)];
    if (trace_)
        trace_->fault(device_, fault_kind_name(spec.kind), frames_,
                      !is_frame_fault(spec.kind) ? ""
                      : side_ == Direction::tx   ? "\"dir\":\"tx\""
                                                 : "\"dir\":\"rx\"");
}

void FrameFaults::corrupt_fcs(Owned& cur) {
    // A frame that carries its FCS gets a wrong one; one that does
    // not gets a wrong one appended: either way the MAC sees a bad CRC.
    net::Frame& f = cur.frame;
    if (f.fcs_len == 0 && !f.truncated()) {
        std::uint8_t fcs[4];
        net::write_fcs({cur.bytes.data(), f.len}, fcs);
        cur.bytes.insert(cur.bytes.end(), fcs, fcs + 4);
        f.len += 4;
        f.wire_len += 4;
        f.fcs_len = 4;
    }
    if (f.fcs_len == 4) cur.bytes[f.len - 1] ^= 0xff;
}

void FrameFaults::change(Active& a, Owned& cur, unsigned& copies) {
    net::Frame& f = cur.frame;
    switch (a.spec.kind) {
    case FaultKind::drop:
        f.lost = true; // counted by the owner: the port (rx), the FaultySink (tx)
        break;
    case FaultKind::corrupt_fcs:
        corrupt_fcs(cur);
        break;
    case FaultKind::flip: {
        const std::size_t n = f.payload().size();
        for (std::uint32_t i = 0; n != 0 && i < a.spec.bytes; ++i)
            cur.bytes[a.rng.below(n)] ^= static_cast<std::uint8_t>(1u << a.rng.below(8));
        break;
    }
    case FaultKind::truncate:
        // Cut on the wire: the tail, FCS included, never arrives.
        if (f.len > a.spec.len) {
            cur.bytes.resize(a.spec.len);
            f.len = f.wire_len = a.spec.len;
            f.fcs_len = 0;
        }
        break;
    case FaultKind::duplicate:
        ++copies;
        break;
    case FaultKind::reorder:
        cur.release_after = frames_ + 1 + a.rng.below(a.spec.window - 1);
        break;
    case FaultKind::delay:
        f.ts_ns += a.spec.delay_ns;
        cur.by_time = true;
        break;
    default:
        break;
    }
}

void FrameFaults::queue(Owned cur, unsigned copies) {
    for (unsigned i = 1; i < copies; ++i) {
        Owned dup = cur;
        dup.release_after = 0;
        dup.by_time = false;
        ready_.push_back(std::move(dup));
    }
    if (cur.release_after != 0 || cur.by_time) held_.push_back(std::move(cur));
    else ready_.push_back(std::move(cur));
}

bool FrameFaults::apply(const net::Frame& in) {
    Owned cur;
    bool owned = false; // the frame is copied when the first fault that changes it fires
    unsigned copies = 1;
    const auto own = [&] {
        if (owned) return;
        cur = copy(in);
        owned = true;
    };
    for (Active& a : faults_) {
        if (owned) cur.frame.data = cur.bytes.data();
        if (!fires(a, owned ? cur.frame : in)) continue;
        count_fired(a.spec);
        if (!is_frame_fault(a.spec.kind)) {
            const Effect e = hook_ ? hook_(a.spec) : Effect::none;
            if (e == Effect::none) continue;
            if (e == Effect::lose_alone) {
                cur = copy(in);
                cur.frame.lost = true;
                ready_.push_back(std::move(cur));
                return true;
            }
            own();
            cur.frame.lost = true;
            break; // nothing else happens to a frame that is gone
        }
        own();
        change(a, cur, copies);
        if (cur.frame.lost) break; // nothing else happens to a frame that is gone
    }
    if (!owned) return false;
    queue(std::move(cur), copies);
    return true;
}

void FrameFaults::release(Release which) {
    if (which != Release::reordered) // delayed frames go in timestamp order
        std::stable_sort(held_.begin(), held_.end(), [](const Owned& x, const Owned& y) {
            return x.by_time && y.by_time && x.frame.ts_ns < y.frame.ts_ns;
        });
    for (auto it = held_.begin(); it != held_.end();) {
        bool due = which == Release::all;
        if (which == Release::delayed) due = it->by_time && it->frame.ts_ns < last_ts_;
        if (which == Release::reordered) due = !it->by_time && it->release_after <= frames_;
        if (due) {
            ready_.push_back(std::move(*it));
            it = held_.erase(it);
        } else {
            ++it;
        }
    }
}

bool FrameFaults::offer(const net::Frame& f, bool lost) {
    ++frames_;
    last_ts_ = f.ts_ns;
    if (!held_.empty()) release(Release::delayed); // earlier in time than f
    if (lost) {
        Owned gone = copy(f);
        gone.frame.lost = true;
        ready_.push_back(std::move(gone));
    } else if (!apply(f)) {
        if (ready_.empty() && held_.empty()) return false; // untouched, nothing waiting
        ready_.push_back(copy(f));
    }
    if (!held_.empty()) release(Release::reordered); // their frames have passed
    return true;
}

bool FrameFaults::pop(net::Frame& out) noexcept {
    if (ready_.empty()) return false;
    current_ = std::move(ready_.front());
    ready_.pop_front();
    out = current_.frame;
    out.data = current_.bytes.data();
    return true;
}

void FrameFaults::flush() { release(Release::all); }

} // namespace rdmasim::sim
