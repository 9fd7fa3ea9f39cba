#include "net/arp.hpp"

#include <algorithm>
#include <cstring>

namespace rdmasim::net {

namespace {

constexpr std::uint16_t kHwEthernet = 1;

void store_be16(std::uint8_t* p, std::uint16_t v) noexcept {
    p[0] = static_cast<std::uint8_t>(v >> 8);
    p[1] = static_cast<std::uint8_t>(v);
}

} // namespace

std::optional<ArpPacket> parse_arp(Bytes frame) noexcept {
    if (frame.size() < kArpFrameLen) return std::nullopt;
    const std::uint8_t* p = frame.data();
    if (detail::load_be16(p + 12) != kEtherTypeArp) return std::nullopt;
    const std::uint8_t* a = p + kEthHeaderLen;
    if (detail::load_be16(a) != kHwEthernet || detail::load_be16(a + 2) != kEtherTypeIpv4 || a[4] != 6 ||
        a[5] != 4)
        return std::nullopt;
    const std::uint16_t op = detail::load_be16(a + 6);
    if (op != static_cast<std::uint16_t>(ArpOp::request) && op != static_cast<std::uint16_t>(ArpOp::reply))
        return std::nullopt;
    ArpPacket out;
    out.op = static_cast<ArpOp>(op);
    std::memcpy(out.sender_mac.data(), a + 8, 6);
    std::memcpy(out.sender_ip.data(), a + 14, 4);
    std::memcpy(out.target_mac.data(), a + 18, 6);
    std::memcpy(out.target_ip.data(), a + 24, 4);
    return out;
}

std::size_t build_arp(std::span<std::uint8_t, kMinFrameLen> out, const MacAddress& eth_dst,
                      const ArpPacket& arp) noexcept {
    std::uint8_t* p = out.data();
    std::fill(out.begin(), out.end(), std::uint8_t{0});
    std::memcpy(p, eth_dst.data(), 6);
    std::memcpy(p + 6, arp.sender_mac.data(), 6);
    store_be16(p + 12, kEtherTypeArp);
    std::uint8_t* a = p + kEthHeaderLen;
    store_be16(a, kHwEthernet);
    store_be16(a + 2, kEtherTypeIpv4);
    a[4] = 6;
    a[5] = 4;
    store_be16(a + 6, static_cast<std::uint16_t>(arp.op));
    std::memcpy(a + 8, arp.sender_mac.data(), 6);
    std::memcpy(a + 14, arp.sender_ip.data(), 4);
    std::memcpy(a + 18, arp.target_mac.data(), 6);
    std::memcpy(a + 24, arp.target_ip.data(), 4);
    return kMinFrameLen;
}

ArpPacket arp_request(const MacAddress& sender_mac, const Ipv4Address& sender_ip,
                      const Ipv4Address& target_ip) noexcept {
    return ArpPacket{ArpOp::request, sender_mac, sender_ip, MacAddress{}, target_ip};
}

ArpPacket arp_reply(const ArpPacket& request, const MacAddress& owner_mac) noexcept {
    return ArpPacket{ArpOp::reply, owner_mac, request.target_ip, request.sender_mac, request.sender_ip};
}

} // namespace rdmasim::net
