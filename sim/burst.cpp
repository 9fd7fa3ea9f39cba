#include "sim/burst.hpp"

#include <algorithm>
#include <mutex>
#include <new>

#include "device/device.hpp"
#include "sim/fault_stage.hpp"

namespace rdmasim::sim {

bool pull_through(net::FrameSource& source, FaultStage& faults, net::Frame& out) noexcept {
    try {
        for (;;) {
            if (faults.pop(out)) return true;
            net::Frame f;
            if (!source.next(f)) {
                if (faults.source_dry(source.exhausted())) continue; // held frames came due
                return false;
            }
            if (!faults.offer(f)) {
                out = f; // untouched, nothing waiting: handed over as borrowed
                return true;
            }
        }
    } catch (const std::bad_alloc&) {
        return false; // copies could not be made: the frame is not handed over
    }
}

namespace {

// Up to out.size() frames from the source, or one through the fault stage.
std::uint32_t pull(net::FrameSource& source, FaultStage* faults, std::span<net::Frame> out) noexcept {
    if (faults == nullptr) return source.next_burst(out);
    return !out.empty() && pull_through(source, *faults, out[0]) ? 1 : 0;
}

} // namespace

BurstResult run_burst(device::Device& dev, net::FrameSource& source, FrameBatch& pending,
                      std::uint32_t limit, Pacing& pacing, FaultStage* faults) noexcept {
    std::lock_guard lock(dev.port.mutex());
    return run_burst_locked(dev, source, pending, limit, pacing, faults);
}

BurstResult run_burst_locked(device::Device& dev, net::FrameSource& source, FrameBatch& pending,
                             std::uint32_t limit, Pacing& pacing, FaultStage* faults) noexcept {
    datapath::Port& port = dev.port;
    BurstResult r;
    port.begin_burst();
    // A live wire found empty at this time: told to the timers once what
    // the pull brought is in (an ACK read with it must stop its timer
    // first), before the burst's service, the only one a live wire gets.
    constexpr std::uint64_t kNotDrained = ~std::uint64_t{0};
    std::uint64_t drained_at = kNotDrained;
    while (r.frames < limit) {
        if (pending.head == pending.due) {
            if (pending.empty()) {
                // Never more than this burst still takes: what is pulled enters
                // now (unless not due), so the source's counters keep up with the port's.
                const std::uint32_t want =
                    std::min({limit - r.frames, FrameBatch::kCapacity, pacing.pull_limit()});
                pending.head = pending.due = 0;
                // Sampled before the pull: a short pull read all that came before it.
                const std::uint64_t pulled_at = port.roce().live_wire() ? pacing.service_time(r.frames) : 0;
                pending.count = pull(source, faults, {pending.frames.data(), want});
                if (port.roce().live_wire() && (pending.count == 0 || (pending.count < want && faults == nullptr)))
                    drained_at = pulled_at;
                if (pending.count == 0) break;
            }
            // Timed only if they enter in this burst: a burst ends with
            // head == due, and frames left pending are timed afresh.
            const std::uint32_t n = std::min(pending.count - pending.head, limit - r.frames);
            pending.due = pending.head + pacing.arrivals({&pending.frames[pending.head], n},
                                                         &pending.arrival[pending.head]);
            if (pending.head == pending.due) break; // the next frame is not due yet
        }
        // The due frames enter, indexed through locals that the calls cannot change.
        const net::Frame* const frames = pending.frames.data();
        const std::uint64_t* const at = pending.arrival.data();
        const std::uint32_t end = pending.due;
        // A replay's timers fire between the frames, at their times; a live
        // wire's pull came in before its timers (the burst's end) run.
        const bool live = port.roce().live_wire();
        for (std::uint32_t i = pending.head; i < end;) {
            if (!live && port.next_deadline_ns() <= at[i]) device::service(dev, at[i]);
            i += port.ingress_burst({frames + i, end - i}, at + i); // up to the next deadline
        }
        r.frames += end - pending.head;
        pending.head = end;
    }
    if (drained_at != kNotDrained) port.roce().wire_drained(drained_at); // its frames are in
    // Before the service that notifies: it sees the burst's completions.
    port.end_burst();
    device::service(dev, pacing.service_time(r.frames));
    r.held = port.held_frames() != 0;
    r.exhausted = source.exhausted() && (faults == nullptr || faults->empty());
    r.next_deadline_ns = port.next_deadline_ns();
    r.tx_waiting = port.tx_waiting() > 0;
    r.tx_ready = port.tx_ready();
    r.pending = !pending.empty();
    pacing.burst_done(r);
    return r;
}

} // namespace rdmasim::sim
