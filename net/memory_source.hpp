// Frames held in memory: for tests, and for frames a program sends on a
// raw-packet QP (loopback). Owns copies of the bytes.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "net/frame_source.hpp"

namespace rdmasim::net {

class MemorySource final : public FrameSource {
public:
    void push(std::span<const std::uint8_t> bytes, std::uint64_t ts_ns = 0, std::uint8_t fcs_len = 0);
    bool next(Frame& out) noexcept override;
    [[nodiscard]] bool exhausted() const noexcept override { return closed_ && queue_.empty(); }
    [[nodiscard]] std::string describe() const override { return "memory"; }
    [[nodiscard]] const SourceCounters& counters() const noexcept override { return counters_; }
    // After close(), exhausted() turns true once the queue drains.
    void close() noexcept { closed_ = true; }
    [[nodiscard]] std::size_t pending() const noexcept { return queue_.size(); }

private:
    struct Item {
        std::vector<std::uint8_t> bytes;
        std::uint64_t ts_ns;
        std::uint8_t fcs_len;
    };
    std::deque<Item> queue_;
    Item current_;
    bool closed_ = false;
    SourceCounters counters_;
};

} // namespace rdmasim::net
