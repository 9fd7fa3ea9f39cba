// One frame as a source hands it over: borrowed bytes plus what the wire said.
#pragma once

#include <cstdint>
#include <span>

namespace rdmasim::net {

struct Frame {
    const std::uint8_t* data = nullptr; // frame bytes from the destination MAC on
    std::uint32_t len = 0;      // bytes at data (captured length, FCS included if fcs_len)
    std::uint32_t wire_len = 0; // length on the wire (pcap "len"), FCS included if fcs_len
    std::uint8_t fcs_len = 0;   // 0, or 4 when the last 4 bytes of data are the wire's FCS
    std::uint64_t ts_ns = 0;    // capture timestamp, nanoseconds since the epoch
    bool lost = false;          // lost on the wire by the fault plan: the port counts it, no more

    // Bytes of the frame proper, without a trailing FCS.
    [[nodiscard]] std::span<const std::uint8_t> payload() const noexcept {
        return {data, len >= fcs_len ? len - fcs_len : 0};
    }
    // True when the capture lost bytes (caplen < len): such a frame cannot be delivered.
    [[nodiscard]] bool truncated() const noexcept { return len < wire_len; }
};

} // namespace rdmasim::net
