// Copies and zero fills for the short runs the per-frame path writes (a
// 64-byte frame is three pieces and a pad): inline, with overlapping 16-byte
// moves up to 64 bytes, instead of a call into libc's size dispatch for each
// piece. Longer runs go to memcpy / memset. Never writes outside [dst, dst + n).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rdmasim::datapath {

inline void copy_bytes(std::uint8_t* dst, const std::uint8_t* src, std::size_t n) noexcept {
    if (n > 64) {
        std::memcpy(dst, src, n);
    } else if (n >= 32) { // two overlapping 32-byte moves
        std::uint8_t head[32], tail[32];
        __builtin_memcpy(head, src, 32);
        __builtin_memcpy(tail, src + n - 32, 32);
        __builtin_memcpy(dst, head, 32);
        __builtin_memcpy(dst + n - 32, tail, 32);
    } else if (n >= 16) {
        std::uint8_t head[16], tail[16];
        __builtin_memcpy(head, src, 16);
        __builtin_memcpy(tail, src + n - 16, 16);
        __builtin_memcpy(dst, head, 16);
        __builtin_memcpy(dst + n - 16, tail, 16);
    } else if (n >= 8) {
        std::uint64_t head, tail;
        __builtin_memcpy(&head, src, 8);
        __builtin_memcpy(&tail, src + n - 8, 8);
        __builtin_memcpy(dst, &head, 8);
        __builtin_memcpy(dst + n - 8, &tail, 8);
    } else if (n >= 4) {
        std::uint32_t head, tail;
        __builtin_memcpy(&head, src, 4);
        __builtin_memcpy(&tail, src + n - 4, 4);
        __builtin_memcpy(dst, &head, 4);
        __builtin_memcpy(dst + n - 4, &tail, 4);
    } else {
        for (std::size_t i = 0; i < n; ++i) dst[i] = src[i];
    }
}

inline void zero_bytes(std::uint8_t* dst, std::size_t n) noexcept {
    static constexpr std::uint8_t kZeros[32] = {};
    if (n > 64) {
        std::memset(dst, 0, n);
    } else if (n >= 32) {
        __builtin_memcpy(dst, kZeros, 32);
        __builtin_memcpy(dst + n - 32, kZeros, 32);
    } else if (n >= 16) {
        __builtin_memcpy(dst, kZeros, 16);
        __builtin_memcpy(dst + n - 16, kZeros, 16);
    } else if (n >= 8) {
        __builtin_memcpy(dst, kZeros, 8);
        __builtin_memcpy(dst + n - 8, kZeros, 8);
    } else {
        for (std::size_t i = 0; i < n; ++i) dst[i] = 0;
    }
}

} // namespace rdmasim::datapath
