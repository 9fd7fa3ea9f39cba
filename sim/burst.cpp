#include "sim/burst.hpp"

#include <algorithm>
#include <mutex>

#include "device/device.hpp"

namespace rdmasim::sim {

BurstResult run_burst(device::Device& dev, net::FrameSource& source, FrameBatch& pending,
                      std::uint32_t limit, Pacing& pacing) noexcept {
    datapath::Port& port = dev.port;
    BurstResult r;
    std::lock_guard lock(port.mutex());
    port.begin_burst();
    while (r.frames < limit) {
        if (pending.empty()) {
            // Never more than this burst still takes: what is pulled enters
            // now (unless not due), so the source's counters keep up with the port's.
            const std::uint32_t want = std::min({limit - r.frames, FrameBatch::kCapacity, pacing.pull_limit()});
            pending.head = 0;
            pending.count = source.next_burst({pending.frames.data(), want});
            if (pending.count == 0) break;
        }
        const net::Frame& frame = pending.frames[pending.head];
        const std::uint64_t arrival = pacing.arrival(frame);
        if (arrival == Pacing::kNotDue) break;
        if (port.next_deadline_ns() <= arrival) device::service(dev, arrival);
        port.ingress(frame, arrival);
        ++pending.head;
        ++r.frames;
    }
    // Before the service that notifies: it sees the burst's completions.
    port.end_burst();
    device::service(dev, pacing.service_time(r.frames));
    r.held = port.held_frames() != 0;
    r.exhausted = source.exhausted();
    r.next_deadline_ns = port.next_deadline_ns();
    r.pending = !pending.empty();
    pacing.burst_done(r);
    return r;
}

} // namespace rdmasim::sim
