#include "sim/device_stats.hpp"

#include "sim/stats.hpp"

namespace rdmasim::sim {

void DeviceStats::queue_detached(const datapath::RxQueue& queue) noexcept {
    try {
        destroyed_.push_back(queue_json(queue, true));
    } catch (...) { // std::bad_alloc: the queue goes unrecorded, and the file says how many
        ++unrecorded_;
    }
}

void DeviceStats::send(std::span<const std::uint8_t> frame, std::uint64_t) noexcept {
    sent_frames_.add();
    sent_bytes_.add(frame.size());
}

} // namespace rdmasim::sim
