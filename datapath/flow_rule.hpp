// A flow rule compiled from verbs flow specs: per-field values and masks,
// matched against a parsed frame. A zero mask is a wildcard; a spec that is
// present still requires its protocol (an IPv4 spec matches only IPv4 frames,
// a TCP spec only TCP frames), an ETH spec with all-zero masks matches every
// frame. All multi-byte integer fields are host order; addresses are bytes in
// network order.
#pragma once

#include <array>
#include <cstdint>

#include "net/headers.hpp"

namespace rdmasim::datapath {

struct EthMatch {
    std::array<std::uint8_t, 6> dst_mac{};
    std::array<std::uint8_t, 6> src_mac{};
    std::uint16_t ether_type = 0; // compared with the ether type after an 802.1Q tag
    std::uint16_t vlan_tci = 0;   // a non-zero mask also requires the frame to be tagged
};

struct Ipv4Match {
    std::array<std::uint8_t, 4> src{};
    std::array<std::uint8_t, 4> dst{};
    std::uint8_t proto = 0;
    std::uint8_t tos = 0;
    std::uint8_t ttl = 0;
    std::uint8_t flags = 0; // the 3 IPv4 flag bits
};

struct Ipv6Match {
    std::array<std::uint8_t, 16> src{};
    std::array<std::uint8_t, 16> dst{};
    std::uint32_t flow_label = 0;
    std::uint8_t next_hdr = 0;
    std::uint8_t traffic_class = 0;
    std::uint8_t hop_limit = 0;
};

struct L4Match {
    std::uint16_t src_port = 0;
    std::uint16_t dst_port = 0;
};

struct FlowRule {
    bool has_eth = false;
    EthMatch eth_value, eth_mask;
    net::L3Kind l3 = net::L3Kind::none; // which of ipv4_* / ipv6_* is in force
    Ipv4Match ipv4_value, ipv4_mask;
    Ipv6Match ipv6_value, ipv6_mask;
    net::L4Kind l4 = net::L4Kind::none; // tcp or udp when a TCP/UDP spec is present
    L4Match l4_value, l4_mask;
};

[[nodiscard]] bool flow_matches(const FlowRule& rule, net::Bytes frame,
                                const net::ParsedFrame& parsed) noexcept;

// A rule reduced, when it joins a port's steering table, to what the frame's
// parse decides at once: the L3 and L4 protocols its specs require, and
// whether any field is compared under a non-zero mask. A rule with no masked
// field (the "match on protocol" flows a DPDK-style receiver installs, one per
// RSS hash class) is decided by the parse alone; one with masked fields also
// runs flow_matches. compiled_matches(compile(r), r, f, p) == flow_matches(r, f, p).
struct CompiledRule {
    net::L3Kind l3 = net::L3Kind::none;
    net::L4Kind l4 = net::L4Kind::none;
    bool masked = false; // some field is compared: flow_matches decides
};

[[nodiscard]] CompiledRule compile(const FlowRule& rule) noexcept;

[[nodiscard]] inline bool compiled_matches(const CompiledRule& c, const FlowRule& rule,
                                           net::Bytes frame, const net::ParsedFrame& parsed) noexcept {
    if (c.l3 != net::L3Kind::none && parsed.l3 != c.l3) return false;
    // A TCP/UDP spec needs the ports: an IP fragment never matches it.
    if (c.l4 != net::L4Kind::none && (parsed.l4 != c.l4 || parsed.ip_fragment)) return false;
    return !c.masked || flow_matches(rule, frame, parsed);
}

} // namespace rdmasim::datapath
