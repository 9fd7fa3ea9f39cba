#include "datapath/flow_rule.hpp"

#include <cstddef>
#include <cstring>

namespace rdmasim::datapath {

namespace {

template <class T> bool under_mask(T got, T value, T mask) noexcept {
    return ((got ^ value) & mask) == 0;
}

// Fixed-size byte compares, a word at a time (N is 4, 6 or 16: unrolled).
template <class W> W load(const std::uint8_t* p) noexcept {
    W w;
    std::memcpy(&w, p, sizeof w);
    return w;
}

template <std::size_t N>
bool bytes_under_mask(const std::uint8_t* got, const std::array<std::uint8_t, N>& value,
                      const std::array<std::uint8_t, N>& mask) noexcept {
    std::uint64_t diff = 0;
    std::size_t i = 0;
    for (; i + 8 <= N; i += 8)
        diff |= (load<std::uint64_t>(got + i) ^ load<std::uint64_t>(value.data() + i)) &
                load<std::uint64_t>(mask.data() + i);
    for (; i + 2 <= N; i += 2)
        diff |= static_cast<std::uint16_t>((load<std::uint16_t>(got + i) ^
                                            load<std::uint16_t>(value.data() + i)) &
                                           load<std::uint16_t>(mask.data() + i));
    for (; i < N; ++i) diff |= (got[i] ^ value[i]) & mask[i];
    return diff == 0;
}

template <std::size_t N> bool all_zero(const std::array<std::uint8_t, N>& a) noexcept {
    std::uint64_t any = 0;
    std::size_t i = 0;
    for (; i + 8 <= N; i += 8) any |= load<std::uint64_t>(a.data() + i);
    for (; i + 2 <= N; i += 2) any |= load<std::uint16_t>(a.data() + i);
    for (; i < N; ++i) any |= a[i];
    return any == 0;
}

bool eth_matches(const FlowRule& rule, net::Bytes frame, const net::ParsedFrame& parsed) noexcept {
    const EthMatch& v = rule.eth_value;
    const EthMatch& m = rule.eth_mask;
    if (!all_zero(m.dst_mac) || !all_zero(m.src_mac)) {
        const auto eth = net::EthernetView::at(frame);
        if (!eth) return false;
        if (!bytes_under_mask(eth->dst_mac(), v.dst_mac, m.dst_mac)) return false;
        if (!bytes_under_mask(eth->src_mac(), v.src_mac, m.src_mac)) return false;
    }
    if (!under_mask(parsed.ether_type, v.ether_type, m.ether_type)) return false;
    if (m.vlan_tci != 0 &&
        (!parsed.has_vlan || !under_mask(parsed.vlan_tci, v.vlan_tci, m.vlan_tci)))
        return false;
    return true;
}

bool ipv4_matches(const FlowRule& rule, net::Bytes frame, const net::ParsedFrame& parsed) noexcept {
    if (parsed.l3 != net::L3Kind::ipv4) return false;
    const auto ip = net::Ipv4View::at(frame, parsed.l3_offset);
    if (!ip) return false;
    const Ipv4Match& v = rule.ipv4_value;
    const Ipv4Match& m = rule.ipv4_mask;
    return bytes_under_mask(ip->src_addr(), v.src, m.src) &&
           bytes_under_mask(ip->dst_addr(), v.dst, m.dst) &&
           under_mask(ip->protocol(), v.proto, m.proto) && under_mask(ip->tos(), v.tos, m.tos) &&
           under_mask(ip->ttl(), v.ttl, m.ttl) && under_mask(ip->flags(), v.flags, m.flags);
}

bool ipv6_matches(const FlowRule& rule, net::Bytes frame, const net::ParsedFrame& parsed) noexcept {
    if (parsed.l3 != net::L3Kind::ipv6) return false;
    const auto ip = net::Ipv6View::at(frame, parsed.l3_offset);
    if (!ip) return false;
    const Ipv6Match& v = rule.ipv6_value;
    const Ipv6Match& m = rule.ipv6_mask;
    return bytes_under_mask(ip->src_addr(), v.src, m.src) &&
           bytes_under_mask(ip->dst_addr(), v.dst, m.dst) &&
           under_mask(ip->flow_label(), v.flow_label, m.flow_label) &&
           under_mask(ip->next_header(), v.next_hdr, m.next_hdr) &&
           under_mask(ip->traffic_class(), v.traffic_class, m.traffic_class) &&
           under_mask(ip->hop_limit(), v.hop_limit, m.hop_limit);
}

// Whether each match struct compares anything (field by field: padding is not a field).
bool any_set(const EthMatch& m) noexcept {
    return !all_zero(m.dst_mac) || !all_zero(m.src_mac) || m.ether_type != 0 || m.vlan_tci != 0;
}
bool any_set(const Ipv4Match& m) noexcept {
    return !all_zero(m.src) || !all_zero(m.dst) || m.proto != 0 || m.tos != 0 || m.ttl != 0 ||
           m.flags != 0;
}
bool any_set(const Ipv6Match& m) noexcept {
    return !all_zero(m.src) || !all_zero(m.dst) || m.flow_label != 0 || m.next_hdr != 0 ||
           m.traffic_class != 0 || m.hop_limit != 0;
}
bool any_set(const L4Match& m) noexcept { return m.src_port != 0 || m.dst_port != 0; }

} // namespace

CompiledRule compile(const FlowRule& rule) noexcept {
    CompiledRule c;
    c.l3 = rule.l3;
    c.l4 = rule.l4;
    // An ETH spec with all-zero masks matches every frame; the IP spec not in
    // force is never looked at.
    c.masked = (rule.has_eth && any_set(rule.eth_mask)) ||
               (rule.l3 == net::L3Kind::ipv4 && any_set(rule.ipv4_mask)) ||
               (rule.l3 == net::L3Kind::ipv6 && any_set(rule.ipv6_mask)) ||
               (rule.l4 != net::L4Kind::none && any_set(rule.l4_mask));
    return c;
}

bool flow_matches(const FlowRule& rule, net::Bytes frame, const net::ParsedFrame& parsed) noexcept {
    if (rule.has_eth && !eth_matches(rule, frame, parsed)) return false;
    switch (rule.l3) {
    case net::L3Kind::none:
        break;
    case net::L3Kind::ipv4:
        if (!ipv4_matches(rule, frame, parsed)) return false;
        break;
    case net::L3Kind::ipv6:
        if (!ipv6_matches(rule, frame, parsed)) return false;
        break;
    }
    if (rule.l4 != net::L4Kind::none) {
        // A TCP/UDP spec needs the ports: an IP fragment never matches it.
        if (parsed.l4 != rule.l4 || parsed.ip_fragment) return false;
        if (!under_mask(parsed.src_port, rule.l4_value.src_port, rule.l4_mask.src_port) ||
            !under_mask(parsed.dst_port, rule.l4_value.dst_port, rule.l4_mask.dst_port))
            return false;
    }
    return true;
}

} // namespace rdmasim::datapath
