// Captures from the wild: hand-built pcap and pcapng files of the kinds real
// tools and broken disks produce (cut files, lying record headers, jumbo
// frames, foreign link types, pcapng blocks and options nobody asked for,
// several interfaces). Each must end in a clear error (errno and a message
// naming the file) or in a counted outcome at the port, never in a crash.
// The port side goes through the verbs API on an inline-engine simulator fed
// by the file itself.
#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "datapath/counters.hpp"
#include "device/device.hpp"
#include "net/pcap_file_source.hpp"
#include "sim/config.hpp"
#include "sim/simulator.hpp"
#include "tests/net/temp_path.hpp"
#include "tests/support/receive_rig.hpp"

using namespace rdmasim;
using rdmasim::net::test::TempPath;

namespace {

using Buf = std::vector<std::uint8_t>;

// Little-endian writer for file images.
struct Out {
    Buf b;
    void u8(std::uint8_t v) { b.push_back(v); }
    void u16(std::uint16_t v) { b.insert(b.end(), {std::uint8_t(v), std::uint8_t(v >> 8)}); }
    void u32(std::uint32_t v) {
        u16(std::uint16_t(v));
        u16(std::uint16_t(v >> 16));
    }
    void bytes(const Buf& v) { b.insert(b.end(), v.begin(), v.end()); }
    void pad4() {
        while (b.size() % 4)
            b.push_back(0);
    }
};

constexpr std::uint32_t kLinkEthernet = 1;

// An untagged Ethernet frame of `n` bytes to the broadcast address, ether
// type 0x88b5 (local experimental), payload a pattern from `seed`.
Buf frame(std::size_t n, std::uint8_t seed = 0) {
    Buf v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::uint8_t>(seed + i);
    for (std::size_t i = 0; i < 6 && i < n; ++i)
        v[i] = 0xff;
    if (n >= 14) {
        v[12] = 0x88;
        v[13] = 0xb5;
    }
    return v;
}

// Classic pcap (microseconds, little endian).
Buf pcap_header(std::uint32_t linktype = kLinkEthernet, std::uint32_t snaplen = 65535) {
    Out o;
    o.u32(0xa1b2c3d4);
    o.u16(2);
    o.u16(4);
    o.u32(0);
    o.u32(0);
    o.u32(snaplen);
    o.u32(linktype);
    return o.b;
}
// One record: header with `caplen` / `len` as given, then `data` (which may
// hold fewer bytes than caplen claims: a cut file).
void pcap_record(Buf& file, std::uint32_t caplen, std::uint32_t len, const Buf& data,
                 std::uint32_t sec = 1) {
    Out o;
    o.u32(sec);
    o.u32(0);
    o.u32(caplen);
    o.u32(len);
    o.bytes(data);
    file.insert(file.end(), o.b.begin(), o.b.end());
}

// pcapng blocks (little endian).
void block(Buf& file, std::uint32_t type, const Buf& body) {
    Out o;
    const auto total = static_cast<std::uint32_t>(12 + (body.size() + 3) / 4 * 4);
    o.u32(type);
    o.u32(total);
    o.bytes(body);
    o.pad4();
    o.u32(total);
    file.insert(file.end(), o.b.begin(), o.b.end());
}
Buf shb() {
    Out o;
    o.u32(0x1a2b3c4d);
    o.u16(1);
    o.u16(0);
    o.u32(0xffffffff); // section length unknown
    o.u32(0xffffffff);
    Buf f;
    block(f, 0x0a0d0d0a, o.b);
    return f;
}
// An option: code, length, value padded to 4.
void option(Out& o, std::uint16_t code, const Buf& value) {
    o.u16(code);
    o.u16(static_cast<std::uint16_t>(value.size()));
    o.bytes(value);
    o.pad4();
}
void end_of_options(Out& o) {
    o.u32(0);
}
void idb(Buf& file, std::uint16_t linktype, std::uint32_t snaplen, const Buf& options = {}) {
    Out o;
    o.u16(linktype);
    o.u16(0);
    o.u32(snaplen);
    o.bytes(options);
    block(file, 0x00000001, o.b);
}
void epb(Buf& file, std::uint32_t interface, const Buf& data, const Buf& options = {},
         std::uint32_t len = 0) {
    Out o;
    o.u32(interface);
    o.u32(0);
    o.u32(1'000'000);
    o.u32(static_cast<std::uint32_t>(data.size()));
    o.u32(len != 0 ? len : static_cast<std::uint32_t>(data.size()));
    o.bytes(data);
    o.pad4();
    o.bytes(options);
    block(file, 0x00000006, o.b);
}

Result<std::unique_ptr<net::PcapFileSource>> open(const TempPath& path, const Buf& bytes) {
    path.write(bytes);
    return net::PcapFileSource::open(path.str());
}

// Reads every frame; returns their captured lengths.
std::vector<std::uint32_t> read_all(net::PcapFileSource& src) {
    std::vector<std::uint32_t> lens;
    net::Frame f;
    while (src.next(f))
        lens.push_back(f.len);
    CHECK(src.exhausted());
    return lens;
}

// How a read error begins: the file, then the record that could not be read.
std::string read_error_prefix(const TempPath& path, std::uint64_t record) {
    return "pcap file " + path.str() + ": record " + std::to_string(record) + ": ";
}
bool starts_with(const std::string& s, const std::string& prefix) {
    return s.compare(0, prefix.size(), prefix) == 0;
}

// A simulator (inline engine, starts at once) fed by the capture file at `path`.
std::unique_ptr<sim::Simulator> capture_sim(const std::string& path, net::PcapFileSource*& source) {
    sim::Config config;
    REQUIRE(config.set("engine", "inline"));
    REQUIRE(config.set("start", "now"));
    auto src = net::PcapFileSource::open(path);
    REQUIRE(src);
    source = src.value().get();
    std::vector<std::unique_ptr<net::FrameSource>> sources;
    sources.push_back(std::move(src.value()));
    auto s = sim::Simulator::create(config, std::move(sources));
    REQUIRE(s);
    return std::move(s.value());
}

// A receive set-up on a simulator fed by a capture file: one WQ with `slots`
// WQEs of `slot_bytes`, a one-entry indirection table, an RSS QP and a
// catch-all flow, all through verbs.
class CaptureRig {
public:
    CaptureRig(const std::string& path, std::uint32_t slots = 8, std::uint32_t slot_bytes = 2048)
        : sim_(capture_sim(path, source_)),
          rx_(dev_.ctx, dev_.pd, {.depth = slots, .slot_bytes = slot_bytes, .cqe = slots}) {}

    // Replays the whole file; returns every completion.
    std::vector<test::RigCompletion> run() {
        REQUIRE(sim_->wait_idle(std::chrono::milliseconds(1000)));
        return rx_.poll();
    }
    [[nodiscard]] const datapath::RxCounters& port() { return sim_->device(0).port.counters(); }
    [[nodiscard]] std::uint64_t drops(datapath::Drop d) {
        return port().drops[static_cast<std::size_t>(d)].get();
    }
    [[nodiscard]] bool balanced() {
        auto& dev = sim_->device(0);
        std::lock_guard lock(dev.port.mutex());
        return dev.port.balanced();
    }
    [[nodiscard]] const net::PcapFileSource& source() const { return *source_; }
    [[nodiscard]] const std::uint8_t* slot(std::size_t i) const { return rx_.slot(i); }

private:
    net::PcapFileSource* source_ = nullptr;
    std::unique_ptr<sim::Simulator> sim_; // destroyed after the verbs objects
    test::VerbsDevice dev_;
    test::ReceiveRig rx_;
};

} // namespace

TEST_CASE("wild: a file cut inside the file header is EINVAL naming the file",
          "[net][wild_captures]") {
    const Buf whole = pcap_header();
    for (std::size_t cut :
         {std::size_t{0}, std::size_t{3}, std::size_t{4}, std::size_t{10}, whole.size() - 1}) {
        INFO("cut at " << cut);
        TempPath path(".pcap");
        auto src = open(path, Buf(whole.begin(), whole.begin() + static_cast<long>(cut)));
        REQUIRE_FALSE(src);
        CHECK(src.error().code == EINVAL);
        CHECK(src.error().message.find(path.str()) != std::string::npos);
    }
    SECTION("pcapng: a section header block cut short") {
        const Buf ng = shb();
        TempPath path(".pcapng");
        auto src = open(path, Buf(ng.begin(), ng.begin() + 14));
        REQUIRE_FALSE(src);
        CHECK(src.error().code == EINVAL);
        CHECK(src.error().message.find(path.str()) != std::string::npos);
    }
}

TEST_CASE("wild: a file cut inside a record keeps the frames before it and says why it ended",
          "[net][wild_captures]") {
    Buf file = pcap_header();
    pcap_record(file, 60, 60, frame(60));
    pcap_record(file, 70, 70, frame(70));
    const std::size_t second_at = pcap_header().size() + 16 + 60;

    SECTION("cut inside the record header") {
        TempPath path(".pcap");
        auto src = open(path, Buf(file.begin(), file.begin() + static_cast<long>(second_at + 7)));
        REQUIRE(src);
        CHECK(read_all(*src.value()) == std::vector<std::uint32_t>{60});
        CHECK(src.value()->read_error() ==
              read_error_prefix(path, 2) +
                  "truncated dump file; tried to read 16 header bytes, only got 7");
    }
    SECTION("cut inside the record data") {
        TempPath path(".pcap");
        auto src =
            open(path, Buf(file.begin(), file.begin() + static_cast<long>(second_at + 16 + 30)));
        REQUIRE(src);
        CHECK(read_all(*src.value()) == std::vector<std::uint32_t>{60});
        CHECK(starts_with(src.value()->read_error(), read_error_prefix(path, 2)));
        CHECK(src.value()->read_error().find("truncated") != std::string::npos);
    }
    SECTION("pcapng: cut inside an enhanced packet block") {
        Buf ng = shb();
        idb(ng, kLinkEthernet, 65535);
        epb(ng, 0, frame(60));
        const std::size_t cut = ng.size() + 20;
        epb(ng, 0, frame(80));
        TempPath path(".pcapng");
        auto src = open(path, Buf(ng.begin(), ng.begin() + static_cast<long>(cut)));
        REQUIRE(src);
        CHECK(read_all(*src.value()) == std::vector<std::uint32_t>{60});
        CHECK(starts_with(src.value()->read_error(), read_error_prefix(path, 2)));
    }
    SECTION("through the port: the frames before the cut are delivered, the rest never offered") {
        TempPath path(".pcap");
        path.write(Buf(file.begin(), file.begin() + static_cast<long>(second_at + 16 + 30)));
        CaptureRig rig(path.str());
        const auto wcs = rig.run();
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].status == IBV_WC_SUCCESS);
        CHECK(wcs[0].byte_len == 60);
        CHECK(rig.port().frames.get() == 1);
        CHECK(rig.balanced());
        CHECK(starts_with(rig.source().read_error(), read_error_prefix(path, 2)));
    }
}

TEST_CASE("wild: corrupt records end the source naming the file and the record",
          "[net][wild_captures]") {
    SECTION("classic: a record header of garbage after good records") {
        Buf file = pcap_header();
        pcap_record(file, 60, 60, frame(60));
        pcap_record(file, 61, 61, frame(61));
        pcap_record(file, 60, 60, frame(60));
        for (int i = 0; i < 16; ++i) // the third record's header
            file[24 + 16 + 60 + 16 + 61 + static_cast<std::size_t>(i)] = 0xee;
        TempPath path(".pcap");
        auto src = open(path, file);
        REQUIRE(src);
        CHECK(read_all(*src.value()) == std::vector<std::uint32_t>{60, 61});
        CHECK(starts_with(src.value()->read_error(), read_error_prefix(path, 3)));
    }
    SECTION("pcapng: a block whose length is not a multiple of 4") {
        Buf ng = shb();
        idb(ng, kLinkEthernet, 65535);
        epb(ng, 0, frame(60));
        const std::size_t second = ng.size();
        epb(ng, 0, frame(60));
        ng[second + 4] = 0x4d; // total length 0x...4d
        TempPath path(".pcapng");
        auto src = open(path, ng);
        REQUIRE(src);
        CHECK(read_all(*src.value()) == std::vector<std::uint32_t>{60});
        CHECK(starts_with(src.value()->read_error(), read_error_prefix(path, 2)));
    }
    SECTION("pcapng: a block claiming more bytes than the file has") {
        Buf ng = shb();
        idb(ng, kLinkEthernet, 65535);
        epb(ng, 0, frame(60));
        epb(ng, 0, frame(60));
        const std::size_t third = ng.size();
        epb(ng, 0, frame(60));
        ng[third + 5] = 0x10; // total length 4 KiB + ..., in a file that ends sooner
        TempPath path(".pcapng");
        auto src = open(path, ng);
        REQUIRE(src);
        CHECK(read_all(*src.value()) == std::vector<std::uint32_t>{60, 60});
        CHECK(starts_with(src.value()->read_error(), read_error_prefix(path, 3)));
    }
    SECTION("cooked capture: skipped records count in the record number") {
        Buf file = pcap_header(113); // LINKTYPE_LINUX_SLL
        Buf ipv4_record(16 + 20, 0);
        ipv4_record[14] = 0x08; // protocol IPv4
        ipv4_record[16] = 0x45;
        Buf can_record(16 + 16, 0);
        can_record[15] = 0x0c; // protocol CAN: skipped
        pcap_record(file, 36, 36, ipv4_record);
        pcap_record(file, 32, 32, can_record);
        pcap_record(file, 36, 36, Buf(ipv4_record.begin(), ipv4_record.begin() + 10)); // cut
        TempPath path(".pcap");
        auto src = open(path, file);
        REQUIRE(src);
        CHECK(read_all(*src.value()) == std::vector<std::uint32_t>{14 + 20});
        CHECK(src.value()->counters().skipped_records == 1);
        CHECK(src.value()->read_error() ==
              read_error_prefix(path, 3) +
                  "truncated dump file; tried to read 36 captured bytes, only got 10");
    }
}

TEST_CASE("wild: records whose caplen exceeds the snaplen or len", "[net][wild_captures]") {
    SECTION("caplen > snaplen: libpcap cuts to the snaplen; the port counts truncated_capture") {
        Buf file = pcap_header(kLinkEthernet, 64);
        pcap_record(file, 100, 100, frame(100)); // claims 100 bytes in a 64-byte-snaplen file
        pcap_record(file, 60, 60, frame(60));
        TempPath path(".pcap");
        path.write(file);
        CaptureRig rig(path.str());
        const auto wcs = rig.run();
        CHECK(rig.port().frames.get() == 2);
        CHECK(rig.drops(datapath::Drop::truncated_capture) == 1);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].byte_len == 60);
        CHECK(rig.balanced());
        CHECK(rig.source().counters().truncated_records == 1);
    }
    SECTION("caplen beyond any Ethernet snaplen: a read error, not a huge allocation") {
        Buf file = pcap_header();
        pcap_record(file, 60, 60, frame(60));
        pcap_record(file, 0x7fffffff, 0x7fffffff, frame(60));
        TempPath path(".pcap");
        auto src = open(path, file);
        REQUIRE(src);
        CHECK(read_all(*src.value()) == std::vector<std::uint32_t>{60});
        CHECK(starts_with(src.value()->read_error(), read_error_prefix(path, 2)));
        CHECK(src.value()->read_error().find("2147483647") != std::string::npos);
    }
    SECTION("caplen > len: the frame is what was on the wire, len bytes") {
        Buf file = pcap_header();
        pcap_record(file, 80, 60, frame(80)); // 20 captured bytes past the frame's end
        TempPath path(".pcap");
        path.write(file);
        {
            auto src = net::PcapFileSource::open(path.str());
            REQUIRE(src);
            net::Frame f;
            REQUIRE(src.value()->next(f));
            CHECK(f.len == 60);
            CHECK(f.wire_len == 60);
            CHECK_FALSE(f.truncated());
        }
        CaptureRig rig(path.str());
        const auto wcs = rig.run();
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].status == IBV_WC_SUCCESS);
        CHECK(wcs[0].byte_len == 60);
        CHECK(rig.port().bytes.get() == 60);
        CHECK(rig.balanced());
    }
}

TEST_CASE("wild: zero-length records are counted, never delivered as frames",
          "[net][wild_captures]") {
    Buf file = pcap_header();
    pcap_record(file, 0, 0, {});  // nothing captured, nothing on the wire
    pcap_record(file, 0, 60, {}); // nothing captured of a 60-byte frame
    pcap_record(file, 60, 60, frame(60));
    TempPath path(".pcap");
    path.write(file);
    {
        auto src = net::PcapFileSource::open(path.str());
        REQUIRE(src);
        CHECK(read_all(*src.value()) == std::vector<std::uint32_t>{0, 0, 60});
        CHECK(src.value()->read_error().empty());
    }
    CaptureRig rig(path.str());
    const auto wcs = rig.run();
    CHECK(rig.port().frames.get() == 3);
    CHECK(rig.drops(datapath::Drop::runt) == 1);              // 0 of 0: a runt
    CHECK(rig.drops(datapath::Drop::truncated_capture) == 1); // 0 of 60: bytes lost
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].byte_len == 60);
    CHECK(rig.balanced());
}

TEST_CASE("wild: jumbo frames larger than every posted buffer are length errors",
          "[net][wild_captures]") {
    Buf file = pcap_header();
    pcap_record(file, 9000, 9000, frame(9000, 1));
    pcap_record(file, 60, 60, frame(60, 2));
    pcap_record(file, 9018, 9018, frame(9018, 3));
    TempPath path(".pcap");
    path.write(file);
    CaptureRig rig(path.str(), 4, 2048);
    const auto wcs = rig.run();
    REQUIRE(wcs.size() == 3);
    // Each frame consumes the next WQE, in posting order.
    CHECK(wcs[0].wr_id == 0);
    CHECK(wcs[0].status == IBV_WC_LOC_LEN_ERR);
    CHECK(wcs[1].wr_id == 1);
    CHECK(wcs[1].status == IBV_WC_SUCCESS);
    CHECK(wcs[1].byte_len == 60);
    CHECK(wcs[2].wr_id == 2);
    CHECK(wcs[2].status == IBV_WC_LOC_LEN_ERR);
    CHECK(rig.drops(datapath::Drop::length_error) == 2);
    CHECK(rig.port().delivered.get() == 1);
    CHECK(rig.balanced());
    // Nothing was written past the 2 KiB buffer of the first WQE into the second's.
    CHECK(std::memcmp(rig.slot(1), frame(60, 2).data(), 60) == 0);
}

TEST_CASE("wild: unknown link types are EINVAL naming the type", "[net][wild_captures]") {
    struct Case {
        std::uint32_t linktype;
        const char* name; // what the message must name
    };
    for (const Case& c : {Case{127, "IEEE802_11_RADIO"}, Case{107, "FRELAY"}, Case{147, "147"},
                          Case{65000, "65000"}}) {
        INFO("link type " << c.linktype);
        Buf file = pcap_header(c.linktype);
        pcap_record(file, 60, 60, frame(60));
        TempPath path(".pcap");
        auto src = open(path, file);
        REQUIRE_FALSE(src);
        CHECK(src.error().code == EINVAL);
        CHECK(src.error().message.find(c.name) != std::string::npos);
        CHECK(src.error().message.find("not supported") != std::string::npos);
        CHECK(src.error().message.find(path.str()) != std::string::npos);
        CHECK(src.error().message.find("supported link types: EN10MB, LINUX_SLL") !=
              std::string::npos);
    }
    SECTION("pcapng: the first interface's link type decides") {
        Buf ng = shb();
        idb(ng, 127, 65535);
        epb(ng, 0, frame(60));
        TempPath path(".pcapng");
        auto src = open(path, ng);
        REQUIRE_FALSE(src);
        CHECK(src.error().code == EINVAL);
        CHECK(src.error().message.find("IEEE802_11_RADIO") != std::string::npos);
    }
}

TEST_CASE("wild: pcapng blocks and options nobody asked for are skipped", "[net][wild_captures]") {
    Buf ng = shb();
    block(ng, 0x0bad0001, Buf(10, 0xee)); // unknown block before any interface
    Out idb_opts;
    option(idb_opts, 2, {'e', 't', 'h', '0'}); // if_name
    option(idb_opts, 0x7777, {1, 2, 3, 4, 5}); // unknown code, odd length
    option(idb_opts, 2988, Buf(7, 0xcc));      // custom option (copyable)
    option(idb_opts, 13, {4});                 // if_fcslen: 4 bytes
    end_of_options(idb_opts);
    idb(ng, kLinkEthernet, 65535, idb_opts.b);
    block(ng, 0x80000123, Buf(33, 0x11)); // local-use block type
    Out epb_opts;
    option(epb_opts, 1, {'h', 'i'});     // opt_comment
    option(epb_opts, 0x4242, Buf(3, 9)); // unknown
    end_of_options(epb_opts);
    epb(ng, 0, frame(64), epb_opts.b);
    block(ng, 0x00000005, Buf(16, 0)); // interface statistics: known, not a packet
    block(ng, 0x00000bad, {});         // unknown, empty body
    epb(ng, 0, frame(68));
    TempPath path(".pcapng");
    auto src = open(path, ng);
    REQUIRE(src);
    CHECK(src.value()->fcs_len() == 4); // found past the unknown block and options
    CHECK(read_all(*src.value()) == std::vector<std::uint32_t>{64, 68});
    CHECK(src.value()->read_error().empty());
}

TEST_CASE("wild: pcapng with several interfaces", "[net][wild_captures]") {
    SECTION("Ethernet on every interface: frames of all of them are read") {
        Buf ng = shb();
        idb(ng, kLinkEthernet, 65535);
        idb(ng, kLinkEthernet, 65535);
        idb(ng, kLinkEthernet, 65535);
        epb(ng, 0, frame(60));
        epb(ng, 1, frame(100));
        epb(ng, 2, frame(3000));
        epb(ng, 1, frame(90));
        TempPath path(".pcapng");
        path.write(ng);
        {
            auto src = net::PcapFileSource::open(path.str());
            REQUIRE(src);
            CHECK(read_all(*src.value()) == std::vector<std::uint32_t>{60, 100, 3000, 90});
            CHECK(src.value()->read_error().empty());
        }
        CaptureRig rig(path.str());
        const auto wcs = rig.run();
        CHECK(rig.port().frames.get() == 4);
        CHECK(rig.port().delivered.get() == 3);
        CHECK(rig.drops(datapath::Drop::length_error) == 1); // 3000 bytes > 2 KiB buffer
        CHECK(wcs.size() == 4);
        CHECK(rig.balanced());
    }
    SECTION("interfaces with different snaplens: libpcap refuses, a read error that says so") {
        Buf ng = shb();
        idb(ng, kLinkEthernet, 65535);
        idb(ng, kLinkEthernet, 128);
        epb(ng, 0, frame(60));
        TempPath path(".pcapng");
        auto src = open(path, ng);
        REQUIRE(src);
        CHECK(read_all(*src.value()).empty());
        CHECK(starts_with(src.value()->read_error(), read_error_prefix(path, 1)));
        CHECK(src.value()->read_error().find("snapshot length") != std::string::npos);
    }
    SECTION("a packet on an interface that was never described: a read error") {
        Buf ng = shb();
        idb(ng, kLinkEthernet, 65535);
        epb(ng, 0, frame(60));
        epb(ng, 3, frame(60));
        TempPath path(".pcapng");
        auto src = open(path, ng);
        REQUIRE(src);
        CHECK(read_all(*src.value()) == std::vector<std::uint32_t>{60});
        CHECK(src.value()->read_error() ==
              read_error_prefix(path, 2) +
                  "a packet arrived on interface 3, but there's no Interface Description Block "
                  "for that interface");
    }
    SECTION("a second interface with another link type: refused at open, naming both") {
        Buf ng = shb();
        idb(ng, kLinkEthernet, 65535);
        epb(ng, 0, frame(60));
        idb(ng, 101, 65535);
        epb(ng, 1, frame(60));
        TempPath path(".pcapng");
        auto src = open(path, ng);
        REQUIRE_FALSE(src);
        CHECK(src.error().code == EINVAL);
        CHECK(src.error().message ==
              "pcap file " + path.str() +
                  ": pcapng interfaces of different link types (interface 0: EN10MB, "
                  "interface 1: RAW): libpcap reads one link type per file and does not say "
                  "which interface a packet came on; split the file per interface");
    }
}
