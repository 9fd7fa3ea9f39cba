// PcapFileSource: round trips through temporary files, hand-built classic pcap
// and pcapng files (FCS declarations, truncation), and open errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include "net/pcap_file_source.hpp"
#include "net/pcap_writer.hpp"
#include "tests/net/temp_path.hpp"

using namespace rdmasim::net;
using rdmasim::net::test::TempPath;

namespace {

using Buf = std::vector<std::uint8_t>;

// PcapFileSource::open(path)'s errno and message as an unprivileged user
// sees them: root reads any file, so as root the open runs in a child that
// first drops to nobody (uid and gid 65534) for good; the result comes back
// through a pipe. {-1, why} when that cannot be done.
std::pair<int, std::string> open_unprivileged(const std::string& path) {
    auto attempt = [&] {
        auto r = PcapFileSource::open(path);
        return r.ok() ? std::pair<int, std::string>{0, ""}
                      : std::pair<int, std::string>{r.error().code, r.error().message};
    };
    if (::geteuid() != 0) return attempt();
    int fds[2];
    if (::pipe(fds) != 0) return {-1, "pipe failed"};
    const pid_t pid = ::fork();
    if (pid < 0) return {-1, "fork failed"};
    if (pid == 0) {
        ::close(fds[0]);
        std::string out = "setres[ug]id to nobody failed";
        int code = -1;
        if (::setgroups(0, nullptr) == 0 && ::setresgid(65534, 65534, 65534) == 0 &&
            ::setresuid(65534, 65534, 65534) == 0 && ::geteuid() == 65534) {
            std::tie(code, out) = attempt();
        }
        const std::string msg = std::to_string(code) + "\n" + out;
        [[maybe_unused]] const ssize_t n = ::write(fds[1], msg.data(), msg.size());
        ::_exit(0);
    }
    ::close(fds[1]);
    std::string msg;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const auto nl = msg.find('\n');
    if (nl == std::string::npos) return {-1, "the child said nothing"};
    return {std::stoi(msg.substr(0, nl)), msg.substr(nl + 1)};
}

// Appends integers in a chosen byte order.
struct Out {
    bool big_endian = false;
    Buf b;
    void u8(std::uint8_t v) { b.push_back(v); }
    void u16(std::uint16_t v) {
        if (big_endian)
            b.insert(b.end(), {std::uint8_t(v >> 8), std::uint8_t(v)});
        else
            b.insert(b.end(), {std::uint8_t(v), std::uint8_t(v >> 8)});
    }
    void u32(std::uint32_t v) {
        if (big_endian) {
            u16(std::uint16_t(v >> 16));
            u16(std::uint16_t(v));
        } else {
            u16(std::uint16_t(v));
            u16(std::uint16_t(v >> 16));
        }
    }
    void bytes(const Buf& v) { b.insert(b.end(), v.begin(), v.end()); }
    void pad4() {
        while (b.size() % 4)
            b.push_back(0);
    }
};

constexpr std::uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr std::uint32_t kMagicNano = 0xa1b23c4d;
constexpr std::uint32_t kLinkEthernet = 1;
constexpr std::uint32_t kLinkRadiotap = 127; // LINKTYPE_IEEE802_11_RADIOTAP
constexpr std::uint32_t kFcs4 = 0x24000000; // P bit 26, FCS length 2 x 16 bits in bits 28-31

Buf frame(std::size_t n, std::uint8_t seed) {
    Buf v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::uint8_t>(seed ^ i);
    return v;
}

struct ClassicRecord {
    std::uint32_t sec;
    std::uint32_t frac; // micro- or nanoseconds, as the magic says
    Buf data;           // captured bytes
    std::uint32_t len;  // wire length
};

Buf classic_pcap(bool big_endian, std::uint32_t magic, std::uint32_t linktype_field,
                 const std::vector<ClassicRecord>& records, std::uint32_t snaplen = 65535) {
    Out o{big_endian, {}};
    o.u32(magic);
    o.u16(2);
    o.u16(4);
    o.u32(0);
    o.u32(0);
    o.u32(snaplen);
    o.u32(linktype_field);
    for (const auto& r : records) {
        o.u32(r.sec);
        o.u32(r.frac);
        o.u32(static_cast<std::uint32_t>(r.data.size()));
        o.u32(r.len);
        o.bytes(r.data);
    }
    return o.b;
}

// `count` records of sizes 60..1514 in steps of `step` (mod 1455), one
// second apart: enough of them to span several of the fast path's windows.
std::vector<ClassicRecord> odd_sized_records(std::uint32_t count, std::uint32_t step) {
    std::vector<ClassicRecord> records;
    for (std::uint32_t i = 0; i < count; ++i) {
        const std::uint32_t len = 60 + (i * step) % 1455;
        records.push_back({1700000000 + i, i, frame(len, static_cast<std::uint8_t>(i)), len});
    }
    return records;
}

// SHB, IDB (Ethernet, optional if_fcslen), then one EPB per frame (microsecond ticks).
Buf pcapng(bool big_endian, std::optional<std::uint8_t> if_fcslen,
           const std::vector<std::pair<std::uint64_t, Buf>>& frames) {
    Out o{big_endian, {}};
    o.u32(0x0a0d0d0a);
    o.u32(28);
    o.u32(0x1a2b3c4d);
    o.u16(1);
    o.u16(0);
    o.u32(0xffffffff); // section length unknown
    o.u32(0xffffffff);
    o.u32(28);

    const std::uint32_t idb_len = if_fcslen ? 32 : 20;
    o.u32(1);
    o.u32(idb_len);
    o.u16(1); // LINKTYPE_ETHERNET
    o.u16(0);
    o.u32(65535);
    if (if_fcslen) {
        o.u16(13); // if_fcslen
        o.u16(1);
        o.u8(*if_fcslen);
        o.pad4();
        o.u16(0); // opt_endofopt
        o.u16(0);
    }
    o.u32(idb_len);

    for (const auto& [ts_us, data] : frames) {
        const auto padded = static_cast<std::uint32_t>((data.size() + 3) / 4 * 4);
        o.u32(6);
        o.u32(32 + padded);
        o.u32(0);
        o.u32(static_cast<std::uint32_t>(ts_us >> 32));
        o.u32(static_cast<std::uint32_t>(ts_us));
        o.u32(static_cast<std::uint32_t>(data.size()));
        o.u32(static_cast<std::uint32_t>(data.size()));
        o.bytes(data);
        o.pad4();
        o.u32(32 + padded);
    }
    return o.b;
}

std::unique_ptr<PcapFileSource> open_ok(const TempPath& tmp, std::optional<int> force = {}) {
    PcapOpenOptions options;
    options.force_fcs_len = force;
    auto r = PcapFileSource::open(tmp.str(), options);
    INFO((r.ok() ? std::string() : r.error().message));
    REQUIRE(r.ok());
    return std::move(r).value();
}

Buf bytes_of(const Frame& f) {
    return {f.data, f.data + f.len};
}

} // namespace

TEST_CASE("PcapWriter output reads back through PcapFileSource", "[net][pcap_file_source]") {
    TempPath tmp(".pcap");
    const Buf a = frame(60, 0x10), b = frame(1518, 0x20), c = frame(64, 0x30);
    const std::uint64_t t0 = 1'650'000'000'000'000'001ull;
    {
        auto w = PcapWriter::open(tmp.str());
        REQUIRE(w.ok());
        w.value()->write(a, t0);
        w.value()->write(b, t0 + 999'999'999);
        w.value()->write(c, t0 + 1'000'000'000);
        REQUIRE(w.value()->close().ok());
    }
    auto src = open_ok(tmp);
    CHECK(src->fcs_len() == 0);
    CHECK(src->describe() == "pcap file " + tmp.str() + " (EN10MB, fcs 0 bytes)");
    CHECK_FALSE(src->exhausted());

    Frame f;
    REQUIRE(src->next(f));
    CHECK(bytes_of(f) == a);
    CHECK(f.wire_len == 60);
    CHECK(f.fcs_len == 0);
    CHECK(f.ts_ns == t0);
    CHECK_FALSE(f.truncated());
    REQUIRE(src->next(f));
    CHECK(bytes_of(f) == b);
    CHECK(f.ts_ns == t0 + 999'999'999);
    REQUIRE(src->next(f));
    CHECK(bytes_of(f) == c);
    CHECK(f.ts_ns == t0 + 1'000'000'000);

    CHECK_FALSE(src->next(f));
    CHECK(src->exhausted());
    CHECK_FALSE(src->next(f));
    CHECK(src->read_error().empty());
    CHECK(src->counters().frames == 3);
    CHECK(src->counters().bytes == 60 + 1518 + 64);
    CHECK(src->counters().truncated_records == 0);
}

TEST_CASE("classic pcap: FCS length from the link type field", "[net][pcap_file_source]") {
    const Buf data = frame(64, 0x55);
    const std::vector<ClassicRecord> recs = {{1, 500, data, 64}};

    SECTION("little endian, microseconds, FCS 4") {
        TempPath tmp(".pcap");
        tmp.write(classic_pcap(false, kMagicMicro, kLinkEthernet | kFcs4, recs));
        auto src = open_ok(tmp);
        CHECK(src->fcs_len() == 4);
        CHECK(src->describe() == "pcap file " + tmp.str() + " (EN10MB, fcs 4 bytes)");
        Frame f;
        REQUIRE(src->next(f));
        CHECK(f.fcs_len == 4);
        CHECK(f.payload().size() == 60);
        CHECK(bytes_of(f) == data);
        CHECK(f.ts_ns == 1'000'500'000ull); // microseconds scaled to ns
    }
    SECTION("big endian, nanoseconds, FCS 4") {
        TempPath tmp(".pcap");
        tmp.write(classic_pcap(true, kMagicNano, kLinkEthernet | kFcs4, recs));
        auto src = open_ok(tmp);
        CHECK(src->fcs_len() == 4);
        Frame f;
        REQUIRE(src->next(f));
        CHECK(f.fcs_len == 4);
        CHECK(bytes_of(f) == data);
        CHECK(f.ts_ns == 1'000'000'500ull);
    }
    SECTION("length bits without the P flag mean no FCS") {
        TempPath tmp(".pcap");
        tmp.write(classic_pcap(false, kMagicMicro, kLinkEthernet | 0x20000000, recs));
        CHECK(open_ok(tmp)->fcs_len() == 0);
    }
    SECTION("P flag with length 0 means no FCS") {
        TempPath tmp(".pcap");
        tmp.write(classic_pcap(false, kMagicMicro, kLinkEthernet | 0x04000000, recs));
        CHECK(open_ok(tmp)->fcs_len() == 0);
    }
    SECTION("an FCS length other than 4 on Ethernet is refused") {
        TempPath tmp(".pcap");
        tmp.write(classic_pcap(false, kMagicMicro, kLinkEthernet | 0x14000000, recs)); // 2 bytes
        auto r = PcapFileSource::open(tmp.str());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == EINVAL);
        CHECK_THAT(r.error().message, Catch::Contains(tmp.str()));
    }
    SECTION("a record shorter than the FCS carries none") {
        TempPath tmp(".pcap");
        tmp.write(
            classic_pcap(false, kMagicMicro, kLinkEthernet | kFcs4, {{0, 0, Buf{1, 2, 3}, 3}}));
        auto src = open_ok(tmp);
        Frame f;
        REQUIRE(src->next(f));
        CHECK(f.len == 3);
        CHECK(f.fcs_len == 0);
    }
}

TEST_CASE("force_fcs_len overrides the file", "[net][pcap_file_source]") {
    const std::vector<ClassicRecord> recs = {{0, 0, frame(64, 1), 64}};
    TempPath with_fcs(".pcap"), without_fcs(".pcap");
    with_fcs.write(classic_pcap(false, kMagicMicro, kLinkEthernet | kFcs4, recs));
    without_fcs.write(classic_pcap(false, kMagicMicro, kLinkEthernet, recs));

    auto a = open_ok(with_fcs, 0);
    CHECK(a->fcs_len() == 0);
    Frame f;
    REQUIRE(a->next(f));
    CHECK(f.fcs_len == 0);

    auto b = open_ok(without_fcs, 4);
    CHECK(b->fcs_len() == 4);
    REQUIRE(b->next(f));
    CHECK(f.fcs_len == 4);

    PcapOpenOptions three;
    three.force_fcs_len = 3;
    auto bad = PcapFileSource::open(without_fcs.str(), three);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().code == EINVAL);
}

TEST_CASE("pcapng: FCS length from if_fcslen", "[net][pcap_file_source]") {
    const Buf a = frame(68, 0x01), b = frame(61, 0x02); // 61: EPB padding
    const std::vector<std::pair<std::uint64_t, Buf>> frames = {{1'600'000'000'000'001ull, a},
                                                               {1'600'000'000'000'002ull, b}};
    for (const bool big_endian : {false, true}) {
        INFO("big endian: " << big_endian);
        TempPath tmp(".pcapng");
        tmp.write(pcapng(big_endian, 4, frames));
        auto src = open_ok(tmp);
        CHECK(src->fcs_len() == 4);
        CHECK(src->describe() == "pcap file " + tmp.str() + " (EN10MB, fcs 4 bytes)");
        Frame f;
        REQUIRE(src->next(f));
        CHECK(bytes_of(f) == a);
        CHECK(f.fcs_len == 4);
        CHECK(f.payload().size() == 64);
        CHECK(f.ts_ns == 1'600'000'000'000'001'000ull);
        REQUIRE(src->next(f));
        CHECK(bytes_of(f) == b);
        CHECK(f.ts_ns == 1'600'000'000'000'002'000ull);
        CHECK_FALSE(src->next(f));
        CHECK(src->exhausted());
        CHECK(src->read_error().empty());
    }
    SECTION("no option, or if_fcslen 0: no FCS") {
        TempPath none(".pcapng"), zero(".pcapng");
        none.write(pcapng(false, std::nullopt, frames));
        zero.write(pcapng(false, 0, frames));
        CHECK(open_ok(none)->fcs_len() == 0);
        CHECK(open_ok(zero)->fcs_len() == 0);
    }
}

TEST_CASE("truncated records are handed over and counted", "[net][pcap_file_source]") {
    TempPath tmp(".pcap");
    const Buf head = frame(96, 0x77);
    tmp.write(classic_pcap(false, kMagicNano, kLinkEthernet,
                           {{0, 1, head, 1500}, {0, 2, frame(60, 1), 60}}, 96));
    auto src = open_ok(tmp);
    Frame f;
    REQUIRE(src->next(f));
    CHECK(f.len == 96);
    CHECK(f.wire_len == 1500);
    CHECK(f.truncated());
    CHECK(bytes_of(f) == head);
    REQUIRE(src->next(f));
    CHECK_FALSE(f.truncated());
    CHECK(src->counters().frames == 2);
    CHECK(src->counters().bytes == 96 + 60);
    CHECK(src->counters().truncated_records == 1);
}

TEST_CASE("a file cut mid-record ends the source with a read error", "[net][pcap_file_source]") {
    const Buf full = classic_pcap(false, kMagicMicro, kLinkEthernet,
                                  {{0, 0, frame(60, 1), 60}, {0, 1, frame(100, 2), 100}});
    const std::size_t second_record = 24 + 16 + 60;
    // Cut inside the second record's data, and inside its header.
    for (const std::size_t cut : {full.size() - 10, second_record + 7}) {
        INFO("cut at " << cut);
        TempPath tmp(".pcap");
        tmp.write(Buf(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(cut)));
        auto src = open_ok(tmp);
        Frame f;
        REQUIRE(src->next(f));
        CHECK(f.len == 60);
        CHECK_FALSE(src->next(f));
        CHECK(src->exhausted());
        CHECK_FALSE(src->read_error().empty());
        CHECK_FALSE(src->next(f));
        CHECK(src->counters().frames == 1);
    }
}

TEST_CASE("the fast reader gives what libpcap gives, frames and errors", "[net][pcap_file_source]") {
    const std::vector<ClassicRecord> ordinary{
        {1700000000, 1, frame(60, 1), 60}, {1700000000, 999999, frame(1514, 2), 1514},
        {1700000001, 5, frame(64, 3), 1500}, // cut by the snapshot at capture time
        {1700000002, 6, frame(80, 4), 70},   // caplen > len (a broken writer)
        {1700000003, 7, {}, 0}};
    struct Case {
        const char* name;
        Buf file;
    };
    const Buf le = classic_pcap(false, kMagicMicro, kLinkEthernet, ordinary);
    const Buf with_long = classic_pcap(false, kMagicMicro, kLinkEthernet,
                                       {{0, 0, frame(60, 1), 60}, {0, 1, frame(200, 2), 200},
                                        {0, 2, frame(60, 3), 60}},
                                       96); // the second record is longer than the snapshot
    Buf huge = classic_pcap(false, kMagicMicro, kLinkEthernet, {{0, 0, frame(60, 1), 60}});
    {
        Out o{false, {}}; // a record header claiming 300000 captured bytes
        o.u32(0), o.u32(1), o.u32(300000), o.u32(300000);
        o.bytes(frame(100, 9));
        huge.insert(huge.end(), o.b.begin(), o.b.end());
    }
    // Larger than the fast path's 1 MiB window, read in refills: records
    // cut by a refill's end, and records longer than the snapshot (libpcap
    // reads those, at the same offset) before and after the refills.
    const Buf large =
        classic_pcap(false, kMagicMicro, kLinkEthernet, odd_sized_records(3000, 37), 1400);
    REQUIRE(large.size() > 2 * (std::size_t{1} << 20));
    const std::vector<Case> cases{
        {"larger than the read window, with records beyond the snapshot", large},
        {"little-endian microseconds", le},
        {"big-endian nanoseconds", classic_pcap(true, kMagicNano, kLinkEthernet | kFcs4, ordinary)},
        {"a record longer than the snapshot length", with_long},
        {"a record beyond libpcap's maximum", huge},
        {"cut inside a record", Buf(le.begin(), le.end() - 10)},
        {"cut inside a record header", Buf(le.begin(), le.begin() + 24 + 16 + 60 + 7)},
        {"no records", Buf(le.begin(), le.begin() + 24)},
    };
    struct Seen {
        Buf bytes;
        std::uint32_t wire_len;
        std::uint8_t fcs_len;
        std::uint64_t ts_ns;
        bool operator==(const Seen&) const = default;
    };
    // Modes: 0 libpcap, frame by frame; 1 the fast path, frame by frame; 2
    // the fast path in bursts of 1, 3, 32 and 7 (every frame of a burst read
    // after the call: its bytes must all still be there); 3 libpcap in bursts.
    constexpr int kModes = 4;
    for (const Case& c : cases) {
        INFO(c.name);
        TempPath tmp(".pcap");
        tmp.write(c.file);
        std::vector<Seen> got[kModes];
        std::string error[kModes];
        SourceCounters counters[kModes];
        for (int mode = 0; mode < kModes; ++mode) {
            INFO("mode " << mode);
            PcapOpenOptions o;
            o.map_file = mode == 1 || mode == 2;
            auto r = PcapFileSource::open(tmp.str(), o);
            REQUIRE(r.ok());
            auto& src = *r.value();
            Frame f;
            std::array<Frame, 32> burst;
            static constexpr std::size_t kSizes[] = {1, 3, 32, 7};
            for (int guard = 0; guard < 10000 && !src.exhausted(); ++guard) {
                if (mode < 2) {
                    if (src.next(f)) got[mode].push_back({bytes_of(f), f.wire_len, f.fcs_len, f.ts_ns});
                    continue;
                }
                const std::size_t want = kSizes[guard % std::size(kSizes)];
                const std::uint32_t n = src.next_burst({burst.data(), want});
                REQUIRE(n <= want);
                for (std::uint32_t i = 0; i < n; ++i)
                    got[mode].push_back({bytes_of(burst[i]), burst[i].wire_len, burst[i].fcs_len,
                                         burst[i].ts_ns});
            }
            CHECK(src.exhausted());
            CHECK(src.progress() == 1.0);
            error[mode] = src.read_error();
            counters[mode] = src.counters();
        }
        for (int mode = 1; mode < kModes; ++mode) {
            INFO("mode " << mode << " against libpcap frame by frame");
            CHECK(got[mode] == got[0]);
            CHECK(error[mode] == error[0]);
            CHECK(counters[mode].frames == counters[0].frames);
            CHECK(counters[mode].bytes == counters[0].bytes);
            CHECK(counters[mode].truncated_records == counters[0].truncated_records);
        }
    }
    // The ordinary records, as written (so the comparison is not of two empty lists).
    TempPath tmp(".pcap");
    tmp.write(le);
    auto src = open_ok(tmp);
    Frame f;
    REQUIRE(src->next(f));
    CHECK(f.ts_ns == 1700000000ull * 1000000000 + 1000);
    REQUIRE(src->next(f));
    CHECK(f.len == 1514);
    CHECK(bytes_of(f) == frame(1514, 2));
}

TEST_CASE("a capture that shrinks while it is read ends at the cut", "[net][pcap_file_source]") {
    // 3,000 records (2.4 MB) of odd sizes; frames are read until the
    // first window is in use, then the file is cut beyond that window: the
    // next refill finds the file shorter than when it was opened.
    const std::vector<ClassicRecord> records = odd_sized_records(3000, 29);
    std::vector<std::size_t> offset; // of each record's header
    std::size_t at = 24;
    for (const ClassicRecord& r : records) {
        offset.push_back(at);
        at += 16 + r.data.size();
    }
    const Buf full = classic_pcap(false, kMagicMicro, kLinkEthernet, records);
    REQUIRE(full.size() == at);
    // net/pcap_file_map.cpp's kWindowLen: the cut must lie beyond the first
    // window (were the window to grow past 1.5 MiB, move the cut with it).
    constexpr std::size_t kWindow = std::size_t{1} << 20;
    const std::size_t k = static_cast<std::size_t>(
        std::upper_bound(offset.begin(), offset.end(), kWindow + kWindow / 2) - offset.begin());
    REQUIRE(k < records.size());
    struct Cut {
        const char* name;
        std::size_t at;       // new file size
        std::size_t complete; // records before it
        bool error;           // libpcap reports the cut record
    };
    for (const Cut& cut : {Cut{"inside a record's data", offset[k] + 16 + 5, k, true},
                           Cut{"inside a record header", offset[k] + 9, k, true},
                           Cut{"between two records", offset[k], k, false}}) {
        for (const bool bursts : {false, true}) {
            INFO(cut.name << (bursts ? ", in bursts" : ", frame by frame"));
            TempPath tmp(".pcap");
            tmp.write(full);
            PcapOpenOptions o;
            o.map_file = true;
            auto r = PcapFileSource::open(tmp.str(), o);
            REQUIRE(r.ok());
            auto& src = *r.value();
            std::size_t seen = 0;
            std::size_t mismatched = 0;
            std::array<Frame, 16> burst;
            for (int guard = 0; guard < 10000 && !src.exhausted(); ++guard) {
                if (seen >= 100 && std::filesystem::file_size(tmp.str()) == full.size())
                    std::filesystem::resize_file(tmp.str(), cut.at);
                const std::uint32_t n = src.next_burst({burst.data(), bursts ? burst.size() : 1});
                for (std::uint32_t i = 0; i < n; ++i, ++seen)
                    if (seen >= records.size() || bytes_of(burst[i]) != records[seen].data)
                        ++mismatched;
            }
            CHECK(src.exhausted());
            CHECK(seen == cut.complete);
            CHECK(mismatched == 0);
            CHECK(src.counters().frames == cut.complete);
            CHECK(src.read_error().empty() == !cut.error);
            // The same text libpcap gives reading the cut file from its start.
            PcapOpenOptions plain;
            plain.map_file = false;
            auto again = std::move(PcapFileSource::open(tmp.str(), plain)).value();
            Frame f;
            while (again->next(f)) {
            }
            CHECK(src.read_error() == again->read_error());
        }
    }
}

TEST_CASE("open errors carry errno and libpcap's text", "[net][pcap_file_source]") {
    SECTION("missing file: ENOENT naming the path") {
        const std::string path =
            (std::filesystem::temp_directory_path() / "rdmasim-no-such-file-4711.pcap").string();
        auto r = PcapFileSource::open(path);
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == ENOENT);
        CHECK_THAT(r.error().message, Catch::Contains(path));
    }
    SECTION("a link type without IP over Ethernet: EINVAL naming it and the supported ones") {
        TempPath tmp(".pcap");
        tmp.write(classic_pcap(false, kMagicMicro, kLinkRadiotap, {{0, 0, frame(40, 0), 40}}));
        auto r = PcapFileSource::open(tmp.str());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == EINVAL);
        CHECK(r.error().message ==
              "pcap file " + tmp.str() +
                  ": link type IEEE802_11_RADIO (127) is not supported: it carries no "
                  "IP-over-Ethernet traffic; supported link types: EN10MB, LINUX_SLL, "
                  "LINUX_SLL2, RAW, IPV4, IPV6, NULL, LOOP");
    }
    SECTION("garbage: EINVAL") {
        TempPath tmp(".pcap");
        Buf junk(200);
        for (std::size_t i = 0; i < junk.size(); ++i)
            junk[i] = static_cast<std::uint8_t>(i * 31);
        tmp.write(junk);
        auto r = PcapFileSource::open(tmp.str());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == EINVAL);
        CHECK(r.error().message.size() > tmp.str().size()); // libpcap's reason follows the path
    }
    SECTION("empty file: EINVAL") {
        TempPath tmp(".pcap");
        tmp.write({});
        auto r = PcapFileSource::open(tmp.str());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == EINVAL);
    }
    SECTION("a header cut short: EINVAL") {
        TempPath tmp(".pcap");
        const Buf full = classic_pcap(false, kMagicMicro, kLinkEthernet, {});
        tmp.write(Buf(full.begin(), full.begin() + 10));
        auto r = PcapFileSource::open(tmp.str());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == EINVAL);
    }
    SECTION("a directory: EISDIR") {
        auto r = PcapFileSource::open(std::filesystem::temp_directory_path().string());
        REQUIRE_FALSE(r.ok());
        CHECK(r.error().code == EISDIR);
    }
    SECTION("unreadable file: EACCES (as root too: opened as nobody)") {
        TempPath tmp(".pcap");
        tmp.write(classic_pcap(false, kMagicMicro, kLinkEthernet, {}));
        std::filesystem::permissions(tmp.str(), std::filesystem::perms::none);
        const auto [code, message] = open_unprivileged(tmp.str());
        INFO(message);
        CHECK(code == EACCES);
        CHECK_THAT(message, Catch::Contains(tmp.str()));
        CHECK_THAT(message, Catch::Contains("Permission denied"));
    }
}
