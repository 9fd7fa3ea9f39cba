// CRC-32 of short inputs (a minimum-size frame's FCS) by carry-less
// multiplication, all of an input's 16-byte blocks at once. Internal to
// crc32.cpp (which chooses it) and its test; not installed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rdmasim::net::detail {

// The shortest and one past the longest input crc32_clmul_short takes.
inline constexpr std::size_t kClmulShortMin = 4;
inline constexpr std::size_t kClmulShortEnd = 256;

// Whether this CPU runs crc32_clmul_short: AVX-512 (F, BW, VL) and VPCLMULQDQ.
[[nodiscard]] bool crc32_clmul_short_supported() noexcept;

// crc32_update(crc, {p, len}) for kClmulShortMin <= len < kClmulShortEnd,
// where crc32_clmul_short_supported(). Reads only p[0..len).
[[nodiscard]] std::uint32_t crc32_clmul_short(std::uint32_t crc, const std::uint8_t* p,
                                              std::size_t len) noexcept;

} // namespace rdmasim::net::detail
