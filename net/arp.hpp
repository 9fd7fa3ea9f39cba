// ARP for IPv4 over Ethernet (RFC 826) in Ethernet II frames: parse and build
// requests and replies (net/README.md, "ARP"). Nothing else: no VLAN tag, no
// other hardware or protocol types, no RARP.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "net/addresses.hpp"
#include "net/headers.hpp"

namespace rdmasim::net {

inline constexpr std::uint16_t kEtherTypeArp = 0x0806;
inline constexpr std::size_t kArpLen = 28;                    // the ARP packet for IPv4 over Ethernet
inline constexpr std::size_t kArpFrameLen = kEthHeaderLen + kArpLen; // 42
inline constexpr std::size_t kMinFrameLen = 60;               // Ethernet minimum without the FCS

enum class ArpOp : std::uint16_t { request = 1, reply = 2 };

struct ArpPacket {
    ArpOp op = ArpOp::request;
    MacAddress sender_mac{};
    Ipv4Address sender_ip{};
    MacAddress target_mac{}; // all zero in a request
    Ipv4Address target_ip{};

    friend bool operator==(const ArpPacket&, const ArpPacket&) = default;
};

// An ARP frame: Ethernet II with ether type 0x0806 (untagged), hardware type
// 1 (Ethernet), protocol type 0x0800, lengths 6 and 4, operation 1 or 2.
// Anything else (a shorter frame, another type, a tagged frame) is nullopt.
// Bytes after the 28 ARP bytes (the padding to 60) are ignored.
[[nodiscard]] std::optional<ArpPacket> parse_arp(Bytes frame) noexcept;

// Writes `arp` as a frame from arp.sender_mac to `eth_dst`, zero-padded to
// kMinFrameLen as a NIC sends it; returns kMinFrameLen.
std::size_t build_arp(std::span<std::uint8_t, kMinFrameLen> out, const MacAddress& eth_dst,
                      const ArpPacket& arp) noexcept;

// Who has `target_ip`? Tell `sender_ip` (sent to the broadcast address).
[[nodiscard]] ArpPacket arp_request(const MacAddress& sender_mac, const Ipv4Address& sender_ip,
                                    const Ipv4Address& target_ip) noexcept;
// The answer to `request` from the owner of its target address, `owner_mac`
// (sent to request.sender_mac).
[[nodiscard]] ArpPacket arp_reply(const ArpPacket& request, const MacAddress& owner_mac) noexcept;

} // namespace rdmasim::net
