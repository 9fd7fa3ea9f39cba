#include "datapath/rss.hpp"

#include <array>
#include <cstring>

#include <infiniband/verbs.h>

namespace rdmasim::datapath {

std::uint32_t rss_hash(const Toeplitz& toeplitz, std::uint64_t fields, net::Bytes frame,
                       const net::ParsedFrame& parsed) noexcept {
    // Bits this HCA cannot hash on (IPSEC_SPI, INNER), and the combinations the
    // device refuses at QP creation, select fields no frame can supply.
    if (fields == 0 || (fields & ~kRssKnownFields) != 0) return 0;
    if ((fields & kRssIpv4Fields) && (fields & kRssIpv6Fields)) return 0;
    if ((fields & kRssTcpFields) && (fields & kRssUdpFields)) return 0;

    // Each selected field is hashed where it lies (Toeplitz::share), at its
    // position in the input: src IP, dst IP, src port, dst port.
    std::uint32_t h = 0;
    std::size_t pos = 0;
    if (fields & kRssIpv4Fields) {
        if (parsed.l3 != net::L3Kind::ipv4) return 0;
        const auto ip = net::Ipv4View::at(frame, parsed.l3_offset);
        if (!ip) return 0;
        if (fields & IBV_RX_HASH_SRC_IPV4) {
            h ^= toeplitz.share(pos, ip->src_addr(), 4);
            pos += 4;
        }
        if (fields & IBV_RX_HASH_DST_IPV4) {
            h ^= toeplitz.share(pos, ip->dst_addr(), 4);
            pos += 4;
        }
    } else if (fields & kRssIpv6Fields) {
        if (parsed.l3 != net::L3Kind::ipv6) return 0;
        const auto ip = net::Ipv6View::at(frame, parsed.l3_offset);
        if (!ip) return 0;
        if (fields & IBV_RX_HASH_SRC_IPV6) {
            h ^= toeplitz.share(pos, ip->src_addr(), 16);
            pos += 16;
        }
        if (fields & IBV_RX_HASH_DST_IPV6) {
            h ^= toeplitz.share(pos, ip->dst_addr(), 16);
            pos += 16;
        }
    }

    if (const std::uint64_t port_bits = fields & (kRssTcpFields | kRssUdpFields); port_bits != 0) {
        const bool tcp = (port_bits & kRssTcpFields) != 0;
        if (parsed.ip_fragment || parsed.l4 != (tcp ? net::L4Kind::tcp : net::L4Kind::udp))
            return 0;
        const std::uint64_t src_bit = tcp ? IBV_RX_HASH_SRC_PORT_TCP : IBV_RX_HASH_SRC_PORT_UDP;
        const std::uint64_t dst_bit = tcp ? IBV_RX_HASH_DST_PORT_TCP : IBV_RX_HASH_DST_PORT_UDP;
        if (fields & src_bit) {
            h ^= toeplitz.share16(pos, parsed.src_port);
            pos += 2;
        }
        if (fields & dst_bit) h ^= toeplitz.share16(pos, parsed.dst_port);
    }
    return h;
}

} // namespace rdmasim::datapath
