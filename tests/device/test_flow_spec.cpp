#include <catch2/catch.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "device/flow_spec.hpp"

using namespace rdmasim;
using datapath::FlowRule;
using device::parse_flow_attr;

namespace {

using Mac = std::array<std::uint8_t, 6>;

// An attribute followed by specs, as a program lays them out in memory.
class FlowBuffer {
public:
    FlowBuffer() : bytes_(sizeof(ibv_flow_attr)) {
        attr_.port = 1;
        attr_.type = IBV_FLOW_ATTR_NORMAL;
    }
    template <class Spec> FlowBuffer& add(const Spec& spec) {
        return add_bytes(&spec, sizeof spec);
    }
    FlowBuffer& add_bytes(const void* p, std::size_t n) {
        const auto* b = static_cast<const std::uint8_t*>(p);
        bytes_.insert(bytes_.end(), b, b + n);
        ++attr_.num_of_specs;
        return *this;
    }
    ibv_flow_attr& attr() { return attr_; }
    // The bytes with the attribute in front; size and num_of_specs as counted
    // unless the test has overridden them.
    std::vector<std::uint8_t> bytes() const {
        ibv_flow_attr a = attr_;
        if (a.size == 0) a.size = static_cast<std::uint16_t>(bytes_.size());
        std::vector<std::uint8_t> out = bytes_;
        std::memcpy(out.data(), &a, sizeof a);
        return out;
    }

private:
    ibv_flow_attr attr_{};
    std::vector<std::uint8_t> bytes_;
};

// Parses from a heap block of exactly attr.size bytes (at least the
// attribute), and tells the parser that bound, so that the address sanitizer
// sees any read past it. (ibv_create_flow itself ignores attr.size, as
// rdma-core does: these tests use it only to size the buffer.)
int parse(const std::vector<std::uint8_t>& bytes, FlowRule& rule) {
    REQUIRE(bytes.size() >= sizeof(ibv_flow_attr));
    std::uint16_t declared = 0;
    std::memcpy(&declared, bytes.data() + offsetof(ibv_flow_attr, size), sizeof declared);
    const std::size_t n = std::max<std::size_t>(declared, sizeof(ibv_flow_attr));
    std::unique_ptr<std::uint8_t[]> block(new std::uint8_t[n]());
    std::memcpy(block.get(), bytes.data(), std::min(n, bytes.size()));
    return parse_flow_attr(*reinterpret_cast<const ibv_flow_attr*>(block.get()), n, rule);
}

int parse(const FlowBuffer& fb, FlowRule& rule) {
    return parse(fb.bytes(), rule);
}

int parse(const FlowBuffer& fb) {
    FlowRule rule;
    return parse(fb, rule);
}

ibv_flow_spec_eth eth_spec() {
    ibv_flow_spec_eth s{};
    s.type = IBV_FLOW_SPEC_ETH;
    s.size = sizeof s;
    return s;
}

ibv_flow_spec_ipv4 ipv4_spec() {
    ibv_flow_spec_ipv4 s{};
    s.type = IBV_FLOW_SPEC_IPV4;
    s.size = sizeof s;
    return s;
}

ibv_flow_spec_ipv4_ext ipv4_ext_spec() {
    ibv_flow_spec_ipv4_ext s{};
    s.type = IBV_FLOW_SPEC_IPV4_EXT;
    s.size = sizeof s;
    return s;
}

ibv_flow_spec_ipv6 ipv6_spec() {
    ibv_flow_spec_ipv6 s{};
    s.type = IBV_FLOW_SPEC_IPV6;
    s.size = sizeof s;
    return s;
}

ibv_flow_spec_tcp_udp l4_spec(ibv_flow_spec_type type, std::uint16_t src_port,
                              std::uint16_t dst_port) {
    ibv_flow_spec_tcp_udp s{};
    s.type = type;
    s.size = sizeof s;
    s.val.src_port = htons(src_port);
    s.mask.src_port = src_port ? 0xffff : 0;
    s.val.dst_port = htons(dst_port);
    s.mask.dst_port = dst_port ? 0xffff : 0;
    return s;
}

std::uint32_t ip4(const char* text) {
    in_addr a{};
    REQUIRE(inet_pton(AF_INET, text, &a) == 1);
    return a.s_addr; // network order
}

} // namespace

TEST_CASE("parse_flow_attr reads the specs rdma-core's test_flow sends", "[device][flow]") {
    // EthSpec(ether_type, dst_mac) with src_mac and src_mac_mask set, then
    // Ipv4ExtSpec(src_ip, dst_ip), then TcpUdpSpec(UDP, src_port, dst_port).
    const Mac dst = {0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8};
    const Mac src = {0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc9};
    auto eth = eth_spec();
    std::memcpy(eth.val.dst_mac, dst.data(), 6);
    std::memset(eth.mask.dst_mac, 0xff, 6);
    std::memcpy(eth.val.src_mac, src.data(), 6);
    std::memcpy(eth.mask.src_mac, src.data(), 6); // the test uses the MAC as its own mask
    eth.val.ether_type = htons(0x0800);
    eth.mask.ether_type = 0xffff;
    auto ip = ipv4_ext_spec();
    ip.val.src_ip = ip4("1.1.1.1");
    ip.mask.src_ip = 0xffffffff;
    ip.val.dst_ip = ip4("2.2.2.2");
    ip.mask.dst_ip = 0xffffffff;
    const auto udp = l4_spec(IBV_FLOW_SPEC_UDP, 1234, 5678);

    FlowBuffer fb;
    fb.add(eth).add(ip).add(udp);
    FlowRule rule;
    REQUIRE(parse(fb, rule) == 0);
    CHECK(rule.has_eth);
    CHECK(rule.eth_value.dst_mac == dst);
    CHECK(rule.eth_mask.dst_mac == Mac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff});
    CHECK(rule.eth_value.src_mac == src);
    CHECK(rule.eth_mask.src_mac == src);
    CHECK(rule.eth_value.ether_type == 0x0800);
    CHECK(rule.eth_mask.ether_type == 0xffff);
    CHECK(rule.eth_mask.vlan_tci == 0);
    CHECK(rule.l3 == net::L3Kind::ipv4);
    CHECK(rule.ipv4_value.src == std::array<std::uint8_t, 4>{1, 1, 1, 1});
    CHECK(rule.ipv4_value.dst == std::array<std::uint8_t, 4>{2, 2, 2, 2});
    CHECK(rule.ipv4_mask.dst == std::array<std::uint8_t, 4>{0xff, 0xff, 0xff, 0xff});
    CHECK(rule.ipv4_mask.proto == 0);
    CHECK(rule.l4 == net::L4Kind::udp);
    CHECK(rule.l4_value.src_port == 1234);
    CHECK(rule.l4_value.dst_port == 5678);
    CHECK(rule.l4_mask.src_port == 0xffff);

    SECTION("an IPv4 spec alone (test_ipv4_spec_flow_traffic)") {
        FlowBuffer only_ip;
        only_ip.add(ip);
        FlowRule r;
        REQUIRE(parse(only_ip, r) == 0);
        CHECK_FALSE(r.has_eth);
        CHECK(r.l3 == net::L3Kind::ipv4);
        CHECK(r.l4 == net::L4Kind::none);
    }
}

TEST_CASE("parse_flow_attr reads a packed struct like the man page's example", "[device][flow]") {
    struct __attribute__((packed)) RawEthFlow {
        ibv_flow_attr attr;
        ibv_flow_spec_eth eth;
        ibv_flow_spec_ipv6 ip;
        ibv_flow_spec_tcp_udp tcp;
    };
    alignas(8) RawEthFlow flow{};
    flow.attr.size = sizeof flow;
    flow.attr.num_of_specs = 3;
    flow.attr.port = 1;
    flow.attr.priority = 3;
    flow.eth = eth_spec();
    flow.eth.val.ether_type = htons(0x86dd);
    flow.eth.mask.ether_type = 0xffff;
    flow.eth.val.vlan_tag = htons(0x2064); // PCP 1, VID 100
    flow.eth.mask.vlan_tag = htons(0x0fff);
    flow.ip = ipv6_spec();
    const std::uint8_t dst6[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x42};
    std::memcpy(flow.ip.val.dst_ip, dst6, 16);
    std::memset(flow.ip.mask.dst_ip, 0xff, 16);
    flow.ip.val.flow_label = htonl(0xabcde);
    flow.ip.mask.flow_label = htonl(0xfffff);
    flow.ip.val.next_hdr = 6;
    flow.ip.mask.next_hdr = 0xff;
    flow.ip.val.traffic_class = 0xb8;
    flow.ip.mask.traffic_class = 0xfc;
    flow.ip.val.hop_limit = 64;
    flow.ip.mask.hop_limit = 0xff;
    flow.tcp = l4_spec(IBV_FLOW_SPEC_TCP, 0, 4791);

    FlowRule rule;
    // As a C program passes &flow.attr (in C++ a reference to a packed member
    // would bind to a copy, without the specs after it).
    const void* raw = &flow;
    REQUIRE(parse_flow_attr(*static_cast<const ibv_flow_attr*>(raw), sizeof flow, rule) == 0);
    CHECK(rule.eth_value.ether_type == 0x86dd);
    CHECK(rule.eth_value.vlan_tci == 0x0064); // PCP outside the mask is dropped
    CHECK(rule.eth_mask.vlan_tci == 0x0fff);
    CHECK(rule.l3 == net::L3Kind::ipv6);
    CHECK(std::memcmp(rule.ipv6_value.dst.data(), dst6, 16) == 0);
    CHECK(rule.ipv6_mask.src == std::array<std::uint8_t, 16>{});
    CHECK(rule.ipv6_value.flow_label == 0xabcde);
    CHECK(rule.ipv6_mask.flow_label == 0xfffff);
    CHECK(rule.ipv6_value.next_hdr == 6);
    CHECK(rule.ipv6_value.traffic_class == 0xb8);
    CHECK(rule.ipv6_mask.traffic_class == 0xfc);
    CHECK(rule.ipv6_value.hop_limit == 64);
    CHECK(rule.l4 == net::L4Kind::tcp);
    CHECK(rule.l4_value.dst_port == 4791);
    CHECK(rule.l4_mask.dst_port == 0xffff);
    CHECK(rule.l4_mask.src_port == 0);
}

TEST_CASE("parse_flow_attr converts byte order and reduces values to their masks",
          "[device][flow]") {
    SECTION("ETH") {
        auto eth = eth_spec();
        std::memset(eth.val.dst_mac, 0xab, 6);
        eth.mask.dst_mac[0] = 0xf0;
        eth.val.ether_type = htons(0x1234);
        eth.mask.ether_type = htons(0xff00);
        eth.val.vlan_tag = htons(0xffff);
        eth.mask.vlan_tag = htons(0xe000);
        FlowRule rule;
        REQUIRE(parse(FlowBuffer().add(eth), rule) == 0);
        CHECK(rule.eth_value.dst_mac == Mac{0xa0, 0, 0, 0, 0, 0});
        CHECK(rule.eth_value.ether_type == 0x1200);
        CHECK(rule.eth_mask.ether_type == 0xff00);
        CHECK(rule.eth_value.vlan_tci == 0xe000);
    }
    SECTION("IPv4 ext: flags keep 3 bits, address under prefix mask") {
        auto ip = ipv4_ext_spec();
        ip.val.src_ip = ip4("10.1.2.3");
        ip.mask.src_ip = ip4("255.255.0.0");
        ip.val.proto = 17;
        ip.mask.proto = 0xff;
        ip.val.tos = 0xff;
        ip.mask.tos = 0xfc;
        ip.val.ttl = 9;
        ip.mask.ttl = 0;
        ip.val.flags = 0xff;
        ip.mask.flags = 0xff; // pyverbs' default mask
        FlowRule rule;
        REQUIRE(parse(FlowBuffer().add(ip), rule) == 0);
        CHECK(rule.ipv4_value.src == std::array<std::uint8_t, 4>{10, 1, 0, 0});
        CHECK(rule.ipv4_mask.src == std::array<std::uint8_t, 4>{255, 255, 0, 0});
        CHECK(rule.ipv4_value.proto == 17);
        CHECK(rule.ipv4_value.tos == 0xfc);
        CHECK(rule.ipv4_value.ttl == 0);
        CHECK(rule.ipv4_value.flags == 0x7);
        CHECK(rule.ipv4_mask.flags == 0x7);
    }
    SECTION("IPv4 (addresses only)") {
        auto ip = ipv4_spec();
        ip.val.dst_ip = ip4("192.168.7.9");
        ip.mask.dst_ip = 0xffffffff;
        ip.val.src_ip = ip4("1.2.3.4"); // no mask: ignored
        FlowRule rule;
        REQUIRE(parse(FlowBuffer().add(ip), rule) == 0);
        CHECK(rule.l3 == net::L3Kind::ipv4);
        CHECK(rule.ipv4_value.dst == std::array<std::uint8_t, 4>{192, 168, 7, 9});
        CHECK(rule.ipv4_value.src == std::array<std::uint8_t, 4>{});
        CHECK(rule.ipv4_mask.proto == 0);
        CHECK(rule.ipv4_mask.flags == 0);
    }
    SECTION("IPv6 flow label keeps 20 bits") {
        auto ip = ipv6_spec();
        ip.val.flow_label = htonl(0xfff12345);
        ip.mask.flow_label = 0xffffffff;
        ip.val.src_ip[0] = 0xff;
        ip.mask.src_ip[0] = 0x0f;
        FlowRule rule;
        REQUIRE(parse(FlowBuffer().add(ip), rule) == 0);
        CHECK(rule.ipv6_value.flow_label == 0x12345);
        CHECK(rule.ipv6_mask.flow_label == 0xfffff);
        CHECK(rule.ipv6_value.src[0] == 0x0f);
    }
    SECTION("ports") {
        auto udp = l4_spec(IBV_FLOW_SPEC_UDP, 0x1234, 0xabcd);
        udp.mask.src_port = htons(0xff00);
        FlowRule rule;
        REQUIRE(parse(FlowBuffer().add(udp), rule) == 0);
        CHECK(rule.l3 == net::L3Kind::none); // any IP with UDP
        CHECK(rule.l4 == net::L4Kind::udp);
        CHECK(rule.l4_value.src_port == 0x1200);
        CHECK(rule.l4_mask.src_port == 0xff00);
        CHECK(rule.l4_value.dst_port == 0xabcd);
    }
}

TEST_CASE("parse_flow_attr accepts what verbs allows", "[device][flow]") {
    SECTION("no specs") {
        FlowRule rule;
        rule.has_eth = true; // replaced by the empty rule
        REQUIRE(parse(FlowBuffer(), rule) == 0);
        CHECK_FALSE(rule.has_eth);
        CHECK(rule.l3 == net::L3Kind::none);
        CHECK(rule.l4 == net::L4Kind::none);
    }
    SECTION("every attribute type") {
        for (const auto type : {IBV_FLOW_ATTR_NORMAL, IBV_FLOW_ATTR_ALL_DEFAULT,
                                IBV_FLOW_ATTR_MC_DEFAULT, IBV_FLOW_ATTR_SNIFFER}) {
            FlowBuffer fb;
            fb.attr().type = type;
            CHECK(parse(fb) == 0);
        }
    }
    SECTION("DONT_TRAP and any priority") {
        FlowBuffer fb;
        fb.add(eth_spec());
        fb.attr().flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
        fb.attr().priority = 0xffff;
        CHECK(parse(fb) == 0);
    }
    SECTION("specs in any order") {
        CHECK(parse(FlowBuffer()
                        .add(l4_spec(IBV_FLOW_SPEC_TCP, 1, 2))
                        .add(ipv6_spec())
                        .add(eth_spec())) == 0);
    }
    SECTION("a spec larger than its struct, and bytes after the last spec") {
        std::vector<std::uint8_t> big(sizeof(ibv_flow_spec_eth) + 12, 0x5a);
        auto eth = eth_spec();
        eth.size = static_cast<std::uint16_t>(big.size());
        eth.val.ether_type = htons(0x0800);
        eth.mask.ether_type = 0xffff;
        std::memcpy(big.data(), &eth, sizeof eth);
        FlowBuffer fb;
        fb.add_bytes(big.data(), big.size()).add(l4_spec(IBV_FLOW_SPEC_TCP, 0, 80));
        auto bytes = fb.bytes();
        bytes.resize(bytes.size() + 7, 0xcc);
        const std::uint16_t size = static_cast<std::uint16_t>(bytes.size());
        std::memcpy(bytes.data() + offsetof(ibv_flow_attr, size), &size, sizeof size);
        FlowRule rule;
        REQUIRE(parse(bytes, rule) == 0);
        CHECK(rule.eth_value.ether_type == 0x0800);
        CHECK(rule.l4_value.dst_port == 80);
    }
}

TEST_CASE("parse_flow_attr rejects a bad attribute", "[device][flow]") {
    FlowBuffer fb;
    fb.add(eth_spec());
    SECTION("comp_mask") {
        fb.attr().comp_mask = 1;
        CHECK(parse(fb) == EINVAL);
    }
    SECTION("port") {
        fb.attr().port = 0;
        CHECK(parse(fb) == EINVAL);
        fb.attr().port = 2;
        CHECK(parse(fb) == EINVAL);
    }
    SECTION("type") {
        for (const std::uint32_t type : {4u, 0x80u, 0xffffffffu}) {
            std::memcpy(&fb.attr().type, &type, sizeof type); // any value a C program stores
            CHECK(parse(fb) == EINVAL);
        }
    }
    SECTION("flags: unknown bits EINVAL (the kernel's answer), EGRESS not emulated") {
        fb.attr().flags = 1; // the deprecated first bit
        CHECK(parse(fb) == EINVAL);
        fb.attr().flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP | (1u << 3);
        CHECK(parse(fb) == EINVAL);
        fb.attr().flags = 0x80000000u;
        CHECK(parse(fb) == EINVAL);
        fb.attr().flags = IBV_FLOW_ATTR_FLAGS_EGRESS;
        CHECK(parse(fb) == EOPNOTSUPP);
        fb.attr().flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
        fb.attr().type = IBV_FLOW_ATTR_ALL_DEFAULT;
        CHECK(parse(fb) == EINVAL);
    }
    SECTION("specs beyond the readable bytes") {
        fb.attr().size = sizeof(ibv_flow_attr) - 1; // the buffer holds the attribute only
        CHECK(parse(fb) == EINVAL);
    }
    SECTION("attr.size is not trusted: pyverbs sets it to the attribute alone") {
        FlowBuffer empty;
        empty.attr().size = 1;
        CHECK(parse(empty) == 0);
    }
}

TEST_CASE("parse_flow_attr rejects specs that do not fit", "[device][flow]") {
    SECTION("attr.size cuts the last spec") {
        FlowBuffer fb;
        fb.add(eth_spec()).add(ipv4_ext_spec());
        fb.attr().size =
            sizeof(ibv_flow_attr) + sizeof(ibv_flow_spec_eth) + sizeof(ibv_flow_spec_ipv4_ext) - 1;
        CHECK(parse(fb) == EINVAL);
    }
    SECTION("attr.size too small for a spec header") {
        FlowBuffer fb;
        fb.add(eth_spec());
        fb.attr().size = sizeof(ibv_flow_attr) + 4;
        CHECK(parse(fb) == EINVAL);
    }
    SECTION("more specs announced than present") {
        FlowBuffer fb;
        fb.add(eth_spec());
        fb.attr().num_of_specs = 2;
        CHECK(parse(fb) == EINVAL);
    }
    SECTION("a spec smaller than its struct") {
        auto ip = ipv6_spec();
        ip.size = sizeof(ibv_flow_spec_ipv6) - 4;
        CHECK(parse(FlowBuffer().add(ip)) == EINVAL);
        auto tcp = l4_spec(IBV_FLOW_SPEC_TCP, 1, 2);
        tcp.size = 0;
        CHECK(parse(FlowBuffer().add(tcp)) == EINVAL);
        // An IPv4 (short) struct sent as IPv4_EXT.
        auto short_ext = ipv4_spec();
        short_ext.type = IBV_FLOW_SPEC_IPV4_EXT;
        CHECK(parse(FlowBuffer().add(short_ext)) == EINVAL);
    }
    SECTION("a spec size running past attr.size") {
        auto eth = eth_spec();
        eth.size = sizeof(ibv_flow_spec_eth) + 4;
        CHECK(parse(FlowBuffer().add(eth)) == EINVAL);
        eth.size = 0xffff;
        CHECK(parse(FlowBuffer().add(eth)) == EINVAL);
    }
}

TEST_CASE("parse_flow_attr refuses spec types it does not emulate", "[device][flow]") {
    const std::uint32_t types[] = {
        0,
        IBV_FLOW_SPEC_ESP,
        IBV_FLOW_SPEC_VXLAN_TUNNEL,
        IBV_FLOW_SPEC_GRE,
        IBV_FLOW_SPEC_MPLS,
        IBV_FLOW_SPEC_INNER | IBV_FLOW_SPEC_ETH,
        IBV_FLOW_SPEC_INNER | IBV_FLOW_SPEC_TCP,
        IBV_FLOW_SPEC_ACTION_TAG,
        IBV_FLOW_SPEC_ACTION_DROP,
        IBV_FLOW_SPEC_ACTION_HANDLE,
        IBV_FLOW_SPEC_ACTION_COUNT,
        0xffffffff,
    };
    for (const std::uint32_t type : types) {
        // A full-size generic spec with that type, after a valid ETH spec.
        ibv_flow_spec spec{};
        std::memcpy(&spec.hdr.type, &type, sizeof type);
        spec.hdr.size = sizeof spec;
        FlowBuffer fb;
        fb.add(eth_spec()).add(spec);
        CAPTURE(type);
        CHECK(parse(fb) == EOPNOTSUPP);
    }
}

TEST_CASE("parse_flow_attr rejects repeated or conflicting layers", "[device][flow]") {
    CHECK(parse(FlowBuffer().add(eth_spec()).add(eth_spec())) == EINVAL);
    CHECK(parse(FlowBuffer().add(ipv4_spec()).add(ipv4_spec())) == EINVAL);
    CHECK(parse(FlowBuffer().add(ipv4_spec()).add(ipv4_ext_spec())) == EINVAL);
    CHECK(parse(FlowBuffer().add(ipv4_ext_spec()).add(ipv6_spec())) == EINVAL);
    CHECK(parse(FlowBuffer().add(ipv6_spec()).add(ipv6_spec())) == EINVAL);
    CHECK(parse(FlowBuffer()
                    .add(l4_spec(IBV_FLOW_SPEC_TCP, 1, 2))
                    .add(l4_spec(IBV_FLOW_SPEC_UDP, 1, 2))) == EINVAL);
    CHECK(parse(FlowBuffer()
                    .add(l4_spec(IBV_FLOW_SPEC_UDP, 1, 2))
                    .add(l4_spec(IBV_FLOW_SPEC_UDP, 3, 4))) == EINVAL);
}

TEST_CASE("parse_flow_attr leaves the rule untouched on error", "[device][flow]") {
    FlowRule rule;
    rule.l4 = net::L4Kind::udp;
    rule.l4_value.dst_port = 99;
    auto eth = eth_spec();
    eth.mask.ether_type = 0xffff;
    CHECK(parse(FlowBuffer().add(eth).add(l4_spec(IBV_FLOW_SPEC_TCP, 1, 2)).add(eth), rule) ==
          EINVAL);
    CHECK_FALSE(rule.has_eth);
    CHECK(rule.l4 == net::L4Kind::udp);
    CHECK(rule.l4_value.dst_port == 99);
}

TEST_CASE("parse_flow_attr survives random buffers", "[device][flow]") {
    std::mt19937 rng(2024);
    std::uniform_int_distribution<int> byte(0, 255);
    const std::uint32_t types[] = {IBV_FLOW_SPEC_ETH,  IBV_FLOW_SPEC_IPV4, IBV_FLOW_SPEC_IPV4_EXT,
                                   IBV_FLOW_SPEC_IPV6, IBV_FLOW_SPEC_TCP,  IBV_FLOW_SPEC_UDP};
    int accepted = 0;
    for (int i = 0; i < 20000; ++i) {
        std::vector<std::uint8_t> bytes(sizeof(ibv_flow_attr) +
                                        std::uniform_int_distribution<std::size_t>(0, 200)(rng));
        for (auto& b : bytes)
            b = static_cast<std::uint8_t>(byte(rng));
        ibv_flow_attr a{};
        a.port = 1;
        a.num_of_specs = static_cast<std::uint8_t>(byte(rng) % 6);
        a.size = static_cast<std::uint16_t>(
            std::uniform_int_distribution<std::size_t>(0, bytes.size())(rng));
        std::memcpy(bytes.data(), &a, sizeof a);
        // Plant plausible spec headers so that the walk goes deep.
        std::size_t off = sizeof a;
        while (off + 8 <= bytes.size()) {
            const std::uint32_t type = types[byte(rng) % 6];
            const auto size = static_cast<std::uint16_t>(8 + byte(rng) % 100);
            std::memcpy(bytes.data() + off, &type, sizeof type);
            std::memcpy(bytes.data() + off + 4, &size, sizeof size);
            off += size;
        }
        FlowRule rule;
        const int rc = parse(bytes, rule);
        CHECK((rc == 0 || rc == EINVAL || rc == EOPNOTSUPP));
        accepted += rc == 0;
    }
    CHECK(accepted > 0);
}
