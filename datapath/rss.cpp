#include "datapath/rss.hpp"

#include <array>
#include <cstring>

#include <infiniband/verbs.h>

namespace rdmasim::datapath {

namespace {

void put_be16(std::uint8_t* out, std::uint16_t v) noexcept {
    out[0] = static_cast<std::uint8_t>(v >> 8);
    out[1] = static_cast<std::uint8_t>(v);
}

} // namespace

std::uint32_t rss_hash(const Toeplitz& toeplitz, std::uint64_t fields, net::Bytes frame,
                       const net::ParsedFrame& parsed) noexcept {
    // Bits this HCA cannot hash on (IPSEC_SPI, INNER), and the combinations the
    // device refuses at QP creation, select fields no frame can supply.
    if (fields == 0 || (fields & ~kRssKnownFields) != 0) return 0;
    if ((fields & kRssIpv4Fields) && (fields & kRssIpv6Fields)) return 0;
    if ((fields & kRssTcpFields) && (fields & kRssUdpFields)) return 0;

    std::array<std::uint8_t, Toeplitz::kMaxInput> input;
    std::size_t n = 0;
    auto append = [&](const std::uint8_t* p, std::size_t len) {
        std::memcpy(input.data() + n, p, len);
        n += len;
    };

    if (fields & kRssIpv4Fields) {
        if (parsed.l3 != net::L3Kind::ipv4) return 0;
        const auto ip = net::Ipv4View::at(frame, parsed.l3_offset);
        if (!ip) return 0;
        if (fields & IBV_RX_HASH_SRC_IPV4) append(ip->src_addr(), 4);
        if (fields & IBV_RX_HASH_DST_IPV4) append(ip->dst_addr(), 4);
    } else if (fields & kRssIpv6Fields) {
        if (parsed.l3 != net::L3Kind::ipv6) return 0;
        const auto ip = net::Ipv6View::at(frame, parsed.l3_offset);
        if (!ip) return 0;
        if (fields & IBV_RX_HASH_SRC_IPV6) append(ip->src_addr(), 16);
        if (fields & IBV_RX_HASH_DST_IPV6) append(ip->dst_addr(), 16);
    }

    if (const std::uint64_t port_bits = fields & (kRssTcpFields | kRssUdpFields); port_bits != 0) {
        const bool tcp = (port_bits & kRssTcpFields) != 0;
        if (parsed.ip_fragment || parsed.l4 != (tcp ? net::L4Kind::tcp : net::L4Kind::udp))
            return 0;
        const std::uint64_t src_bit = tcp ? IBV_RX_HASH_SRC_PORT_TCP : IBV_RX_HASH_SRC_PORT_UDP;
        const std::uint64_t dst_bit = tcp ? IBV_RX_HASH_DST_PORT_TCP : IBV_RX_HASH_DST_PORT_UDP;
        if (fields & src_bit) {
            put_be16(input.data() + n, parsed.src_port);
            n += 2;
        }
        if (fields & dst_bit) {
            put_be16(input.data() + n, parsed.dst_port);
            n += 2;
        }
    }
    return toeplitz.hash(std::span<const std::uint8_t>(input.data(), n));
}

} // namespace rdmasim::datapath
