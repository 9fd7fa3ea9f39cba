#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include <infiniband/verbs.h>

#include "datapath/rss.hpp"
#include "datapath/toeplitz.hpp"
#include "support/ms_rss_vectors.hpp"

using namespace rdmasim;
using datapath::Toeplitz;

namespace {

using datapath::kMicrosoftRssKey;
using test::kV4Rows;
using test::V4Row;

constexpr std::uint64_t kIpv4 = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
constexpr std::uint64_t kIpv6 = IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6;
constexpr std::uint64_t kTcp = IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP;
constexpr std::uint64_t kUdp = IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;

// What a test frame carries; build() lays it out on the wire.
struct FrameDesc {
    std::optional<std::uint16_t> vlan_tci;
    int ip_version = 4;                              // 4, 6, or 0 for an ARP frame
    std::array<std::uint8_t, 16> src_ip{}, dst_ip{}; // IPv4 uses the first 4 bytes
    std::uint8_t proto = net::kIpProtoTcp;
    std::uint16_t frag = 0; // IPv4 flags and fragment offset field
    std::uint16_t src_port = 0, dst_port = 0;
    bool cut_l4 = false; // end the frame right after the IP header
};

void put16(std::vector<std::uint8_t>& f, std::uint16_t v) {
    f.push_back(static_cast<std::uint8_t>(v >> 8));
    f.push_back(static_cast<std::uint8_t>(v));
}

std::vector<std::uint8_t> build(const FrameDesc& d) {
    std::vector<std::uint8_t> f = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2};
    if (d.vlan_tci) {
        put16(f, net::kEtherTypeVlan);
        put16(f, *d.vlan_tci);
    }
    if (d.ip_version == 4) {
        put16(f, net::kEtherTypeIpv4);
        const std::uint8_t ip[12] = {0x45, 0, 0, 40, 0, 1, 0, 0, 64, d.proto, 0, 0};
        f.insert(f.end(), ip, ip + 12);
        f[f.size() - 6] = static_cast<std::uint8_t>(d.frag >> 8);
        f[f.size() - 5] = static_cast<std::uint8_t>(d.frag);
        f.insert(f.end(), d.src_ip.begin(), d.src_ip.begin() + 4);
        f.insert(f.end(), d.dst_ip.begin(), d.dst_ip.begin() + 4);
    } else if (d.ip_version == 6) {
        put16(f, net::kEtherTypeIpv6);
        const std::uint8_t ip[8] = {0x60, 0, 0, 0, 0, 20, d.proto, 64};
        f.insert(f.end(), ip, ip + 8);
        f.insert(f.end(), d.src_ip.begin(), d.src_ip.end());
        f.insert(f.end(), d.dst_ip.begin(), d.dst_ip.end());
    } else {
        put16(f, 0x0806);
        f.resize(f.size() + 28, 0);
        return f;
    }
    if (d.cut_l4) return f;
    put16(f, d.src_port);
    put16(f, d.dst_port);
    f.resize(f.size() + (d.proto == net::kIpProtoTcp ? 16 : 4), 0);
    if (d.proto == net::kIpProtoTcp) f[f.size() - 8] = 0x50; // data offset 5
    f.resize(f.size() + 16, 0xee);                           // payload
    return f;
}

std::uint32_t rss_of(const Toeplitz& t, std::uint64_t fields, const FrameDesc& d) {
    const auto f = build(d);
    return datapath::rss_hash(t, fields, f, net::parse_frame(f));
}

FrameDesc v4(std::array<std::uint8_t, 4> src, std::array<std::uint8_t, 4> dst, std::uint16_t sport,
             std::uint16_t dport) {
    FrameDesc d;
    std::copy(src.begin(), src.end(), d.src_ip.begin());
    std::copy(dst.begin(), dst.end(), d.dst_ip.begin());
    d.src_port = sport;
    d.dst_port = dport;
    return d;
}

// 3ffe:2501:200:1fff::7:2794 -> 3ffe:2501:200:3::1:1766
FrameDesc v6_row0() {
    FrameDesc d;
    d.ip_version = 6;
    d.src_ip = {0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x1f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x07};
    d.dst_ip = {0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 0x01};
    d.src_port = 2794;
    d.dst_port = 1766;
    return d;
}

} // namespace

TEST_CASE("RSS of real IPv4 frames gives the verification hashes, tagged or not",
          "[datapath][rss]") {
    const Toeplitz t(kMicrosoftRssKey);
    for (const V4Row& row : kV4Rows) {
        FrameDesc d = v4(row.src, row.dst, row.src_port, row.dst_port);
        for (const bool tagged : {false, true}) {
            d.vlan_tci = tagged ? std::optional<std::uint16_t>(0xa123) : std::nullopt;
            d.proto = net::kIpProtoTcp;
            CHECK(rss_of(t, kIpv4, d) == row.ip_hash);
            CHECK(rss_of(t, kIpv4 | kTcp, d) == row.ip_tcp_hash);
            d.proto = net::kIpProtoUdp; // the same bytes go in for UDP
            CHECK(rss_of(t, kIpv4 | kUdp, d) == row.ip_tcp_hash);
            CHECK(rss_of(t, kIpv4, d) == row.ip_hash);
        }
    }
}

TEST_CASE("RSS of real IPv6 frames gives the verification hashes", "[datapath][rss]") {
    const Toeplitz t(kMicrosoftRssKey);
    FrameDesc d = v6_row0();
    CHECK(rss_of(t, kIpv6, d) == 0x2cc18cd5);
    CHECK(rss_of(t, kIpv6 | kTcp, d) == 0x40207d3d);
    d.vlan_tci = 5;
    CHECK(rss_of(t, kIpv6, d) == 0x2cc18cd5);
    CHECK(rss_of(t, kIpv6 | kTcp, d) == 0x40207d3d);
    d.proto = net::kIpProtoUdp;
    CHECK(rss_of(t, kIpv6 | kUdp, d) == 0x40207d3d);
}

TEST_CASE("RSS hashes only the selected fields, in src IP, dst IP, src port, dst port order",
          "[datapath][rss]") {
    const Toeplitz t(kMicrosoftRssKey);
    const FrameDesc d = v4({66, 9, 149, 187}, {161, 142, 100, 80}, 2794, 1766);
    const std::uint8_t src[4] = {66, 9, 149, 187};
    const std::uint8_t dst[4] = {161, 142, 100, 80};
    const std::uint8_t src_dport[6] = {66, 9, 149, 187, 1766 >> 8, 1766 & 0xff};
    const std::uint8_t sport_dport[4] = {2794 >> 8, 2794 & 0xff, 1766 >> 8, 1766 & 0xff};
    const std::uint8_t dport[2] = {1766 >> 8, 1766 & 0xff};
    CHECK(rss_of(t, IBV_RX_HASH_SRC_IPV4, d) == t.hash(src));
    CHECK(rss_of(t, IBV_RX_HASH_DST_IPV4, d) == t.hash(dst));
    CHECK(rss_of(t, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_PORT_TCP, d) == t.hash(src_dport));
    CHECK(rss_of(t, kTcp, d) == t.hash(sport_dport));
    CHECK(rss_of(t, IBV_RX_HASH_DST_PORT_TCP, d) == t.hash(dport));
    CHECK(rss_of(t, IBV_RX_HASH_SRC_IPV4, d) != rss_of(t, IBV_RX_HASH_DST_IPV4, d));
}

TEST_CASE("RSS hashes a frame lacking a selected field to 0", "[datapath][rss]") {
    const Toeplitz t(kMicrosoftRssKey);
    const FrameDesc tcp4 = v4({66, 9, 149, 187}, {161, 142, 100, 80}, 2794, 1766);

    SECTION("no fields") {
        CHECK(rss_of(t, 0, tcp4) == 0);
    }
    SECTION("IPv4 fields on IPv6 and IPv6 fields on IPv4") {
        CHECK(rss_of(t, kIpv4, v6_row0()) == 0);
        CHECK(rss_of(t, IBV_RX_HASH_DST_IPV4, v6_row0()) == 0);
        CHECK(rss_of(t, kIpv6, tcp4) == 0);
    }
    SECTION("TCP ports on UDP, UDP ports on TCP") {
        FrameDesc udp4 = tcp4;
        udp4.proto = net::kIpProtoUdp;
        CHECK(rss_of(t, kIpv4 | kTcp, udp4) == 0);
        CHECK(rss_of(t, IBV_RX_HASH_SRC_PORT_TCP, udp4) == 0);
        CHECK(rss_of(t, kIpv4 | kUdp, tcp4) == 0);
        CHECK(rss_of(t, kIpv4 | kUdp, udp4) != 0);
    }
    SECTION("ports of another protocol") {
        FrameDesc icmp = tcp4;
        icmp.proto = 1;
        CHECK(rss_of(t, kIpv4 | kTcp, icmp) == 0);
        CHECK(rss_of(t, kIpv4, icmp) == 0x323e8fc2);
    }
    SECTION("IP fragments have no ports") {
        for (const std::uint16_t frag : {std::uint16_t{0x2000}, std::uint16_t{0x0010}}) {
            FrameDesc f = tcp4;
            f.frag = frag;
            CHECK(rss_of(t, kIpv4 | kTcp, f) == 0);
            CHECK(rss_of(t, kIpv4, f) == 0x323e8fc2);
        }
        FrameDesc df = tcp4;
        df.frag = 0x4000; // DF alone is not a fragment
        CHECK(rss_of(t, kIpv4 | kTcp, df) == 0x51ccc178);
    }
    SECTION("L4 header cut off") {
        FrameDesc cut = tcp4;
        cut.cut_l4 = true;
        CHECK(rss_of(t, kIpv4 | kTcp, cut) == 0);
        CHECK(rss_of(t, kIpv4, cut) == 0x323e8fc2);
    }
    SECTION("not IP") {
        FrameDesc arp;
        arp.ip_version = 0;
        CHECK(rss_of(t, kIpv4, arp) == 0);
        CHECK(rss_of(t, kIpv6, arp) == 0);
        const std::vector<std::uint8_t> runt = {1, 2, 3};
        CHECK(datapath::rss_hash(t, kIpv4, runt, net::parse_frame(runt)) == 0);
    }
    SECTION("combinations the device refuses, and bits it cannot hash") {
        CHECK(rss_of(t, kIpv4 | kIpv6, tcp4) == 0);
        CHECK(rss_of(t, kIpv4 | kTcp | kUdp, tcp4) == 0);
        CHECK(rss_of(t, kIpv4 | IBV_RX_HASH_IPSEC_SPI, tcp4) == 0);
        CHECK(rss_of(t, kIpv4 | IBV_RX_HASH_INNER, tcp4) == 0);
    }
}

TEST_CASE("RSS of every subset of the known fields equals Toeplitz over the bytes the spec lists",
          "[datapath][rss]") {
    // The reference builds the input bytes field by field (rss.hpp's order),
    // and applies the rules for a frame lacking a field, on its own.
    const Toeplitz t(kMicrosoftRssKey);
    static constexpr std::uint64_t kBits[] = {
        IBV_RX_HASH_SRC_IPV4,     IBV_RX_HASH_DST_IPV4,     IBV_RX_HASH_SRC_IPV6,
        IBV_RX_HASH_DST_IPV6,     IBV_RX_HASH_SRC_PORT_TCP, IBV_RX_HASH_DST_PORT_TCP,
        IBV_RX_HASH_SRC_PORT_UDP, IBV_RX_HASH_DST_PORT_UDP};
    std::vector<FrameDesc> frames;
    for (const int version : {4, 6})
        for (const std::uint8_t proto : {net::kIpProtoTcp, net::kIpProtoUdp, std::uint8_t{1}})
            for (const bool tagged : {false, true}) {
                FrameDesc d = version == 4 ? v4({66, 9, 149, 187}, {161, 142, 100, 80}, 2794, 1766)
                                           : v6_row0();
                d.proto = proto;
                if (tagged) d.vlan_tci = 0x2064;
                frames.push_back(d);
            }
    std::size_t nonzero = 0;
    for (std::uint32_t subset = 0; subset < 256; ++subset) {
        std::uint64_t fields = 0;
        for (std::size_t b = 0; b < 8; ++b)
            if (subset >> b & 1) fields |= kBits[b];
        for (const FrameDesc& d : frames) {
            const bool v4f = fields & kIpv4, v6f = fields & kIpv6;
            const bool tcpf = fields & kTcp, udpf = fields & kUdp;
            std::vector<std::uint8_t> in;
            const std::size_t alen = d.ip_version == 4 ? 4 : 16;
            const auto add_ip = [&](const std::array<std::uint8_t, 16>& a) {
                in.insert(in.end(), a.begin(), a.begin() + static_cast<std::ptrdiff_t>(alen));
            };
            const auto add_port = [&](std::uint16_t p) {
                in.push_back(static_cast<std::uint8_t>(p >> 8));
                in.push_back(static_cast<std::uint8_t>(p));
            };
            if (fields & (IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_SRC_IPV6)) add_ip(d.src_ip);
            if (fields & (IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_DST_IPV6)) add_ip(d.dst_ip);
            if (fields & (IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_SRC_PORT_UDP)) add_port(d.src_port);
            if (fields & (IBV_RX_HASH_DST_PORT_TCP | IBV_RX_HASH_DST_PORT_UDP)) add_port(d.dst_port);
            const bool lacking = fields == 0 || (v4f && v6f) || (tcpf && udpf) ||
                                 (v4f && d.ip_version != 4) || (v6f && d.ip_version != 6) ||
                                 (tcpf && d.proto != net::kIpProtoTcp) ||
                                 (udpf && d.proto != net::kIpProtoUdp);
            const std::uint32_t want = lacking ? 0 : t.hash(in);
            INFO("fields 0x" << std::hex << fields << std::dec << ", IPv" << d.ip_version
                             << ", proto " << int(d.proto) << (d.vlan_tci ? ", tagged" : ""));
            REQUIRE(rss_of(t, fields, d) == want);
            nonzero += want != 0;
        }
    }
    CHECK(nonzero > 100); // the comparison is not of zeros (132 here)
}

TEST_CASE("an RSS group picks table[rss_entry(rss_hash)] for every field subset, table size and key",
          "[datapath][rss]") {
    // The group computes only the index bits (RssGroup::index); the full hash
    // is the reference. Random keys and addresses, every subset of the eight
    // field bits, IPv4/IPv6 x TCP/UDP/ICMP, tagged or not, tables of 1 to
    // 2^13 entries (the kernel's largest).
    std::mt19937_64 rng(20261201);
    const auto byte = [&rng] { return static_cast<std::uint8_t>(rng()); };
    static constexpr std::uint64_t kBits[] = {
        IBV_RX_HASH_SRC_IPV4,     IBV_RX_HASH_DST_IPV4,     IBV_RX_HASH_SRC_IPV6,
        IBV_RX_HASH_DST_IPV6,     IBV_RX_HASH_SRC_PORT_TCP, IBV_RX_HASH_DST_PORT_TCP,
        IBV_RX_HASH_SRC_PORT_UDP, IBV_RX_HASH_DST_PORT_UDP};
    std::size_t compared = 0, nonzero = 0;
    for (int k = 0; k < 3; ++k) {
        std::array<std::uint8_t, Toeplitz::kKeyLen> key;
        for (auto& b : key) b = k == 0 ? 0 : byte();
        if (k == 1) key = kMicrosoftRssKey;
        const Toeplitz t(key);
        std::vector<std::vector<std::uint8_t>> frames;
        for (const int version : {4, 6})
            for (const std::uint8_t proto : {net::kIpProtoTcp, net::kIpProtoUdp, std::uint8_t{1}})
                for (const bool tagged : {false, true}) {
                    FrameDesc d;
                    d.ip_version = version;
                    for (auto& b : d.src_ip) b = byte();
                    for (auto& b : d.dst_ip) b = byte();
                    d.src_port = static_cast<std::uint16_t>(rng());
                    d.dst_port = static_cast<std::uint16_t>(rng());
                    d.proto = proto;
                    if (tagged) d.vlan_tci = 0x2064;
                    frames.push_back(build(d));
                }
        for (std::uint32_t subset = 0; subset < 256; ++subset) {
            std::uint64_t fields = 0;
            for (std::size_t b = 0; b < 8; ++b)
                if (subset >> b & 1) fields |= kBits[b];
            for (std::uint32_t log_size = 0; log_size <= 13; ++log_size) {
                datapath::RssGroup g;
                g.configure(key, fields, log_size);
                for (const auto& f : frames) {
                    const auto parsed = net::parse_frame(f);
                    const std::uint32_t h = datapath::rss_hash(t, fields, f, parsed);
                    INFO("key " << k << ", fields 0x" << std::hex << fields << std::dec
                                << ", log_size " << log_size);
                    REQUIRE(g.index(f, parsed) == datapath::rss_entry(h, log_size));
                    REQUIRE(datapath::rss_index_portable(g, f, parsed) == datapath::rss_entry(h, log_size));
                    ++compared;
                    nonzero += log_size != 0 && datapath::rss_entry(h, log_size) != 0;
                }
            }
        }
    }
    CHECK(compared == 3u * 256 * 14 * 12);
    CHECK(nonzero > 2500); // not a comparison of zeros (3,161 here)
}

TEST_CASE("an RSS group before configure() puts every frame on entry 0", "[datapath][rss]") {
    datapath::RssGroup g; // index_fn: the portable code, no fields
    const auto f = build(v4({66, 9, 149, 187}, {161, 142, 100, 80}, 2794, 1766));
    CHECK(g.index(f, net::parse_frame(f)) == 0);
    g.log_size = 3; // written by hand, against the contract: still no fields, still entry 0
    CHECK(g.index(f, net::parse_frame(f)) == 0);
}

TEST_CASE("rss_entry takes the low bits of the hash", "[datapath][rss]") {
    CHECK(datapath::rss_entry(0x323e8fc2, 0) == 0);
    CHECK(datapath::rss_entry(0x323e8fc2, 1) == 0);
    CHECK(datapath::rss_entry(0x323e8fc2, 2) == 2);
    CHECK(datapath::rss_entry(0x323e8fc2, 7) == 0x42);
    CHECK(datapath::rss_entry(0x51ccc178, 4) == 8);
    CHECK(datapath::rss_entry(0xffffffff, 16) == 0xffff);
    CHECK(datapath::rss_entry(0, 8) == 0); // a frame lacking fields lands on entry 0
}
