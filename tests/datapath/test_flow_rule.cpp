#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "datapath/flow_rule.hpp"

using namespace rdmasim;
using datapath::FlowRule;

namespace {

using Mac = std::array<std::uint8_t, 6>;
using Ip4 = std::array<std::uint8_t, 4>;
using Ip6 = std::array<std::uint8_t, 16>;

constexpr Mac kDstMac = {0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
constexpr Mac kSrcMac = {0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee};
constexpr Mac kFullMac = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr Ip4 kSrc4 = {192, 168, 1, 10};
constexpr Ip4 kDst4 = {10, 0, 0, 1};
constexpr Ip4 kFull4 = {0xff, 0xff, 0xff, 0xff};
constexpr Ip6 kSrc6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01};
constexpr Ip6 kDst6 = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};

// What a test frame carries; build() lays it out on the wire.
struct FrameDesc {
    Mac dst_mac = kDstMac, src_mac = kSrcMac;
    std::optional<std::uint16_t> vlan_tci;
    int ip_version = 4; // 4, 6, or 0 for an ARP frame
    Ip4 src4 = kSrc4, dst4 = kDst4;
    Ip6 src6 = kSrc6, dst6 = kDst6;
    std::uint8_t proto = 6;
    std::uint8_t tos = 0x28, ttl = 64;
    std::uint16_t frag = 0x4000; // DF
    std::uint32_t flow_label = 0x12345;
    std::uint8_t traffic_class = 0xb8, hop_limit = 255;
    std::uint16_t src_port = 40000, dst_port = 4791;
};

void put16(std::vector<std::uint8_t>& f, std::uint16_t v) {
    f.push_back(static_cast<std::uint8_t>(v >> 8));
    f.push_back(static_cast<std::uint8_t>(v));
}

std::vector<std::uint8_t> build(const FrameDesc& d) {
    std::vector<std::uint8_t> f(d.dst_mac.begin(), d.dst_mac.end());
    f.insert(f.end(), d.src_mac.begin(), d.src_mac.end());
    if (d.vlan_tci) {
        put16(f, net::kEtherTypeVlan);
        put16(f, *d.vlan_tci);
    }
    if (d.ip_version == 4) {
        put16(f, net::kEtherTypeIpv4);
        f.insert(f.end(), {0x45, d.tos, 0, 48, 0, 7});
        put16(f, d.frag);
        f.insert(f.end(), {d.ttl, d.proto, 0, 0});
        f.insert(f.end(), d.src4.begin(), d.src4.end());
        f.insert(f.end(), d.dst4.begin(), d.dst4.end());
    } else if (d.ip_version == 6) {
        put16(f, net::kEtherTypeIpv6);
        const std::uint32_t first =
            (6u << 28) | (std::uint32_t{d.traffic_class} << 20) | (d.flow_label & 0xfffff);
        put16(f, static_cast<std::uint16_t>(first >> 16));
        put16(f, static_cast<std::uint16_t>(first));
        put16(f, 28);
        f.insert(f.end(), {d.proto, d.hop_limit});
        f.insert(f.end(), d.src6.begin(), d.src6.end());
        f.insert(f.end(), d.dst6.begin(), d.dst6.end());
    } else {
        put16(f, 0x0806);
        f.resize(f.size() + 28, 0);
        return f;
    }
    put16(f, d.src_port);
    put16(f, d.dst_port);
    if (d.proto == 6) {
        f.resize(f.size() + 16, 0);
        f[f.size() - 8] = 0x50; // data offset 5
    } else {
        f.resize(f.size() + 4, 0);
    }
    f.resize(f.size() + 8, 0xee); // payload
    return f;
}

// flow_matches, checked against the compiled form a port matches with.
bool matches(const FlowRule& rule, const FrameDesc& d) {
    const auto f = build(d);
    const auto parsed = net::parse_frame(f);
    const bool full = datapath::flow_matches(rule, f, parsed);
    CHECK(datapath::compiled_matches(datapath::compile(rule), rule, f, parsed) == full);
    return full;
}

FrameDesc udp4() {
    FrameDesc d;
    d.proto = 17;
    return d;
}

FrameDesc tcp6() {
    FrameDesc d;
    d.ip_version = 6;
    return d;
}

FrameDesc arp() {
    FrameDesc d;
    d.ip_version = 0;
    return d;
}

} // namespace

TEST_CASE("An empty rule and an all-zero ETH spec match every frame", "[datapath][flow]") {
    FlowRule rule;
    for (int pass = 0; pass < 2; ++pass) {
        CHECK(matches(rule, FrameDesc{}));
        CHECK(matches(rule, udp4()));
        CHECK(matches(rule, tcp6()));
        CHECK(matches(rule, arp()));
        FrameDesc tagged;
        tagged.vlan_tci = 7;
        CHECK(matches(rule, tagged));
        const std::vector<std::uint8_t> runt = {1, 2, 3};
        CHECK(datapath::flow_matches(rule, runt, net::parse_frame(runt)));
        rule.has_eth = true;
    }
}

TEST_CASE("ETH fields match under their masks", "[datapath][flow]") {
    FlowRule rule;
    rule.has_eth = true;

    SECTION("destination MAC") {
        rule.eth_value.dst_mac = kDstMac;
        rule.eth_mask.dst_mac = kFullMac;
        CHECK(matches(rule, FrameDesc{}));
        FrameDesc other;
        other.dst_mac[5] ^= 1;
        CHECK_FALSE(matches(rule, other));
        rule.eth_mask.dst_mac[5] = 0xfe; // the last bit is now a wildcard
        CHECK(matches(rule, other));
    }
    SECTION("source MAC, with a multicast-bit mask") {
        rule.eth_value.src_mac = kSrcMac;
        rule.eth_mask.src_mac = kFullMac;
        CHECK(matches(rule, FrameDesc{}));
        FrameDesc other;
        other.src_mac[0] = 0x04;
        CHECK_FALSE(matches(rule, other));
        rule.eth_value.src_mac = {};
        rule.eth_mask.src_mac = {0x01, 0, 0, 0, 0, 0}; // unicast sources only
        CHECK(matches(rule, other));
        other.src_mac[0] = 0x01;
        CHECK_FALSE(matches(rule, other));
    }
    SECTION("ether type, looking through a VLAN tag") {
        rule.eth_value.ether_type = net::kEtherTypeIpv4;
        rule.eth_mask.ether_type = 0xffff;
        CHECK(matches(rule, FrameDesc{}));
        FrameDesc tagged;
        tagged.vlan_tci = 100;
        CHECK(matches(rule, tagged));
        CHECK_FALSE(matches(rule, tcp6()));
        CHECK_FALSE(matches(rule, arp()));
        const std::vector<std::uint8_t> runt = {1, 2, 3};
        CHECK_FALSE(datapath::flow_matches(rule, runt, net::parse_frame(runt)));
    }
    SECTION("a runt frame fails a MAC match") {
        rule.eth_mask.dst_mac = kFullMac;
        const std::vector<std::uint8_t> runt = {0, 0, 0, 0, 0, 0, 0, 0};
        CHECK_FALSE(datapath::flow_matches(rule, runt, net::parse_frame(runt)));
    }
}

TEST_CASE("A VLAN match requires a tag and compares the TCI under mask", "[datapath][flow]") {
    FlowRule rule;
    rule.has_eth = true;
    rule.eth_value.vlan_tci = 100;
    rule.eth_mask.vlan_tci = 0x0fff; // VID only
    FrameDesc tagged;
    tagged.vlan_tci = 0xe000 | 100; // PCP 7, VID 100
    CHECK(matches(rule, tagged));
    tagged.vlan_tci = 101;
    CHECK_FALSE(matches(rule, tagged));
    CHECK_FALSE(matches(rule, FrameDesc{})); // untagged

    rule.eth_value.vlan_tci = 0xa000; // PCP 5, any VID
    rule.eth_mask.vlan_tci = 0xe000;
    tagged.vlan_tci = 0xa000 | 4000;
    CHECK(matches(rule, tagged));
    tagged.vlan_tci = 0x2000 | 4000;
    CHECK_FALSE(matches(rule, tagged));

    // VID 0 under a full mask still needs a (priority) tag.
    rule.eth_value.vlan_tci = 0;
    rule.eth_mask.vlan_tci = 0x0fff;
    tagged.vlan_tci = 0x6000;
    CHECK(matches(rule, tagged));
    CHECK_FALSE(matches(rule, FrameDesc{}));
}

TEST_CASE("An IPv4 rule needs IPv4 and matches each field under its mask", "[datapath][flow]") {
    FlowRule rule;
    rule.l3 = net::L3Kind::ipv4;
    CHECK(matches(rule, FrameDesc{}));
    CHECK(matches(rule, udp4()));
    CHECK_FALSE(matches(rule, tcp6()));
    CHECK_FALSE(matches(rule, arp()));

    SECTION("addresses and prefixes") {
        rule.ipv4_value.src = kSrc4;
        rule.ipv4_mask.src = kFull4;
        rule.ipv4_value.dst = {10, 0, 0, 0};
        rule.ipv4_mask.dst = {255, 0, 0, 0};
        CHECK(matches(rule, FrameDesc{}));
        FrameDesc d;
        d.dst4 = {10, 200, 3, 4};
        CHECK(matches(rule, d));
        d.dst4 = {11, 0, 0, 1};
        CHECK_FALSE(matches(rule, d));
        d = FrameDesc{};
        d.src4[3] = 11;
        CHECK_FALSE(matches(rule, d));
    }
    SECTION("protocol") {
        rule.ipv4_value.proto = 17;
        rule.ipv4_mask.proto = 0xff;
        CHECK(matches(rule, udp4()));
        CHECK_FALSE(matches(rule, FrameDesc{}));
    }
    SECTION("tos, ttl and flags") {
        rule.ipv4_value.tos = 0x28;
        rule.ipv4_mask.tos = 0xfc; // DSCP only
        FrameDesc d;
        d.tos = 0x2b;
        CHECK(matches(rule, d));
        d.tos = 0x30;
        CHECK_FALSE(matches(rule, d));

        d = FrameDesc{};
        rule.ipv4_value.ttl = 64;
        rule.ipv4_mask.ttl = 0xff;
        CHECK(matches(rule, d));
        d.ttl = 63;
        CHECK_FALSE(matches(rule, d));

        d = FrameDesc{};
        rule.ipv4_value.flags = 0x2; // DF
        rule.ipv4_mask.flags = 0x2;
        CHECK(matches(rule, d));
        d.frag = 0;
        CHECK_FALSE(matches(rule, d));
    }
    SECTION("an IPv4 rule matches through a VLAN tag") {
        rule.ipv4_value.dst = kDst4;
        rule.ipv4_mask.dst = kFull4;
        FrameDesc d;
        d.vlan_tci = 42;
        CHECK(matches(rule, d));
    }
}

TEST_CASE("An IPv6 rule needs IPv6 and matches each field under its mask", "[datapath][flow]") {
    FlowRule rule;
    rule.l3 = net::L3Kind::ipv6;
    CHECK(matches(rule, tcp6()));
    CHECK_FALSE(matches(rule, FrameDesc{}));
    CHECK_FALSE(matches(rule, arp()));

    rule.ipv6_value.src = kSrc6;
    rule.ipv6_mask.src.fill(0xff);
    rule.ipv6_value.dst = kDst6;
    rule.ipv6_mask.dst.fill(0xff);
    CHECK(matches(rule, tcp6()));
    FrameDesc d = tcp6();
    d.dst6[15] = 3;
    CHECK_FALSE(matches(rule, d));
    d = tcp6();
    d.src6[0] = 0x30;
    CHECK_FALSE(matches(rule, d));

    SECTION("flow label") {
        rule.ipv6_value.flow_label = 0x12345;
        rule.ipv6_mask.flow_label = 0xfffff;
        CHECK(matches(rule, tcp6()));
        d = tcp6();
        d.flow_label = 0x12346;
        CHECK_FALSE(matches(rule, d));
    }
    SECTION("next header, traffic class, hop limit") {
        rule.ipv6_value.next_hdr = 6;
        rule.ipv6_mask.next_hdr = 0xff;
        rule.ipv6_value.traffic_class = 0xb8;
        rule.ipv6_mask.traffic_class = 0xff;
        rule.ipv6_value.hop_limit = 255;
        rule.ipv6_mask.hop_limit = 0xff;
        CHECK(matches(rule, tcp6()));
        d = tcp6();
        d.proto = 17;
        CHECK_FALSE(matches(rule, d));
        d = tcp6();
        d.traffic_class = 0;
        CHECK_FALSE(matches(rule, d));
        d = tcp6();
        d.hop_limit = 1;
        CHECK_FALSE(matches(rule, d));
    }
}

TEST_CASE("A TCP or UDP rule needs that protocol and matches ports under mask",
          "[datapath][flow]") {
    FlowRule rule;
    rule.l4 = net::L4Kind::udp;
    // Without an L3 spec it matches the L4 protocol over either IP version.
    CHECK(matches(rule, udp4()));
    FrameDesc udp6 = tcp6();
    udp6.proto = 17;
    CHECK(matches(rule, udp6));
    CHECK_FALSE(matches(rule, FrameDesc{}));
    CHECK_FALSE(matches(rule, tcp6()));
    CHECK_FALSE(matches(rule, arp()));

    rule.l4_value.dst_port = 4791;
    rule.l4_mask.dst_port = 0xffff;
    CHECK(matches(rule, udp4()));
    FrameDesc d = udp4();
    d.dst_port = 4792;
    CHECK_FALSE(matches(rule, d));

    rule.l4_value.src_port = 0x9c00;
    rule.l4_mask.src_port = 0xff00; // 40000 == 0x9c40
    CHECK(matches(rule, udp4()));
    d = udp4();
    d.src_port = 0x9d40;
    CHECK_FALSE(matches(rule, d));

    SECTION("a fragment has no ports to match") {
        rule.l4_mask = {};
        d = udp4();
        d.frag = 0x2000; // MF
        CHECK_FALSE(matches(rule, d));
    }
    SECTION("TCP") {
        rule.l4 = net::L4Kind::tcp;
        CHECK(matches(rule, FrameDesc{}));
        CHECK(matches(rule, tcp6()));
        CHECK_FALSE(matches(rule, udp4()));
    }
}

TEST_CASE("All specs of a rule must match together", "[datapath][flow]") {
    FlowRule rule;
    rule.has_eth = true;
    rule.eth_value.dst_mac = kDstMac;
    rule.eth_mask.dst_mac = kFullMac;
    rule.eth_value.ether_type = net::kEtherTypeIpv4;
    rule.eth_mask.ether_type = 0xffff;
    rule.l3 = net::L3Kind::ipv4;
    rule.ipv4_value.dst = kDst4;
    rule.ipv4_mask.dst = kFull4;
    rule.l4 = net::L4Kind::tcp;
    rule.l4_value.dst_port = 4791;
    rule.l4_mask.dst_port = 0xffff;
    CHECK(matches(rule, FrameDesc{}));
    FrameDesc d;
    d.dst_mac[0] = 0x04;
    CHECK_FALSE(matches(rule, d));
    d = FrameDesc{};
    d.dst4[0] = 11;
    CHECK_FALSE(matches(rule, d));
    d = FrameDesc{};
    d.dst_port = 1;
    CHECK_FALSE(matches(rule, d));
    // A value bit outside the mask is ignored.
    rule.l4_value.src_port = 1;
    CHECK(matches(rule, FrameDesc{}));
}

TEST_CASE("A compiled rule decides by the parse alone only when no field is masked",
          "[datapath][flow]") {
    FlowRule rule;
    rule.has_eth = true;
    rule.l3 = net::L3Kind::ipv4;
    rule.l4 = net::L4Kind::udp;
    // Values under zero masks compare nothing.
    rule.ipv4_value.dst = kDst4;
    rule.l4_value.dst_port = 1;
    CHECK_FALSE(datapath::compile(rule).masked);
    CHECK(matches(rule, udp4()));
    CHECK_FALSE(matches(rule, FrameDesc{}));
    CHECK_FALSE(matches(rule, arp()));
    FrameDesc frag = udp4();
    frag.frag = 0x2000; // MF
    CHECK_FALSE(matches(rule, frag));
    // A masked field in the IP spec not in force is never looked at.
    rule.ipv6_mask.hop_limit = 0xff;
    CHECK_FALSE(datapath::compile(rule).masked);
    // Any masked field of a spec in force makes flow_matches decide.
    const auto masked_with = [&](auto set) {
        FlowRule r = rule;
        set(r);
        return datapath::compile(r).masked;
    };
    CHECK(masked_with([](FlowRule& r) { r.eth_mask.src_mac[5] = 1; }));
    CHECK(masked_with([](FlowRule& r) { r.eth_mask.ether_type = 1; }));
    CHECK(masked_with([](FlowRule& r) { r.eth_mask.vlan_tci = 1; }));
    CHECK(masked_with([](FlowRule& r) { r.ipv4_mask.flags = 1; }));
    CHECK(masked_with([](FlowRule& r) { r.l4_mask.src_port = 1; }));
    CHECK_FALSE(masked_with([](FlowRule& r) { r.has_eth = false; r.eth_mask.ether_type = 1; }));
    rule.ipv4_mask.dst = kFull4;
    CHECK(datapath::compile(rule).masked);
    CHECK(matches(rule, udp4()));
    FrameDesc other = udp4();
    other.dst4[3] = 9;
    CHECK_FALSE(matches(rule, other));
}
