#include "net/roce_frame.hpp"

#include <cstring>

#include "net/headers.hpp"
#include "net/icrc.hpp"
#include "net/roce_frame_layout.hpp"

namespace rdmasim::net {

namespace {

constexpr std::uint8_t kIpv4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

using roce_detail::store_be16;
using roce_detail::store_be32;
using roce_layout::kIpv4HeaderLen;
using roce_layout::kIpv6HeaderLen;
using roce_layout::kUdpHeaderLen;

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

namespace {

// The steps of build_roce_frame, inlined into it: one call per frame sent.

// The lengths a frame of `payload_len` bytes gets, or why it cannot be built.
struct BuildLengths {
    std::size_t l4 = 0;    // UDP datagram
    std::size_t ip = 0;    // IPv4 total / IPv6 payload length
    std::size_t frame = 0; // the whole frame, Ethernet padding included
    RoceBuildError error = RoceBuildError::none;
};

[[gnu::always_inline]] inline BuildLengths build_lengths(const RocePath& path, const OpcodeInfo& info,
                                                         std::uint8_t opcode, std::size_t payload_len,
                                                         bool v4) noexcept {
    BuildLengths n;
    if (payload_len && !info.has_payload) n.error = RoceBuildError::payload_not_allowed;
    else if (v4 != is_ipv4_mapped(path.dgid)) n.error = RoceBuildError::mixed_address_families;
    else if (payload_len > 65535) n.error = RoceBuildError::too_long;
    if (n.error != RoceBuildError::none) return n;
    n.l4 = udp_len(info, payload_len);
    n.ip = (v4 ? kIpv4HeaderLen : 0) + n.l4;
    if (n.ip > 65535) {
        n.error = RoceBuildError::too_long;
        return n;
    }
    n.frame = roce_frame_len(path, opcode, payload_len);
    return n;
}

// Ethernet header and the 802.1Q tag, if any; returns where the IP header goes.
[[gnu::always_inline]] inline std::uint8_t* store_ethernet(const RocePath& path, bool v4, std::uint8_t* p) noexcept {
    std::memcpy(p, path.dst_mac.data(), 6);
    std::memcpy(p + 6, path.src_mac.data(), 6);
    p += 12;
    if (path.vlan_tci) {
        store_be16(p, kEtherTypeVlan);
        store_be16(p + 2, *path.vlan_tci);
        p += kVlanTagLen;
    }
    store_be16(p, v4 ? kEtherTypeIpv4 : kEtherTypeIpv6);
    return p + 2;
}

// The IPv4 or IPv6 header at `ip`; returns where the UDP header goes.
[[gnu::always_inline]] inline std::uint8_t* store_ip(const RocePath& path, bool v4, const BuildLengths& n,
                                                     std::uint8_t* ip) noexcept {
    if (v4) {
        ip[0] = 0x45;
        ip[1] = path.traffic_class;
        store_be16(ip + 2, static_cast<std::uint16_t>(n.ip));
        store_be16(ip + 4, 0);      // identification: unused, DF is set (RFC 6864)
        store_be16(ip + 6, 0x4000); // DF
        ip[8] = path.hop_limit;
        ip[9] = kIpProtoUdp;
        store_be16(ip + 10, 0);
        std::memcpy(ip + 12, path.sgid.data() + 12, 4);
        std::memcpy(ip + 16, path.dgid.data() + 12, 4);
        store_be16(ip + 10, ipv4_checksum(ip, kIpv4HeaderLen));
        return ip + kIpv4HeaderLen;
    }
    const std::uint32_t fl = path.flow_label & 0xfffff;
    store_be32(ip, (6u << 28) | (std::uint32_t{path.traffic_class} << 20) | fl);
    store_be16(ip + 4, static_cast<std::uint16_t>(n.l4));
    ip[6] = kIpProtoUdp;
    ip[7] = path.hop_limit;
    std::memcpy(ip + 8, path.sgid.data(), 16);
    std::memcpy(ip + 24, path.dgid.data(), 16);
    return ip + kIpv6HeaderLen;
}

// UDP header, BTH and extensions, payload and pad; returns where the ICRC goes.
[[gnu::always_inline]] inline std::uint8_t* store_transport(const RocePath& path, const RoceHeaders& headers,
                                                            const OpcodeInfo& info, const BuildLengths& n,
                                                            std::span<const std::span<const std::uint8_t>> payload,
                                                            std::size_t payload_len, std::uint8_t* p) noexcept {
    store_be16(p, path.udp_src_port);
    store_be16(p + 2, kRoceV2UdpPort);
    store_be16(p + 4, static_cast<std::uint16_t>(n.l4));
    store_be16(p + 6, 0);
    p += kUdpHeaderLen;

    Bth bth = headers.bth;
    bth.pad = static_cast<std::uint8_t>((4 - payload_len % 4) % 4);
    bth.store(p);
    p = store_extensions(info, headers, p + Bth::kSize);
    for (const auto& piece : payload) {
        if (piece.empty()) continue; // an empty span may have a null data()
        std::memcpy(p, piece.data(), piece.size());
        p += piece.size();
    }
    std::memset(p, 0, bth.pad);
    return p + bth.pad;
}

} // namespace

RoceBuildResult roce_frame_plan(const RocePath& path, const RoceHeaders& headers,
                                std::size_t payload_len) noexcept {
    const OpcodeInfo* info = opcode_info(headers.bth.opcode);
    if (!info) return {0, RoceBuildError::unknown_opcode};
    const BuildLengths n = build_lengths(path, *info, headers.bth.opcode, payload_len, is_ipv4_mapped(path.sgid));
    if (n.error != RoceBuildError::none) return {0, n.error};
    return {n.frame, RoceBuildError::none};
}

RoceBuildResult build_roce_frame(const RocePath& path, const RoceHeaders& headers,
                                 std::span<const std::span<const std::uint8_t>> payload,
                                 std::span<std::uint8_t> out) noexcept {
    const OpcodeInfo* info = opcode_info(headers.bth.opcode);
    if (!info) return {0, RoceBuildError::unknown_opcode};
    std::size_t payload_len = 0;
    for (const auto& piece : payload)
        payload_len += piece.size();
    const bool v4 = is_ipv4_mapped(path.sgid);
    const BuildLengths n = build_lengths(path, *info, headers.bth.opcode, payload_len, v4);
    if (n.error != RoceBuildError::none) return {0, n.error};
    if (out.size() < n.frame) return {0, RoceBuildError::buffer_too_small};

    std::uint8_t* const ip = store_ethernet(path, v4, out.data());
    std::uint8_t* p = store_ip(path, v4, n, ip);
    p = store_transport(path, headers, *info, n, payload, payload_len, p);
    store_icrc(p, roce_icrc_in_place({ip, static_cast<std::size_t>(p - ip)},
                                     v4 ? kIpv4HeaderLen : kIpv6HeaderLen));
    p += kIcrcLen;
    const std::size_t written = static_cast<std::size_t>(p - out.data());
    std::memset(p, 0, n.frame - written); // Ethernet padding
    return {n.frame, RoceBuildError::none};
}

void write_ud_grh(const RocePacket& packet, std::uint8_t out[40]) noexcept {
    if (packet.ipv6) {
        std::memcpy(out, packet.ip_header.data(), kIpv6HeaderLen);
        return;
    }
    std::memset(out, 0, 40 - kIpv4HeaderLen);
    std::memcpy(out + 40 - kIpv4HeaderLen, packet.ip_header.data(), kIpv4HeaderLen);
}

} // namespace rdmasim::net
