// A FrameSink that keeps what a port hands it (its sends, its ARP traffic,
// its loopback to the wire), in order: each frame's bytes and its time.
// Attach it to a port before the test's traffic, and declare it before the
// fixture that owns the port, so that it outlives the port holding it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "net/frame_sink.hpp"

namespace rdmasim::test {

struct RecordingSink final : net::FrameSink {
    std::vector<std::vector<std::uint8_t>> frames;
    std::vector<std::uint64_t> times; // times[i]: when frames[i] left
    void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept override {
        frames.emplace_back(frame.begin(), frame.end());
        times.push_back(ts_ns);
    }
};

} // namespace rdmasim::test
