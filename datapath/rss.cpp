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

// The index bits (RssGroup): for each, the parity of the input ANDed with its
// masks. One instance per input length in words, so the inner loop unrolls.
template <std::size_t W>
[[gnu::always_inline]] inline std::uint32_t index_bits(const Toeplitz::Words& w, const std::uint64_t* masks,
                         std::uint32_t bits) noexcept {
    std::uint32_t index = 0;
    for (std::uint32_t b = 0; b < bits; ++b, masks += W) {
        std::uint64_t x = 0;
        for (std::size_t i = 0; i < W; ++i) x ^= w[i] & masks[i];
        index |= static_cast<std::uint32_t>(__builtin_parityll(x)) << b;
    }
    return index;
}

} // namespace

std::uint32_t rss_hash(const Toeplitz& toeplitz, const RssInput& in, net::Bytes frame,
                       const net::ParsedFrame& parsed) noexcept {
    Toeplitz::Words w{};
    if (!input_words(in, frame, parsed, w)) return 0;
    return toeplitz.hash_words(w, std::size_t{in.addr_len} + in.port_len);
}

namespace {

// RssGroup::index for any CPU, and, on x86-64, one built for POPCNT (a parity
// in one instruction; configure() picks it where the CPU has it).
[[gnu::always_inline]] inline std::uint32_t index_of(const RssGroup& g, net::Bytes frame,
                                                     const net::ParsedFrame& parsed) noexcept {
    Toeplitz::Words w{};
    if (!input_words(g.input, frame, parsed, w)) return 0;
    const std::uint64_t* const m = g.masks.data();
    switch (g.words) {
    case 1: return index_bits<1>(w, m, g.log_size);
    case 2: return index_bits<2>(w, m, g.log_size);
    case 3: return index_bits<3>(w, m, g.log_size);
    case 4: return index_bits<4>(w, m, g.log_size);
    default: return index_bits<5>(w, m, g.log_size);
    }
}

#ifdef RDMASIM_RSS_POPCNT
__attribute__((target("popcnt"))) std::uint32_t
index_popcnt(const RssGroup& g, net::Bytes frame, const net::ParsedFrame& parsed) noexcept {
    return index_of(g, frame, parsed);
}
#endif

RssGroup::IndexFn best_index_fn() noexcept {
#ifdef RDMASIM_RSS_POPCNT
    __builtin_cpu_init(); // configure() may run from a static initialiser, before libgcc's
    if (__builtin_cpu_supports("popcnt")) return index_popcnt;
#endif
    return rss_index_portable;
}

} // namespace

std::uint32_t rss_index_portable(const RssGroup& g, net::Bytes frame,
                                 const net::ParsedFrame& parsed) noexcept {
    return index_of(g, frame, parsed);
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
    index_fn = best_index_fn();
    // Hash bit j meets key bit i + j at input bit i; input bit 64w + t sits at
    // bit 63 - t of word w. Only the input's own bits: the words are zero past it.
    for (std::uint32_t b = 0; b < log_size; ++b) {
        const std::size_t j = 31 - b;
        for (std::size_t i = 0; i < len * 8; ++i)
            masks[b * words + i / 64] |= key_bit(i + j) << (63 - i % 64);
    }
}

} // namespace rdmasim::datapath
