#include "net/crc32_clmul.hpp"

#include <array>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// GCC 12's AVX-512 headers fill "undefined" operands by self-assignment,
// which -Wuninitialized reports at every use (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#define RDMASIM_CRC32_CLMUL 1
#else
#include <libdeflate.h>
#endif

// How it works. A polynomial over GF(2) is an integer here (bit i: the
// coefficient of x^i); P = x^32 + 0x04c11db7. The CRC register is the
// message M times x^32 mod P, with the starting value XORed into M's first
// four bytes, all bit-reflected (the first bit on the wire is the highest
// power). Each 16-byte block b of M, e bits from M's end, adds b * x^e:
// its two 64-bit halves times (x^(e + 32) mod P) and (x^(e + 96) mod P),
// constants fixed by the block's distance from the end. Chunks of 64 bytes
// are taken from the end (the first one zero-filled in front: leading
// zeros add nothing), so every lane's constants are fixed by its place in
// its chunk and the chunk's place from the end: a table. The products of
// all blocks are independent (no fold waits for the one before), their XOR
// is 95 bits congruent to the register, and a Barrett reduction ends it.
//
// On reflected operands, a carry-less multiply of an n-bit and an m-bit
// value gives their product reflected over n + m - 1 bits: every step below
// keeps track of that width.

namespace rdmasim::net::detail {

#ifdef RDMASIM_CRC32_CLMUL

namespace {

constexpr std::uint64_t kPoly = 0x104c11db7;

// v's low n bits in reverse order.
constexpr std::uint64_t reflect(std::uint64_t v, unsigned n) {
    std::uint64_t r = 0;
    for (unsigned i = 0; i < n; ++i) r |= ((v >> i) & 1u) << (n - 1 - i);
    return r;
}

// Times x, mod P (a < x^32).
constexpr std::uint64_t times_x(std::uint64_t a) {
    a <<= 1;
    return (a >> 32) != 0 ? a ^ kPoly : a;
}

constexpr std::uint64_t x_pow_mod(unsigned e) {
    std::uint64_t r = 1;
    for (unsigned i = 0; i < e; ++i) r = times_x(r);
    return r;
}

// floor(x^64 / P): long division, one dividend bit at a time.
constexpr std::uint64_t barrett_mu() {
    std::uint64_t rem = 0, q = 0;
    for (int i = 64; i >= 0; --i) {
        rem = (rem << 1) | (i == 64 ? 1u : 0u);
        q <<= 1;
        if ((rem >> 32) & 1u) {
            rem ^= kPoly;
            q |= 1u;
        }
    }
    return q;
}

constexpr std::uint64_t kK63 = reflect(x_pow_mod(63), 32); // 32 bits
constexpr std::uint64_t kMu = reflect(barrett_mu(), 33);   // 33 bits
constexpr std::uint64_t kP = reflect(kPoly, 33);           // 33 bits
// Cross-checked against a Python model of this function (zlib.crc32 as the oracle).
static_assert(kK63 == 0xb8bc6765 && kMu == 0x1f7011641 && kP == 0x1db710641);

constexpr std::size_t kChunks = kClmulShortEnd / 64;

// Per chunk c (0: the last 64 bytes) and lane l (0: the lowest address),
// the constants for the lane's low and high halves. The lane's first bit
// is e0 = 512 (c + 1) - 128 l - 1 bits from the end (counting from 0).
constexpr auto make_lane_constants() {
    std::array<std::array<std::uint64_t, 8>, kChunks> k{};
    for (unsigned c = 0; c < kChunks; ++c) {
        for (unsigned l = 0; l < 4; ++l) {
            const unsigned e0 = 512 * (c + 1) - 128 * l - 1;
            k[c][2 * l] = reflect(x_pow_mod(e0 - 31), 32);
            k[c][2 * l + 1] = reflect(x_pow_mod(e0 - 95), 32);
        }
    }
    return k;
}
alignas(64) constexpr auto kLane = make_lane_constants();

// x^(8 len) mod P, reflected: where the starting value, XORed into the
// first four bytes, ends up.
constexpr auto make_start_constants() {
    std::array<std::uint32_t, kClmulShortEnd> k{};
    std::uint64_t r = 1;
    for (std::size_t len = 0; len < k.size(); ++len) {
        k[len] = static_cast<std::uint32_t>(reflect(r, 32));
        for (int i = 0; i < 8; ++i) r = times_x(r);
    }
    return k;
}
constexpr auto kStart = make_start_constants();

#define RDMASIM_CLMUL_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul")))

} // namespace

bool crc32_clmul_short_supported() noexcept {
    __builtin_cpu_init(); // may run from a static initialiser, before libgcc's
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq") &&
           __builtin_cpu_supports("pclmul");
}

RDMASIM_CLMUL_TARGET std::uint32_t crc32_clmul_short(std::uint32_t crc, const std::uint8_t* p,
                                                     std::size_t len) noexcept {
    const std::size_t chunks = (len + 63) / 64;
    const auto end = reinterpret_cast<std::uintptr_t>(p + len);
    __m512i acc = _mm512_setzero_si512();
    for (std::size_t c = 0; c < chunks; ++c) {
        const auto* at = reinterpret_cast<const void*>(end - 64 * (c + 1));
        // The first chunk's bytes before p are masked off: not read, zero.
        const __m512i d = c + 1 < chunks
                              ? _mm512_loadu_si512(at)
                              : _mm512_maskz_loadu_epi8(~std::uint64_t{0} << (64 * chunks - len), at);
        const __m512i k = _mm512_load_si512(kLane[c].data());
        acc = _mm512_ternarylogic_epi64(acc, _mm512_clmulepi64_epi128(d, k, 0x00),
                                        _mm512_clmulepi64_epi128(d, k, 0x11), 0x96); // a ^ b ^ c
    }
    // The four lanes' XOR: halves swapped, then neighbours (lane orders 2301, 1032).
    acc = _mm512_xor_si512(acc, _mm512_shuffle_i64x2(acc, acc, 0x4e));
    acc = _mm512_xor_si512(acc, _mm512_shuffle_i64x2(acc, acc, 0xb1));
    __m128i s = _mm512_castsi512_si128(acc);
    // The starting value's part: 32 x 32 bits reflected over 63, moved to
    // the 95-bit alignment of the blocks' products.
    const __m128i start = _mm_clmulepi64_si128(_mm_cvtsi32_si128(static_cast<int>(~crc)),
                                               _mm_cvtsi32_si128(static_cast<int>(kStart[len])), 0x00);
    s = _mm_xor_si128(s, _mm_slli_si128(start, 4));
    // s holds T (degree < 95) reflected over 95 bits. Its low 64 bits are
    // A x^31 (A: 64 bits), the rest are already below x^31. A x^31 =
    // A1 x^63 + A0 x^31 -> G = A1 (x^63 mod P) + A0 x^31, 63 bits; then
    // Barrett: q = floor(floor(G / x^32) mu / x^32), R = (G + q P) mod x^32.
    // In vector registers throughout (a move to a general register and back
    // is 6 cycles more on every step); only lane 0 counts.
    const __m128i low32 = _mm_cvtsi32_si128(-1), low31 = _mm_cvtsi32_si128(0x7fffffff);
    const __m128i g = _mm_xor_si128(
        _mm_clmulepi64_si128(_mm_and_si128(s, low32), _mm_cvtsi64_si128(kK63), 0x00), _mm_srli_epi64(s, 32));
    const __m128i q = _mm_and_si128(
        _mm_clmulepi64_si128(_mm_and_si128(g, low31), _mm_cvtsi64_si128(kMu), 0x00), low31);
    const __m128i r = _mm_srli_epi64(_mm_xor_si128(g, _mm_clmulepi64_si128(q, _mm_cvtsi64_si128(kP), 0x00)), 31);
    const __m128i below = _mm_slli_epi64(_mm_unpackhi_epi64(s, s), 1); // T's terms below x^31
    return ~static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm_xor_si128(r, below)));
}

#else // not x86-64: crc32.cpp never chooses it

bool crc32_clmul_short_supported() noexcept { return false; }

std::uint32_t crc32_clmul_short(std::uint32_t crc, const std::uint8_t* p, std::size_t len) noexcept {
    return static_cast<std::uint32_t>(::libdeflate_crc32(crc, p, len));
}

#endif

} // namespace rdmasim::net::detail
