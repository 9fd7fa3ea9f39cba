// build_rx_image(): CVLAN stripping and scatter FCS on golden frames, with FCS
// values computed independently (zlib.crc32 in Python, see golden_frames.hpp).
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <vector>

#include "datapath/offloads.hpp"
#include "support/golden_frames.hpp"

using namespace rdmasim;
using datapath::RxImage;
using datapath::WqSettings;
namespace golden = rdmasim::test::golden;

namespace {

// A frame as a source hands it over; `bytes` must outlive the result.
net::Frame frame_of(const std::vector<std::uint8_t>& bytes, std::uint8_t fcs_len = 0) {
    net::Frame f;
    f.data = bytes.data();
    f.len = static_cast<std::uint32_t>(bytes.size());
    f.wire_len = f.len;
    f.fcs_len = fcs_len;
    f.ts_ns = 1;
    return f;
}

std::vector<std::uint8_t> flatten(const RxImage& im) {
    std::vector<std::uint8_t> out;
    for (const auto& p : im.pieces)
        out.insert(out.end(), p.begin(), p.end());
    return out;
}

// The image points into `bytes` and into itself (its FCS): build it in place.
void build(RxImage& im, const std::vector<std::uint8_t>& bytes, WqSettings s,
           std::uint8_t fcs_len = 0) {
    const net::Frame f = frame_of(bytes, fcs_len);
    datapath::build_rx_image(f, net::parse_frame(f.payload()), s, im);
}

WqSettings settings(bool strip, bool fcs) {
    WqSettings s;
    s.strip_cvlan = strip;
    s.scatter_fcs = fcs;
    return s;
}

} // namespace

TEST_CASE("offloads: CVLAN stripping removes exactly the tag and reports the full TCI",
          "[datapath][offloads]") {
    const auto tagged = golden::concat(golden::kTagged);
    RxImage im;
    build(im, tagged, settings(true, false));
    CHECK(flatten(im) == golden::concat(golden::kUntagged));
    CHECK(im.byte_len == 58);
    CHECK(im.stripped);
    CHECK(im.cvlan == golden::kTaggedTci);
    CHECK(im.cvlan >> 13 == golden::kTaggedPcp);
    CHECK(((im.cvlan >> 12) & 1) == golden::kTaggedDei);
    CHECK((im.cvlan & 0x0fff) == golden::kTaggedVid);
    CHECK_FALSE(im.fcs_bad);
}

TEST_CASE("offloads: every TCI value survives stripping", "[datapath][offloads]") {
    for (std::uint32_t tci : {0x0000u, 0x0001u, 0x0fffu, 0x1000u, 0xe000u, 0xffffu, 0x6abcu}) {
        auto bytes = golden::concat(golden::kTagged);
        bytes[14] = static_cast<std::uint8_t>(tci >> 8);
        bytes[15] = static_cast<std::uint8_t>(tci);
        RxImage im;
        build(im, bytes, settings(true, false));
        INFO("tci " << tci);
        CHECK(im.stripped);
        CHECK(im.cvlan == tci);
        CHECK(flatten(im) == golden::concat(golden::kUntagged));
    }
}

TEST_CASE("offloads: an untagged frame is unaffected by stripping", "[datapath][offloads]") {
    for (const auto& frame :
         {golden::concat(golden::kUntagged), golden::concat(golden::kTcpGood)}) {
        RxImage im;
        build(im, frame, settings(true, false));
        CHECK(flatten(im) == frame);
        CHECK(im.byte_len == frame.size());
        CHECK_FALSE(im.stripped);
        CHECK(im.cvlan == 0);
    }
}

TEST_CASE("offloads: without the flag the tag stays in the data", "[datapath][offloads]") {
    const auto tagged = golden::concat(golden::kTagged);
    RxImage im;
    build(im, tagged, settings(false, false));
    CHECK(flatten(im) == tagged);
    CHECK(im.byte_len == 62);
    CHECK_FALSE(im.stripped);
    CHECK(im.cvlan == 0);
}

TEST_CASE("offloads: scatter FCS appends the CRC-32, least significant byte first",
          "[datapath][offloads]") {
    SECTION("untagged") {
        const auto im_frame = golden::concat(golden::kUntagged);
        RxImage im;
        build(im, im_frame, settings(false, true));
        CHECK(flatten(im) == golden::concat(golden::kUntagged, golden::kUntaggedFcs));
        CHECK(im.byte_len == 62);
        CHECK_FALSE(im.fcs_bad);
    }
    SECTION("TCP") {
        const auto im_frame = golden::concat(golden::kTcpGood);
        RxImage im;
        build(im, im_frame, settings(false, true));
        CHECK(flatten(im) == golden::concat(golden::kTcpGood, golden::kTcpGoodFcs));
        CHECK(im.byte_len == 76);
    }
    SECTION("tagged, tag kept") {
        const auto im_frame = golden::concat(golden::kTagged);
        RxImage im;
        build(im, im_frame, settings(false, true));
        CHECK(flatten(im) == golden::concat(golden::kTagged, golden::kTaggedFcs));
        CHECK(im.byte_len == 66);
    }
    SECTION("tagged and stripped: the FCS is the wire's, over the tag") {
        const auto im_frame = golden::concat(golden::kTagged);
        RxImage im;
        build(im, im_frame, settings(true, true));
        CHECK(flatten(im) == golden::concat(golden::kUntagged, golden::kTaggedFcs));
        CHECK(im.byte_len == 62);
        CHECK(im.cvlan == golden::kTaggedTci);
    }
    SECTION("without the flag the FCS is never in the image") {
        const auto im_frame = golden::concat(golden::kUntagged);
        RxImage im;
        build(im, im_frame, settings(false, false));
        CHECK(flatten(im) == golden::concat(golden::kUntagged));
        CHECK(im.byte_len == 58);
    }
}

TEST_CASE("offloads: a source-carried FCS is kept as it came, good or bad",
          "[datapath][offloads]") {
    const std::array<std::uint8_t, 4> bad = {0xde, 0xad, 0xbe, 0xef};
    SECTION("good carried FCS") {
        const auto wire = golden::concat(golden::kTagged, golden::kTaggedFcs);
        RxImage im;
        build(im, wire, settings(false, true), 4);
        CHECK(flatten(im) == wire);
        CHECK(im.byte_len == 66);
        CHECK_FALSE(im.fcs_bad);
    }
    SECTION("bad carried FCS: delivered as is and flagged") {
        const auto wire = golden::concat(golden::kTagged, bad);
        RxImage im;
        build(im, wire, settings(false, true), 4);
        CHECK(flatten(im) == wire);
        CHECK(im.fcs_bad);
    }
    SECTION("bad carried FCS with stripping: the tag goes, the FCS stays") {
        const auto wire = golden::concat(golden::kTagged, bad);
        RxImage im;
        build(im, wire, settings(true, true), 4);
        CHECK(flatten(im) == golden::concat(golden::kUntagged, bad));
        CHECK(im.byte_len == 62);
        CHECK(im.cvlan == golden::kTaggedTci);
        CHECK(im.fcs_bad);
    }
    SECTION("carried FCS without the flag: not delivered, still judged") {
        const auto good = golden::concat(golden::kUntagged, golden::kUntaggedFcs);
        RxImage g;
        build(g, good, settings(false, false), 4);
        CHECK(flatten(g) == golden::concat(golden::kUntagged));
        CHECK(g.byte_len == 58);
        CHECK_FALSE(g.fcs_bad);
        const auto worse = golden::concat(golden::kUntagged, bad);
        RxImage b;
        build(b, worse, settings(false, false), 4);
        CHECK(flatten(b) == golden::concat(golden::kUntagged));
        CHECK(b.fcs_bad);
    }
}

TEST_CASE("offloads: a cut-off tag is not stripped", "[datapath][offloads]") {
    // 0x8100 with no room for the TCI: nothing to strip, the bytes pass as they are.
    const std::vector<std::uint8_t> runt(golden::kTagged.begin(), golden::kTagged.begin() + 15);
    RxImage im;
    build(im, runt, settings(true, false));
    CHECK(flatten(im) == runt);
    CHECK_FALSE(im.stripped);
}

TEST_CASE("offloads: end_padding_len stops at the cache line and at the SGE end",
          "[datapath][offloads]") {
    using datapath::end_padding_len;
    CHECK(end_padding_len(58, 1000, 64) == 6);
    CHECK(end_padding_len(58, 1000, 128) == 70);
    CHECK(end_padding_len(64, 1000, 64) == 0);
    CHECK(end_padding_len(65, 1000, 64) == 63);
    CHECK(end_padding_len(58, 60, 64) == 2);
    CHECK(end_padding_len(58, 58, 64) == 0);
    CHECK(end_padding_len(0x40'0000 + 257, 0x40'0000 + 4096, 128) == 127);
}
