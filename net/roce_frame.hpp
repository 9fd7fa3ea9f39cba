// RoCE v2 frames: Ethernet II [802.1Q] / IPv4 or IPv6 / UDP 4791 / BTH /
// extension headers / payload / pad / ICRC. `build_roce_frame` writes one
// into the caller's buffer; `parse_roce_frame` validates a received one and
// says why it is refused. Neither allocates. (net/README.md, "RoCE v2 frames")
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "net/roce_headers.hpp"
#include "net/roce_opcodes.hpp"

namespace rdmasim::net {

using Gid = std::array<std::uint8_t, 16>; // network order; IPv4 as ::ffff:a.b.c.d

[[nodiscard]] bool is_ipv4_mapped(const Gid& gid) noexcept;
[[nodiscard]] Gid ipv4_mapped_gid(const std::uint8_t ipv4[4]) noexcept;

// The 20-bit flow label Linux's RDMA core gives a connection when none is
// configured (rdma_calc_flow_label): the product of the two QP numbers,
// folded by xor-ing in its bits from 20 and from 40 up, low 20 bits.
[[nodiscard]] std::uint32_t roce_flow_label(std::uint32_t local_qpn,
                                            std::uint32_t remote_qpn) noexcept;
// The UDP source port RoCE v2 derives from a flow label as Linux and mlx5 do
// (rdma_flow_label_to_udp_sport): bits 13..0 xor bits 19..14, in 0xc000..0xffff.
[[nodiscard]] std::uint16_t roce_udp_src_port(std::uint32_t flow_label) noexcept;

// Where a packet goes: the layer 2 and 3 fields of the frame.
struct RocePath {
    std::array<std::uint8_t, 6> dst_mac{};
    std::array<std::uint8_t, 6> src_mac{};
    std::optional<std::uint16_t> vlan_tci; // an 802.1Q tag after the source MAC when set
    Gid sgid{};                            // both IPv4-mapped: an IPv4 frame; neither: IPv6
    Gid dgid{};
    std::uint8_t traffic_class = 0;      // IPv4 TOS / IPv6 traffic class: DSCP << 2 | ECN
    std::uint8_t hop_limit = 64;         // IPv4 TTL / IPv6 hop limit
    std::uint32_t flow_label = 0;        // IPv6 only, 20 bits
    std::uint16_t udp_src_port = 0xc000; // see roce_udp_src_port
};

// The transport headers of one packet. The opcode (bth.opcode) decides which
// extension headers are on the wire; the others are ignored when building
// and left at their defaults when parsing.
struct RoceHeaders {
    Bth bth; // bth.pad is computed by build_roce_frame
    Xrceth xrceth;
    Deth deth;
    Reth reth;
    AtomicEth atomic_eth;
    Aeth aeth;
    AtomicAckEth atomic_ack_eth;
    ImmDt imm;
    Ieth ieth;
    bool operator==(const RoceHeaders&) const = default;
};

enum class RoceBuildError : std::uint8_t {
    none,
    unknown_opcode,         // bth.opcode is not in the opcode table
    payload_not_allowed,    // a payload for an opcode that carries none
    mixed_address_families, // one GID IPv4-mapped and the other not
    too_long,               // the IP datagram would exceed 65535 bytes
    buffer_too_small,       // `out` is shorter than roce_frame_len
};
[[nodiscard]] const char* roce_build_error_name(RoceBuildError error) noexcept;

struct RoceBuildResult {
    std::size_t len = 0; // bytes written to `out` (0 on error)
    RoceBuildError error = RoceBuildError::none;
};

inline constexpr std::size_t kMinEthernetFrame = 60; // without FCS: shorter frames are zero-padded

// The frame length build_roce_frame writes for this opcode and payload
// length (0 for an unknown opcode).
[[nodiscard]] std::size_t roce_frame_len(const RocePath& path, std::uint8_t opcode,
                                         std::size_t payload_len) noexcept;

// What build_roce_frame would do with these headers and `payload_len`
// bytes of payload, writing nothing: the frame's length, or its error
// (never buffer_too_small). A buffer of that length is then built into
// without fail (a wire's claimed room: net::FrameSink::claim).
[[nodiscard]] RoceBuildResult roce_frame_plan(const RocePath& path, const RoceHeaders& headers,
                                              std::size_t payload_len) noexcept;

// Writes the frame: IPv4 with ID 0, DF set, a computed header checksum;
// IPv6 without extension headers; UDP checksum 0 (IPv4 as RoCE v2 hardware
// sends it; IPv6 too, RFC 6935's zero-checksum mode); BTH pad count and zero pad to 4-byte
// alignment; the ICRC; zero padding to kMinEthernetFrame. No FCS. `payload` is gathered from its
// pieces in order.
[[nodiscard]] RoceBuildResult
build_roce_frame(const RocePath& path, const RoceHeaders& headers,
                 std::span<const std::span<const std::uint8_t>> payload,
                 std::span<std::uint8_t> out) noexcept;
[[nodiscard]] RoceBuildResult build_roce_frame(const RocePath& path, const RoceHeaders& headers,
                                               std::span<const std::uint8_t> payload,
                                               std::span<std::uint8_t> out) noexcept;

// Why a frame is not a valid RoCE v2 packet, checked in this order. The
// names (roce_drop_name) are the counters' names.
enum class RoceDrop : std::uint8_t {
    none,
    truncated,          // the frame ends inside a header or before the IP datagram's end
    not_ip,             // ether type (after one 802.1Q tag) neither IPv4 nor IPv6
    bad_ip_header,      // version not the ether type's, IHL < 5, total length < header
    ip_checksum,        // IPv4 header checksum
    ip_fragment,        // IPv4 MF or fragment offset
    not_udp,            // protocol / next header not UDP (IPv6 extension headers are not walked)
    not_roce_port,      // UDP destination port not 4791
    udp_length,         // UDP length not the IP payload length
    short_packet,       // UDP payload shorter than BTH + ICRC, or than the opcode's headers + ICRC
    icrc,               // invariant CRC mismatch
    bth_version,        // TVer not 0
    unknown_opcode,     // not an RC, UC, UD or XRC opcode of the table
    bad_pad,            // bytes after the headers not a multiple of 4, or fewer than the pad count
    unexpected_payload, // payload (or pad) on an opcode that carries none
};
inline constexpr std::size_t kRoceDropCount = 15;
[[nodiscard]] const char* roce_drop_name(RoceDrop drop) noexcept;

// A received packet: views into the frame (valid while its bytes are).
struct RocePacket {
    const OpcodeInfo* info = nullptr;
    RoceHeaders headers;                   // bth and the extension headers the opcode carries
    std::span<const std::uint8_t> payload; // without pad and ICRC
    const std::uint8_t* dst_mac = nullptr;
    const std::uint8_t* src_mac = nullptr;
    bool has_vlan = false;
    std::uint16_t vlan_tci = 0;
    bool ipv6 = false;
    Gid sgid{}; // IPv4 addresses as ::ffff:a.b.c.d
    Gid dgid{};
    std::uint8_t traffic_class = 0;
    std::uint8_t hop_limit = 0;
    std::uint32_t flow_label = 0; // 0 for IPv4
    std::uint16_t udp_src_port = 0;
    std::span<const std::uint8_t>
        ip_header; // 20..60 or 40 bytes (a UD receive's GRH comes from it)
};

// The 40 bytes a UD receive places before the payload (IBV_WC_GRH), as
// rdma-core's ibv_init_ah_from_wc reads them: an IPv6 packet's IP header;
// for IPv4, 20 zero bytes, then the first 20 bytes of the IPv4 header.
void write_ud_grh(const RocePacket& packet, std::uint8_t out[40]) noexcept;

// Validates `frame` (no FCS) and fills `out`. Bytes after the IP datagram
// (Ethernet padding) are ignored. On a drop `out` is unspecified.
[[nodiscard]] RoceDrop parse_roce_frame(std::span<const std::uint8_t> frame,
                                        RocePacket& out) noexcept;

} // namespace rdmasim::net
