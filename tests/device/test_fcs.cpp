// Frames whose carried FCS is bad (sources whose frames carry their FCS: pcap
// FCS length 4, source_fcs=4) are dropped by the MAC before any receive queue
// sees them, as a real ConnectX counts a CRC error (datapath/README.md,
// "Per-frame order", step 3; drop fcs_errors). caps.deliver_bad_fcs=on keeps
// them coming, counted in fcs_bad.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

#include "support/golden_frames.hpp"
#include "tests/device/verbs_helpers.hpp"

using namespace rdmasim;
using namespace rdmasim::test;
using datapath::Drop;
namespace golden = rdmasim::test::golden;

namespace {

constexpr std::array<std::uint8_t, 4> kBadFcs = {0xde, 0xad, 0xbe, 0xef};

// A WQ in RDY behind a catch-all flow, plus a sniffer QP that sees every frame.
struct Bed {
    explicit Bed(SimFixture& fx) : fx(fx), buf(fx.pd, 8) {
        cq = make_cq(fx.ctx);
        wq = make_wq(fx.pd, cq);
        REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
        steering = std::make_unique<Steering>(fx.pd, std::vector<ibv_wq*>{wq});
    }
    ~Bed() {
        steering.reset();
        CHECK(ibv_destroy_wq(wq) == 0);
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    Bed(const Bed&) = delete;
    Bed& operator=(const Bed&) = delete;

    [[nodiscard]] std::uint64_t queue_frames() const {
        std::lock_guard lock(fx.device().port.mutex());
        return fx.device().port.find_queue(wq->wq_num)->counters().frames.get();
    }

    SimFixture& fx;
    MrBuffer buf;
    ibv_cq* cq = nullptr;
    ibv_wq* wq = nullptr;
    std::unique_ptr<Steering> steering;
};

} // namespace

TEST_CASE("a frame with a bad carried FCS is dropped as fcs_errors before any queue",
          "[device][receive][fcs]") {
    SimFixture fx;
    Bed b(fx);
    REQUIRE(post_wq(b.wq, 1, b.buf.sge(0)) == 0);
    fx.offer(golden::concat(golden::kUntagged, kBadFcs), 0, 4);
    fx.pump();
    CHECK(drain(b.cq).empty());
    CHECK(drops(fx, Drop::fcs_error) == 1);
    CHECK(fx.port().fcs_bad.get() == 0); // dropped, not delivered
    CHECK(b.queue_frames() == 0);        // no queue saw it
    CHECK(drops(fx, Drop::steering_miss) == 0);

    // The WQE is still there for the next frame, whose FCS is good.
    fx.offer(golden::concat(golden::kUntagged, golden::kUntaggedFcs), 0, 4);
    fx.pump();
    const auto wc = drain(b.cq);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].wr_id == 1);
    CHECK(wc[0].status == IBV_WC_SUCCESS);
    CHECK(wc[0].byte_len == golden::kUntagged.size()); // FCS not scattered
    CHECK(drops(fx, Drop::fcs_error) == 1);
    CHECK(fx.port().frames.get() == 2);
    CHECK(fx.balanced());
}

TEST_CASE("a tagged frame's FCS covers its tag; frames carrying no FCS are never checked",
          "[device][receive][fcs]") {
    SimFixture fx;
    Bed b(fx);
    REQUIRE(post_wq(b.wq, 1, b.buf.sge(0)) == 0);
    REQUIRE(post_wq(b.wq, 2, b.buf.sge(1)) == 0);
    // The tagged frame with the untagged frame's FCS: wrong for what is on the wire.
    fx.offer(golden::concat(golden::kTagged, golden::kUntaggedFcs), 0, 4);
    fx.offer(golden::concat(golden::kTagged, golden::kTaggedFcs), 0, 4);
    // Without a carried FCS the last 4 bytes are frame bytes, whatever they hold.
    fx.offer(golden::concat(golden::kUntagged, kBadFcs), 0, 0);
    fx.pump();
    const auto wc = drain(b.cq);
    REQUIRE(wc.size() == 2);
    CHECK(wc[0].byte_len == golden::kTagged.size());
    CHECK(wc[1].byte_len == golden::kUntagged.size() + 4);
    CHECK(drops(fx, Drop::fcs_error) == 1);
    CHECK(fx.balanced());
}

TEST_CASE("caps.deliver_bad_fcs=on delivers a bad carried FCS and counts it in fcs_bad",
          "[device][receive][fcs]") {
    SimFixture fx(Settings{{"caps.deliver_bad_fcs", "on"}});
    Bed b(fx);
    REQUIRE(post_wq(b.wq, 1, b.buf.sge(0)) == 0);
    fx.offer(golden::concat(golden::kUntagged, kBadFcs), 0, 4);
    fx.pump();
    const auto wc = drain(b.cq);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].status == IBV_WC_SUCCESS);
    CHECK(drops(fx, Drop::fcs_error) == 0);
    CHECK(fx.port().fcs_bad.get() == 1);
    CHECK(b.queue_frames() == 1);
    CHECK(fx.balanced());
}
