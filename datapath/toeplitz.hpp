// Toeplitz hash for RSS, with per-byte lookup tables precomputed from the key
// (one table lookup and xor per input byte on the per-frame path).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace rdmasim::datapath {

class Toeplitz {
public:
    static constexpr std::size_t kKeyLen = 40;   // the only key length verbs accepts
    static constexpr std::size_t kMaxInput = 36; // IPv6 src+dst+ports

    Toeplitz() noexcept = default; // an all-zero key: every hash is 0
    explicit Toeplitz(std::span<const std::uint8_t, kKeyLen> key) noexcept;
    // Hash of `input` (network byte order, at most kMaxInput bytes; longer input is cut).
    [[nodiscard]] std::uint32_t hash(std::span<const std::uint8_t> input) const noexcept;
    // The share of `n` input bytes at `p` that sit at input position `pos`
    // onwards (pos + n <= kMaxInput): the hash of an input is the xor of the
    // shares of its pieces, so fields are hashed where they lie in the frame.
    [[nodiscard]] std::uint32_t share(std::size_t pos, const std::uint8_t* p,
                                      std::size_t n) const noexcept {
        std::uint32_t h = 0;
        for (std::size_t i = 0; i < n; ++i) h ^= table_[pos + i][p[i]];
        return h;
    }
    // The share of a 16-bit field (host order, hashed in network order) at `pos`.
    [[nodiscard]] std::uint32_t share16(std::size_t pos, std::uint16_t v) const noexcept {
        return table_[pos][v >> 8] ^ table_[pos + 1][v & 0xff];
    }
    [[nodiscard]] const std::array<std::uint8_t, kKeyLen>& key() const noexcept { return key_; }

private:
    std::array<std::uint8_t, kKeyLen> key_{};
    std::array<std::array<std::uint32_t, 256>, kMaxInput> table_{};
};

// Microsoft's RSS verification key ("Verifying the RSS Hash Calculation"): the
// documented default of many drivers, and the key of the published test
// vectors (tests/datapath/test_toeplitz.cpp checks it against them).
inline constexpr std::array<std::uint8_t, Toeplitz::kKeyLen> kMicrosoftRssKey = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
    0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
    0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

} // namespace rdmasim::datapath
