// Toeplitz hash for RSS, the whole 32-bit value: the definition that
// rss_hash() applies and that tests and the fuzz target check RSS against.
// The per-frame path does not call it: an RSS group computes only the bits of
// the hash its indirection table uses (RssGroup, rss.hpp). Per-byte lookup
// tables precomputed from the key (36 KiB), one lookup and xor per input byte.
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
    // The input as hash_words() takes it: 8-byte big-endian words (input
    // byte 8w + k is byte 7 - k of words[w]), zero past the input's end.
    using Words = std::array<std::uint64_t, (kMaxInput + 7) / 8>;

    Toeplitz() noexcept = default; // an all-zero key: every hash is 0
    explicit Toeplitz(std::span<const std::uint8_t, kKeyLen> key) noexcept;
    // Hash of `input` (network byte order, at most kMaxInput bytes; longer input is cut).
    [[nodiscard]] std::uint32_t hash(std::span<const std::uint8_t> input) const noexcept;
    // Hash of the `n` (<= kMaxInput) bytes in `words`.
    [[nodiscard]] std::uint32_t hash_words(const Words& words, std::size_t n) const noexcept;
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
