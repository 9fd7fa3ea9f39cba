#include "datapath/toeplitz.hpp"

#include <algorithm>
#include <bit>

namespace rdmasim::datapath {

namespace {

constexpr std::size_t kKeyBits = Toeplitz::kKeyLen * 8;

// Key bit `bit` (bit 0 = MSB of key[0]); 0 past the key's end.
unsigned key_bit(std::span<const std::uint8_t, Toeplitz::kKeyLen> key, std::size_t bit) noexcept {
    if (bit >= kKeyBits) return 0;
    return (key[bit / 8] >> (7 - bit % 8)) & 1u;
}

// The 32 key bits starting at bit `bit`, the first one the most significant.
std::uint32_t key_window(std::span<const std::uint8_t, Toeplitz::kKeyLen> key,
                         std::size_t bit) noexcept {
    std::uint32_t v = 0;
    for (std::size_t j = 0; j < 32; ++j) v = (v << 1) | key_bit(key, bit + j);
    return v;
}

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

std::uint32_t Toeplitz::hash_words(const Words& words, std::size_t n) const noexcept {
    std::uint32_t h = 0;
    for (std::size_t i = 0; i < std::min(n, kMaxInput); ++i)
        h ^= table_[i][static_cast<std::uint8_t>(words[i / 8] >> (56 - 8 * (i % 8)))];
    return h;
}

std::uint32_t Toeplitz::hash(std::span<const std::uint8_t> input) const noexcept {
    const std::size_t n = std::min(input.size(), kMaxInput);
    Words words{};
    for (std::size_t i = 0; i < n; ++i)
        words[i / 8] |= std::uint64_t{input[i]} << (56 - 8 * (i % 8));
    return hash_words(words, n);
}

} // namespace rdmasim::datapath
