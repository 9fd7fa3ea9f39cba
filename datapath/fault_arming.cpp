#include "datapath/fault_arming.hpp"

#include <cstdint>

#include "datapath/rx_queue.hpp"

namespace rdmasim::datapath {

void FaultArming::starve_next(std::uint32_t frames) noexcept {
    starve_next_ = frames > UINT32_MAX - starve_next_ ? UINT32_MAX : starve_next_ + frames;
    pending_ = true;
}

void FaultArming::fail_next(std::uint8_t status) noexcept {
    fail_next_ = status;
    pending_ = true;
}

void FaultArming::arm(RxQueue& queue) noexcept {
    if (starve_next_ != 0) {
        queue.starve(1);
        --starve_next_;
    }
    if (fail_next_ != 0) {
        queue.fail_next(fail_next_);
        fail_next_ = 0;
    }
    pending_ = starve_next_ != 0 || fail_next_ != 0;
}

} // namespace rdmasim::datapath
