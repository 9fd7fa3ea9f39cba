// Delay-drop holding: frames that found no posted WQE wait here, in arrival
// order, in storage allocated at set-up (a byte arena and an entry ring).
#pragma once

#include <cstdint>
#include <vector>

#include "net/frame.hpp"
#include "net/headers.hpp"

namespace rdmasim::datapath {

class HoldQueue {
public:
    void init(std::uint32_t max_frames, std::uint32_t max_bytes); // allocates; set-up only

    // Copies the frame in. False when the entry ring or the arena is full.
    [[nodiscard]] bool push(const net::Frame& frame, const net::ParsedFrame& parsed,
                            std::uint64_t arrival_ns) noexcept;
    [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
    [[nodiscard]] std::uint32_t size() const noexcept { return count_; }
    // The oldest frame; its bytes live in the arena until pop().
    [[nodiscard]] net::Frame front() const noexcept;
    [[nodiscard]] const net::ParsedFrame& front_parsed() const noexcept { return entries_[head_].parsed; }
    [[nodiscard]] std::uint64_t front_arrival_ns() const noexcept { return entries_[head_].arrival_ns; }
    void pop() noexcept;

private:
    struct Entry {
        std::uint32_t offset;
        net::Frame frame; // data is re-pointed at the arena by front()
        net::ParsedFrame parsed;
        std::uint64_t arrival_ns;
    };
    std::vector<Entry> entries_;
    std::vector<std::uint8_t> arena_;
    std::uint32_t head_ = 0;  // oldest entry
    std::uint32_t count_ = 0;
    std::uint32_t write_ = 0; // next arena offset
};

} // namespace rdmasim::datapath
