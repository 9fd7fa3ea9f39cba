#include "datapath/toeplitz.hpp"

#include <algorithm>
#include <bit>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RDMASIM_TOEPLITZ_CLMUL 1
#endif

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

#ifdef RDMASIM_TOEPLITZ_CLMUL
// Hash bit j is the xor over input bits i of d_i & k_(i+j). Take an 8-byte
// chunk as a big-endian integer A (input bit i' at bit 63 - i') and its key
// window reflected as B (key bit t at bit t): the carry-less product A * B
// holds hash bit j at bit 63 + j. So each chunk costs two multiplies (B has
// 95 bits), the chunks' bits 63..94 are xored, and the 32 bits come out
// least significant first: reversed once at the end.
__attribute__((target("pclmul,sse4.1"))) std::uint32_t
hash_clmul(const std::uint64_t* words, std::size_t chunks, const std::uint64_t* lo,
           const std::uint64_t* hi) noexcept {
    std::uint64_t x = 0;
    for (std::size_t c = 0; c < chunks; ++c) {
        const __m128i av = _mm_cvtsi64_si128(static_cast<long long>(words[c]));
        const __m128i p1 = _mm_clmulepi64_si128(av, _mm_cvtsi64_si128(static_cast<long long>(lo[c])), 0);
        const __m128i p2 = _mm_clmulepi64_si128(av, _mm_cvtsi64_si128(static_cast<long long>(hi[c])), 0);
        const auto p1_lo = static_cast<std::uint64_t>(_mm_cvtsi128_si64(p1));
        const auto p1_hi = static_cast<std::uint64_t>(_mm_extract_epi64(p1, 1));
        const auto p2_lo = static_cast<std::uint64_t>(_mm_cvtsi128_si64(p2));
        x ^= ((p1_lo >> 63) | (p1_hi << 1)) ^ (p2_lo << 1);
    }
    auto v = __builtin_bswap32(static_cast<std::uint32_t>(x));
    v = ((v & 0x0f0f0f0fu) << 4) | ((v >> 4) & 0x0f0f0f0fu);
    v = ((v & 0x33333333u) << 2) | ((v >> 2) & 0x33333333u);
    v = ((v & 0x55555555u) << 1) | ((v >> 1) & 0x55555555u);
    return v;
}
#endif

} // namespace

Toeplitz::Toeplitz(std::span<const std::uint8_t, kKeyLen> key, Method method) noexcept {
    std::copy(key.begin(), key.end(), key_.begin());
    for (std::size_t c = 0; c < window_lo_.size(); ++c) {
        for (std::size_t t = 0; t < 64; ++t)
            window_lo_[c] |= std::uint64_t{key_bit(key, 64 * c + t)} << t;
        for (std::size_t t = 64; t < 95; ++t)
            window_hi_[c] |= std::uint64_t{key_bit(key, 64 * c + t)} << (t - 64);
    }
#ifdef RDMASIM_TOEPLITZ_CLMUL
    __builtin_cpu_init(); // a Toeplitz built by a static initialiser may run before libgcc's
    carryless_ = method == Method::best && __builtin_cpu_supports("pclmul") &&
                 __builtin_cpu_supports("sse4.1");
#else
    (void)method;
#endif
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

std::uint32_t Toeplitz::hash_tables(const Words& words, std::size_t n) const noexcept {
    std::uint32_t h = 0;
    for (std::size_t i = 0; i < n; ++i)
        h ^= table_[i][static_cast<std::uint8_t>(words[i / 8] >> (56 - 8 * (i % 8)))];
    return h;
}

std::uint32_t Toeplitz::hash_words(const Words& words, std::size_t n) const noexcept {
#ifdef RDMASIM_TOEPLITZ_CLMUL
    if (carryless_) [[likely]]
        return hash_clmul(words.data(), (n + 7) / 8, window_lo_.data(), window_hi_.data());
#endif
    return hash_tables(words, n);
}

std::uint32_t Toeplitz::hash(std::span<const std::uint8_t> input) const noexcept {
    const std::size_t n = std::min(input.size(), kMaxInput);
    Words words{};
    for (std::size_t i = 0; i < n; ++i)
        words[i / 8] |= std::uint64_t{input[i]} << (56 - 8 * (i % 8));
    return hash_words(words, n);
}

} // namespace rdmasim::datapath
