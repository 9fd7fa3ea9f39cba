// Copies and zero fills for the short runs the per-frame path writes (a
// 64-byte frame is three pieces and a pad): inline, with two overlapping
// moves of a fixed size up to 64 bytes, instead of a call into libc's size
// dispatch for each piece. Longer runs go to memcpy / memset. Never writes
// outside [dst, dst + n).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rdmasim::datapath {

namespace detail {

// n in [N, 2N]: the first and the last N bytes (they overlap when n < 2N).
// Both halves are loaded before either is stored: src and dst may overlap.
template <std::size_t N>
inline void copy_two(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) noexcept {
    std::uint8_t head[N], tail[N];
    __builtin_memcpy(head, src, N);
    __builtin_memcpy(tail, src + n - N, N);
    __builtin_memcpy(dst, head, N);
    __builtin_memcpy(dst + n - N, tail, N);
}

template <std::size_t N> inline void zero_two(std::uint8_t* dst, std::size_t n) noexcept {
    static constexpr std::uint8_t kZeros[N] = {};
    __builtin_memcpy(dst, kZeros, N);
    __builtin_memcpy(dst + n - N, kZeros, N);
}

} // namespace detail

inline void copy_bytes(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) noexcept {
    if (n > 64)
        std::memcpy(dst, src, n);
    else if (n >= 32)
        detail::copy_two<32>(dst, src, n);
    else if (n >= 16)
        detail::copy_two<16>(dst, src, n);
    else if (n >= 8)
        detail::copy_two<8>(dst, src, n);
    else if (n >= 4)
        detail::copy_two<4>(dst, src, n);
    else
        for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
}

inline void zero_bytes(std::uint8_t* dst, std::size_t n) noexcept {
    if (n > 64)
        std::memset(dst, 0, n);
    else if (n >= 32)
        detail::zero_two<32>(dst, n);
    else if (n >= 16)
        detail::zero_two<16>(dst, n);
    else if (n >= 8)
        detail::zero_two<8>(dst, n);
    else
        for (std::size_t i = 0; i < n; ++i) dst[i] = 0;
}

} // namespace rdmasim::datapath
