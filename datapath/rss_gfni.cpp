// RssGroup::index with GFNI (x86: GF2P8AFFINEQB over AVX-512 registers):
// the whole Toeplitz hash in a few instructions, whatever the table size.
//
// Toeplitz is linear over GF(2), and what input byte p adds to hash byte k
// (most significant first) depends only on q = p + k: it is M_q(in[p]),
// where M_q maps bit j of a byte (most significant first) to the key bits
// [8q + j, 8q + j + 8). So lane q of a register (one 64-bit lane per q)
// holds the input bytes in[q - k] at its bytes k = 0..3, GF2P8AFFINEQB
// applies M_q to each, and the XOR of every lane is the hash, byte k at byte
// k. GF2P8AFFINEQB makes result bit i the parity of matrix byte 7 - i ANDed
// with the data byte, so M_q's byte r is the key's byte-wide window at bit
// 8q + r (RssGroup::configure lays them out in RssGroup::lanes).
#include "datapath/rss_shapes.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RDMASIM_RSS_GFNI 1
#include <immintrin.h>
#endif

#include <array>
#include <cstdint>

namespace rdmasim::datapath::rss_detail {

#ifdef RDMASIM_RSS_GFNI
namespace {

constexpr std::size_t kLanesPerReg = 8;

// Register z's byte permutation: lane q = 8z + l gets in[q - k] at byte k
// (k < 4); kPickMask[z] zeroes the other bytes and those with q - k < 0.
// The input register is zero past the input, so lanes past it add nothing.
struct Picks {
    std::array<std::array<std::uint8_t, 64>, RssGroup::kLaneRegs> index{};
    std::array<std::uint64_t, RssGroup::kLaneRegs> mask{};
};
constexpr Picks make_picks() {
    Picks p;
    for (std::size_t z = 0; z < RssGroup::kLaneRegs; ++z)
        for (std::size_t l = 0; l < kLanesPerReg; ++l)
            for (std::size_t k = 0; k < 4; ++k) {
                const std::size_t q = z * kLanesPerReg + l;
                if (q < k) continue;
                p.index[z][8 * l + k] = static_cast<std::uint8_t>(q - k);
                p.mask[z] |= std::uint64_t{1} << (8 * l + k);
            }
    return p;
}
constexpr Picks kPicks = make_picks();

#define RDMASIM_GFNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vbmi,gfni")))

template <std::size_t A, unsigned P>
RDMASIM_GFNI_TARGET std::uint32_t index_gfni(const RssGroup& g, net::Bytes frame,
                                             const net::ParsedFrame& parsed) noexcept {
    const RssInput& in = g.input;
    // As shaped_input (rss.cpp): a frame lacking a selected field hashes to 0.
    if ((A != 0 && parsed.l3 != in.l3) || (P != 0 && parsed.l4 != in.l4)) return 0;
    // The input bytes, zero past them: the addresses read in place (a masked
    // load touches no byte outside its mask), the ports after them.
    __m512i input = _mm512_setzero_si512();
    if constexpr (A != 0)
        input = _mm512_maskz_loadu_epi8((std::uint64_t{1} << A) - 1,
                                        frame.data() + parsed.l3_offset + in.addr_offset);
    if constexpr (P != 0) {
        const auto be = [](std::uint16_t v) { return std::uint32_t{__builtin_bswap16(v)}; };
        const std::uint32_t ports = P == 3   ? be(parsed.src_port) | be(parsed.dst_port) << 16
                                    : P == 2 ? be(parsed.dst_port)
                                             : be(parsed.src_port);
        input = _mm512_mask_set1_epi32(input, static_cast<__mmask16>(1u << (A / 4)),
                                       static_cast<int>(ports));
    }
    // Lanes q = 0 .. n + 2 for n input bytes.
    constexpr std::size_t kRegs = (A + kPortLen<P> + 3 + kLanesPerReg - 1) / kLanesPerReg;
    static_assert(kRegs <= RssGroup::kLaneRegs);
    __m512i acc = _mm512_setzero_si512();
    for (std::size_t z = 0; z < kRegs; ++z) {
        const __m512i picked = _mm512_maskz_permutexvar_epi8(
            kPicks.mask[z], _mm512_loadu_si512(kPicks.index[z].data()), input);
        const __m512i m = _mm512_loadu_si512(&g.lanes[z * kLanesPerReg]);
        acc = _mm512_xor_si512(acc, _mm512_gf2p8affine_epi64_epi8(picked, m, 0));
    }
    // (Zero-masked extracts: GCC 12's plain ones warn of an uninitialised operand.)
    const __m256i a = _mm256_xor_si256(_mm512_maskz_extracti64x4_epi64(0xf, acc, 0),
                                       _mm512_maskz_extracti64x4_epi64(0xf, acc, 1));
    const __m128i b = _mm_xor_si128(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
    const auto bytes = static_cast<std::uint32_t>(_mm_cvtsi128_si64(b) ^ _mm_extract_epi64(b, 1));
    return __builtin_bswap32(bytes) & ((1u << g.log_size) - 1u);
}

template <std::size_t A, unsigned P> struct Gfni {
    static constexpr RssGroup::IndexFn fn = index_gfni<A, P>;
};

} // namespace

RssGroup::IndexFn gfni_index_fn(const RssInput& in) noexcept {
    __builtin_cpu_init(); // configure() may run from a static initialiser, before libgcc's
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vbmi") || !__builtin_cpu_supports("gfni"))
        return nullptr;
    return pick_shape<Gfni>(in);
}
#else
RssGroup::IndexFn gfni_index_fn(const RssInput&) noexcept { return nullptr; }
#endif

} // namespace rdmasim::datapath::rss_detail
