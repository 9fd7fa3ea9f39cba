// Header views and parse_frame against golden frames built with scapy.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "net/headers.hpp"

using namespace rdmasim::net;

namespace {

using Buf = std::vector<std::uint8_t>;

// Ether(02:..:01 <- 02:..:02)/IP(10.0.0.1 -> 10.0.0.2, tos 0x10, ttl 63, id 0x1234, DF)
// /TCP(40000 -> 80, PA)/"hello"
const Buf kIpv4Tcp = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02,
                      0x08, 0x00, 0x45, 0x10, 0x00, 0x2d, 0x12, 0x34, 0x40, 0x00, 0x3f, 0x06,
                      0x15, 0x85, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40,
                      0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x50, 0x18,
                      0x02, 0x00, 0xb9, 0x5f, 0x00, 0x00, 0x68, 0x65, 0x6c, 0x6c, 0x6f};

// .../Dot1Q(prio 5, DEI 1, vid 100)/IP(192.168.1.10 -> 192.168.1.20)/UDP(4791 -> 4791)/"abcdefg"
const Buf kVlanIpv4Udp = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00,
                          0x02, 0x81, 0x00, 0xb0, 0x64, 0x08, 0x00, 0x45, 0x00, 0x00, 0x23,
                          0x00, 0x07, 0x00, 0x00, 0x40, 0x11, 0xf7, 0x54, 0xc0, 0xa8, 0x01,
                          0x0a, 0xc0, 0xa8, 0x01, 0x14, 0x12, 0xb7, 0x12, 0xb7, 0x00, 0x0f,
                          0xc5, 0xc5, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67};

// .../IPv6(fe80::1 -> ff02::1, tc 0xb8, fl 0x12345, hlim 255)/UDP(5353 -> 5353)/"xyz"
const Buf kIpv6Udp = {0x33, 0x33, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x86,
                      0xdd, 0x6b, 0x81, 0x23, 0x45, 0x00, 0x0b, 0x11, 0xff, 0xfe, 0x80, 0x00, 0x00,
                      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff,
                      0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                      0x00, 0x01, 0x14, 0xe9, 0x14, 0xe9, 0x00, 0x0b, 0xe6, 0x06, 0x78, 0x79, 0x7a};

// .../Dot1Q(vid 4094)/IPv6(2001:db8::1 -> 2001:db8::2, hlim 64)/TCP(443 -> 51000, S)
const Buf kVlanIpv6Tcp = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x81, 0x00, 0x0f, 0xfe,
    0x86, 0xdd, 0x60, 0x00, 0x00, 0x00, 0x00, 0x14, 0x06, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x01, 0xbb, 0xc7, 0x38, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x50, 0x02, 0x20, 0x00, 0x6b, 0x7a, 0x00, 0x00};

// .../IP(10.0.0.1 -> 10.0.0.2, id 99, MF, offset 0)/UDP(1000 -> 2000)/"0123456789"
const Buf kIpv4FragUdp = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00,
                          0x02, 0x08, 0x00, 0x45, 0x00, 0x00, 0x26, 0x00, 0x63, 0x20, 0x00,
                          0x40, 0x11, 0x46, 0x62, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00,
                          0x02, 0x03, 0xe8, 0x07, 0xd0, 0x00, 0x12, 0xdb, 0x05, 0x30, 0x31,
                          0x32, 0x33, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39};

// .../IP(10.1.2.3 -> 10.3.2.1, options NOP NOP NOP EOL: IHL 6)/UDP(1234 -> 5678)/"opts"
const Buf kIpv4OptsUdp = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00,
                          0x00, 0x02, 0x08, 0x00, 0x46, 0x00, 0x00, 0x24, 0x00, 0x01,
                          0x00, 0x00, 0x40, 0x11, 0x5f, 0xc0, 0x0a, 0x01, 0x02, 0x03,
                          0x0a, 0x03, 0x02, 0x01, 0x01, 0x01, 0x01, 0x00, 0x04, 0xd2,
                          0x16, 0x2e, 0x00, 0x0c, 0xe8, 0xea, 0x6f, 0x70, 0x74, 0x73};

// .../IP(10.0.0.1 -> 10.0.0.2)/UDP(7 -> 9, checksum 0)/"zero"
const Buf kIpv4UdpNoCsum = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02,
                            0x08, 0x00, 0x45, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11,
                            0x66, 0xca, 0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0x00, 0x07,
                            0x00, 0x09, 0x00, 0x0c, 0x00, 0x00, 0x7a, 0x65, 0x72, 0x6f};

// An ARP request header start: not IP.
const Buf kArp = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x11, 0x22, 0x33, 0x44,
                  0x55, 0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01};

Buf prefix(const Buf& b, std::size_t n) {
    return Buf(b.begin(), b.begin() + n);
}

// Recomputes the IPv4 header checksum in place (a trivially correct model).
void fix_ipv4_checksum(Buf& b, std::size_t l3) {
    const std::size_t hlen = (b[l3] & 0x0f) * 4u;
    b[l3 + 10] = b[l3 + 11] = 0;
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < hlen; i += 2)
        sum += (b[l3 + i] << 8) | b[l3 + i + 1];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    b[l3 + 10] = static_cast<std::uint8_t>(~sum >> 8);
    b[l3 + 11] = static_cast<std::uint8_t>(~sum);
}

bool bytes_eq(const std::uint8_t* p, std::initializer_list<std::uint8_t> want) {
    return std::memcmp(p, want.begin(), want.size()) == 0;
}

std::size_t l4_header_len(L4Kind k) {
    return k == L4Kind::tcp ? 20 : k == L4Kind::udp ? 8 : 0;
}

} // namespace

TEST_CASE("Ethernet and IPv4/TCP views read every field", "[net][headers]") {
    const auto eth = EthernetView::at(kIpv4Tcp);
    REQUIRE(eth);
    CHECK(bytes_eq(eth->dst_mac(), {0x02, 0, 0, 0, 0, 0x01}));
    CHECK(bytes_eq(eth->src_mac(), {0x02, 0, 0, 0, 0, 0x02}));
    CHECK(eth->ether_type() == kEtherTypeIpv4);

    const auto ip = Ipv4View::at(kIpv4Tcp, 14);
    REQUIRE(ip);
    CHECK(ip->header_len() == 20);
    CHECK(ip->total_len() == 45);
    CHECK(ip->tos() == 0x10);
    CHECK(ip->ttl() == 63);
    CHECK(ip->protocol() == kIpProtoTcp);
    CHECK(ip->flags() == 0x2); // DF
    CHECK_FALSE(ip->is_fragment());
    CHECK(bytes_eq(ip->src_addr(), {10, 0, 0, 1}));
    CHECK(bytes_eq(ip->dst_addr(), {10, 0, 0, 2}));
    CHECK(ip->header_checksum_ok());
    CHECK(ip->data() == kIpv4Tcp.data() + 14);

    const auto tcp = TcpView::at(kIpv4Tcp, 34);
    REQUIRE(tcp);
    CHECK(tcp->src_port() == 40000);
    CHECK(tcp->dst_port() == 80);
    CHECK(tcp->data_offset_words() == 5);
    CHECK(tcp->checksum() == 0xb95f);

    const ParsedFrame p = parse_frame(kIpv4Tcp);
    CHECK_FALSE(p.has_vlan);
    CHECK(p.vlan_tci == 0);
    CHECK(p.ether_type == kEtherTypeIpv4);
    CHECK(p.l3_offset == 14);
    CHECK(p.l3 == L3Kind::ipv4);
    CHECK_FALSE(p.ip_fragment);
    CHECK(p.ip_proto == kIpProtoTcp);
    CHECK(p.l4_offset == 34);
    CHECK(p.l4 == L4Kind::tcp);
    CHECK(p.src_port == 40000);
    CHECK(p.dst_port == 80);
    CHECK(ip_checksums_ok(kIpv4Tcp, p));
}

TEST_CASE("802.1Q tagged IPv4/UDP is looked through", "[net][headers]") {
    const auto eth = EthernetView::at(kVlanIpv4Udp);
    REQUIRE(eth);
    CHECK(eth->ether_type() == kEtherTypeVlan);
    const auto vlan = VlanView::at(kVlanIpv4Udp, 14);
    REQUIRE(vlan);
    CHECK(vlan->tci() == 0xb064);
    CHECK(vlan->pcp() == 5);
    CHECK(vlan->dei());
    CHECK(vlan->vid() == 100);
    CHECK(vlan->inner_ether_type() == kEtherTypeIpv4);

    const auto ip = Ipv4View::at(kVlanIpv4Udp, 18);
    REQUIRE(ip);
    CHECK(ip->total_len() == 35);
    CHECK(ip->ttl() == 64);
    CHECK(ip->flags() == 0);
    CHECK(bytes_eq(ip->src_addr(), {192, 168, 1, 10}));
    CHECK(bytes_eq(ip->dst_addr(), {192, 168, 1, 20}));

    const auto udp = UdpView::at(kVlanIpv4Udp, 38);
    REQUIRE(udp);
    CHECK(udp->src_port() == 4791);
    CHECK(udp->dst_port() == 4791);
    CHECK(udp->length() == 15);
    CHECK(udp->checksum() == 0xc5c5);

    const ParsedFrame p = parse_frame(kVlanIpv4Udp);
    CHECK(p.has_vlan);
    CHECK(p.vlan_tci == 0xb064);
    CHECK(p.ether_type == kEtherTypeIpv4);
    CHECK(p.l3_offset == 18);
    CHECK(p.l3 == L3Kind::ipv4);
    CHECK(p.ip_proto == kIpProtoUdp);
    CHECK(p.l4_offset == 38);
    CHECK(p.l4 == L4Kind::udp);
    CHECK(p.src_port == 4791);
    CHECK(p.dst_port == 4791);
    CHECK(ip_checksums_ok(kVlanIpv4Udp, p));
}

TEST_CASE("IPv6/UDP untagged and IPv6/TCP tagged", "[net][headers]") {
    SECTION("IPv6 UDP") {
        const auto ip = Ipv6View::at(kIpv6Udp, 14);
        REQUIRE(ip);
        CHECK(ip->traffic_class() == 0xb8);
        CHECK(ip->flow_label() == 0x12345);
        CHECK(ip->payload_len() == 11);
        CHECK(ip->next_header() == kIpProtoUdp);
        CHECK(ip->hop_limit() == 255);
        CHECK(bytes_eq(ip->src_addr(), {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));
        CHECK(bytes_eq(ip->dst_addr(), {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}));

        const ParsedFrame p = parse_frame(kIpv6Udp);
        CHECK_FALSE(p.has_vlan);
        CHECK(p.ether_type == kEtherTypeIpv6);
        CHECK(p.l3_offset == 14);
        CHECK(p.l3 == L3Kind::ipv6);
        CHECK_FALSE(p.ip_fragment);
        CHECK(p.ip_proto == kIpProtoUdp);
        CHECK(p.l4_offset == 54);
        CHECK(p.l4 == L4Kind::udp);
        CHECK(p.src_port == 5353);
        CHECK(p.dst_port == 5353);
        // The checksum verdict is IPv4 only.
        CHECK_FALSE(ip_checksums_ok(kIpv6Udp, p));
    }
    SECTION("tagged IPv6 TCP") {
        const auto vlan = VlanView::at(kVlanIpv6Tcp, 14);
        REQUIRE(vlan);
        CHECK(vlan->vid() == 4094);
        CHECK(vlan->pcp() == 0);
        CHECK_FALSE(vlan->dei());
        const auto ip = Ipv6View::at(kVlanIpv6Tcp, 18);
        REQUIRE(ip);
        CHECK(ip->traffic_class() == 0);
        CHECK(ip->flow_label() == 0);
        CHECK(ip->payload_len() == 20);
        CHECK(ip->hop_limit() == 64);
        const auto tcp = TcpView::at(kVlanIpv6Tcp, 58);
        REQUIRE(tcp);
        CHECK(tcp->checksum() == 0x6b7a);
        CHECK(tcp->data_offset_words() == 5);

        const ParsedFrame p = parse_frame(kVlanIpv6Tcp);
        CHECK(p.has_vlan);
        CHECK(p.vlan_tci == 0x0ffe);
        CHECK(p.ether_type == kEtherTypeIpv6);
        CHECK(p.l3_offset == 18);
        CHECK(p.l3 == L3Kind::ipv6);
        CHECK(p.ip_proto == kIpProtoTcp);
        CHECK(p.l4_offset == 58);
        CHECK(p.l4 == L4Kind::tcp);
        CHECK(p.src_port == 443);
        CHECK(p.dst_port == 51000);
    }
}

TEST_CASE("IPv4 options move the L4 offset", "[net][headers]") {
    const auto ip = Ipv4View::at(kIpv4OptsUdp, 14);
    REQUIRE(ip);
    CHECK(ip->header_len() == 24);
    CHECK(ip->header_checksum_ok());
    const ParsedFrame p = parse_frame(kIpv4OptsUdp);
    CHECK(p.l4_offset == 38);
    CHECK(p.l4 == L4Kind::udp);
    CHECK(p.src_port == 1234);
    CHECK(p.dst_port == 5678);
    CHECK(ip_checksums_ok(kIpv4OptsUdp, p));
}

TEST_CASE("IPv4 fragments have no ports", "[net][headers]") {
    SECTION("first fragment: MF set, offset 0") {
        const auto ip = Ipv4View::at(kIpv4FragUdp, 14);
        REQUIRE(ip);
        CHECK(ip->flags() == 0x1);
        CHECK(ip->is_fragment());
        const ParsedFrame p = parse_frame(kIpv4FragUdp);
        CHECK(p.l3 == L3Kind::ipv4);
        CHECK(p.ip_fragment);
        CHECK(p.ip_proto == kIpProtoUdp);
        CHECK(p.l4 == L4Kind::none);
        CHECK(p.l4_offset == 0);
        CHECK(p.src_port == 0);
        CHECK(p.dst_port == 0);
        // No L4 checksum can be verified: never reported good (mlx5's L4_OK).
        CHECK_FALSE(ip_checksums_ok(kIpv4FragUdp, p));
    }
    SECTION("last fragment: MF clear, offset != 0") {
        Buf b = kIpv4FragUdp;
        b[20] = 0x00; // flags 0, offset 0x0001 (8 bytes)
        b[21] = 0x01;
        fix_ipv4_checksum(b, 14);
        const auto ip = Ipv4View::at(b, 14);
        REQUIRE(ip);
        CHECK(ip->flags() == 0);
        CHECK(ip->is_fragment());
        const ParsedFrame p = parse_frame(b);
        CHECK(p.ip_fragment);
        CHECK(p.l4 == L4Kind::none);
        CHECK(Ipv4View::at(b, 14)->header_checksum_ok());
        CHECK_FALSE(ip_checksums_ok(b, p));
    }
    SECTION("DF alone is not a fragment") {
        Buf b = kIpv4FragUdp;
        b[20] = 0x40;
        fix_ipv4_checksum(b, 14);
        const ParsedFrame p = parse_frame(b);
        CHECK_FALSE(p.ip_fragment);
        CHECK(p.l4 == L4Kind::udp);
        CHECK(p.src_port == 1000);
        CHECK(p.dst_port == 2000);
    }
}

TEST_CASE("non-IP and unparsable L3 leave none fields", "[net][headers]") {
    SECTION("ARP") {
        const ParsedFrame p = parse_frame(kArp);
        CHECK(p.ether_type == 0x0806);
        CHECK(p.l3_offset == 14);
        CHECK(p.l3 == L3Kind::none);
        CHECK(p.l4 == L4Kind::none);
        CHECK_FALSE(ip_checksums_ok(kArp, p));
    }
    SECTION("IPv4 ether type with a version 6 header") {
        Buf b = kIpv4Tcp;
        b[14] = 0x65;
        CHECK_FALSE(Ipv4View::at(b, 14));
        const ParsedFrame p = parse_frame(b);
        CHECK(p.ether_type == kEtherTypeIpv4);
        CHECK(p.l3 == L3Kind::none);
        CHECK(p.l4 == L4Kind::none);
        CHECK_FALSE(ip_checksums_ok(b, p));
    }
    SECTION("IHL below 5") {
        Buf b = kIpv4Tcp;
        b[14] = 0x44;
        CHECK_FALSE(Ipv4View::at(b, 14));
        CHECK(parse_frame(b).l3 == L3Kind::none);
    }
    SECTION("IHL pointing past the frame") {
        Buf b = prefix(kIpv4Tcp, 14 + 24);
        b[14] = 0x47; // 28-byte header, 24 bytes present
        CHECK_FALSE(Ipv4View::at(b, 14));
    }
    SECTION("IPv6 ether type with a version 4 header") {
        Buf b = kIpv6Udp;
        b[14] = 0x4b;
        CHECK_FALSE(Ipv6View::at(b, 14));
        CHECK(parse_frame(b).l3 == L3Kind::none);
    }
    SECTION("IPv6 next header is not walked") {
        Buf b = kIpv6Udp;
        b[20] = 0; // hop-by-hop options
        const ParsedFrame p = parse_frame(b);
        CHECK(p.l3 == L3Kind::ipv6);
        CHECK(p.ip_proto == 0);
        CHECK(p.l4 == L4Kind::none);
        CHECK(p.src_port == 0);
    }
    SECTION("only one tag is looked through") {
        // Q-in-Q with an inner 0x8100: the parser stops at the inner tag.
        Buf b = prefix(kVlanIpv4Udp, 16);
        b.insert(b.end(), {0x81, 0x00, 0x00, 0x05});
        b.insert(b.end(), kVlanIpv4Udp.begin() + 16, kVlanIpv4Udp.end());
        const ParsedFrame p = parse_frame(b);
        CHECK(p.has_vlan);
        CHECK(p.vlan_tci == 0xb064);
        CHECK(p.ether_type == kEtherTypeVlan);
        CHECK(p.l3 == L3Kind::none);
    }
    SECTION("an 802.1ad S-tag is not looked through") {
        Buf b = kVlanIpv4Udp;
        b[12] = 0x88;
        b[13] = 0xa8;
        const ParsedFrame p = parse_frame(b);
        CHECK_FALSE(p.has_vlan);
        CHECK(p.ether_type == 0x88a8);
        CHECK(p.l3 == L3Kind::none);
    }
}

TEST_CASE("views never reach past the buffer", "[net][headers]") {
    constexpr std::size_t huge = std::numeric_limits<std::size_t>::max();
    CHECK_FALSE(VlanView::at(kIpv4Tcp, huge));
    CHECK_FALSE(Ipv4View::at(kIpv4Tcp, huge));
    CHECK_FALSE(Ipv6View::at(kIpv6Udp, huge - 10));
    CHECK_FALSE(UdpView::at(kIpv4Tcp, huge - 3));
    CHECK_FALSE(TcpView::at(kIpv4Tcp, huge));
    CHECK_FALSE(UdpView::at(kIpv4Tcp, kIpv4Tcp.size() + 1));
    CHECK_FALSE(EthernetView::at(Bytes{}));

    CHECK(UdpView::at(kIpv4Tcp, kIpv4Tcp.size() - 8));
    CHECK_FALSE(UdpView::at(kIpv4Tcp, kIpv4Tcp.size() - 7));
    CHECK(TcpView::at(kIpv4Tcp, kIpv4Tcp.size() - 20));
    CHECK_FALSE(TcpView::at(kIpv4Tcp, kIpv4Tcp.size() - 19));
}

TEST_CASE("truncated frames at every length", "[net][headers]") {
    const std::vector<const Buf*> goldens = {&kIpv4Tcp,     &kVlanIpv4Udp, &kIpv6Udp,
                                             &kVlanIpv6Tcp, &kIpv4FragUdp, &kIpv4OptsUdp};
    for (const Buf* golden : goldens) {
        const ParsedFrame full = parse_frame(*golden);
        for (std::size_t n = 0; n <= golden->size(); ++n) {
            INFO("golden of " << golden->size() << " bytes cut to " << n);
            const Buf cut = prefix(*golden, n);
            const ParsedFrame p = parse_frame(cut);

            CHECK(EthernetView::at(cut).has_value() == (n >= kEthHeaderLen));
            if (n < kEthHeaderLen) {
                CHECK(p.ether_type == 0);
                CHECK_FALSE(p.has_vlan);
                CHECK(p.l3 == L3Kind::none);
                CHECK(p.l4 == L4Kind::none);
                continue;
            }
            const bool tag_fits = !full.has_vlan || n >= kEthHeaderLen + kVlanTagLen;
            CHECK(p.has_vlan == (full.has_vlan && tag_fits));
            if (!tag_fits) {
                // A cut tag: the outer ether type stays, nothing further is read.
                CHECK(p.ether_type == kEtherTypeVlan);
                CHECK(p.l3 == L3Kind::none);
                continue;
            }
            CHECK(p.vlan_tci == full.vlan_tci);
            CHECK(p.ether_type == full.ether_type);
            CHECK(p.l3_offset == full.l3_offset);

            const std::size_t l3_len =
                full.l3 == L3Kind::ipv6 ? 40 : (*golden)[full.l3_offset] % 16 * 4u;
            const bool l3_fits = n >= full.l3_offset + l3_len;
            CHECK(p.l3 == (l3_fits ? full.l3 : L3Kind::none));
            if (full.l3 == L3Kind::ipv4)
                CHECK(Ipv4View::at(cut, full.l3_offset).has_value() == l3_fits);
            if (full.l3 == L3Kind::ipv6)
                CHECK(Ipv6View::at(cut, full.l3_offset).has_value() == l3_fits);
            if (!l3_fits) {
                CHECK(p.ip_proto == 0);
                CHECK(p.l4 == L4Kind::none);
                continue;
            }
            CHECK(p.ip_proto == full.ip_proto);
            CHECK(p.ip_fragment == full.ip_fragment);

            const bool l4_fits = n >= full.l4_offset + l4_header_len(full.l4);
            CHECK(p.l4 == (l4_fits ? full.l4 : L4Kind::none));
            if (l4_fits) {
                CHECK(p.src_port == full.src_port);
                CHECK(p.dst_port == full.dst_port);
            } else {
                CHECK(p.src_port == 0);
                CHECK(p.dst_port == 0);
            }
            // A datagram cut short never passes the checksum check.
            if (n < golden->size() && full.l3 == L3Kind::ipv4) CHECK_FALSE(ip_checksums_ok(cut, p));
        }
    }
}

TEST_CASE("IPv4 checksum verdicts", "[net][headers]") {
    SECTION("good TCP, UDP and UDP without checksum") {
        CHECK(ip_checksums_ok(kIpv4Tcp, parse_frame(kIpv4Tcp)));
        CHECK(ip_checksums_ok(kVlanIpv4Udp, parse_frame(kVlanIpv4Udp)));
        CHECK(ip_checksums_ok(kIpv4UdpNoCsum, parse_frame(kIpv4UdpNoCsum)));
    }
    SECTION("Ethernet padding after the datagram is not summed") {
        for (const Buf* golden : {&kIpv4Tcp, &kVlanIpv4Udp, &kIpv4OptsUdp, &kIpv4UdpNoCsum}) {
            Buf b = *golden;
            b.resize(64, 0xa5);
            CHECK(ip_checksums_ok(b, parse_frame(b)));
        }
    }
    SECTION("a damaged IPv4 header fails") {
        Buf b = kIpv4Tcp;
        b[22] ^= 0x01; // TTL
        const ParsedFrame p = parse_frame(b);
        CHECK_FALSE(Ipv4View::at(b, 14)->header_checksum_ok());
        CHECK_FALSE(ip_checksums_ok(b, p));
    }
    SECTION("a damaged TCP payload fails") {
        Buf b = kIpv4Tcp;
        b.back() ^= 0x20;
        CHECK(Ipv4View::at(b, 14)->header_checksum_ok());
        CHECK_FALSE(ip_checksums_ok(b, parse_frame(b)));
    }
    SECTION("a damaged UDP payload fails") {
        Buf b = kVlanIpv4Udp;
        b.back() ^= 0x01;
        CHECK_FALSE(ip_checksums_ok(b, parse_frame(b)));
    }
    SECTION("damaged ports fail (the pseudo header and ports are covered)") {
        Buf b = kIpv4OptsUdp;
        b[39] ^= 0x01;
        CHECK_FALSE(ip_checksums_ok(b, parse_frame(b)));
        Buf c = kIpv4Tcp;
        c[29] ^= 0x01; // source address: header checksum fixed, L4 pseudo header now wrong
        fix_ipv4_checksum(c, 14);
        CHECK(Ipv4View::at(c, 14)->header_checksum_ok());
        CHECK_FALSE(ip_checksums_ok(c, parse_frame(c)));
    }
    SECTION("UDP checksum 0 skips only the L4 check") {
        Buf b = kIpv4UdpNoCsum;
        b.back() ^= 0xff;
        CHECK(ip_checksums_ok(b, parse_frame(b)));
        b[22] ^= 0x01; // TTL: header checksum now wrong
        CHECK_FALSE(ip_checksums_ok(b, parse_frame(b)));
    }
    SECTION("total length beyond the frame fails") {
        Buf b = kIpv4Tcp;
        b[17] += 1; // total_len 46, 45 bytes present
        fix_ipv4_checksum(b, 14);
        CHECK_FALSE(ip_checksums_ok(b, parse_frame(b)));
    }
    SECTION("total length shorter than the header fails") {
        Buf b = kIpv4Tcp;
        b[16] = 0;
        b[17] = 19;
        fix_ipv4_checksum(b, 14);
        CHECK_FALSE(ip_checksums_ok(b, parse_frame(b)));
    }
    SECTION("UDP length larger than the IP payload fails") {
        Buf b = kVlanIpv4Udp;
        b[43] += 1;
        CHECK_FALSE(ip_checksums_ok(b, parse_frame(b)));
    }
    SECTION("fragments and protocols other than TCP and UDP are never ok (get_csum_ok needs "
            "L3_OK and L4_OK)") {
        Buf b = kIpv4Tcp;
        b[23] = 1; // ICMP
        fix_ipv4_checksum(b, 14);
        CHECK(Ipv4View::at(b, 14)->header_checksum_ok());
        CHECK_FALSE(ip_checksums_ok(b, parse_frame(b)));
        Buf f = kIpv4FragUdp;
        CHECK(Ipv4View::at(f, 14)->header_checksum_ok());
        CHECK_FALSE(ip_checksums_ok(f, parse_frame(f)));
    }
    SECTION("IPv6 and non-IP are never ok") {
        CHECK_FALSE(ip_checksums_ok(kVlanIpv6Tcp, parse_frame(kVlanIpv6Tcp)));
        CHECK_FALSE(ip_checksums_ok(kArp, parse_frame(kArp)));
        CHECK_FALSE(ip_checksums_ok(Bytes{}, parse_frame(Bytes{})));
    }
}

namespace {

// parse_frame's contract as the views state it, header by header: the
// reference the datapath's hand-written parse must agree with.
ParsedFrame parse_by_views(Bytes frame) {
    ParsedFrame out;
    const auto eth = EthernetView::at(frame);
    if (!eth) return out;
    out.ether_type = eth->ether_type();
    out.l3_offset = kEthHeaderLen;
    if (out.ether_type == kEtherTypeVlan) {
        const auto vlan = VlanView::at(frame, kEthHeaderLen);
        if (!vlan) return out;
        out.has_vlan = true;
        out.vlan_tci = vlan->tci();
        out.ether_type = vlan->inner_ether_type();
        out.l3_offset = kEthHeaderLen + kVlanTagLen;
    }
    std::size_t l4 = 0;
    if (out.ether_type == kEtherTypeIpv4) {
        const auto ip = Ipv4View::at(frame, out.l3_offset);
        if (!ip) return out;
        out.l3 = L3Kind::ipv4;
        out.ip_proto = ip->protocol();
        out.ip_fragment = ip->is_fragment();
        if (out.ip_fragment) return out;
        l4 = out.l3_offset + ip->header_len();
    } else if (out.ether_type == kEtherTypeIpv6) {
        const auto ip = Ipv6View::at(frame, out.l3_offset);
        if (!ip) return out;
        out.l3 = L3Kind::ipv6;
        out.ip_proto = ip->next_header();
        l4 = out.l3_offset + 40u;
    } else {
        return out;
    }
    out.l4_offset = static_cast<std::uint16_t>(l4);
    if (out.ip_proto == kIpProtoTcp) {
        if (const auto tcp = TcpView::at(frame, l4)) {
            out.l4 = L4Kind::tcp;
            out.src_port = tcp->src_port();
            out.dst_port = tcp->dst_port();
        }
    } else if (out.ip_proto == kIpProtoUdp) {
        if (const auto udp = UdpView::at(frame, l4)) {
            out.l4 = L4Kind::udp;
            out.src_port = udp->src_port();
            out.dst_port = udp->dst_port();
        }
    }
    return out;
}

bool same(const ParsedFrame& a, const ParsedFrame& b) {
    return a.has_vlan == b.has_vlan && a.vlan_tci == b.vlan_tci && a.ether_type == b.ether_type &&
           a.l3_offset == b.l3_offset && a.l3 == b.l3 && a.ip_fragment == b.ip_fragment &&
           a.ip_proto == b.ip_proto && a.l4_offset == b.l4_offset && a.l4 == b.l4 &&
           a.src_port == b.src_port && a.dst_port == b.dst_port;
}

} // namespace

TEST_CASE("parse_frame agrees with the views on every cut and on mutated headers",
          "[net][headers]") {
    std::uint32_t seed = 12345; // a fixed LCG: the same frames every run
    const auto rnd = [&seed] { return seed = seed * 1664525u + 1013904223u; };
    std::size_t checked = 0;
    for (const Buf& golden : {kIpv4Tcp, kVlanIpv4Udp, kIpv6Udp, kVlanIpv6Tcp, kIpv4FragUdp,
                              kIpv4OptsUdp, kIpv4UdpNoCsum, kArp}) {
        for (int round = 0; round < 200; ++round) {
            Buf b = golden;
            // Round 0 is the frame itself; then up to three header bytes changed,
            // biased to the fields the parse branches on.
            for (int k = round == 0 ? 0 : 1 + static_cast<int>(rnd() % 3); k > 0; --k) {
                static constexpr std::size_t kHot[] = {12, 13, 14, 16, 17, 18, 20, 21, 23, 27};
                const std::size_t at = rnd() % 2 ? kHot[rnd() % std::size(kHot)] : rnd() % b.size();
                if (at < b.size()) b[at] = static_cast<std::uint8_t>(rnd());
            }
            for (std::size_t len = 0; len <= b.size(); ++len) {
                const Bytes cut{b.data(), len}; // a copy of exactly len bytes under ASan
                const Buf exact(cut.begin(), cut.end());
                const ParsedFrame want = parse_by_views(exact);
                const ParsedFrame got = parse_frame(exact);
                INFO("frame of " << golden.size() << " bytes, round " << round << ", cut to " << len);
                REQUIRE(same(got, want));
                ++checked;
            }
        }
    }
    CHECK(checked > 50000);
}
