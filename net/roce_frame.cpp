#include "net/roce_frame.hpp"

#include <cstring>

#include "net/headers.hpp"
#include "net/icrc.hpp"

namespace rdmasim::net {

namespace {

constexpr std::size_t kIpv4HeaderLen = 20; // as built: no options
constexpr std::size_t kIpv6HeaderLen = 40;
constexpr std::size_t kUdpHeaderLen = 8;
constexpr std::uint8_t kIpv4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

using roce_detail::store_be16;
using roce_detail::store_be32;

// RFC 1071 over an IPv4 header: the value for its checksum field (which the
// caller has zeroed), or 0 over a header whose checksum is right.
std::uint16_t ipv4_checksum(const std::uint8_t* p, std::size_t len) noexcept {
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i + 1 < len; i += 2)
        sum += static_cast<std::uint32_t>((p[i] << 8) | p[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<std::uint16_t>(~sum);
}

std::size_t l3_offset(const RocePath& path) noexcept {
    return kEthHeaderLen + (path.vlan_tci ? kVlanTagLen : 0);
}

// Bytes from the IP header's end to the end of the ICRC.
std::size_t udp_len(const OpcodeInfo& info, std::size_t payload_len) noexcept {
    const std::size_t padded = (payload_len + 3) & ~std::size_t{3};
    return kUdpHeaderLen + info.header_len + padded + kIcrcLen;
}

// Writes the extension headers the opcode carries, in wire order; returns the end.
std::uint8_t* store_extensions(const OpcodeInfo& info, const RoceHeaders& h,
                               std::uint8_t* p) noexcept {
    if (info.has(kExtXrceth)) {
        h.xrceth.store(p);
        p += Xrceth::kSize;
    }
    if (info.has(kExtDeth)) {
        h.deth.store(p);
        p += Deth::kSize;
    }
    if (info.has(kExtReth)) {
        h.reth.store(p);
        p += Reth::kSize;
    }
    if (info.has(kExtAtomicEth)) {
        h.atomic_eth.store(p);
        p += AtomicEth::kSize;
    }
    if (info.has(kExtAeth)) {
        h.aeth.store(p);
        p += Aeth::kSize;
    }
    if (info.has(kExtAtomicAckEth)) {
        h.atomic_ack_eth.store(p);
        p += AtomicAckEth::kSize;
    }
    if (info.has(kExtImmDt)) {
        h.imm.store(p);
        p += ImmDt::kSize;
    }
    if (info.has(kExtIeth)) {
        h.ieth.store(p);
        p += Ieth::kSize;
    }
    return p;
}

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

bool is_ipv4_mapped(const Gid& gid) noexcept {
    return std::memcmp(gid.data(), kIpv4Mapped, sizeof kIpv4Mapped) == 0;
}

Gid ipv4_mapped_gid(const std::uint8_t ipv4[4]) noexcept {
    Gid gid{};
    std::memcpy(gid.data(), kIpv4Mapped, sizeof kIpv4Mapped);
    std::memcpy(gid.data() + 12, ipv4, 4);
    return gid;
}

std::uint32_t roce_flow_label(std::uint32_t local_qpn, std::uint32_t remote_qpn) noexcept {
    std::uint64_t v = std::uint64_t{local_qpn} * remote_qpn;
    v ^= v >> 20;
    v ^= v >> 40;
    return static_cast<std::uint32_t>(v & 0xfffff);
}

std::uint16_t roce_udp_src_port(std::uint32_t flow_label) noexcept {
    const std::uint32_t low = flow_label & 0x3fff;
    const std::uint32_t high = (flow_label & 0xfc000) >> 14;
    return static_cast<std::uint16_t>(0xc000 | (low ^ high));
}

const char* roce_build_error_name(RoceBuildError error) noexcept {
    switch (error) {
    case RoceBuildError::none:
        return "none";
    case RoceBuildError::unknown_opcode:
        return "unknown_opcode";
    case RoceBuildError::payload_not_allowed:
        return "payload_not_allowed";
    case RoceBuildError::mixed_address_families:
        return "mixed_address_families";
    case RoceBuildError::too_long:
        return "too_long";
    case RoceBuildError::buffer_too_small:
        return "buffer_too_small";
    }
    return "?";
}

std::size_t roce_frame_len(const RocePath& path, std::uint8_t opcode,
                           std::size_t payload_len) noexcept {
    const OpcodeInfo* info = opcode_info(opcode);
    if (!info) return 0;
    const bool v4 = is_ipv4_mapped(path.sgid);
    const std::size_t len =
        l3_offset(path) + (v4 ? kIpv4HeaderLen : kIpv6HeaderLen) + udp_len(*info, payload_len);
    return len < kMinEthernetFrame ? kMinEthernetFrame : len;
}

RoceBuildResult build_roce_frame(const RocePath& path, const RoceHeaders& headers,
                                 std::span<const std::uint8_t> payload,
                                 std::span<std::uint8_t> out) noexcept {
    const std::span<const std::uint8_t> pieces[1] = {payload};
    return build_roce_frame(path, headers, pieces, out);
}

RoceBuildResult build_roce_frame(const RocePath& path, const RoceHeaders& headers,
                                 std::span<const std::span<const std::uint8_t>> payload,
                                 std::span<std::uint8_t> out) noexcept {
    const OpcodeInfo* info = opcode_info(headers.bth.opcode);
    if (!info) return {0, RoceBuildError::unknown_opcode};
    std::size_t payload_len = 0;
    for (const auto& piece : payload)
        payload_len += piece.size();
    if (payload_len && !info->has_payload) return {0, RoceBuildError::payload_not_allowed};
    const bool v4 = is_ipv4_mapped(path.sgid);
    if (v4 != is_ipv4_mapped(path.dgid)) return {0, RoceBuildError::mixed_address_families};
    if (payload_len > 65535) return {0, RoceBuildError::too_long};
    const std::size_t l4_len = udp_len(*info, payload_len);
    const std::size_t ip_len =
        (v4 ? kIpv4HeaderLen : 0) + l4_len; // IPv4 total / IPv6 payload length
    if (ip_len > 65535) return {0, RoceBuildError::too_long};
    const std::size_t frame_len = roce_frame_len(path, headers.bth.opcode, payload_len);
    if (out.size() < frame_len) return {0, RoceBuildError::buffer_too_small};

    std::uint8_t* p = out.data();
    std::memcpy(p, path.dst_mac.data(), 6);
    std::memcpy(p + 6, path.src_mac.data(), 6);
    p += 12;
    if (path.vlan_tci) {
        store_be16(p, kEtherTypeVlan);
        store_be16(p + 2, *path.vlan_tci);
        p += kVlanTagLen;
    }
    store_be16(p, v4 ? kEtherTypeIpv4 : kEtherTypeIpv6);
    p += 2;

    std::uint8_t* const ip = p;
    if (v4) {
        ip[0] = 0x45;
        ip[1] = path.traffic_class;
        store_be16(ip + 2, static_cast<std::uint16_t>(ip_len));
        store_be16(ip + 4, 0);      // identification: unused, DF is set (RFC 6864)
        store_be16(ip + 6, 0x4000); // DF
        ip[8] = path.hop_limit;
        ip[9] = kIpProtoUdp;
        store_be16(ip + 10, 0);
        std::memcpy(ip + 12, path.sgid.data() + 12, 4);
        std::memcpy(ip + 16, path.dgid.data() + 12, 4);
        store_be16(ip + 10, ipv4_checksum(ip, kIpv4HeaderLen));
        p += kIpv4HeaderLen;
    } else {
        const std::uint32_t fl = path.flow_label & 0xfffff;
        store_be32(ip, (6u << 28) | (std::uint32_t{path.traffic_class} << 20) | fl);
        store_be16(ip + 4, static_cast<std::uint16_t>(l4_len));
        ip[6] = kIpProtoUdp;
        ip[7] = path.hop_limit;
        std::memcpy(ip + 8, path.sgid.data(), 16);
        std::memcpy(ip + 24, path.dgid.data(), 16);
        p += kIpv6HeaderLen;
    }

    store_be16(p, path.udp_src_port);
    store_be16(p + 2, kRoceV2UdpPort);
    store_be16(p + 4, static_cast<std::uint16_t>(l4_len));
    store_be16(p + 6, 0);
    p += kUdpHeaderLen;

    Bth bth = headers.bth;
    bth.pad = static_cast<std::uint8_t>((4 - payload_len % 4) % 4);
    bth.store(p);
    p = store_extensions(*info, headers, p + Bth::kSize);
    for (const auto& piece : payload) {
        if (piece.empty()) continue; // an empty span may have a null data()
        std::memcpy(p, piece.data(), piece.size());
        p += piece.size();
    }
    std::memset(p, 0, bth.pad);
    p += bth.pad;
    store_icrc(p, roce_icrc_in_place({ip, static_cast<std::size_t>(p - ip)},
                                     v4 ? kIpv4HeaderLen : kIpv6HeaderLen));
    p += kIcrcLen;
    const std::size_t written = static_cast<std::size_t>(p - out.data());
    std::memset(p, 0, frame_len - written); // Ethernet padding
    return {frame_len, RoceBuildError::none};
}

void write_ud_grh(const RocePacket& packet, std::uint8_t out[40]) noexcept {
    if (packet.ipv6) {
        std::memcpy(out, packet.ip_header.data(), kIpv6HeaderLen);
        return;
    }
    std::memset(out, 0, 40 - kIpv4HeaderLen);
    std::memcpy(out + 40 - kIpv4HeaderLen, packet.ip_header.data(), kIpv4HeaderLen);
}

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

RoceDrop parse_roce_frame(std::span<const std::uint8_t> frame, RocePacket& out) noexcept {
    const auto eth = EthernetView::at(frame);
    if (!eth) return RoceDrop::truncated;
    out.dst_mac = eth->dst_mac();
    out.src_mac = eth->src_mac();
    std::uint16_t type = eth->ether_type();
    std::size_t l3 = kEthHeaderLen;
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
    const std::uint8_t version = frame[l3] >> 4;

    std::size_t ip_header_len = 0;
    std::size_t datagram_len = 0; // IP header + UDP datagram
    std::size_t udp_expected = 0; // the UDP length the IP header implies
    std::uint8_t proto = 0;
    out.ipv6 = type == kEtherTypeIpv6;
    if (!out.ipv6) {
        if (version != 4) return RoceDrop::bad_ip_header;
        if (frame.size() < l3 + 20) return RoceDrop::truncated;
        const std::size_t ihl = (frame[l3] & 0x0f) * std::size_t{4};
        if (ihl < 20) return RoceDrop::bad_ip_header;
        const auto ip = Ipv4View::at(frame, l3);
        if (!ip) return RoceDrop::truncated; // options cut off
        if (ip->total_len() < ihl) return RoceDrop::bad_ip_header;
        if (frame.size() - l3 < ip->total_len()) return RoceDrop::truncated;
        if (!ip->header_checksum_ok()) return RoceDrop::ip_checksum;
        if (ip->is_fragment()) return RoceDrop::ip_fragment;
        ip_header_len = ihl;
        datagram_len = ip->total_len();
        udp_expected = datagram_len - ihl;
        proto = ip->protocol();
        out.traffic_class = ip->tos();
        out.hop_limit = ip->ttl();
        out.flow_label = 0;
        out.sgid = ipv4_mapped_gid(ip->src_addr());
        out.dgid = ipv4_mapped_gid(ip->dst_addr());
    } else {
        if (version != 6) return RoceDrop::bad_ip_header;
        const auto ip = Ipv6View::at(frame, l3);
        if (!ip) return RoceDrop::truncated;
        ip_header_len = kIpv6HeaderLen;
        datagram_len = kIpv6HeaderLen + ip->payload_len();
        if (frame.size() - l3 < datagram_len) return RoceDrop::truncated;
        udp_expected = ip->payload_len();
        proto = ip->next_header();
        out.traffic_class = ip->traffic_class();
        out.hop_limit = ip->hop_limit();
        out.flow_label = ip->flow_label();
        std::memcpy(out.sgid.data(), ip->src_addr(), 16);
        std::memcpy(out.dgid.data(), ip->dst_addr(), 16);
    }
    if (proto != kIpProtoUdp) return RoceDrop::not_udp;
    const std::size_t l4 = l3 + ip_header_len;
    const auto udp = UdpView::at(frame.first(l3 + datagram_len), l4);
    if (!udp) return RoceDrop::udp_length; // the IP payload is shorter than a UDP header
    if (udp->dst_port() != kRoceV2UdpPort) return RoceDrop::not_roce_port;
    if (udp->length() != udp_expected) return RoceDrop::udp_length;
    out.udp_src_port = udp->src_port();
    out.ip_header = frame.subspan(l3, ip_header_len);

    const std::size_t bth_at = l4 + kUdpHeaderLen;
    const std::size_t end = l3 + datagram_len; // the ICRC's end
    if (end - bth_at < Bth::kSize + kIcrcLen) return RoceDrop::short_packet;
    const std::size_t icrc_at = end - kIcrcLen;
    if (roce_icrc(frame.subspan(l3, icrc_at - l3), ip_header_len) !=
        load_icrc(frame.data() + icrc_at))
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

} // namespace rdmasim::net
