#include "sim/burst.hpp"

#include <mutex>

#include "device/device.hpp"

namespace rdmasim::sim {

BurstResult run_burst(device::Device& dev, net::FrameSource& source,
                      std::optional<net::Frame>& pending, std::uint32_t limit,
                      Pacing& pacing) noexcept {
    datapath::Port& port = dev.port;
    BurstResult r;
    std::lock_guard lock(port.mutex());
    while (r.frames < limit) {
        if (!pending) {
            // Read in place: a copy of a frame just written field by field
            // would reload it wider than it was stored (a forwarding stall).
            if (!source.next(pending.emplace())) {
                pending.reset();
                break;
            }
        }
        const std::uint64_t arrival = pacing.arrival(*pending);
        if (arrival == Pacing::kNotDue) break;
        if (port.next_deadline_ns() <= arrival) device::service(dev, arrival);
        port.ingress(*pending, arrival);
        pending.reset();
        ++r.frames;
    }
    device::service(dev, pacing.service_time(r.frames));
    r.held = port.held_frames() != 0;
    r.next_deadline_ns = port.next_deadline_ns();
    r.pending = pending.has_value();
    pacing.burst_done(r);
    return r;
}

} // namespace rdmasim::sim
