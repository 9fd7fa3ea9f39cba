// Toeplitz hash for RSS. Two ways to the same value, chosen once per key:
// carry-less multiplication (x86-64 PCLMULQDQ, checked at run time: two
// multiplies per 8 input bytes, no tables), or per-byte lookup tables
// precomputed from the key (one lookup and xor per input byte) where the
// instruction is missing. The tables are 36 KiB: on the per-frame path the
// receive buffers streaming through L1 evicted them, and an IPv6 4-tuple's
// 36 lookups missed (tests/bench/RESULTS.md, "Third pass").
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
    enum class Method : std::uint8_t { best, tables };

    Toeplitz() noexcept = default; // an all-zero key: every hash is 0
    // `method`: tables forces the lookup tables (tests compare the two).
    explicit Toeplitz(std::span<const std::uint8_t, kKeyLen> key, Method method = Method::best) noexcept;
    // Hash of `input` (network byte order, at most kMaxInput bytes; longer input is cut).
    [[nodiscard]] std::uint32_t hash(std::span<const std::uint8_t> input) const noexcept;
    // Hash of the `n` (<= kMaxInput) bytes in `words`: the per-frame call
    // (rss_hash builds the words in registers; bytes stored one field at a
    // time and read back 8 at once would stall on store forwarding).
    [[nodiscard]] std::uint32_t hash_words(const Words& words, std::size_t n) const noexcept;
    [[nodiscard]] const std::array<std::uint8_t, kKeyLen>& key() const noexcept { return key_; }
    // True when hash() multiplies (PCLMULQDQ) instead of looking up tables.
    [[nodiscard]] bool carryless() const noexcept { return carryless_; }

private:
    [[nodiscard]] std::uint32_t hash_tables(const Words& words, std::size_t n) const noexcept;

    std::array<std::uint8_t, kKeyLen> key_{};
    // The key bits each 8-byte input chunk c meets: bits [64c, 64c + 95)
    // with key bit 64c + t at bit t (reflected), low 64 and high 31.
    Words window_lo_{};
    Words window_hi_{};
    bool carryless_ = false;
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
