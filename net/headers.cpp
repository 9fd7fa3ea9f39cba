#include "net/headers.hpp"

#include <bit>
#include <cstring>

namespace rdmasim::net {

namespace {

std::uint16_t load_be16(const std::uint8_t* p) noexcept {
    return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

// True when [offset, offset + len) lies inside `frame` (overflow-safe).
bool fits(Bytes frame, std::size_t offset, std::size_t len) noexcept {
    return offset <= frame.size() && frame.size() - offset >= len;
}

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

std::optional<EthernetView> EthernetView::at(Bytes frame) noexcept {
    if (frame.size() < kEthHeaderLen) return std::nullopt;
    return EthernetView(frame.data());
}

std::uint16_t EthernetView::ether_type() const noexcept {
    return load_be16(p_ + 12);
}

std::optional<VlanView> VlanView::at(Bytes frame, std::size_t offset) noexcept {
    if (!fits(frame, offset, kVlanTagLen)) return std::nullopt;
    return VlanView(frame.data() + offset);
}

std::uint16_t VlanView::tci() const noexcept {
    return load_be16(p_);
}
std::uint16_t VlanView::inner_ether_type() const noexcept {
    return load_be16(p_ + 2);
}

std::optional<Ipv4View> Ipv4View::at(Bytes frame, std::size_t offset) noexcept {
    if (!fits(frame, offset, 20)) return std::nullopt;
    const std::uint8_t* p = frame.data() + offset;
    const std::size_t ihl = p[0] & 0x0f;
    if ((p[0] >> 4) != 4 || ihl < 5 || !fits(frame, offset, ihl * 4)) return std::nullopt;
    return Ipv4View(p);
}

std::size_t Ipv4View::header_len() const noexcept {
    return static_cast<std::size_t>(p_[0] & 0x0f) * 4;
}
std::uint16_t Ipv4View::total_len() const noexcept {
    return load_be16(p_ + 2);
}
std::uint8_t Ipv4View::tos() const noexcept {
    return p_[1];
}
std::uint8_t Ipv4View::ttl() const noexcept {
    return p_[8];
}
std::uint8_t Ipv4View::protocol() const noexcept {
    return p_[9];
}
std::uint8_t Ipv4View::flags() const noexcept {
    return static_cast<std::uint8_t>(p_[6] >> 5);
}

bool Ipv4View::is_fragment() const noexcept {
    const std::uint16_t word = load_be16(p_ + 6);
    return (word & 0x2000) != 0 || (word & 0x1fff) != 0; // MF, fragment offset
}

bool Ipv4View::header_checksum_ok() const noexcept {
    return fold(ones_sum(p_, header_len(), 0)) == 0xffff;
}

std::optional<Ipv6View> Ipv6View::at(Bytes frame, std::size_t offset) noexcept {
    if (!fits(frame, offset, 40)) return std::nullopt;
    const std::uint8_t* p = frame.data() + offset;
    if ((p[0] >> 4) != 6) return std::nullopt;
    return Ipv6View(p);
}

std::uint8_t Ipv6View::traffic_class() const noexcept {
    return static_cast<std::uint8_t>(((p_[0] & 0x0f) << 4) | (p_[1] >> 4));
}
std::uint32_t Ipv6View::flow_label() const noexcept {
    return (static_cast<std::uint32_t>(p_[1] & 0x0f) << 16) |
           (static_cast<std::uint32_t>(p_[2]) << 8) | p_[3];
}
std::uint16_t Ipv6View::payload_len() const noexcept {
    return load_be16(p_ + 4);
}
std::uint8_t Ipv6View::next_header() const noexcept {
    return p_[6];
}
std::uint8_t Ipv6View::hop_limit() const noexcept {
    return p_[7];
}

std::optional<UdpView> UdpView::at(Bytes frame, std::size_t offset) noexcept {
    if (!fits(frame, offset, 8)) return std::nullopt;
    return UdpView(frame.data() + offset);
}

std::uint16_t UdpView::src_port() const noexcept {
    return load_be16(p_);
}
std::uint16_t UdpView::dst_port() const noexcept {
    return load_be16(p_ + 2);
}
std::uint16_t UdpView::length() const noexcept {
    return load_be16(p_ + 4);
}
std::uint16_t UdpView::checksum() const noexcept {
    return load_be16(p_ + 6);
}

std::optional<TcpView> TcpView::at(Bytes frame, std::size_t offset) noexcept {
    if (!fits(frame, offset, 20)) return std::nullopt;
    return TcpView(frame.data() + offset);
}

std::uint16_t TcpView::src_port() const noexcept {
    return load_be16(p_);
}
std::uint16_t TcpView::dst_port() const noexcept {
    return load_be16(p_ + 2);
}
std::uint8_t TcpView::data_offset_words() const noexcept {
    return p_[12] >> 4;
}
std::uint16_t TcpView::checksum() const noexcept {
    return load_be16(p_ + 16);
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
