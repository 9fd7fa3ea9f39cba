#include "datapath/roce/frame_ring.hpp"

#include <algorithm>
#include <bit>

namespace rdmasim::datapath {

FrameRing::FrameRing(std::size_t bytes, std::uint32_t frames)
    : bytes_(bytes), entries_(std::bit_ceil(std::max(1u, frames))) {}

bool FrameRing::push(std::span<const std::uint8_t> frame) noexcept {
    const std::size_t len = frame.size();
    const std::size_t cap = bytes_.size();
    std::size_t off = 0;
    bool room = head_ - tail_ < entries_.size();
    if (room && empty()) {
        write_ = 0; // empty: start over
        room = len <= cap;
    } else if (room) {
        // The oldest frame's bytes start at `rd`; the writer never catches up
        // with it (strict <), so write_ == rd only when the ring is empty.
        const std::size_t rd = entries_[tail_ & (entries_.size() - 1)].off;
        if (write_ >= rd) {
            if (cap - write_ >= len)
                off = write_;
            else
                room = len < rd; // wrap to the start
        } else {
            off = write_;
            room = write_ + len < rd;
        }
    }
    if (!room) [[unlikely]]
        return false;
    std::copy(frame.begin(), frame.end(), bytes_.data() + off);
    entries_[head_ & (entries_.size() - 1)] = {static_cast<std::uint32_t>(off),
                                               static_cast<std::uint32_t>(len)};
    ++head_;
    write_ = off + len;
    return true;
}

} // namespace rdmasim::datapath
