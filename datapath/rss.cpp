#include "datapath/rss.hpp"

#include <array>
#include <cstring>

#include <infiniband/verbs.h>

#include "datapath/rss_shapes.hpp"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RDMASIM_RSS_POPCNT 1
#endif

namespace rdmasim::datapath {

namespace {

// Where the source address sits in an IPv4 / IPv6 header (the destination follows it).
constexpr std::size_t kIpv4SrcOffset = 12;
constexpr std::size_t kIpv6SrcOffset = 8;

} // namespace

RssInput RssInput::of(std::uint64_t fields) noexcept {
    RssInput in;
    // Bits this HCA cannot hash on (IPSEC_SPI, INNER), and the combinations the
    // device refuses at QP creation, select fields no frame can supply.
    if (fields == 0 || (fields & ~kRssKnownFields) != 0) return in;
    if ((fields & kRssIpv4Fields) && (fields & kRssIpv6Fields)) return in;
    if ((fields & kRssTcpFields) && (fields & kRssUdpFields)) return in;
    const auto addresses = [&in](net::L3Kind l3, std::size_t src_offset, std::size_t len,
                                 bool src, bool dst) {
        in.l3 = l3;
        in.addr_offset = static_cast<std::uint8_t>(src ? src_offset : src_offset + len);
        in.addr_len = static_cast<std::uint8_t>(len * (src + dst));
    };
    if (fields & kRssIpv4Fields)
        addresses(net::L3Kind::ipv4, kIpv4SrcOffset, 4, fields & IBV_RX_HASH_SRC_IPV4,
                  fields & IBV_RX_HASH_DST_IPV4);
    else if (fields & kRssIpv6Fields)
        addresses(net::L3Kind::ipv6, kIpv6SrcOffset, 16, fields & IBV_RX_HASH_SRC_IPV6,
                  fields & IBV_RX_HASH_DST_IPV6);
    if (const std::uint64_t ports = fields & (kRssTcpFields | kRssUdpFields); ports != 0) {
        const bool tcp = (ports & kRssTcpFields) != 0;
        const bool src = ports & (IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_SRC_PORT_UDP);
        const bool dst = ports & (IBV_RX_HASH_DST_PORT_TCP | IBV_RX_HASH_DST_PORT_UDP);
        in.l4 = tcp ? net::L4Kind::tcp : net::L4Kind::udp;
        in.port_len = static_cast<std::uint8_t>(2 * (src + dst));
        in.dst_port_only = dst && !src;
    }
    return in;
}

namespace {

using rss_detail::kInputWords;
using rss_detail::kPortLen;
using rss_detail::pick_shape;

// The input of `in` for one frame, per input shape: `A` address bytes (0, 4,
// 8, 16 or 32) and ports `P` (0 none, 1 the source, 2 the destination, 3
// both), so that the words are built without a branch. Big-endian words,
// read in place (the parse vouches for the IP header, ParsedFrame::l3); `w`
// holds kInputWords<A, P> of them, zeroed. False when the frame lacks a
// selected field (its hash is 0). An address run fills whole words but for
// one IPv4 address (the high half of word 0). Shape <0, 0> is a mask that
// selects nothing (RssInput::of): no input, hash 0.
template <std::size_t A, unsigned P>
[[gnu::always_inline]] inline bool shaped_input(const RssInput& in, net::Bytes frame,
                                                const net::ParsedFrame& parsed,
                                                std::uint64_t* w) noexcept {
    // A fragment has l4 none (the parse reads no ports of one).
    if ((A != 0 && parsed.l3 != in.l3) || (P != 0 && parsed.l4 != in.l4)) return false;
    const std::uint8_t* const addr = frame.data() + parsed.l3_offset + in.addr_offset;
    if constexpr (A == 4) {
        std::uint32_t v;
        std::memcpy(&v, addr, 4);
        w[0] = std::uint64_t{__builtin_bswap32(v)} << 32;
    } else {
        for (std::size_t i = 0; i < A / 8; ++i) {
            std::uint64_t v;
            std::memcpy(&v, addr + 8 * i, 8);
            w[i] = __builtin_bswap64(v);
        }
    }
    if constexpr (P != 0) {
        const std::uint64_t ports = P == 3 ? std::uint64_t{parsed.src_port} << 16 | parsed.dst_port
                                    : P == 2 ? parsed.dst_port
                                             : parsed.src_port;
        w[A / 8] |= ports << (64 - 8 * (A % 8 + kPortLen<P>));
    }
    return true;
}

// The whole hash (rss_hash), per shape.
template <std::size_t A, unsigned P>
std::uint32_t hash_shaped(const Toeplitz& toeplitz, const RssInput& in, net::Bytes frame,
                          const net::ParsedFrame& parsed) noexcept {
    Toeplitz::Words w{};
    if (!shaped_input<A, P>(in, frame, parsed, w.data())) return 0;
    return toeplitz.hash_words(w, A + kPortLen<P>);
}

// The entry (RssGroup::index), per shape: entry bit b is the parity of the
// input ANDed with that bit's masks; the parities unroll over the words.
template <std::size_t A, unsigned P>
[[gnu::always_inline]] inline std::uint32_t index_shaped(const RssGroup& g, net::Bytes frame,
                                                         const net::ParsedFrame& parsed) noexcept {
    constexpr std::size_t kWords = kInputWords<A, P>;
    std::array<std::uint64_t, kWords> w{};
    if (!shaped_input<A, P>(g.input, frame, parsed, w.data())) return 0;
    const std::uint64_t* m = g.masks.data();
    std::uint32_t index = 0;
    for (std::uint32_t b = 0; b < g.log_size; ++b, m += kWords) {
        std::uint64_t x = 0;
        for (std::size_t i = 0; i < kWords; ++i) x ^= w[i] & m[i];
        index |= static_cast<std::uint32_t>(__builtin_parityll(x)) << b;
    }
    return index;
}

// The families of per-shape functions pick_shape() chooses from.
template <std::size_t A, unsigned P> struct Hash {
    static constexpr auto fn = hash_shaped<A, P>;
};
template <std::size_t A, unsigned P>
std::uint32_t index_portable(const RssGroup& g, net::Bytes frame, const net::ParsedFrame& parsed) noexcept {
    return index_shaped<A, P>(g, frame, parsed);
}
template <std::size_t A, unsigned P> struct Portable {
    static constexpr RssGroup::IndexFn fn = index_portable<A, P>;
};
#ifdef RDMASIM_RSS_POPCNT
// Built for POPCNT (a parity in one instruction); configure() takes it where the CPU has it.
template <std::size_t A, unsigned P>
__attribute__((target("popcnt"))) std::uint32_t
index_popcnt(const RssGroup& g, net::Bytes frame, const net::ParsedFrame& parsed) noexcept {
    return index_shaped<A, P>(g, frame, parsed);
}
template <std::size_t A, unsigned P> struct Popcnt {
    static constexpr RssGroup::IndexFn fn = index_popcnt<A, P>;
};
#endif

// Code `code`'s function for `in`'s shape, or nullptr where the CPU lacks it.
RssGroup::IndexFn index_fn_of(RssCode code, const RssInput& in) noexcept {
    switch (code) {
    case RssCode::portable:
        return pick_shape<Portable>(in);
    case RssCode::popcnt:
#ifdef RDMASIM_RSS_POPCNT
        __builtin_cpu_init(); // configure() may run from a static initialiser, before libgcc's
        if (__builtin_cpu_supports("popcnt")) return pick_shape<Popcnt>(in);
#endif
        return nullptr;
    case RssCode::gfni:
        return rss_detail::gfni_index_fn(in);
    }
    return nullptr;
}

// The fastest code for a group: the masks' cost grows with the table
// (log_size parities) times the input words, GFNI's does not, but it starts
// higher. Crossed at about 8 word-parities (tests/bench/rss_bench.cpp on a
// Zen 4: IPv4 4-tuple, 2 words, from 2^4 entries; IPv6, 5 words, from 2^2).
RssGroup::IndexFn best_index_fn(const RssInput& in, std::uint32_t log_size) noexcept {
    const std::size_t words = (std::size_t{in.addr_len} + in.port_len + 7) / 8;
    if (log_size * words >= 8)
        if (const auto fn = index_fn_of(RssCode::gfni, in)) return fn;
    if (const auto fn = index_fn_of(RssCode::popcnt, in)) return fn;
    return pick_shape<Portable>(in);
}

} // namespace

std::uint32_t rss_hash(const Toeplitz& toeplitz, const RssInput& in, net::Bytes frame,
                       const net::ParsedFrame& parsed) noexcept {
    return pick_shape<Hash>(in)(toeplitz, in, frame, parsed);
}

std::uint32_t rss_index_portable(const RssGroup& g, net::Bytes frame,
                                 const net::ParsedFrame& parsed) noexcept {
    return pick_shape<Portable>(g.input)(g, frame, parsed);
}

bool rss_code_available(RssCode code) noexcept { return index_fn_of(code, RssInput{}) != nullptr; }

bool RssGroup::use(RssCode code) noexcept {
    const auto fn = index_fn_of(code, input);
    if (fn != nullptr) index_fn = fn;
    return fn != nullptr;
}

void RssGroup::configure(std::span<const std::uint8_t, Toeplitz::kKeyLen> key,
                         std::uint64_t fields, std::uint32_t log_table_size) {
    log_size = log_table_size;
    input = RssInput::of(fields);
    const std::size_t len = std::size_t{input.addr_len} + input.port_len; // 0: selects nothing
    const std::size_t words = (len + 7) / 8; // as kInputWords of the input's shape
    // Key bit k (k = 0: the most significant bit of key[0]); none past the key.
    const auto key_bit = [&key](std::size_t k) -> std::uint64_t {
        return k < key.size() * 8 ? (key[k / 8] >> (7 - k % 8)) & 1u : 0;
    };
    masks.assign(std::size_t{log_size} * words, 0);
    for (std::size_t q = 0; q < lanes.size(); ++q) {
        std::uint64_t m = 0;
        for (std::size_t r = 0; r < 8; ++r)
            for (std::size_t j = 0; j < 8; ++j) m |= key_bit(8 * q + r + j) << (8 * r + 7 - j);
        lanes[q] = m;
    }
    index_fn = best_index_fn(input, log_size);
    // Hash bit j meets key bit i + j at input bit i; input bit 64w + t sits at
    // bit 63 - t of word w. Only the input's own bits: the words are zero past it.
    for (std::uint32_t b = 0; b < log_size; ++b) {
        const std::size_t j = 31 - b;
        for (std::size_t i = 0; i < len * 8; ++i)
            masks[b * words + i / 64] |= key_bit(i + j) << (63 - i % 64);
    }
}

} // namespace rdmasim::datapath
