// Link and network addresses of a port: the types, their text forms, and the
// addresses derived from a MAC (net/README.md, "Addresses"). All bytes are in
// network order.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace rdmasim::net {

using MacAddress = std::array<std::uint8_t, 6>;
using Ipv4Address = std::array<std::uint8_t, 4>;
using Ipv6Address = std::array<std::uint8_t, 16>;

inline constexpr MacAddress kBroadcastMac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

// The I/G bit (bit 0 of the first byte) is clear: an address one port owns.
[[nodiscard]] constexpr bool is_unicast(const MacAddress& mac) noexcept { return (mac[0] & 1) == 0; }

// A RoCE v2 multicast GID: IPv6 ff00::/8, or IPv4-mapped ::ffff:224.0.0.0/4
// (the kernel's rdma_is_multicast_addr).
[[nodiscard]] constexpr bool is_multicast_gid(const Ipv6Address& gid) noexcept {
    if (gid[0] == 0xff) return true;
    for (int i = 0; i < 10; ++i)
        if (gid[i] != 0) return false;
    return gid[10] == 0xff && gid[11] == 0xff && (gid[12] & 0xf0) == 0xe0;
}
// The Ethernet group address of a multicast GID: IPv4 01:00:5e and the low
// 23 bits of the group (RFC 1112 6.4), IPv6 33:33 and its low 32 bits (RFC 2464 7).
[[nodiscard]] constexpr MacAddress multicast_mac(const Ipv6Address& gid) noexcept {
    if (gid[0] == 0xff) return {0x33, 0x33, gid[12], gid[13], gid[14], gid[15]};
    return {0x01, 0x00, 0x5e, static_cast<std::uint8_t>(gid[13] & 0x7f), gid[14], gid[15]};
}

// "02:00:00:00:00:01": six two-digit hex bytes separated by colons.
[[nodiscard]] std::optional<MacAddress> parse_mac(std::string_view text);
// Dotted-quad IPv4 ("192.0.2.1"), four decimal fields 0..255, no leading zeros.
[[nodiscard]] std::optional<Ipv4Address> parse_ipv4(std::string_view text);
// Any IPv6 text form inet_pton(3) accepts ("fe80::1", "::ffff:192.0.2.1").
[[nodiscard]] std::optional<Ipv6Address> parse_ipv6(std::string_view text);

[[nodiscard]] std::string to_string(const MacAddress& mac);  // lower-case, colons
[[nodiscard]] std::string to_string(const Ipv4Address& ip);  // dotted quad
[[nodiscard]] std::string to_string(const Ipv6Address& ip);  // inet_ntop's compressed form

// fe80::/64 with the modified EUI-64 interface identifier of `mac` (RFC 4291
// appendix A: ff:fe in the middle, the universal/local bit inverted).
[[nodiscard]] Ipv6Address ipv6_link_local(const MacAddress& mac) noexcept;
// ::ffff:a.b.c.d (RFC 4291 2.5.5.2), the form of a RoCE v2 GID for IPv4.
[[nodiscard]] Ipv6Address ipv4_mapped(const Ipv4Address& ip) noexcept;
// A self-assigned RFC 3927 address derived from `mac`: 169.254.X.Y with
// X = 1 + mac[4] mod 254 and Y = mac[5], so inside 169.254.1.0 -
// 169.254.254.255, the range RFC 3927 lets a host pick from.
[[nodiscard]] Ipv4Address ipv4_link_local(const MacAddress& mac) noexcept;

} // namespace rdmasim::net
