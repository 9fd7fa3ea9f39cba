// The two RC timers of IBA vol. 1 (datapath/README.md, "RoCE transport"):
// the local ACK timeout, 4.096 us * 2^timeout (timeout 0: infinite), and
// the RNR NAK timer, whose 5-bit code indexes the IBA's table of timer
// encodings (code 0 is the longest, 655.36 ms).
#pragma once

#include <array>
#include <cstdint>

namespace rdmasim::datapath {

inline constexpr std::uint64_t kNoDeadline = UINT64_MAX;

// 0 means "never": the requester waits for ever (IBA 9.7.6.1.3).
[[nodiscard]] constexpr std::uint64_t ack_timeout_ns(std::uint8_t timeout) noexcept {
    if (timeout == 0) return kNoDeadline;
    return 4096ull << (timeout > 31 ? 31 : timeout);
}

[[nodiscard]] constexpr std::uint64_t rnr_timer_ns(std::uint8_t code) noexcept {
    constexpr std::array<std::uint32_t, 32> us{
        655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
        480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
        20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
    return std::uint64_t{us[code & 31]} * 1000;
}

} // namespace rdmasim::datapath
