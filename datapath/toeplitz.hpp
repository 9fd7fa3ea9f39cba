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
    [[nodiscard]] const std::array<std::uint8_t, kKeyLen>& key() const noexcept { return key_; }

private:
    std::array<std::uint8_t, kKeyLen> key_{};
    std::array<std::array<std::uint32_t, 256>, kMaxInput> table_{};
};

} // namespace rdmasim::datapath
