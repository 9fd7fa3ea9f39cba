#include "datapath/rss.hpp"

#include <array>
#include <cstring>

#include <infiniband/verbs.h>

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

// Bytes of ports, and 8-byte words of input, of a shape (below).
template <unsigned P> constexpr std::size_t kPortLen = P == 3 ? 4 : P != 0 ? 2 : 0;
template <std::size_t A, unsigned P> constexpr std::size_t kInputWords = (A + kPortLen<P> + 7) / 8;

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
        // Unrolled (as the parity loop below): GCC -O2 kept both loops and
        // the words on the stack: an IPv6 4-tuple's entry in a 4-entry table
        // took 138 instructions, 81 unrolled (cachegrind).
#pragma GCC unroll 4
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
#pragma GCC unroll 5
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

// Family F's function for `in`'s shape: rows by address bytes (0, 4, 8, 16,
// 32), columns by ports (none, source, destination, both).
template <template <std::size_t, unsigned> class F>
auto pick_shape(const RssInput& in) noexcept {
    static constexpr decltype(F<0, 0>::fn) kTable[5][4] = {
        {F<0, 0>::fn, F<0, 1>::fn, F<0, 2>::fn, F<0, 3>::fn},
        {F<4, 0>::fn, F<4, 1>::fn, F<4, 2>::fn, F<4, 3>::fn},
        {F<8, 0>::fn, F<8, 1>::fn, F<8, 2>::fn, F<8, 3>::fn},
        {F<16, 0>::fn, F<16, 1>::fn, F<16, 2>::fn, F<16, 3>::fn},
        {F<32, 0>::fn, F<32, 1>::fn, F<32, 2>::fn, F<32, 3>::fn}};
    const std::size_t row = in.addr_len == 0 ? 0 : in.addr_len == 4 ? 1 : in.addr_len == 8 ? 2
                          : in.addr_len == 16 ? 3 : 4;
    const unsigned col = in.port_len == 4 ? 3 : in.port_len == 0 ? 0 : in.dst_port_only ? 2 : 1;
    return kTable[row][col];
}

RssGroup::IndexFn best_index_fn(const RssInput& in) noexcept {
#ifdef RDMASIM_RSS_POPCNT
    __builtin_cpu_init(); // configure() may run from a static initialiser, before libgcc's
    if (__builtin_cpu_supports("popcnt")) return pick_shape<Popcnt>(in);
#endif
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
    index_fn = best_index_fn(input);
    // Hash bit j meets key bit i + j at input bit i; input bit 64w + t sits at
    // bit 63 - t of word w. Only the input's own bits: the words are zero past it.
    for (std::uint32_t b = 0; b < log_size; ++b) {
        const std::size_t j = 31 - b;
        for (std::size_t i = 0; i < len * 8; ++i)
            masks[b * words + i / 64] |= key_bit(i + j) << (63 - i % 64);
    }
}

} // namespace rdmasim::datapath
