// Where frames that leave a port go: a capture file, a wire to another
// program, a live interface. The port hands each frame a program sends to
// every sink attached to it, after the loopback to its own flows.
#pragma once

#include <cstdint>
#include <span>

namespace rdmasim::net {

class FrameSink {
public:
    virtual ~FrameSink() = default;
    // One frame (destination MAC on, no FCS) sent at `ts_ns` on the port's
    // clock. Called under the port lock, so it must not block: a sink whose
    // I/O can stall queues the frame and writes it elsewhere. The bytes are
    // valid only during the call.
    virtual void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept = 0;
};

} // namespace rdmasim::net
