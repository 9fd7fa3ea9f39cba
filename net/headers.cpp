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
    // The views' checks, written out on raw offsets: one length check per
    // header, each field stored once (the datapath parses every frame).
    ParsedFrame out;
    const std::uint8_t* const p = frame.data();
    const std::size_t size = frame.size();
    if (size < kEthHeaderLen) return out;
    std::size_t l3 = kEthHeaderLen;
    std::uint16_t type = load_be16(p + 12);
    if (type == kEtherTypeVlan) {
        if (size < kEthHeaderLen + kVlanTagLen) { // a cut-off tag: has_vlan stays false
            out.ether_type = type;
            out.l3_offset = static_cast<std::uint16_t>(l3);
            return out;
        }
        out.has_vlan = true;
        out.vlan_tci = load_be16(p + kEthHeaderLen);
        type = load_be16(p + kEthHeaderLen + 2);
        l3 += kVlanTagLen;
    }
    out.ether_type = type;
    out.l3_offset = static_cast<std::uint16_t>(l3);
    const std::uint8_t* const ip = p + l3;
    const std::size_t room = size - l3; // bytes from the L3 header on
    std::size_t l4;
    std::uint8_t proto;
    if (type == kEtherTypeIpv4) {
        if (room < 20) return out;
        const std::size_t hlen = std::size_t{ip[0] & 0x0fu} * 4;
        if ((ip[0] >> 4) != 4 || hlen < 20 || room < hlen) return out;
        proto = ip[9];
        out.l3 = L3Kind::ipv4;
        out.ip_proto = proto;
        if ((load_be16(ip + 6) & 0x3fff) != 0) { // MF or a fragment offset
            out.ip_fragment = true;
            return out;
        }
        l4 = l3 + hlen;
    } else if (type == kEtherTypeIpv6) {
        if (room < 40 || (ip[0] >> 4) != 6) return out;
        proto = ip[6];
        out.l3 = L3Kind::ipv6;
        out.ip_proto = proto;
        l4 = l3 + 40;
    } else {
        return out;
    }
    // l4: where the L3 payload starts, for any protocol.
    out.l4_offset = static_cast<std::uint16_t>(l4);
    const std::size_t l4_room = size - l4;
    if ((proto == kIpProtoTcp && l4_room >= 20) || (proto == kIpProtoUdp && l4_room >= 8)) {
        out.l4 = proto == kIpProtoTcp ? L4Kind::tcp : L4Kind::udp;
        out.src_port = load_be16(p + l4);
        out.dst_port = load_be16(p + l4 + 2);
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
