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

std::uint32_t rss_hash(const Toeplitz& toeplitz, const RssInput& in, net::Bytes frame,
                       const net::ParsedFrame& parsed) noexcept {
    // A fragment has l4 none (the parse reads no ports of one).
    if (in.never || (in.l3 != net::L3Kind::none && parsed.l3 != in.l3) ||
        (in.l4 != net::L4Kind::none && parsed.l4 != in.l4))
        return 0;
    // The input as big-endian words, read in place: the parse vouches for the
    // IP header (ParsedFrame::l3). An address run fills whole words but for
    // one IPv4 address (the high half of word 0).
    Toeplitz::Words w{};
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
    return toeplitz.hash_words(w, std::size_t{in.addr_len} + in.port_len);
}

} // namespace rdmasim::datapath
