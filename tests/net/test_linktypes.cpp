// PcapFileSource on captures without an Ethernet header: one case per link
// type (Linux cooked v1 and v2, raw IP, IPv4, IPv6, BSD NULL and LOOP), each
// written through libpcap's own writer (pcap_open_dead + pcap_dump) and read
// back, the synthesized frames checked byte for byte; then the FCS rules for
// such files and pcapng files with several interfaces (hand-built blocks).
#include <catch2/catch.hpp>

#include <pcap/pcap.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "net/pcap_file_source.hpp"
#include "tests/net/temp_path.hpp"
#include "tests/support/golden_frames.hpp"

using namespace rdmasim::net;
using rdmasim::net::test::TempPath;
namespace golden = rdmasim::test::golden;

namespace {

using Buf = std::vector<std::uint8_t>;

Buf cat(std::initializer_list<Buf> parts) {
    Buf out;
    for (const Buf& p : parts)
        out.insert(out.end(), p.begin(), p.end());
    return out;
}
Buf be16(std::uint16_t v) {
    return {std::uint8_t(v >> 8), std::uint8_t(v)};
}

// The golden frames' addresses, so that a synthesized header can be compared
// with golden::kUntagged / kTagged as they are.
const MacAddress kGoldenDst{0x02, 0x11, 0x22, 0x33, 0x44, 0x55};
const MacAddress kGoldenSrc{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0xee};

// golden::kUntagged without its Ethernet header: IPv4/UDP, 44 bytes.
const Buf kIpv4(golden::kUntagged.begin() + 14, golden::kUntagged.end());
// An IPv6/UDP packet (fe80::1 -> ff02::1, 4791 -> 4791, 4 payload bytes).
const Buf kIpv6 = {0x60, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x11, 0x40, 0xfe, 0x80, 0,    0,    0,
                   0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0x01, 0xff, 0x02,
                   0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,    0,
                   0x01, 0x12, 0xb7, 0x12, 0xb7, 0x00, 0x0c, 0x00, 0x00, 0xde, 0xad, 0xbe, 0xef};
// An ARP request (Ethernet/IPv4), 28 bytes.
const Buf kArp = {0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, 0x02, 0xaa,
                  0xbb, 0xcc, 0xdd, 0xee, 0xc0, 0xa8, 0x01, 0x0a, 0,    0,
                  0,    0,    0,    0,    0x0a, 0x00, 0x00, 0x01};
// An 802.2 LLC frame's payload (an STP configuration BPDU's start), 7 bytes.
const Buf kLlc = {0x42, 0x42, 0x03, 0x00, 0x00, 0x00, 0x00};

// The frame a NIC would have received: the given header, then the packet.
Buf ethernet(const MacAddress& dst, const MacAddress& src, std::uint16_t type, const Buf& payload) {
    return cat({Buf(dst.begin(), dst.end()), Buf(src.begin(), src.end()), be16(type), payload});
}

struct Record {
    Buf data;
    std::uint32_t len = 0; // wire length; 0: data.size()
    std::uint32_t sec = 1'700'000'000;
    std::uint32_t nsec = 0;
};

// Writes a classic pcap file of DLT `dlt` through libpcap (nanosecond precision).
void write_capture(const TempPath& path, int dlt, const std::vector<Record>& records,
                   int snaplen = 65535) {
    pcap_t* dead = pcap_open_dead_with_tstamp_precision(dlt, snaplen, PCAP_TSTAMP_PRECISION_NANO);
    REQUIRE(dead != nullptr);
    pcap_dumper_t* dumper = pcap_dump_open(dead, path.str().c_str());
    INFO(pcap_geterr(dead));
    REQUIRE(dumper != nullptr);
    for (const Record& r : records) {
        pcap_pkthdr h{};
        h.ts.tv_sec = r.sec;
        h.ts.tv_usec = static_cast<suseconds_t>(r.nsec); // nanoseconds in this precision
        h.caplen = static_cast<bpf_u_int32>(r.data.size());
        h.len = r.len != 0 ? r.len : h.caplen;
        pcap_dump(reinterpret_cast<u_char*>(dumper), &h, r.data.data());
    }
    pcap_dump_close(dumper);
    pcap_close(dead);
}

std::unique_ptr<PcapFileSource> open_ok(const TempPath& path, const PcapOpenOptions& o = {}) {
    auto r = PcapFileSource::open(path.str(), o);
    INFO((r.ok() ? std::string() : r.error().message));
    REQUIRE(r.ok());
    return std::move(r).value();
}

PcapOpenOptions golden_macs() {
    PcapOpenOptions o;
    o.synth_dst_mac = kGoldenDst;
    o.synth_src_mac = kGoldenSrc;
    return o;
}

struct Got {
    Buf bytes;
    std::uint32_t wire_len;
    std::uint8_t fcs_len;
    std::uint64_t ts_ns;
};
std::vector<Got> read_all(PcapFileSource& src) {
    std::vector<Got> out;
    Frame f;
    while (src.next(f))
        out.push_back({Buf(f.data, f.data + f.len), f.wire_len, f.fcs_len, f.ts_ns});
    CHECK(src.exhausted());
    return out;
}
std::vector<Buf> bytes_of(const std::vector<Got>& got) {
    std::vector<Buf> out;
    for (const Got& g : got)
        out.push_back(g.bytes);
    return out;
}

// Linux cooked headers (pcap/sll.h), fields in network order.
constexpr std::uint16_t kArphrdEther = 1;
constexpr std::uint16_t kArphrdLoopback = 772;
constexpr std::uint16_t kArphrdNetlink = 824;
Buf sll(std::uint16_t protocol, std::uint16_t hatype = kArphrdEther, std::uint16_t pkttype = 0) {
    return cat({be16(pkttype),
                be16(hatype),
                be16(6),
                {0x02, 0x99, 0x88, 0x77, 0x66, 0x55, 0, 0},
                be16(protocol)});
}
Buf sll2(std::uint16_t protocol, std::uint16_t hatype = kArphrdEther, std::uint8_t pkttype = 0) {
    return cat({be16(protocol),
                be16(0),
                {0, 0, 0, 3},
                be16(hatype),
                {pkttype, 6},
                {0x02, 0x99, 0x88, 0x77, 0x66, 0x55, 0, 0}});
}

} // namespace

TEST_CASE("LINUX_SLL: the protocol field becomes the EtherType", "[net][linktypes]") {
    TempPath path(".pcap");
    // The tag as libpcap writes it into a cooked v1 record from PACKET_AUXDATA:
    // protocol 0x8100, then the TCI and the packet's own protocol.
    const Buf tagged = cat({sll(0x8100), {0xb0, 0x7b, 0x08, 0x00}, kIpv4});
    write_capture(path, DLT_LINUX_SLL,
                  {{cat({sll(0x0800), kIpv4}), 0, 1'700'000'000, 5},
                   {cat({sll(0x86dd, kArphrdLoopback, 4), kIpv6})},
                   {cat({sll(0x0806), kArp})},
                   {tagged},
                   {cat({sll(0x0004), kLlc})},          // 802.2: an 802.3 length
                   {cat({sll(0x000c), Buf(16, 0xca)})}, // CAN: skipped
                   {Buf(10, 0x00), 40},                 // cut inside the header: skipped
                   {cat({sll(0x0800), Buf(kIpv4.begin(), kIpv4.begin() + 20)}), 60}}); // snaplen

    auto src = open_ok(path, golden_macs());
    CHECK(src->synthesizes_headers());
    CHECK(src->link_type() == DLT_LINUX_SLL);
    CHECK(src->fcs_len() == 0);
    CHECK(src->describe() == "pcap file " + path.str() +
                                 " (LINUX_SLL, Ethernet header synthesized, 02:aa:bb:cc:dd:ee -> "
                                 "02:11:22:33:44:55)");
    const auto got = read_all(*src);
    REQUIRE(got.size() == 6);
    CHECK(got[0].bytes == Buf(golden::kUntagged.begin(), golden::kUntagged.end()));
    CHECK(got[0].wire_len == 58);
    CHECK(got[0].fcs_len == 0);
    CHECK(got[0].ts_ns == 1'700'000'000'000'000'005ull);
    CHECK(got[1].bytes == ethernet(kGoldenDst, kGoldenSrc, 0x86dd, kIpv6));
    CHECK(got[2].bytes == ethernet(kGoldenDst, kGoldenSrc, 0x0806, kArp));
    CHECK(got[3].bytes == Buf(golden::kTagged.begin(), golden::kTagged.end()));
    CHECK(got[4].bytes == ethernet(kGoldenDst, kGoldenSrc, 7, kLlc));
    // Cut to the snaplen: 14 + 20 bytes of a 14 + 44 byte frame.
    CHECK(got[5].bytes == Buf(golden::kUntagged.begin(), golden::kUntagged.begin() + 34));
    CHECK(got[5].wire_len == 58);

    const SourceCounters& c = src->counters();
    CHECK(c.frames == 6);
    CHECK(c.synthesized_headers == 6);
    CHECK(c.skipped_records == 2);
    CHECK(c.truncated_records == 1);
    CHECK(c.bytes == 58 + 14 + kIpv6.size() + 14 + kArp.size() + 62 + 14 + kLlc.size() + 34);
    CHECK(src->read_error().empty());
}

TEST_CASE("LINUX_SLL2: protocol first, no VLAN field", "[net][linktypes]") {
    TempPath path(".pcap");
    write_capture(path, DLT_LINUX_SLL2,
                  {{cat({sll2(0x0800), kIpv4})},
                   {cat({sll2(0x86dd, kArphrdLoopback, 4), kIpv6})},
                   {cat({sll2(0x0806), kArp})},
                   // A tag the kernel left in the packet (no offload) is kept.
                   {cat({sll2(0x8100), {0xb0, 0x7b, 0x08, 0x00}, kIpv4})},
                   {cat({sll2(0x0004), kLlc})},
                   {cat({sll2(0x0004, 803), Buf(24, 0x80)})}, // 802.11 (radiotap device): skipped
                   {cat({sll2(0x0000, kArphrdNetlink), Buf(16, 0x11)})}, // netlink: skipped
                   {cat({sll2(0x0800), kIpv4}), 0, 1'700'000'001, 999'999'999}});
    auto src = open_ok(path, golden_macs());
    CHECK(src->describe() == "pcap file " + path.str() +
                                 " (LINUX_SLL2, Ethernet header synthesized, 02:aa:bb:cc:dd:ee -> "
                                 "02:11:22:33:44:55)");
    const auto got = read_all(*src);
    const Buf untagged(golden::kUntagged.begin(), golden::kUntagged.end());
    CHECK(bytes_of(got) == std::vector<Buf>{untagged,
                                            ethernet(kGoldenDst, kGoldenSrc, 0x86dd, kIpv6),
                                            ethernet(kGoldenDst, kGoldenSrc, 0x0806, kArp),
                                            Buf(golden::kTagged.begin(), golden::kTagged.end()),
                                            ethernet(kGoldenDst, kGoldenSrc, 7, kLlc), untagged});
    REQUIRE(got.size() == 6);
    CHECK(got[5].ts_ns == 1'700'000'001'999'999'999ull);
    CHECK(src->counters().synthesized_headers == 6);
    CHECK(src->counters().skipped_records == 2);
}

TEST_CASE("RAW: IPv4 or IPv6 by the version nibble", "[net][linktypes]") {
    TempPath path(".pcap");
    Buf not_ip = kIpv4;
    not_ip[0] = 0x55; // version 5
    write_capture(path, DLT_RAW, {{kIpv4}, {kIpv6}, {not_ip}, {{}, 20}, {kIpv4, 1500}});
    // The default addresses: locally administered unicast.
    auto src = open_ok(path);
    CHECK(src->describe() == "pcap file " + path.str() +
                                 " (RAW, Ethernet header synthesized, 02:00:00:00:00:01 -> "
                                 "02:00:00:00:00:02)");
    const auto got = read_all(*src);
    CHECK(bytes_of(got) ==
          std::vector<Buf>{ethernet(kSynthDstMacDefault, kSynthSrcMacDefault, 0x0800, kIpv4),
                           ethernet(kSynthDstMacDefault, kSynthSrcMacDefault, 0x86dd, kIpv6),
                           ethernet(kSynthDstMacDefault, kSynthSrcMacDefault, 0x0800, kIpv4)});
    REQUIRE(got.size() == 3);
    CHECK(got[2].wire_len == 14 + 1500);
    CHECK(src->counters().skipped_records == 2); // version 5, and nothing captured
    CHECK(src->counters().truncated_records == 1);
}

TEST_CASE("IPV4 and IPV6 link types: the type is the link type's", "[net][linktypes]") {
    const PcapOpenOptions o = golden_macs();
    SECTION("IPV4") {
        TempPath path(".pcap");
        write_capture(path, DLT_IPV4, {{kIpv4}, {{}, 44}});
        auto src = open_ok(path, o);
        CHECK(src->describe().find("(IPV4, Ethernet header synthesized") != std::string::npos);
        const auto got = read_all(*src);
        REQUIRE(got.size() == 2);
        CHECK(got[0].bytes == Buf(golden::kUntagged.begin(), golden::kUntagged.end()));
        // Nothing captured: the header alone, marked truncated.
        CHECK(got[1].bytes == Buf(golden::kUntagged.begin(), golden::kUntagged.begin() + 14));
        CHECK(got[1].wire_len == 58);
        CHECK(src->counters().truncated_records == 1);
    }
    SECTION("IPV6") {
        TempPath path(".pcap");
        write_capture(path, DLT_IPV6, {{kIpv6}});
        auto src = open_ok(path, o);
        CHECK(bytes_of(read_all(*src)) ==
              std::vector<Buf>{ethernet(kGoldenDst, kGoldenSrc, 0x86dd, kIpv6)});
    }
}

TEST_CASE("NULL and LOOP: the address family word goes, the version nibble decides",
          "[net][linktypes]") {
    // DLT_NULL's family is in the capturing host's byte order and IPv6's value
    // differs between BSDs (24, 28, 30): none of it matters.
    const Buf af_inet_le = {2, 0, 0, 0}, af_inet6_darwin_le = {30, 0, 0, 0};
    const Buf af_inet_be = {0, 0, 0, 2}, af_inet6_openbsd_be = {0, 0, 0, 24};
    for (const int dlt : {DLT_NULL, DLT_LOOP}) {
        INFO("DLT " << dlt);
        const bool loop = dlt == DLT_LOOP;
        TempPath path(".pcap");
        write_capture(path, dlt,
                      {{cat({loop ? af_inet_be : af_inet_le, kIpv4})},
                       {cat({loop ? af_inet6_openbsd_be : af_inet6_darwin_le, kIpv6})},
                       {cat({af_inet_le, Buf{0x00, 0x01}})}, // not IP: skipped
                       {af_inet_le, 48}});                   // the family alone: skipped
        auto src = open_ok(path, golden_macs());
        CHECK(src->describe().find(loop ? "(LOOP, Ethernet header synthesized"
                                        : "(NULL, Ethernet header synthesized") !=
              std::string::npos);
        CHECK(bytes_of(read_all(*src)) ==
              std::vector<Buf>{Buf(golden::kUntagged.begin(), golden::kUntagged.end()),
                               ethernet(kGoldenDst, kGoldenSrc, 0x86dd, kIpv6)});
        CHECK(src->counters().synthesized_headers == 2);
        CHECK(src->counters().skipped_records == 2);
    }
}

TEST_CASE("synthesized frames carry no FCS", "[net][linktypes]") {
    TempPath plain(".pcap"), declared(".pcap");
    write_capture(plain, DLT_RAW, {{kIpv4}});
    // A classic header whose link type field declares a 4-byte FCS on raw IP.
    Buf image = plain.read();
    REQUIRE(image.size() > 24);
    image[23] = 0x24; // little endian: the field's top byte, P bit and 2 x 16 bits
    declared.write(image);

    CHECK(open_ok(plain)->fcs_len() == 0);
    PcapOpenOptions force0;
    force0.force_fcs_len = 0;
    CHECK(open_ok(declared, force0)->fcs_len() == 0);

    auto d = PcapFileSource::open(declared.str());
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().code == EINVAL);
    CHECK(d.error().message == "pcap file " + declared.str() +
                                   ": declared FCS length 4 bytes on link type RAW, whose "
                                   "records carry no Ethernet FCS");
    PcapOpenOptions force4;
    force4.force_fcs_len = 4;
    auto f = PcapFileSource::open(plain.str(), force4);
    REQUIRE_FALSE(f.ok());
    CHECK(f.error().code == EINVAL);
    CHECK(f.error().message.find("forced FCS length 4 bytes on link type RAW") !=
          std::string::npos);
}

// ---------------------------------------------------------------------------
// pcapng with several interfaces. libpcap 1.10 keeps one link type (the first
// IDB's) and one snapshot length per file, stops with a read error at a later
// IDB that differs, never says which interface a packet came on, and does not
// read if_fcslen.

namespace {

struct Ng {
    Buf b;
    void u16(std::uint16_t v) { b.insert(b.end(), {std::uint8_t(v), std::uint8_t(v >> 8)}); }
    void u32(std::uint32_t v) {
        u16(std::uint16_t(v));
        u16(std::uint16_t(v >> 16));
    }
    void block(std::uint32_t type, const Buf& body) {
        const auto total = static_cast<std::uint32_t>(12 + (body.size() + 3) / 4 * 4);
        u32(type);
        u32(total);
        b.insert(b.end(), body.begin(), body.end());
        while (b.size() % 4)
            b.push_back(0);
        u32(total);
    }
    Ng() {
        Ng body(0);
        body.u32(0x1a2b3c4d);
        body.u16(1);
        body.u16(0);
        body.u32(0xffffffff);
        body.u32(0xffffffff);
        block(0x0a0d0d0a, body.b);
    }
    explicit Ng(int) {}
    void idb(std::uint16_t linktype, std::optional<std::uint8_t> fcslen = {}) {
        Ng body(0);
        body.u16(linktype);
        body.u16(0);
        body.u32(65535);
        if (fcslen) {
            body.u16(13); // if_fcslen
            body.u16(1);
            body.b.insert(body.b.end(), {*fcslen, 0, 0, 0});
            body.u32(0); // opt_endofopt
        }
        block(1, body.b);
    }
    void epb(std::uint32_t interface, const Buf& data) {
        Ng body(0);
        body.u32(interface);
        body.u32(0);
        body.u32(1'000'000);
        body.u32(static_cast<std::uint32_t>(data.size()));
        body.u32(static_cast<std::uint32_t>(data.size()));
        body.b.insert(body.b.end(), data.begin(), data.end());
        block(6, body.b);
    }
};

constexpr std::uint16_t kLinktypeEthernet = 1;
constexpr std::uint16_t kLinktypeRaw = 101;
constexpr std::uint16_t kLinktypeSll = 113;
constexpr std::uint16_t kLinktypeSll2 = 276;

} // namespace

TEST_CASE("pcapng: interfaces of one cooked link type are read as one stream", "[net][linktypes]") {
    Ng ng;
    ng.idb(kLinktypeSll2);
    ng.idb(kLinktypeSll2);
    ng.epb(0, cat({sll2(0x0800), kIpv4}));
    ng.epb(1, cat({sll2(0x86dd), kIpv6}));
    TempPath path(".pcapng");
    path.write(ng.b);
    auto src = open_ok(path, golden_macs());
    CHECK(bytes_of(read_all(*src)) ==
          std::vector<Buf>{Buf(golden::kUntagged.begin(), golden::kUntagged.end()),
                           ethernet(kGoldenDst, kGoldenSrc, 0x86dd, kIpv6)});
    CHECK(src->read_error().empty());
}

TEST_CASE("pcapng: interfaces libpcap cannot read as one stream are refused at open",
          "[net][linktypes]") {
    SECTION("different link types: the message names each interface's") {
        Ng ng;
        ng.idb(kLinktypeSll);
        ng.idb(kLinktypeEthernet);
        ng.idb(kLinktypeSll2);
        ng.epb(0, cat({sll(0x0800), kIpv4}));
        TempPath path(".pcapng");
        path.write(ng.b);
        auto r = PcapFileSource::open(path.str());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == EINVAL);
        CHECK(r.error().message ==
              "pcap file " + path.str() +
                  ": pcapng interfaces of different link types (interface 0: LINUX_SLL, "
                  "interface 1: EN10MB, interface 2: LINUX_SLL2): libpcap reads one link type "
                  "per file and does not say which interface a packet came on; split the file "
                  "per interface");
    }
    SECTION("two raw-IP interfaces: libpcap compares LINKTYPE 101 with DLT 12") {
        Ng ng;
        ng.idb(kLinktypeRaw);
        ng.idb(kLinktypeRaw);
        ng.epb(0, kIpv4);
        TempPath path(".pcapng");
        path.write(ng.b);
        auto r = PcapFileSource::open(path.str());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().message ==
              "pcap file " + path.str() +
                  ": 2 pcapng interfaces of link type RAW: libpcap stops at every interface "
                  "after the first whose LINKTYPE number (101) is not its DLT number (12); "
                  "split the file per interface");
    }
    SECTION("Ethernet interfaces with different FCS lengths, unless one is forced") {
        Ng ng;
        ng.idb(kLinktypeEthernet, 4);
        ng.idb(kLinktypeEthernet);
        ng.epb(0, Buf(golden::kUntagged.begin(), golden::kUntagged.end()));
        TempPath path(".pcapng");
        path.write(ng.b);
        auto r = PcapFileSource::open(path.str());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().message ==
              "pcap file " + path.str() +
                  ": pcapng interfaces with different FCS lengths (interface 0: 4 bytes, "
                  "interface 1: 0 bytes): libpcap does not say which interface a packet came "
                  "on; force one FCS length");
        PcapOpenOptions forced;
        forced.force_fcs_len = 0;
        CHECK(open_ok(path, forced)->fcs_len() == 0);
    }
}

TEST_CASE("pcapng: what libpcap itself does with a later interface it cannot read",
          "[net][linktypes]") {
    // Past the first MiB, open() does not look: libpcap meets the interface
    // while reading and stops there, after the frames before it.
    Ng ng;
    const std::uint16_t first = GENERATE(kLinktypeEthernet, kLinktypeRaw);
    ng.idb(first);
    const Buf packet =
        first == kLinktypeRaw ? kIpv4 : Buf(golden::kUntagged.begin(), golden::kUntagged.end());
    std::size_t records = 0;
    while (ng.b.size() <= (1u << 20)) {
        ng.epb(0, packet);
        ++records;
    }
    ng.idb(kLinktypeRaw);
    ng.epb(1, kIpv4);
    TempPath path(".pcapng");
    path.write(ng.b);
    auto src = open_ok(path);
    CHECK(read_all(*src).size() == records);
    // Ethernet then raw IP: a different type. Raw IP twice: the same type, but
    // libpcap compares the file's DLT_RAW (12) with the IDB's LINKTYPE_RAW (101).
    CHECK(src->read_error() == "pcap file " + path.str() + ": record " +
                                   std::to_string(records + 1) +
                                   ": an interface has a type 101 different from the type of "
                                   "the first interface");
}

// A fuzzer's finding: a header-less capture whose file header declares a
// snapshot length of 218 MB. libpcap keeps that figure (pcap_snapshot) but
// never hands over a record beyond 262144 bytes, so the source's scratch
// buffer is sized by the latter; the records still read as usual.
TEST_CASE("a corrupt snapshot length in the file header does not size the scratch buffer",
          "[net][linktypes]") {
    TempPath path(".pcap");
    {
        const std::uint32_t header[6] = {0xa1b2c3d4, 0x00040002, 0, 0, 0x0d00ff00, DLT_NULL};
        const Buf rec = cat({Buf{2, 0, 0, 0}, kIpv4});
        const std::uint32_t rec_header[4] = {1, 0, static_cast<std::uint32_t>(rec.size()),
                                             static_cast<std::uint32_t>(rec.size())};
        std::ofstream out(path.str(), std::ios::binary);
        out.write(reinterpret_cast<const char*>(header), sizeof header);
        out.write(reinterpret_cast<const char*>(rec_header), sizeof rec_header);
        out.write(reinterpret_cast<const char*>(rec.data()), static_cast<std::streamsize>(rec.size()));
    }
    auto src = open_ok(path, golden_macs());
    CHECK(src->scratch_bytes() <= 262144 + 14);
    CHECK(bytes_of(read_all(*src)) ==
          std::vector<Buf>{Buf(golden::kUntagged.begin(), golden::kUntagged.end())});
}
