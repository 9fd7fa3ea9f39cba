// libFuzzer target: ibv_create_flow's parser over arbitrary bytes. The input
// is the attribute and its spec list, copied into a heap block of exactly its
// size (new[] aligns it for ibv_flow_attr), and that size is what the parser
// may read. A rule it accepts must keep every value inside its mask, and is
// then matched against a few fixed frames.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "datapath/flow_rule.hpp"
#include "device/flow_spec.hpp"
#include "net/headers.hpp"

namespace {

using namespace rdmasim;

void check(bool ok) {
    if (!ok) __builtin_trap();
}

template <class T> bool within(T value, T mask) {
    return (value & static_cast<T>(~mask)) == 0;
}
template <std::size_t N>
bool within(const std::array<std::uint8_t, N>& value, const std::array<std::uint8_t, N>& mask) {
    for (std::size_t i = 0; i < N; ++i)
        if ((value[i] & ~mask[i]) != 0) return false;
    return true;
}

bool reduced_to_masks(const datapath::FlowRule& r) {
    const auto& ev = r.eth_value;
    const auto& em = r.eth_mask;
    const auto& v4 = r.ipv4_value;
    const auto& m4 = r.ipv4_mask;
    const auto& v6 = r.ipv6_value;
    const auto& m6 = r.ipv6_mask;
    return within(ev.dst_mac, em.dst_mac) && within(ev.src_mac, em.src_mac) &&
           within(ev.ether_type, em.ether_type) && within(ev.vlan_tci, em.vlan_tci) &&
           within(v4.src, m4.src) && within(v4.dst, m4.dst) && within(v4.proto, m4.proto) &&
           within(v4.tos, m4.tos) && within(v4.ttl, m4.ttl) && within(v4.flags, m4.flags) &&
           m4.flags <= 7 && within(v6.src, m6.src) && within(v6.dst, m6.dst) &&
           within(v6.flow_label, m6.flow_label) && m6.flow_label <= 0xfffff &&
           within(v6.next_hdr, m6.next_hdr) && within(v6.traffic_class, m6.traffic_class) &&
           within(v6.hop_limit, m6.hop_limit) && within(r.l4_value.src_port, r.l4_mask.src_port) &&
           within(r.l4_value.dst_port, r.l4_mask.dst_port);
}

std::vector<std::uint8_t> frame_of(std::initializer_list<std::uint8_t> head, std::size_t pad) {
    std::vector<std::uint8_t> f(head);
    f.resize(f.size() + pad, 0xab);
    return f;
}

// Tagged IPv4/TCP, IPv6/UDP and a runt: enough to exercise every match branch.
const std::vector<std::vector<std::uint8_t>>& frames() {
    static const std::vector<std::vector<std::uint8_t>> f = {
        frame_of({0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x81, 0x00, 0x20, 0x05, 0x08, 0x00,
                  0x45, 0x10, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, 10, 0, 0,
                  1, 10, 0, 0, 2, 0x30, 0x39, 0x00, 0x50},
                 16),
        frame_of({0x33, 0x33, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x86, 0xdd, 0x60, 0x01, 0x23, 0x45,
                  0x00, 0x10, 17, 64},
                 32 + 8 + 8),
        frame_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00}, 0),
        {},
    };
    return f;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::unique_ptr<std::uint8_t[]> block(new std::uint8_t[size]);
    if (size != 0) std::memcpy(block.get(), data, size);
    const auto& attr = *reinterpret_cast<const ibv_flow_attr*>(block.get());

    datapath::FlowRule rule;
    rule.ipv4_value.ttl = 0x5a; // a marker: a failed parse must leave the rule untouched
    const int rc = device::parse_flow_attr(attr, size, rule);
    if (rc != 0) {
        check(rc == EINVAL || rc == EOPNOTSUPP);
        check(rule.ipv4_value.ttl == 0x5a && !rule.has_eth && rule.l3 == net::L3Kind::none);
        return 0;
    }
    check(size >= sizeof(ibv_flow_attr));
    check(reduced_to_masks(rule));
    for (const auto& f : frames()) {
        const net::Bytes bytes(f.data(), f.size());
        const auto parsed = net::parse_frame(bytes);
        const bool m = datapath::flow_matches(rule, bytes, parsed);
        if (m && rule.l4 != net::L4Kind::none) check(parsed.l4 == rule.l4);
        if (m && rule.l3 != net::L3Kind::none) check(parsed.l3 == rule.l3);
    }
    return 0;
}
