// scatter(): exact bytes across SGEs, the MR check, length errors, and PCI
// write end padding, all checked against guard bytes around every SGE.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "datapath/scatter.hpp"
#include "support/golden_frames.hpp"

using namespace rdmasim;
using datapath::MrEntry;
using datapath::MrTable;
using datapath::RxImage;
using datapath::ScatterStatus;
using datapath::Sge;
using datapath::Wqe;
namespace golden = rdmasim::test::golden;

namespace {

constexpr std::uint8_t kGuard = 0xa5;
constexpr std::uint64_t kIova = 0x40'0000; // bus address of buf[0]: 4096-aligned
const int kPd = 0, kOtherPd = 0;           // identities only

// One buffer registered several ways; SGEs name bus addresses (kIova + offset).
struct Memory {
    std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(4096, kGuard);
    MrTable mrs{16};
    std::uint32_t rw = 0, ro = 0, other_pd = 0, small = 0;

    Memory() {
        MrEntry e;
        e.addr = kIova;
        e.length = buf.size();
        e.host = reinterpret_cast<std::uint64_t>(buf.data());
        e.pd = &kPd;
        e.local_write = true;
        rw = mrs.add(e);
        e.local_write = false;
        ro = mrs.add(e);
        e.local_write = true;
        e.pd = &kOtherPd;
        other_pd = mrs.add(e);
        e.pd = &kPd;
        e.length = 1024; // covers buf[0, 1024) only
        small = mrs.add(e);
    }
    [[nodiscard]] bool untouched(std::size_t from, std::size_t to) const {
        for (std::size_t i = from; i < to; ++i)
            if (buf[i] != kGuard) return false;
        return true;
    }
    [[nodiscard]] bool untouched() const { return untouched(0, buf.size()); }
    [[nodiscard]] std::vector<std::uint8_t> at(std::size_t off, std::size_t n) const {
        return {buf.begin() + static_cast<std::ptrdiff_t>(off),
                buf.begin() + static_cast<std::ptrdiff_t>(off + n)};
    }
};

Sge sge(std::uint32_t offset, std::uint32_t length, std::uint32_t lkey) {
    return Sge{kIova + offset, length, lkey};
}

Wqe wqe_for(const std::vector<Sge>& sges) {
    Wqe w{0x77, static_cast<std::uint32_t>(sges.size()), 0};
    for (const auto& s : sges)
        w.total_len += s.length;
    return w;
}

// An image in three pieces, like a stripped frame plus FCS: the golden tagged
// frame around its tag, and its FCS.
RxImage stripped_with_fcs() {
    RxImage im;
    const std::span<const std::uint8_t> t(golden::kTagged);
    im.pieces[0] = t.first(12);
    im.pieces[1] = t.subspan(16);
    im.pieces[2] = golden::kTaggedFcs;
    im.byte_len = 62;
    return im;
}

RxImage whole(std::span<const std::uint8_t> bytes) {
    RxImage im;
    im.pieces[0] = bytes;
    im.byte_len = static_cast<std::uint32_t>(bytes.size());
    return im;
}

} // namespace

TEST_CASE("scatter: three SGEs receive exactly the image, in order", "[datapath][scatter]") {
    Memory m;
    // 20 + 30 + 100 bytes, with gaps between them that must stay untouched.
    const std::vector<Sge> sges = {sge(100, 20, m.rw), sge(200, 30, m.rw), sge(300, 100, m.rw)};
    const auto image = stripped_with_fcs();
    REQUIRE(datapath::scatter(wqe_for(sges), sges.data(), image, m.mrs, &kPd, 0) ==
            ScatterStatus::ok);
    const auto expect = golden::concat(golden::kUntagged, golden::kTaggedFcs); // 62 bytes
    auto got = m.at(100, 20);
    auto more = m.at(200, 30);
    got.insert(got.end(), more.begin(), more.end());
    more = m.at(300, 12);
    got.insert(got.end(), more.begin(), more.end());
    CHECK(got == expect);
    CHECK(m.untouched(0, 100));
    CHECK(m.untouched(120, 200));
    CHECK(m.untouched(230, 300));
    CHECK(m.untouched(312, m.buf.size())); // nothing after byte_len
}

TEST_CASE("scatter: an image that fills the WQE exactly, split mid-piece", "[datapath][scatter]") {
    Memory m;
    const std::vector<Sge> sges = {sge(0, 5, m.rw), sge(64, 50, m.rw), sge(128, 7, m.rw)};
    const auto image = stripped_with_fcs(); // 62 = 5 + 50 + 7
    REQUIRE(datapath::scatter(wqe_for(sges), sges.data(), image, m.mrs, &kPd, 0) ==
            ScatterStatus::ok);
    const auto expect = golden::concat(golden::kUntagged, golden::kTaggedFcs);
    CHECK(m.at(0, 5) == std::vector<std::uint8_t>(expect.begin(), expect.begin() + 5));
    CHECK(m.at(64, 50) == std::vector<std::uint8_t>(expect.begin() + 5, expect.begin() + 55));
    CHECK(m.at(128, 7) == std::vector<std::uint8_t>(expect.begin() + 55, expect.end()));
    CHECK(m.untouched(5, 64));
    CHECK(m.untouched(114, 128));
    CHECK(m.untouched(135, m.buf.size()));
}

TEST_CASE("scatter: an image longer than the WQE is a length error, nothing written",
          "[datapath][scatter]") {
    Memory m;
    const auto image = whole(golden::kUntagged); // 58 bytes
    for (std::uint32_t pad : {0u, 64u}) {
        const std::vector<Sge> one = {sge(0, 57, m.rw)};
        CHECK(datapath::scatter(wqe_for(one), one.data(), image, m.mrs, &kPd, pad) ==
              ScatterStatus::length_error);
        const std::vector<Sge> three = {sge(0, 20, m.rw), sge(100, 20, m.rw), sge(200, 17, m.rw)};
        CHECK(datapath::scatter(wqe_for(three), three.data(), image, m.mrs, &kPd, pad) ==
              ScatterStatus::length_error);
        CHECK(m.untouched());
    }
    // One byte more is enough.
    const std::vector<Sge> fits = {sge(0, 58, m.rw)};
    CHECK(datapath::scatter(wqe_for(fits), fits.data(), image, m.mrs, &kPd, 0) ==
          ScatterStatus::ok);
    CHECK(m.at(0, 58) == golden::concat(golden::kUntagged));
    CHECK(m.untouched(58, m.buf.size()));
}

TEST_CASE("scatter: every MR-check failure is a protection error with nothing written",
          "[datapath][scatter]") {
    Memory m;
    const auto image = whole(golden::kTagged); // 62 bytes
    struct Bad {
        const char* why;
        Sge sge;
    };
    const std::vector<Bad> bad = {
        {"wrong PD", sge(300, 100, m.other_pd)},
        {"no LOCAL_WRITE", sge(300, 100, m.ro)},
        {"past the end of the MR", sge(1000, 100, m.small)},
        {"before the MR", Sge{kIova - 16, 100, m.rw}},
        {"unknown lkey", sge(300, 100, m.rw + 0x1000)},
        {"lkey 0", sge(300, 100, 0)},
    };
    for (const auto& b : bad) {
        INFO(b.why);
        // Alone, and as the third SGE after two good ones: nothing may be written
        // even into the good SGEs before it.
        const std::vector<Sge> alone = {b.sge};
        CHECK(datapath::scatter(wqe_for(alone), alone.data(), image, m.mrs, &kPd, 0) ==
              ScatterStatus::protection_error);
        const std::vector<Sge> third = {sge(0, 20, m.rw), sge(64, 20, m.rw), b.sge};
        CHECK(datapath::scatter(wqe_for(third), third.data(), image, m.mrs, &kPd, 64) ==
              ScatterStatus::protection_error);
        CHECK(m.untouched());
    }
    // The same SGEs pass with the right key, PD and range.
    const std::vector<Sge> good = {sge(0, 20, m.rw), sge(64, 20, m.rw), sge(1000, 24, m.small)};
    CHECK(datapath::scatter(wqe_for(good), good.data(), image, m.mrs, &kPd, 0) ==
          ScatterStatus::ok);
}

TEST_CASE("scatter: end padding reaches exactly the next cache line, inside the SGE",
          "[datapath][scatter]") {
    const auto image = whole(golden::kUntagged); // 58 bytes
    struct Case {
        std::uint32_t align, sge_off, sge_len;
        std::uint32_t pad_end; // buffer offset where padding must stop
    };
    const std::vector<Case> cases = {
        {64, 0, 256, 64},     // ends at 58 -> 64
        {128, 0, 256, 128},   // ends at 58 -> 128
        {64, 8, 256, 128},    // ends at 66 -> 128
        {128, 8, 256, 128},   // ends at 66 -> 128
        {64, 70, 256, 128},   // ends at 128: aligned already, no padding
        {128, 200, 256, 384}, // ends at 258 -> 384, inside the SGE (ends at 456)
        {128, 0, 100, 100},   // the SGE ends first: padding stops at 100
        {64, 0, 58, 58},      // the image fills the SGE: no padding
    };
    for (const auto& c : cases) {
        Memory m;
        const std::uint32_t end = c.sge_off + 58;
        const std::uint32_t pad_end = c.pad_end;
        INFO("align " << c.align << " sge at " << c.sge_off << " length " << c.sge_len);
        const std::vector<Sge> one = {sge(c.sge_off, c.sge_len, m.rw)};
        REQUIRE(datapath::scatter(wqe_for(one), one.data(), image, m.mrs, &kPd, c.align) ==
                ScatterStatus::ok);
        CHECK(m.untouched(0, c.sge_off));
        CHECK(m.at(c.sge_off, 58) == golden::concat(golden::kUntagged));
        CHECK(m.at(end, pad_end - end) == std::vector<std::uint8_t>(pad_end - end, 0));
        CHECK(m.untouched(pad_end, m.buf.size()));
        CHECK((pad_end % c.align == 0 || pad_end == c.sge_off + c.sge_len));
    }
}

TEST_CASE("scatter: padding happens in the last SGE written, never in later ones",
          "[datapath][scatter]") {
    Memory m;
    const auto image = stripped_with_fcs(); // 62 bytes
    // 40 + 40 + 40: the image ends 22 bytes into the second SGE (at 512 + 22).
    const std::vector<Sge> sges = {sge(256, 40, m.rw), sge(512, 40, m.rw), sge(768, 40, m.rw)};
    REQUIRE(datapath::scatter(wqe_for(sges), sges.data(), image, m.mrs, &kPd, 64) ==
            ScatterStatus::ok);
    const auto expect = golden::concat(golden::kUntagged, golden::kTaggedFcs);
    CHECK(m.at(256, 40) == std::vector<std::uint8_t>(expect.begin(), expect.begin() + 40));
    CHECK(m.at(512, 22) == std::vector<std::uint8_t>(expect.begin() + 40, expect.end()));
    CHECK(m.at(534, 18) == std::vector<std::uint8_t>(18, 0)); // to the end of the SGE (552 < 576)
    CHECK(m.untouched(296, 512));
    CHECK(m.untouched(552, m.buf.size()));
}

TEST_CASE("scatter: without padding no byte after byte_len is touched", "[datapath][scatter]") {
    for (std::uint32_t off : {0u, 1u, 63u, 64u, 100u}) {
        Memory m;
        INFO("sge at " << off);
        const std::vector<Sge> one = {sge(off, 1024, m.rw)};
        REQUIRE(datapath::scatter(wqe_for(one), one.data(), whole(golden::kTcpGood), m.mrs, &kPd,
                                  0) == ScatterStatus::ok);
        CHECK(m.untouched(0, off));
        CHECK(m.at(off, 72) == golden::concat(golden::kTcpGood));
        CHECK(m.untouched(off + 72, m.buf.size()));
    }
}

TEST_CASE("copy_bytes and zero_bytes write exactly [dst, dst + n) for every short length",
          "[datapath][scatter]") {
    std::array<std::uint8_t, 200> src{};
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 7 + 1);
    for (std::size_t n = 0; n <= 130; ++n) {
        std::array<std::uint8_t, 200> dst;
        dst.fill(0xee);
        datapath::copy_bytes(dst.data() + 3, src.data(), n);
        for (std::size_t i = 0; i < dst.size(); ++i)
            REQUIRE(dst[i] == (i >= 3 && i < 3 + n ? src[i - 3] : 0xee));
        dst.fill(0xee);
        datapath::zero_bytes(dst.data() + 5, n);
        for (std::size_t i = 0; i < dst.size(); ++i)
            REQUIRE(dst[i] == (i >= 5 && i < 5 + n ? 0 : 0xee));
    }
}
