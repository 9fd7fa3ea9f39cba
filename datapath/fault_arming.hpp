// Faults the fault plan arms on the port (sim/README.md, "Fault injection"):
// starve_next and fail_next wait here until the next frames steered to a
// queue (their own outcome, not copies) hand them to that queue. Locking:
// the port's mutex.
#pragma once

#include <cstdint>

namespace rdmasim::datapath {

class RxQueue;

class FaultArming {
public:
    // The next `frames` frames steered to a queue find that queue's ring
    // empty (RxQueue::starve).
    void starve_next(std::uint32_t frames) noexcept;
    // The next frame steered to a queue arms it: the next frame that queue
    // completes carries `status` (RxQueue::fail_next).
    void fail_next(std::uint8_t status) noexcept;
    // Whether arm() has anything to hand out. Inline: asked of every frame.
    [[nodiscard]] bool pending() const noexcept { return pending_; }
    // Hands what is pending for one frame to `queue`.
    void arm(RxQueue& queue) noexcept;

private:
    std::uint32_t starve_next_ = 0; // starve_next: frames still to hand out
    std::uint8_t fail_next_ = 0;    // fail_next: the status still to hand out, or 0
    bool pending_ = false;          // either of the two is set
};

} // namespace rdmasim::datapath
