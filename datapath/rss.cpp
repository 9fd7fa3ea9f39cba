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
    in.never = false;
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

// The hash input of `in` for this frame as Toeplitz::Words (big-endian, zero
// past the input), read in place: the parse vouches for the IP header
// (ParsedFrame::l3). False when the frame lacks a selected field (its hash is 0).
// An address run fills whole words but for one IPv4 address (the high half
// of word 0).
[[gnu::always_inline]] inline bool input_words(const RssInput& in, net::Bytes frame,
                                               const net::ParsedFrame& parsed,
                                               Toeplitz::Words& w) noexcept {
    // A fragment has l4 none (the parse reads no ports of one).
    if (in.never || (in.l3 != net::L3Kind::none && parsed.l3 != in.l3) ||
        (in.l4 != net::L4Kind::none && parsed.l4 != in.l4))
        return false;
    const std::uint8_t* const addr = frame.data() + parsed.l3_offset + in.addr_offset;
    const auto be64 = [addr](std::size_t off) {
        std::uint64_t v;
        std::memcpy(&v, addr + off, 8);
        return __builtin_bswap64(v);
    };
    switch (in.addr_len) {
    case 4: {
        std::uint32_t v;
        std::memcpy(&v, addr, 4);
        w[0] = std::uint64_t{__builtin_bswap32(v)} << 32;
        break;
    }
    case 32:
        w[2] = be64(16);
        w[3] = be64(24);
        [[fallthrough]];
    case 16:
        w[1] = be64(8);
        [[fallthrough]];
    case 8:
        w[0] = be64(0);
        break;
    default:
        break;
    }
    if (in.port_len != 0) {
        const std::uint64_t ports =
            in.port_len == 4 ? std::uint64_t{parsed.src_port} << 16 | parsed.dst_port
                             : (in.dst_port_only ? parsed.dst_port : parsed.src_port);
        // After the addresses: at byte addr_len % 8 of word addr_len / 8.
        w[in.addr_len / 8] |= ports << (64 - 8 * (in.addr_len % 8 + in.port_len));
    }
    return true;
}

} // namespace

std::uint32_t rss_hash(const Toeplitz& toeplitz, const RssInput& in, net::Bytes frame,
                       const net::ParsedFrame& parsed) noexcept {
    Toeplitz::Words w{};
    if (!input_words(in, frame, parsed, w)) return 0;
    return toeplitz.hash_words(w, std::size_t{in.addr_len} + in.port_len);
}

namespace {

// The entry (RssGroup::index): one instance per input shape, `A` address
// bytes (0, 4, 8, 16 or 32) and ports `P` (0 none, 1 the source, 2 the
// destination, 3 both), so that the input's words are built without a branch
// and the parities unroll over them. Same input as input_words(), which
// rss_hash() uses and tests/datapath/test_rss.cpp holds these to.
template <std::size_t A, unsigned P>
[[gnu::always_inline]] inline std::uint32_t index_shaped(const RssGroup& g, net::Bytes frame,
                                                         const net::ParsedFrame& parsed) noexcept {
    constexpr std::size_t kPortLen = P == 3 ? 4 : P != 0 ? 2 : 0;
    constexpr std::size_t kWords = (A + kPortLen + 7) / 8;
    const RssInput& in = g.input;
    // A fragment has l4 none (the parse reads no ports of one).
    if ((A != 0 && parsed.l3 != in.l3) || (P != 0 && parsed.l4 != in.l4)) return 0;
    std::array<std::uint64_t, kWords> w{};
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
        w[A / 8] |= ports << (64 - 8 * (A % 8 + kPortLen));
    }
    // Entry bit b: the parity of the input ANDed with that bit's masks.
    const std::uint64_t* m = g.masks.data();
    std::uint32_t index = 0;
    for (std::uint32_t b = 0; b < g.log_size; ++b, m += kWords) {
        std::uint64_t x = 0;
        for (std::size_t i = 0; i < kWords; ++i) x ^= w[i] & m[i];
        index |= static_cast<std::uint32_t>(__builtin_parityll(x)) << b;
    }
    return index;
}

std::uint32_t index_never(const RssGroup&, net::Bytes, const net::ParsedFrame&) noexcept { return 0; }

template <std::size_t A, unsigned P>
std::uint32_t index_portable(const RssGroup& g, net::Bytes frame, const net::ParsedFrame& parsed) noexcept {
    return index_shaped<A, P>(g, frame, parsed);
}

#ifdef RDMASIM_RSS_POPCNT
// Built for POPCNT (a parity in one instruction); configure() takes it where the CPU has it.
template <std::size_t A, unsigned P>
__attribute__((target("popcnt"))) std::uint32_t
index_popcnt(const RssGroup& g, net::Bytes frame, const net::ParsedFrame& parsed) noexcept {
    return index_shaped<A, P>(g, frame, parsed);
}
#endif

template <std::size_t A, unsigned P>
struct Portable { static constexpr RssGroup::IndexFn fn = index_portable<A, P>; };
#ifdef RDMASIM_RSS_POPCNT
template <std::size_t A, unsigned P>
struct Popcnt { static constexpr RssGroup::IndexFn fn = index_popcnt<A, P>; };
#endif

// The instance of family F (Portable or Popcnt) for `in`: rows by address
// bytes (0, 4, 8, 16, 32), columns by ports (none, source, destination, both).
template <template <std::size_t, unsigned> class F>
RssGroup::IndexFn pick_shape(const RssInput& in) noexcept {
    if (in.never) return index_never;
    static constexpr RssGroup::IndexFn kTable[5][4] = {
        {index_never, F<0, 1>::fn, F<0, 2>::fn, F<0, 3>::fn},
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

std::uint32_t rss_index_portable(const RssGroup& g, net::Bytes frame,
                                 const net::ParsedFrame& parsed) noexcept {
    if (g.log_size == 0) return 0;
    return pick_shape<Portable>(g.input)(g, frame, parsed);
}

void RssGroup::configure(std::span<const std::uint8_t, Toeplitz::kKeyLen> key,
                         std::uint64_t fields_mask, std::uint32_t log_table_size) {
    log_size = log_table_size;
    fields = fields_mask;
    input = RssInput::of(fields_mask);
    const std::size_t len = input.never ? 0 : std::size_t{input.addr_len} + input.port_len;
    words = static_cast<std::uint32_t>((len + 7) / 8);
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
