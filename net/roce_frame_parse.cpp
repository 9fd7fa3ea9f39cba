// parse_roce_frame: a received RoCE v2 frame checked layer by layer, its
// fields read into a RocePacket (net/roce_frame.hpp). The build side is
// net/roce_frame.cpp.
#include <cstring>

#include "net/headers.hpp"
#include "net/icrc.hpp"
#include "net/roce_frame.hpp"
#include "net/roce_frame_layout.hpp"

namespace rdmasim::net {

namespace {

using roce_layout::kIpv6HeaderLen;
using roce_layout::kUdpHeaderLen;

void load_extensions(const OpcodeInfo& info, const std::uint8_t* p, RoceHeaders& h) noexcept {
    if (info.has(kExtXrceth)) {
        h.xrceth = Xrceth::load(p);
        p += Xrceth::kSize;
    }
    if (info.has(kExtDeth)) {
        h.deth = Deth::load(p);
        p += Deth::kSize;
    }
    if (info.has(kExtReth)) {
        h.reth = Reth::load(p);
        p += Reth::kSize;
    }
    if (info.has(kExtAtomicEth)) {
        h.atomic_eth = AtomicEth::load(p);
        p += AtomicEth::kSize;
    }
    if (info.has(kExtAeth)) {
        h.aeth = Aeth::load(p);
        p += Aeth::kSize;
    }
    if (info.has(kExtAtomicAckEth)) {
        h.atomic_ack_eth = AtomicAckEth::load(p);
        p += AtomicAckEth::kSize;
    }
    if (info.has(kExtImmDt)) {
        h.imm = ImmDt::load(p);
        p += ImmDt::kSize;
    }
    if (info.has(kExtIeth)) h.ieth = Ieth::load(p);
}

} // namespace

const char* roce_drop_name(RoceDrop drop) noexcept {
    switch (drop) {
    case RoceDrop::none:
        return "none";
    case RoceDrop::truncated:
        return "truncated";
    case RoceDrop::not_ip:
        return "not_ip";
    case RoceDrop::bad_ip_header:
        return "bad_ip_header";
    case RoceDrop::ip_checksum:
        return "ip_checksum";
    case RoceDrop::ip_fragment:
        return "ip_fragment";
    case RoceDrop::not_udp:
        return "not_udp";
    case RoceDrop::not_roce_port:
        return "not_roce_port";
    case RoceDrop::udp_length:
        return "udp_length";
    case RoceDrop::short_packet:
        return "short_packet";
    case RoceDrop::icrc:
        return "icrc";
    case RoceDrop::bth_version:
        return "bth_version";
    case RoceDrop::unknown_opcode:
        return "unknown_opcode";
    case RoceDrop::bad_pad:
        return "bad_pad";
    case RoceDrop::unexpected_payload:
        return "unexpected_payload";
    }
    return "?";
}

namespace {

// The steps of parse_roce_frame, inlined into it: one call per RoCE frame received.

// What the IP header says about the datagram it carries.
struct IpLayer {
    std::size_t header_len = 0;   // IP header
    std::size_t datagram_len = 0; // IP header + UDP datagram
    std::size_t udp_expected = 0; // the UDP length the IP header implies
    std::uint8_t proto = 0;
};

// Ethernet and an optional 802.1Q tag: sets `l3` and `type` (the EtherType inside).
[[gnu::always_inline]] inline RoceDrop parse_l2(std::span<const std::uint8_t> frame, RocePacket& out,
                                                std::size_t& l3, std::uint16_t& type) noexcept {
    const auto eth = EthernetView::at(frame);
    if (!eth) return RoceDrop::truncated;
    out.dst_mac = eth->dst_mac();
    out.src_mac = eth->src_mac();
    type = eth->ether_type();
    l3 = kEthHeaderLen;
    out.has_vlan = false;
    out.vlan_tci = 0;
    if (type == kEtherTypeVlan) {
        const auto vlan = VlanView::at(frame, kEthHeaderLen);
        if (!vlan) return RoceDrop::truncated;
        out.has_vlan = true;
        out.vlan_tci = vlan->tci();
        type = vlan->inner_ether_type();
        l3 += kVlanTagLen;
    }
    if (type != kEtherTypeIpv4 && type != kEtherTypeIpv6) return RoceDrop::not_ip;
    if (frame.size() <= l3) return RoceDrop::truncated;
    return RoceDrop::none;
}

[[gnu::always_inline]] inline RoceDrop parse_ipv4(std::span<const std::uint8_t> frame, std::size_t l3,
                                                  RocePacket& out, IpLayer& ip_layer) noexcept {
    if ((frame[l3] >> 4) != 4) return RoceDrop::bad_ip_header;
    if (frame.size() < l3 + 20) return RoceDrop::truncated;
    const std::size_t ihl = (frame[l3] & 0x0f) * std::size_t{4};
    if (ihl < 20) return RoceDrop::bad_ip_header;
    const auto ip = Ipv4View::at(frame, l3);
    if (!ip) return RoceDrop::truncated; // options cut off
    if (ip->total_len() < ihl) return RoceDrop::bad_ip_header;
    if (frame.size() - l3 < ip->total_len()) return RoceDrop::truncated;
    if (!ip->header_checksum_ok()) return RoceDrop::ip_checksum;
    if (ip->is_fragment()) return RoceDrop::ip_fragment;
    ip_layer.header_len = ihl;
    ip_layer.datagram_len = ip->total_len();
    ip_layer.udp_expected = ip_layer.datagram_len - ihl;
    ip_layer.proto = ip->protocol();
    out.traffic_class = ip->tos();
    out.hop_limit = ip->ttl();
    out.flow_label = 0;
    out.sgid = ipv4_mapped_gid(ip->src_addr());
    out.dgid = ipv4_mapped_gid(ip->dst_addr());
    return RoceDrop::none;
}

[[gnu::always_inline]] inline RoceDrop parse_ipv6(std::span<const std::uint8_t> frame, std::size_t l3,
                                                  RocePacket& out, IpLayer& ip_layer) noexcept {
    if ((frame[l3] >> 4) != 6) return RoceDrop::bad_ip_header;
    const auto ip = Ipv6View::at(frame, l3);
    if (!ip) return RoceDrop::truncated;
    ip_layer.header_len = kIpv6HeaderLen;
    ip_layer.datagram_len = kIpv6HeaderLen + ip->payload_len();
    if (frame.size() - l3 < ip_layer.datagram_len) return RoceDrop::truncated;
    ip_layer.udp_expected = ip->payload_len();
    ip_layer.proto = ip->next_header();
    out.traffic_class = ip->traffic_class();
    out.hop_limit = ip->hop_limit();
    out.flow_label = ip->flow_label();
    std::memcpy(out.sgid.data(), ip->src_addr(), 16);
    std::memcpy(out.dgid.data(), ip->dst_addr(), 16);
    return RoceDrop::none;
}

// UDP to the RoCE port, the ICRC, the BTH and its extensions, the payload.
[[gnu::always_inline]] inline RoceDrop parse_transport(std::span<const std::uint8_t> frame, std::size_t l3,
                                                       const IpLayer& ip, RocePacket& out) noexcept {
    if (ip.proto != kIpProtoUdp) return RoceDrop::not_udp;
    const std::size_t l4 = l3 + ip.header_len;
    const auto udp = UdpView::at(frame.first(l3 + ip.datagram_len), l4);
    if (!udp) return RoceDrop::udp_length; // the IP payload is shorter than a UDP header
    if (udp->dst_port() != kRoceV2UdpPort) return RoceDrop::not_roce_port;
    if (udp->length() != ip.udp_expected) return RoceDrop::udp_length;
    out.udp_src_port = udp->src_port();
    out.ip_header = frame.subspan(l3, ip.header_len);

    const std::size_t bth_at = l4 + kUdpHeaderLen;
    const std::size_t end = l3 + ip.datagram_len; // the ICRC's end
    if (end - bth_at < Bth::kSize + kIcrcLen) return RoceDrop::short_packet;
    const std::size_t icrc_at = end - kIcrcLen;
    if (roce_icrc(frame.subspan(l3, icrc_at - l3), ip.header_len) != load_icrc(frame.data() + icrc_at))
        return RoceDrop::icrc;

    RoceHeaders& h = out.headers;
    h = RoceHeaders{};
    h.bth = Bth::load(frame.data() + bth_at);
    if (h.bth.version != 0) return RoceDrop::bth_version;
    const OpcodeInfo* info = opcode_info(h.bth.opcode);
    if (!info) return RoceDrop::unknown_opcode;
    out.info = info;
    if (icrc_at - bth_at < info->header_len) return RoceDrop::short_packet;
    const std::size_t after = icrc_at - bth_at - info->header_len; // payload + pad
    if (after % 4 != 0 || after < h.bth.pad) return RoceDrop::bad_pad;
    if (!info->has_payload && after != 0) return RoceDrop::unexpected_payload;
    load_extensions(*info, frame.data() + bth_at + Bth::kSize, h);
    out.payload = frame.subspan(bth_at + info->header_len, after - h.bth.pad);
    return RoceDrop::none;
}

} // namespace

RoceDrop parse_roce_frame(std::span<const std::uint8_t> frame, RocePacket& out) noexcept {
    std::size_t l3 = 0;
    std::uint16_t type = 0;
    if (const RoceDrop d = parse_l2(frame, out, l3, type); d != RoceDrop::none) return d;
    IpLayer ip;
    out.ipv6 = type == kEtherTypeIpv6;
    const RoceDrop d = out.ipv6 ? parse_ipv6(frame, l3, out, ip) : parse_ipv4(frame, l3, out, ip);
    if (d != RoceDrop::none) return d;
    return parse_transport(frame, l3, ip, out);
}

} // namespace rdmasim::net
