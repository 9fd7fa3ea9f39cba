#include "device/flow_spec.hpp"

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <endian.h>

namespace rdmasim::device {

namespace {

using SpecHeader = decltype(ibv_flow_spec::hdr);

constexpr std::uint32_t kKnownAttrFlags =
    IBV_FLOW_ATTR_FLAGS_DONT_TRAP | IBV_FLOW_ATTR_FLAGS_EGRESS;
constexpr std::uint8_t kIpv4FlagBits = 0x7;
constexpr std::uint32_t kFlowLabelBits = 0xfffff;

template <std::size_t N>
void masked_bytes(std::array<std::uint8_t, N>& value, std::array<std::uint8_t, N>& mask,
                  const void* value_src, const void* mask_src) noexcept {
    std::memcpy(value.data(), value_src, N);
    std::memcpy(mask.data(), mask_src, N);
    for (std::size_t i = 0; i < N; ++i)
        value[i] &= mask[i];
}

void parse_eth(const ibv_flow_spec_eth& s, datapath::FlowRule& rule) noexcept {
    auto& v = rule.eth_value;
    auto& m = rule.eth_mask;
    masked_bytes(v.dst_mac, m.dst_mac, s.val.dst_mac, s.mask.dst_mac);
    masked_bytes(v.src_mac, m.src_mac, s.val.src_mac, s.mask.src_mac);
    m.ether_type = be16toh(s.mask.ether_type);
    v.ether_type = be16toh(s.val.ether_type) & m.ether_type;
    m.vlan_tci = be16toh(s.mask.vlan_tag);
    v.vlan_tci = be16toh(s.val.vlan_tag) & m.vlan_tci;
    rule.has_eth = true;
}

void parse_ipv4(const ibv_flow_spec_ipv4& s, datapath::FlowRule& rule) noexcept {
    masked_bytes(rule.ipv4_value.src, rule.ipv4_mask.src, &s.val.src_ip, &s.mask.src_ip);
    masked_bytes(rule.ipv4_value.dst, rule.ipv4_mask.dst, &s.val.dst_ip, &s.mask.dst_ip);
    rule.l3 = net::L3Kind::ipv4;
}

void parse_ipv4_ext(const ibv_flow_spec_ipv4_ext& s, datapath::FlowRule& rule) noexcept {
    auto& v = rule.ipv4_value;
    auto& m = rule.ipv4_mask;
    masked_bytes(v.src, m.src, &s.val.src_ip, &s.mask.src_ip);
    masked_bytes(v.dst, m.dst, &s.val.dst_ip, &s.mask.dst_ip);
    m.proto = s.mask.proto;
    v.proto = s.val.proto & m.proto;
    m.tos = s.mask.tos;
    v.tos = s.val.tos & m.tos;
    m.ttl = s.mask.ttl;
    v.ttl = s.val.ttl & m.ttl;
    m.flags = s.mask.flags & kIpv4FlagBits;
    v.flags = s.val.flags & m.flags;
    rule.l3 = net::L3Kind::ipv4;
}

void parse_ipv6(const ibv_flow_spec_ipv6& s, datapath::FlowRule& rule) noexcept {
    auto& v = rule.ipv6_value;
    auto& m = rule.ipv6_mask;
    masked_bytes(v.src, m.src, s.val.src_ip, s.mask.src_ip);
    masked_bytes(v.dst, m.dst, s.val.dst_ip, s.mask.dst_ip);
    m.flow_label = be32toh(s.mask.flow_label) & kFlowLabelBits;
    v.flow_label = be32toh(s.val.flow_label) & m.flow_label;
    m.next_hdr = s.mask.next_hdr;
    v.next_hdr = s.val.next_hdr & m.next_hdr;
    m.traffic_class = s.mask.traffic_class;
    v.traffic_class = s.val.traffic_class & m.traffic_class;
    m.hop_limit = s.mask.hop_limit;
    v.hop_limit = s.val.hop_limit & m.hop_limit;
    rule.l3 = net::L3Kind::ipv6;
}

void parse_tcp_udp(const ibv_flow_spec_tcp_udp& s, net::L4Kind kind,
                   datapath::FlowRule& rule) noexcept {
    auto& v = rule.l4_value;
    auto& m = rule.l4_mask;
    m.src_port = be16toh(s.mask.src_port);
    v.src_port = be16toh(s.val.src_port) & m.src_port;
    m.dst_port = be16toh(s.mask.dst_port);
    v.dst_port = be16toh(s.val.dst_port) & m.dst_port;
    rule.l4 = kind;
}

// Copies a whole spec struct out of the (possibly unaligned) buffer. The
// caller has checked that sizeof(Spec) bytes lie inside the spec.
template <class Spec> Spec load(const std::uint8_t* p) noexcept {
    Spec s;
    std::memcpy(&s, p, sizeof(Spec));
    return s;
}

// The struct size a known spec type needs, or 0 for a type this HCA lacks.
std::size_t spec_struct_size(std::uint32_t type) noexcept {
    switch (type) {
    case IBV_FLOW_SPEC_ETH:
        return sizeof(ibv_flow_spec_eth);
    case IBV_FLOW_SPEC_IPV4:
        return sizeof(ibv_flow_spec_ipv4);
    case IBV_FLOW_SPEC_IPV4_EXT:
        return sizeof(ibv_flow_spec_ipv4_ext);
    case IBV_FLOW_SPEC_IPV6:
        return sizeof(ibv_flow_spec_ipv6);
    case IBV_FLOW_SPEC_TCP:
    case IBV_FLOW_SPEC_UDP:
        return sizeof(ibv_flow_spec_tcp_udp);
    default:
        return 0;
    }
}

// The attribute's own fields: comp_mask, port, type, flags.
int check_attr_fields(const ibv_flow_attr& attr) noexcept {
    if (attr.comp_mask != 0) return EINVAL;
    if (attr.port != 1) return EINVAL;
    // Enums are read as integers: a C caller may store any value in them.
    const auto* const base = reinterpret_cast<const std::uint8_t*>(&attr);
    std::uint32_t type = 0;
    std::memcpy(&type, base + offsetof(ibv_flow_attr, type), sizeof(type));
    switch (type) {
    case IBV_FLOW_ATTR_NORMAL:
    case IBV_FLOW_ATTR_ALL_DEFAULT:
    case IBV_FLOW_ATTR_MC_DEFAULT:
    case IBV_FLOW_ATTR_SNIFFER:
        break;
    default:
        return EINVAL;
    }
    // Flags, as the kernel checks them: an unknown bit is EINVAL (the core's
    // IB_FLOW_ATTR_FLAGS_RESERVED check in ib_uverbs_ex_create_flow, then
    // mlx5_ib_create_flow's for the bit below DONT_TRAP); DONT_TRAP only on a
    // NORMAL or SNIFFER rule (ib_uverbs_ex_create_flow), EGRESS not on a default
    // rule (mlx5_ib_create_flow).
    if ((attr.flags & ~kKnownAttrFlags) != 0) return EINVAL;
    const bool default_rule = type == IBV_FLOW_ATTR_ALL_DEFAULT || type == IBV_FLOW_ATTR_MC_DEFAULT;
    if (default_rule && (attr.flags & kKnownAttrFlags) != 0) return EINVAL;
    return 0;
}

// One spec of a known type whose size was checked, at `p`, into `out`; a
// second spec of the same layer is EINVAL.
int parse_spec(std::uint32_t type, const std::uint8_t* p, datapath::FlowRule& out) noexcept {
    switch (type) {
    case IBV_FLOW_SPEC_ETH:
        if (out.has_eth) return EINVAL;
        parse_eth(load<ibv_flow_spec_eth>(p), out);
        break;
    case IBV_FLOW_SPEC_IPV4:
        if (out.l3 != net::L3Kind::none) return EINVAL;
        parse_ipv4(load<ibv_flow_spec_ipv4>(p), out);
        break;
    case IBV_FLOW_SPEC_IPV4_EXT:
        if (out.l3 != net::L3Kind::none) return EINVAL;
        parse_ipv4_ext(load<ibv_flow_spec_ipv4_ext>(p), out);
        break;
    case IBV_FLOW_SPEC_IPV6:
        if (out.l3 != net::L3Kind::none) return EINVAL;
        parse_ipv6(load<ibv_flow_spec_ipv6>(p), out);
        break;
    case IBV_FLOW_SPEC_TCP:
    case IBV_FLOW_SPEC_UDP:
        if (out.l4 != net::L4Kind::none) return EINVAL;
        parse_tcp_udp(load<ibv_flow_spec_tcp_udp>(p),
                      type == IBV_FLOW_SPEC_TCP ? net::L4Kind::tcp : net::L4Kind::udp, out);
        break;
    }
    return 0;
}

// The attribute's num_of_specs specs, within its first `end` bytes. attr.size
// is not trusted: rdma-core itself ignores it (pyverbs sets it to
// sizeof(ibv_flow_attr) alone). Each spec's own size walks the list.
int parse_specs(const ibv_flow_attr& attr, std::size_t end, datapath::FlowRule& out) noexcept {
    const auto* const base = reinterpret_cast<const std::uint8_t*>(&attr);
    std::size_t offset = sizeof(ibv_flow_attr);
    for (unsigned i = 0; i < attr.num_of_specs; ++i) {
        if (end - offset < sizeof(SpecHeader)) return EINVAL;
        std::uint32_t type = 0;
        std::uint16_t size = 0;
        std::memcpy(&type, base + offset + offsetof(SpecHeader, type), sizeof(type));
        std::memcpy(&size, base + offset + offsetof(SpecHeader, size), sizeof(size));
        if (size < sizeof(SpecHeader) || size > end - offset) return EINVAL;
        const std::size_t needed = spec_struct_size(type);
        if (needed == 0) return EOPNOTSUPP;
        if (size < needed) return EINVAL;
        if (int err = parse_spec(type, base + offset, out)) return err;
        offset += size;
    }
    return 0;
}

} // namespace

int parse_flow_attr(const ibv_flow_attr& attr, std::size_t available,
                    datapath::FlowRule& rule) noexcept {
    // Nothing of the attribute is read before it is known to be there.
    if (available < sizeof(ibv_flow_attr)) return EINVAL;
    if (int err = check_attr_fields(attr)) return err;
    datapath::FlowRule out;
    const std::size_t end = available < kMaxFlowBytes ? available : kMaxFlowBytes;
    if (int err = parse_specs(attr, end, out)) return err;
    // An egress rule matches what is sent (mlx5 takes it only with IPsec
    // crypto actions, which this HCA lacks); as an ingress rule it would take
    // received frames: refused, so that programs see it is not there.
    if (attr.flags & IBV_FLOW_ATTR_FLAGS_EGRESS) return EOPNOTSUPP;
    rule = out;
    return 0;
}

} // namespace rdmasim::device
