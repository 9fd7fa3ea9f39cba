#include "datapath/hold_queue.hpp"

#include <cstring>

namespace rdmasim::datapath {

void HoldQueue::init(std::uint32_t max_frames, std::uint32_t max_bytes) {
    entries_.assign(max_frames, Entry{});
    arena_.assign(max_bytes, 0);
    head_ = count_ = write_ = 0;
}

bool HoldQueue::push(const net::Frame& frame, const net::ParsedFrame& parsed,
                     std::uint64_t arrival_ns) noexcept {
    const auto cap = static_cast<std::uint32_t>(arena_.size());
    const std::uint32_t len = frame.len;
    if (count_ == entries_.size() || len > cap) [[unlikely]]
        return false;
    std::uint32_t offset;
    if (count_ == 0) {
        offset = 0;
    } else {
        // The live bytes run from the oldest entry's offset up to write_,
        // possibly wrapped. Strict inequalities keep "full" distinct from "empty".
        const std::uint32_t oldest = entries_[head_].offset;
        if (write_ >= oldest) {
            if (cap - write_ >= len)
                offset = write_;
            else if (oldest > len)
                offset = 0;
            else
                return false;
        } else if (oldest - write_ > len) {
            offset = write_;
        } else {
            return false;
        }
    }
    std::memcpy(arena_.data() + offset, frame.data, len);
    Entry& e = entries_[(head_ + count_) % entries_.size()];
    e.offset = offset;
    e.frame = frame;
    e.frame.data = nullptr;
    e.parsed = parsed;
    e.arrival_ns = arrival_ns;
    ++count_;
    write_ = offset + len;
    return true;
}

net::Frame HoldQueue::front() const noexcept {
    net::Frame f = entries_[head_].frame;
    f.data = arena_.data() + entries_[head_].offset;
    return f;
}

void HoldQueue::pop() noexcept {
    head_ = static_cast<std::uint32_t>((head_ + 1) % entries_.size());
    if (--count_ == 0) write_ = 0;
}

} // namespace rdmasim::datapath
