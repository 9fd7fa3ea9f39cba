// A FIFO of whole frames, copied, in storage allocated once: a byte ring
// (each frame contiguous in it) and a ring of (offset, length) entries. The
// port's loopback queue and its held requests (RocePort) are two of them.
// Not thread-safe: under the port lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "datapath/uninit_bytes.hpp"

namespace rdmasim::datapath {

class FrameRing {
public:
    // `bytes` of frame data and at most `frames` frames (rounded up to a power of two).
    FrameRing(std::size_t bytes, std::uint32_t frames);

    // Copies `frame` in behind the others; false when it does not fit now.
    bool push(std::span<const std::uint8_t> frame) noexcept;
    [[nodiscard]] bool empty() const noexcept { return head_ == tail_; }
    [[nodiscard]] std::uint32_t size() const noexcept { return head_ - tail_; }
    // The oldest frame. It stays in the ring, its bytes untouched by pushes,
    // until pop(): a frame may be processed in place while others are pushed.
    [[nodiscard]] std::span<const std::uint8_t> front() const noexcept {
        const Entry e = entries_[tail_ & (entries_.size() - 1)];
        return {bytes_.data() + e.off, e.len};
    }
    void pop() noexcept { ++tail_; }

private:
    struct Entry {
        std::uint32_t off;
        std::uint32_t len;
    };
    UninitBytes bytes_;
    UninitArray<Entry> entries_;        // power of two; written before read, never zeroed
    std::uint32_t head_ = 0, tail_ = 0; // free-running entry indices
    std::size_t write_ = 0;             // where the next frame's bytes go
};

} // namespace rdmasim::datapath
