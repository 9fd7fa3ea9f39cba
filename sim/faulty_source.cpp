#include "sim/faulty_source.hpp"

#include <pcap/pcap.h>

#include <algorithm>
#include <cerrno>
#include <fmt/format.h>

#include "device/device.hpp"
#include "net/crc32.hpp"
#include "sim/trace.hpp"

namespace rdmasim::sim {

std::uint64_t fault_stream_seed(std::uint64_t seed, std::size_t index) noexcept {
    FaultRng mix(seed ^ (0xd1b54a32d192ed03ull * (index + 1)));
    return mix.next();
}

std::uint64_t FaultRng::next() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

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

} // namespace

FaultySource::FaultySource(std::unique_ptr<net::FrameSource> inner, std::uint64_t)
    : inner_(std::move(inner)), injected_(static_cast<std::size_t>(FaultKind::verb_fail) + 1, 0) {}

FaultySource::~FaultySource() {
    for (Active& a : faults_)
        if (a.filter) pcap_freecode(a.filter.get());
}

namespace {

bool injected_here(const FaultSpec& f, std::uint32_t index) {
    if (f.device && *f.device != index) return false;
    if (is_frame_fault(f.kind)) return f.dir != Direction::tx;
    return f.kind == FaultKind::wq_fatal || f.kind == FaultKind::port_down ||
           f.kind == FaultKind::cq_overrun || f.kind == FaultKind::device_fatal;
}

} // namespace

bool FaultySource::wanted(const FaultPlan& plan, std::uint32_t index) {
    return std::any_of(plan.faults.begin(), plan.faults.end(),
                       [index](const FaultSpec& f) { return injected_here(f, index); });
}

Result<std::unique_ptr<FaultySource>> FaultySource::wrap(std::unique_ptr<net::FrameSource> inner,
                                                         const FaultPlan& plan, std::uint32_t index,
                                                         device::Device* dev, Trace* trace) {
    std::unique_ptr<FaultySource> s(new FaultySource(std::move(inner), plan.seed));
    s->dev_ = dev;
    s->trace_ = trace;
    s->index_ = index;
    for (std::size_t i = 0; i < plan.faults.size(); ++i) {
        const FaultSpec& spec = plan.faults[i];
        if (!injected_here(spec, index)) continue;
        if (!is_frame_fault(spec.kind) && dev == nullptr)
            return make_error(EINVAL, fmt::format("fault plan, column {}: {} needs a device",
                                                  spec.column, fault_kind_name(spec.kind)));
        Active a{spec, FaultRng(fault_stream_seed(plan.seed, i)), 0, nullptr};
        if (!spec.filter.empty()) {
            auto prog = compile_filter(spec.filter, spec.column);
            if (!prog) return prog.error();
            a.filter = std::move(prog.value());
        }
        s->faults_.push_back(std::move(a));
    }
    return s;
}

bool FaultySource::exhausted() const noexcept {
    return ready_.empty() && held_.empty() && inner_->exhausted();
}

std::string FaultySource::describe() const {
    return inner_->describe() + fmt::format(" with {} frame fault{}", faults_.size(),
                                            faults_.size() == 1 ? "" : "s");
}

const net::SourceCounters& FaultySource::counters() const noexcept { return inner_->counters(); }

FaultySource::Owned FaultySource::copy(const net::Frame& f) {
    Owned o;
    o.bytes.assign(f.data, f.data + f.len);
    o.frame = f;
    return o;
}

bool FaultySource::fires(Active& a, const net::Frame& f) noexcept {
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

bool FaultySource::apply(const net::Frame& in) {
    Owned cur;
    bool owned = false; // the frame is copied when the first fault fires
    unsigned copies = 1;
    if (dead_ || down_left_ != 0) { // a dead device or a port down: the frame never arrives
        cur = copy(in);
        cur.frame.lost = true;
        if (!dead_ && --down_left_ == 0) device::set_port_up(*dev_, true);
        ready_.push_back(std::move(cur));
        return true;
    }
    for (Active& a : faults_) {
        if (owned) cur.frame.data = cur.bytes.data();
        if (!fires(a, owned ? cur.frame : in)) continue;
        ++injected_[static_cast<std::size_t>(a.spec.kind)];
        if (trace_) trace_->fault(index_, fault_kind_name(a.spec.kind), inner_frames_);
        if (a.spec.kind == FaultKind::wq_fatal) { // before this frame enters the port
            (void)device::inject_wq_fatal(*dev_, *a.spec.wq);
            continue;
        }
        if (a.spec.kind == FaultKind::cq_overrun) { // raised at the end of this burst
            (void)device::inject_cq_overrun(*dev_, a.spec.wq);
            continue;
        }
        if (a.spec.kind == FaultKind::device_fatal) { // this frame and every later one are lost
            device::inject_device_fatal(*dev_);
            dead_ = true;
            cur = copy(in);
            cur.frame.lost = true;
            ready_.push_back(std::move(cur));
            return true;
        }
        if (!owned) {
            cur = copy(in);
            owned = true;
        }
        net::Frame& f = cur.frame;
        switch (a.spec.kind) {
        case FaultKind::drop:
            f.lost = true; // the port counts it, as fault_drops
            break;
        case FaultKind::corrupt_fcs: {
            // A frame that carries its FCS gets a wrong one; one that does
            // not gets a wrong one appended: either way the MAC sees a bad CRC.
            if (f.fcs_len == 0 && !f.truncated()) {
                std::uint8_t fcs[4];
                net::write_fcs({cur.bytes.data(), f.len}, fcs);
                cur.bytes.insert(cur.bytes.end(), fcs, fcs + 4);
                f.len += 4;
                f.wire_len += 4;
                f.fcs_len = 4;
            }
            if (f.fcs_len == 4) cur.bytes[f.len - 1] ^= 0xff;
            break;
        }
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
            cur.release_after = inner_frames_ + 1 + a.rng.below(a.spec.window - 1);
            break;
        case FaultKind::delay:
            f.ts_ns += a.spec.delay_ns;
            cur.by_time = true;
            break;
        case FaultKind::port_down: // this frame is the first one missed
            device::set_port_up(*dev_, false);
            f.lost = true;
            down_left_ = a.spec.frames - 1;
            if (down_left_ == 0) device::set_port_up(*dev_, true);
            break;
        default:
            break;
        }
        if (f.lost) break; // nothing else happens to a frame that is gone
    }
    if (!owned) return false;
    for (unsigned i = 1; i < copies; ++i) {
        Owned dup = cur;
        dup.release_after = 0;
        dup.by_time = false;
        ready_.push_back(std::move(dup));
    }
    if (cur.release_after != 0 || cur.by_time) held_.push_back(std::move(cur));
    else ready_.push_back(std::move(cur));
    return true;
}

void FaultySource::release(Release which) {
    if (which != Release::reordered) // delayed frames go in timestamp order
        std::stable_sort(held_.begin(), held_.end(), [](const Owned& x, const Owned& y) {
            return x.by_time && y.by_time && x.frame.ts_ns < y.frame.ts_ns;
        });
    for (auto it = held_.begin(); it != held_.end();) {
        bool due = which == Release::all;
        if (which == Release::delayed) due = it->by_time && it->frame.ts_ns < last_ts_;
        if (which == Release::reordered) due = !it->by_time && it->release_after <= inner_frames_;
        if (due) {
            ready_.push_back(std::move(*it));
            it = held_.erase(it);
        } else {
            ++it;
        }
    }
}

bool FaultySource::next(net::Frame& out) noexcept {
    try {
        for (;;) {
            if (!ready_.empty()) {
                current_ = std::move(ready_.front());
                ready_.pop_front();
                out = current_.frame;
                out.data = current_.bytes.data();
                return true;
            }
            net::Frame f;
            if (!inner_->next(f)) {
                if (held_.empty() || !inner_->exhausted()) {
                    if (down_left_ != 0 && inner_->exhausted()) { // nothing more to miss
                        down_left_ = 0;
                        if (!dead_) device::set_port_up(*dev_, true);
                    }
                    return false;
                }
                release(Release::all);
                continue;
            }
            ++inner_frames_;
            last_ts_ = f.ts_ns;
            if (!held_.empty()) release(Release::delayed); // earlier in time than f
            if (!apply(f)) {
                if (ready_.empty() && held_.empty()) {
                    out = f; // untouched, nothing waiting: handed over as borrowed
                    return true;
                }
                ready_.push_back(copy(f));
            }
            if (!held_.empty()) release(Release::reordered); // their frames have passed
        }
    } catch (const std::bad_alloc&) {
        return false; // copies could not be made: the frame is not handed over
    }
}

} // namespace rdmasim::sim
