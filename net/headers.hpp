// Header views for Ethernet, 802.1Q, IPv4, IPv6, UDP and TCP, and the one-pass
// parser the datapath uses. Every view is bounds-checked at construction: a
// view exists only when all of its fixed header lies inside the buffer.
// Multi-byte fields are returned in host order unless the name says "_be".
#pragma once

#include <cstdint>
#include <optional>
#include <span>

namespace rdmasim::net {

using Bytes = std::span<const std::uint8_t>;

inline constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr std::uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr std::uint16_t kEtherTypeVlan = 0x8100; // 802.1Q C-tag TPID
inline constexpr std::uint8_t kIpProtoTcp = 6;
inline constexpr std::uint8_t kIpProtoUdp = 17;
inline constexpr std::size_t kEthHeaderLen = 14;
inline constexpr std::size_t kVlanTagLen = 4;
inline constexpr std::size_t kFcsLen = 4;

class EthernetView {
public:
    static std::optional<EthernetView> at(Bytes frame) noexcept;
    [[nodiscard]] const std::uint8_t* dst_mac() const noexcept { return p_; }
    [[nodiscard]] const std::uint8_t* src_mac() const noexcept { return p_ + 6; }
    [[nodiscard]] std::uint16_t ether_type() const noexcept; // the field after the source MAC
private:
    explicit EthernetView(const std::uint8_t* p) noexcept : p_(p) {}
    const std::uint8_t* p_;
};

// The 4 bytes after TPID 0x8100: TCI, then the inner ether type.
class VlanView {
public:
    static std::optional<VlanView> at(Bytes frame, std::size_t offset) noexcept; // offset of the TCI
    [[nodiscard]] std::uint16_t tci() const noexcept;
    [[nodiscard]] std::uint16_t vid() const noexcept { return tci() & 0x0fff; }
    [[nodiscard]] std::uint8_t pcp() const noexcept { return static_cast<std::uint8_t>(tci() >> 13); }
    [[nodiscard]] bool dei() const noexcept { return (tci() >> 12) & 1; }
    [[nodiscard]] std::uint16_t inner_ether_type() const noexcept;
private:
    explicit VlanView(const std::uint8_t* p) noexcept : p_(p) {}
    const std::uint8_t* p_;
};

class Ipv4View {
public:
    // Requires version 4, IHL >= 5 and IHL*4 bytes inside the buffer.
    static std::optional<Ipv4View> at(Bytes frame, std::size_t offset) noexcept;
    [[nodiscard]] std::size_t header_len() const noexcept;
    [[nodiscard]] std::uint16_t total_len() const noexcept;
    [[nodiscard]] std::uint8_t tos() const noexcept;
    [[nodiscard]] std::uint8_t ttl() const noexcept;
    [[nodiscard]] std::uint8_t protocol() const noexcept;
    [[nodiscard]] std::uint8_t flags() const noexcept; // the 3 flag bits
    [[nodiscard]] bool is_fragment() const noexcept;   // MF set or fragment offset != 0
    [[nodiscard]] const std::uint8_t* src_addr() const noexcept { return p_ + 12; } // 4 bytes, network order
    [[nodiscard]] const std::uint8_t* dst_addr() const noexcept { return p_ + 16; }
    [[nodiscard]] bool header_checksum_ok() const noexcept;
    [[nodiscard]] const std::uint8_t* data() const noexcept { return p_; }
private:
    explicit Ipv4View(const std::uint8_t* p) noexcept : p_(p) {}
    const std::uint8_t* p_;
};

class Ipv6View {
public:
    static std::optional<Ipv6View> at(Bytes frame, std::size_t offset) noexcept; // version 6, 40 bytes
    [[nodiscard]] std::uint8_t traffic_class() const noexcept;
    [[nodiscard]] std::uint32_t flow_label() const noexcept; // 20 bits
    [[nodiscard]] std::uint16_t payload_len() const noexcept;
    [[nodiscard]] std::uint8_t next_header() const noexcept;
    [[nodiscard]] std::uint8_t hop_limit() const noexcept;
    [[nodiscard]] const std::uint8_t* src_addr() const noexcept { return p_ + 8; } // 16 bytes
    [[nodiscard]] const std::uint8_t* dst_addr() const noexcept { return p_ + 24; }
private:
    explicit Ipv6View(const std::uint8_t* p) noexcept : p_(p) {}
    const std::uint8_t* p_;
};

class UdpView {
public:
    static std::optional<UdpView> at(Bytes frame, std::size_t offset) noexcept; // 8 bytes
    [[nodiscard]] std::uint16_t src_port() const noexcept;
    [[nodiscard]] std::uint16_t dst_port() const noexcept;
    [[nodiscard]] std::uint16_t length() const noexcept;
    [[nodiscard]] std::uint16_t checksum() const noexcept;
private:
    explicit UdpView(const std::uint8_t* p) noexcept : p_(p) {}
    const std::uint8_t* p_;
};

class TcpView {
public:
    static std::optional<TcpView> at(Bytes frame, std::size_t offset) noexcept; // 20 bytes
    [[nodiscard]] std::uint16_t src_port() const noexcept;
    [[nodiscard]] std::uint16_t dst_port() const noexcept;
    [[nodiscard]] std::uint8_t data_offset_words() const noexcept;
    [[nodiscard]] std::uint16_t checksum() const noexcept;
private:
    explicit TcpView(const std::uint8_t* p) noexcept : p_(p) {}
    const std::uint8_t* p_;
};

// The views are defined here, inline: the datapath reads a few fields of
// every frame through them, and a call per field would cost more than the read.
namespace detail {

inline std::uint16_t load_be16(const std::uint8_t* p) noexcept {
    return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

// True when [offset, offset + len) lies inside `frame` (overflow-safe).
inline bool fits(Bytes frame, std::size_t offset, std::size_t len) noexcept {
    return offset <= frame.size() && frame.size() - offset >= len;
}

} // namespace detail

inline std::optional<EthernetView> EthernetView::at(Bytes frame) noexcept {
    if (frame.size() < kEthHeaderLen) return std::nullopt;
    return EthernetView(frame.data());
}

inline std::uint16_t EthernetView::ether_type() const noexcept {
    return detail::load_be16(p_ + 12);
}

inline std::optional<VlanView> VlanView::at(Bytes frame, std::size_t offset) noexcept {
    if (!detail::fits(frame, offset, kVlanTagLen)) return std::nullopt;
    return VlanView(frame.data() + offset);
}

inline std::uint16_t VlanView::tci() const noexcept {
    return detail::load_be16(p_);
}
inline std::uint16_t VlanView::inner_ether_type() const noexcept {
    return detail::load_be16(p_ + 2);
}

inline std::optional<Ipv4View> Ipv4View::at(Bytes frame, std::size_t offset) noexcept {
    if (!detail::fits(frame, offset, 20)) return std::nullopt;
    const std::uint8_t* p = frame.data() + offset;
    const std::size_t ihl = p[0] & 0x0f;
    if ((p[0] >> 4) != 4 || ihl < 5 || !detail::fits(frame, offset, ihl * 4)) return std::nullopt;
    return Ipv4View(p);
}

inline std::size_t Ipv4View::header_len() const noexcept {
    return static_cast<std::size_t>(p_[0] & 0x0f) * 4;
}
inline std::uint16_t Ipv4View::total_len() const noexcept {
    return detail::load_be16(p_ + 2);
}
inline std::uint8_t Ipv4View::tos() const noexcept {
    return p_[1];
}
inline std::uint8_t Ipv4View::ttl() const noexcept {
    return p_[8];
}
inline std::uint8_t Ipv4View::protocol() const noexcept {
    return p_[9];
}
inline std::uint8_t Ipv4View::flags() const noexcept {
    return static_cast<std::uint8_t>(p_[6] >> 5);
}

inline bool Ipv4View::is_fragment() const noexcept {
    const std::uint16_t word = detail::load_be16(p_ + 6);
    return (word & 0x2000) != 0 || (word & 0x1fff) != 0; // MF, fragment offset
}


inline std::optional<Ipv6View> Ipv6View::at(Bytes frame, std::size_t offset) noexcept {
    if (!detail::fits(frame, offset, 40)) return std::nullopt;
    const std::uint8_t* p = frame.data() + offset;
    if ((p[0] >> 4) != 6) return std::nullopt;
    return Ipv6View(p);
}

inline std::uint8_t Ipv6View::traffic_class() const noexcept {
    return static_cast<std::uint8_t>(((p_[0] & 0x0f) << 4) | (p_[1] >> 4));
}
inline std::uint32_t Ipv6View::flow_label() const noexcept {
    return (static_cast<std::uint32_t>(p_[1] & 0x0f) << 16) |
           (static_cast<std::uint32_t>(p_[2]) << 8) | p_[3];
}
inline std::uint16_t Ipv6View::payload_len() const noexcept {
    return detail::load_be16(p_ + 4);
}
inline std::uint8_t Ipv6View::next_header() const noexcept {
    return p_[6];
}
inline std::uint8_t Ipv6View::hop_limit() const noexcept {
    return p_[7];
}

inline std::optional<UdpView> UdpView::at(Bytes frame, std::size_t offset) noexcept {
    if (!detail::fits(frame, offset, 8)) return std::nullopt;
    return UdpView(frame.data() + offset);
}

inline std::uint16_t UdpView::src_port() const noexcept {
    return detail::load_be16(p_);
}
inline std::uint16_t UdpView::dst_port() const noexcept {
    return detail::load_be16(p_ + 2);
}
inline std::uint16_t UdpView::length() const noexcept {
    return detail::load_be16(p_ + 4);
}
inline std::uint16_t UdpView::checksum() const noexcept {
    return detail::load_be16(p_ + 6);
}

inline std::optional<TcpView> TcpView::at(Bytes frame, std::size_t offset) noexcept {
    if (!detail::fits(frame, offset, 20)) return std::nullopt;
    return TcpView(frame.data() + offset);
}

inline std::uint16_t TcpView::src_port() const noexcept {
    return detail::load_be16(p_);
}
inline std::uint16_t TcpView::dst_port() const noexcept {
    return detail::load_be16(p_ + 2);
}
inline std::uint8_t TcpView::data_offset_words() const noexcept {
    return p_[12] >> 4;
}
inline std::uint16_t TcpView::checksum() const noexcept {
    return detail::load_be16(p_ + 16);
}

enum class L3Kind : std::uint8_t { none, ipv4, ipv6 };
enum class L4Kind : std::uint8_t { none, tcp, udp };

// What one pass over a frame learns: enough for steering, RSS and offloads.
// Offsets are from the start of the frame. The parser looks through exactly
// one 802.1Q tag directly after the source MAC.
struct ParsedFrame {
    bool has_vlan = false;
    std::uint16_t vlan_tci = 0;   // full TCI (PCP, DEI, VID) when has_vlan
    std::uint16_t ether_type = 0; // after the tag when has_vlan
    std::uint16_t l3_offset = 0;  // 14, or 18 when tagged
    L3Kind l3 = L3Kind::none;     // ipv4 / ipv6: a whole, well-formed header lies at l3_offset
    bool ip_fragment = false;     // IPv4 MF / offset: no L4 ports are read
    std::uint8_t ip_proto = 0;    // IPv4 protocol / IPv6 next header (no extension walking)
    std::uint16_t l4_offset = 0;
    L4Kind l4 = L4Kind::none;     // set only when the L4 header lies inside the frame
    std::uint16_t src_port = 0;   // host order, when l4 != none
    std::uint16_t dst_port = 0;
};

// Never fails: fields it cannot see stay at their "none" values. An input
// shorter than an Ethernet header gives ether_type 0 and l3 none.
[[nodiscard]] ParsedFrame parse_frame(Bytes frame) noexcept;

// IP checksum offload verdict, as mlx5 reports it (get_csum_ok in rdma-core's
// providers/mlx5/cq.c: the CQE's L3_OK and L4_OK both set, L3 type IPv4):
// true only for an IPv4 frame that is not a fragment, carries TCP or UDP,
// and whose header checksum and L4 checksum are both good (a UDP checksum of
// 0, "none" in IPv4, counts as good). False for anything else: IPv6, ICMP and
// other protocols, fragments (no L4 checksum can be verified), bad sums.
[[nodiscard]] bool ip_checksums_ok(Bytes frame, const ParsedFrame& parsed) noexcept;

} // namespace rdmasim::net
