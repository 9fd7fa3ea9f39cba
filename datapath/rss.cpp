#include "datapath/rss.hpp"

#include <array>
#include <cstring>

#include <infiniband/verbs.h>

namespace rdmasim::datapath {

namespace {

// Where the source address sits in an IPv4 / IPv6 header (the destination follows it).
constexpr std::size_t kIpv4SrcOffset = 12;
constexpr std::size_t kIpv6SrcOffset = 8;

} // namespace

std::uint32_t rss_hash(const Toeplitz& toeplitz, std::uint64_t fields, net::Bytes frame,
                       const net::ParsedFrame& parsed) noexcept {
    // Bits this HCA cannot hash on (IPSEC_SPI, INNER), and the combinations the
    // device refuses at QP creation, select fields no frame can supply.
    if (fields == 0 || (fields & ~kRssKnownFields) != 0) return 0;
    if ((fields & kRssIpv4Fields) && (fields & kRssIpv6Fields)) return 0;
    if ((fields & kRssTcpFields) && (fields & kRssUdpFields)) return 0;

    const std::uint8_t* const ip = frame.data() + parsed.l3_offset;
    const std::uint64_t port_bits = fields & (kRssTcpFields | kRssUdpFields);
    // The selected fields, in hash input order (src IP, dst IP, src port, dst
    // port), as big-endian words. No field crosses a word: addresses sit at
    // multiples of their size, ports at even offsets within a word. The parse
    // vouches for the IP header (ParsedFrame::l3), so it is read in place.
    Toeplitz::Words in{};
    std::size_t n = 0;
    const auto put = [&](std::uint64_t value, std::size_t len) {
        in[n / 8] |= value << (64 - 8 * (n % 8 + len));
        n += len;
    };
    const auto be32 = [ip](std::size_t off) {
        std::uint32_t v;
        std::memcpy(&v, ip + off, 4);
        return std::uint64_t{__builtin_bswap32(v)};
    };
    const auto put_ipv6 = [&](std::size_t off) {
        std::uint64_t hi, lo;
        std::memcpy(&hi, ip + off, 8);
        std::memcpy(&lo, ip + off + 8, 8);
        put(__builtin_bswap64(hi), 8);
        put(__builtin_bswap64(lo), 8);
    };
    if (fields & kRssIpv4Fields) {
        if (parsed.l3 != net::L3Kind::ipv4) return 0;
        if (fields & IBV_RX_HASH_SRC_IPV4) put(be32(kIpv4SrcOffset), 4);
        if (fields & IBV_RX_HASH_DST_IPV4) put(be32(kIpv4SrcOffset + 4), 4);
    } else if (fields & kRssIpv6Fields) {
        if (parsed.l3 != net::L3Kind::ipv6) return 0;
        if (fields & IBV_RX_HASH_SRC_IPV6) put_ipv6(kIpv6SrcOffset);
        if (fields & IBV_RX_HASH_DST_IPV6) put_ipv6(kIpv6SrcOffset + 16);
    }

    if (port_bits != 0) {
        const bool tcp = (port_bits & kRssTcpFields) != 0;
        if (parsed.ip_fragment || parsed.l4 != (tcp ? net::L4Kind::tcp : net::L4Kind::udp))
            return 0;
        const std::uint64_t src_bit = tcp ? IBV_RX_HASH_SRC_PORT_TCP : IBV_RX_HASH_SRC_PORT_UDP;
        const std::uint64_t dst_bit = tcp ? IBV_RX_HASH_DST_PORT_TCP : IBV_RX_HASH_DST_PORT_UDP;
        if (fields & src_bit) put(parsed.src_port, 2);
        if (fields & dst_bit) put(parsed.dst_port, 2);
    }
    return toeplitz.hash_words(in, n);
}

} // namespace rdmasim::datapath
