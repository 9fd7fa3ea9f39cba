#include "datapath/toeplitz.hpp"

#include <algorithm>
#include <bit>

namespace rdmasim::datapath {

namespace {

// The 32 key bits starting at bit `bit` (bit 0 = MSB of key[0]). Needs
// bit / 8 + 4 < kKeyLen, which holds for every bit of a kMaxInput-byte input.
std::uint32_t key_window(std::span<const std::uint8_t, Toeplitz::kKeyLen> key,
                         std::size_t bit) noexcept {
    const std::size_t byte = bit / 8;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 5; ++i)
        v = (v << 8) | key[byte + i];
    return static_cast<std::uint32_t>(v >> (8 - bit % 8));
}

static_assert((Toeplitz::kMaxInput - 1) + 4 < Toeplitz::kKeyLen);

} // namespace

Toeplitz::Toeplitz(std::span<const std::uint8_t, kKeyLen> key) noexcept {
    std::copy(key.begin(), key.end(), key_.begin());
    for (std::size_t i = 0; i < kMaxInput; ++i) {
        // window[j]: the key window for bit j (MSB first) of input byte i.
        std::array<std::uint32_t, 8> window{};
        for (std::size_t j = 0; j < 8; ++j)
            window[j] = key_window(key, i * 8 + j);
        auto& row = table_[i];
        row[0] = 0;
        // Each byte value is a smaller value plus its lowest set bit.
        for (std::size_t b = 1; b < 256; ++b) {
            const auto low_bit = static_cast<std::size_t>(std::countr_zero(b));
            row[b] = row[b & (b - 1)] ^ window[7 - low_bit];
        }
    }
}

std::uint32_t Toeplitz::hash(std::span<const std::uint8_t> input) const noexcept {
    const std::size_t n = std::min(input.size(), kMaxInput);
    std::uint32_t h = 0;
    for (std::size_t i = 0; i < n; ++i)
        h ^= table_[i][input[i]];
    return h;
}

} // namespace rdmasim::datapath
