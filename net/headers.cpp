#include "net/headers.hpp"

#include <bit>
#include <cstring>

namespace rdmasim::net {

namespace {

using detail::fits;
using detail::load_be16;

std::uint16_t fold(std::uint64_t sum) noexcept;

// One's complement sum (RFC 1071) of `len` bytes at p, added to `sum`; an odd
// trailing byte is padded with zero. The bytes are summed 32 bits at a time in
// host order and the folded result turned into network order once (the sum
// is byte-order independent, RFC 1071 section 2(B)).
std::uint64_t ones_sum(const std::uint8_t* p, std::size_t len, std::uint64_t sum) noexcept {
    std::uint64_t acc = 0;
    for (; len >= 4; p += 4, len -= 4) {
        std::uint32_t w;
        std::memcpy(&w, p, 4);
        acc += w;
    }
    if (len >= 2) {
        std::uint16_t h;
        std::memcpy(&h, p, 2);
        acc += h;
        p += 2;
        len -= 2;
    }
    std::uint16_t tail[1] = {0};
    if (len) {
        std::memcpy(tail, p, 1); // the odd byte, then a zero byte, in memory order
        acc += tail[0];
    }
    std::uint16_t folded = fold(acc);
    if constexpr (std::endian::native == std::endian::little)
        folded = static_cast<std::uint16_t>(folded >> 8 | folded << 8);
    return sum + folded;
}

std::uint16_t fold(std::uint64_t sum) noexcept {
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(sum);
}

} // namespace

bool Ipv4View::header_checksum_ok() const noexcept {
    return fold(ones_sum(p_, header_len(), 0)) == 0xffff;
}

ParsedFrame parse_frame(Bytes frame) noexcept {
    ParsedFrame out;
    const auto eth = EthernetView::at(frame);
    if (!eth) return out;
    out.ether_type = eth->ether_type();
    out.l3_offset = kEthHeaderLen;
    if (out.ether_type == kEtherTypeVlan) {
        // A cut-off tag leaves ether_type at 0x8100 and has_vlan false.
        const auto vlan = VlanView::at(frame, kEthHeaderLen);
        if (!vlan) return out;
        out.has_vlan = true;
        out.vlan_tci = vlan->tci();
        out.ether_type = vlan->inner_ether_type();
        out.l3_offset = kEthHeaderLen + kVlanTagLen;
    }

    std::size_t l4_offset = 0;
    if (out.ether_type == kEtherTypeIpv4) {
        const auto ip = Ipv4View::at(frame, out.l3_offset);
        if (!ip) return out;
        out.l3 = L3Kind::ipv4;
        out.ip_proto = ip->protocol();
        out.ip_fragment = ip->is_fragment();
        if (out.ip_fragment) return out;
        l4_offset = out.l3_offset + ip->header_len();
    } else if (out.ether_type == kEtherTypeIpv6) {
        const auto ip = Ipv6View::at(frame, out.l3_offset);
        if (!ip) return out;
        out.l3 = L3Kind::ipv6;
        out.ip_proto = ip->next_header();
        l4_offset = out.l3_offset + 40;
    } else {
        return out;
    }
    // l4_offset: where the L3 payload starts, for any protocol.
    out.l4_offset = static_cast<std::uint16_t>(l4_offset);

    if (out.ip_proto == kIpProtoTcp) {
        if (const auto tcp = TcpView::at(frame, l4_offset)) {
            out.l4 = L4Kind::tcp;
            out.src_port = tcp->src_port();
            out.dst_port = tcp->dst_port();
        }
    } else if (out.ip_proto == kIpProtoUdp) {
        if (const auto udp = UdpView::at(frame, l4_offset)) {
            out.l4 = L4Kind::udp;
            out.src_port = udp->src_port();
            out.dst_port = udp->dst_port();
        }
    }
    return out;
}

bool ip_checksums_ok(Bytes frame, const ParsedFrame& parsed) noexcept {
    if (parsed.l3 != L3Kind::ipv4) return false;
    const auto ip = Ipv4View::at(frame, parsed.l3_offset);
    if (!ip || !ip->header_checksum_ok()) return false;
    const std::size_t hlen = ip->header_len();
    const std::size_t total = ip->total_len();
    // The datagram must be consistent and lie inside the frame (padding may follow).
    if (total < hlen || !fits(frame, parsed.l3_offset, total)) return false;
    // Only a whole TCP or UDP datagram has an L4 checksum the hardware checks.
    if (ip->is_fragment()) return false;

    const std::uint8_t proto = ip->protocol();
    if (proto != kIpProtoTcp && proto != kIpProtoUdp) return false;

    const std::uint8_t* seg = ip->data() + hlen;
    std::size_t seg_len = total - hlen;
    if (proto == kIpProtoUdp) {
        if (seg_len < 8) return false;
        if (load_be16(seg + 6) == 0) return true; // sender computed no checksum
        // RFC 768: the UDP length bounds the datagram; it may not exceed the IP payload.
        const std::size_t udp_len = load_be16(seg + 4);
        if (udp_len < 8 || udp_len > seg_len) return false;
        seg_len = udp_len;
    } else if (seg_len < 20) {
        return false;
    }

    std::uint64_t sum = ones_sum(ip->src_addr(), 8, 0); // source and destination address
    sum += proto;
    sum += seg_len;
    sum = ones_sum(seg, seg_len, sum);
    return fold(sum) == 0xffff;
}

} // namespace rdmasim::net
