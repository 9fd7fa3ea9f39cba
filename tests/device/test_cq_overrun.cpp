// CQ overrun (device/README.md, "Completion queues and events"): what a
// program sees when completions find the CQ full, from frames and from
// flushes, with and without IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "tests/device/verbs_helpers.hpp"
#include "tests/support/verbs_events.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

ibv_cq* make_cq_ex(ibv_context* ctx, std::uint32_t cqe, bool ignore_overrun) {
    ibv_cq_init_attr_ex a{};
    a.cqe = cqe;
    a.wc_flags = IBV_WC_STANDARD_FLAGS;
    if (ignore_overrun) {
        a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
        a.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
    }
    ibv_cq_ex* cq = ibv_create_cq_ex(ctx, &a);
    REQUIRE(cq != nullptr);
    return ibv_cq_ex_to_cq(cq);
}

// The next async event, which must be IBV_EVENT_CQ_ERR for `cq`; acked.
void expect_cq_err(ibv_context* ctx, ibv_cq* cq) {
    REQUIRE(readable(ctx->async_fd));
    ibv_async_event ev{};
    REQUIRE(ibv_get_async_event(ctx, &ev) == 0);
    CHECK(ev.event_type == IBV_EVENT_CQ_ERR);
    CHECK(ev.element.cq == cq);
    ibv_ack_async_event(&ev);
    CHECK_FALSE(readable(ctx->async_fd));
}

const datapath::RxCounters& queue_counters(SimFixture& fx, ibv_wq* wq) {
    std::lock_guard lock(fx.device().port.mutex());
    const datapath::RxQueue* q = fx.device().port.find_queue(wq->wq_num);
    REQUIRE(q != nullptr);
    return q->counters();
}

} // namespace

TEST_CASE("IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN: an overrun raises no IBV_EVENT_CQ_ERR; the "
          "frames are still counted",
          "[device][cq]") {
    const bool ignore = GENERATE(false, true);
    CAPTURE(ignore);
    SimFixture fx;
    ibv_cq* cq = make_cq_ex(fx.ctx, 4, ignore);
    const auto capacity = static_cast<std::uint32_t>(cq->cqe);
    constexpr std::uint32_t kExtra = 2;
    ibv_wq* wq = make_wq(fx.pd, cq, capacity + kExtra);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    MrBuffer buf(fx.pd, capacity + kExtra);
    for (std::uint32_t i = 0; i < capacity + kExtra; ++i)
        REQUIRE(post_wq(wq, i, buf.sge(i)) == 0);
    {
        Steering steer(fx.pd, {wq});
        for (std::uint32_t i = 0; i < capacity + kExtra; ++i)
            fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        fx.pump_all();
        // The same accounting either way: the frames that found no room.
        CHECK(drops(fx, datapath::Drop::cq_overflow) == kExtra);
        if (ignore)
            CHECK_FALSE(readable(fx.ctx->async_fd));
        else
            expect_cq_err(fx.ctx, cq);
        const auto wcs = drain(cq);
        REQUIRE(wcs.size() == capacity);
        for (std::uint32_t i = 0; i < capacity; ++i)
            CHECK(wcs[i].wr_id == i);
        CHECK(fx.balanced());
    }
    CHECK_FALSE(readable(fx.ctx->async_fd));
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("a flush into a full CQ is counted in flush_cq_overflow and raises the overrun",
          "[device][cq][wq]") {
    const bool ignore = GENERATE(false, true);
    CAPTURE(ignore);
    SimFixture fx;
    ibv_cq* cq = make_cq_ex(fx.ctx, 4, ignore);
    const auto capacity = static_cast<std::uint32_t>(cq->cqe);
    constexpr std::uint32_t kLost = 3;
    ibv_wq* wq = make_wq(fx.pd, cq, capacity + kLost);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    MrBuffer buf(fx.pd, capacity + kLost);
    for (std::uint32_t i = 0; i < capacity + kLost; ++i)
        REQUIRE(post_wq(wq, 100 + i, buf.sge(i)) == 0);
    REQUIRE(set_wq_state(wq, IBV_WQS_ERR) == 0);

    // Every WQE was flushed; those that found the CQ full left a trace.
    CHECK(fx.port().flushed_wqes.get() == capacity + kLost);
    CHECK(fx.port().flush_cq_overflow.get() == kLost);
    CHECK(queue_counters(fx, wq).flush_cq_overflow.get() == kLost);
    if (ignore)
        CHECK_FALSE(readable(fx.ctx->async_fd));
    else
        expect_cq_err(fx.ctx, cq);
    const auto wcs = drain(cq);
    REQUIRE(wcs.size() == capacity);
    for (std::uint32_t i = 0; i < capacity; ++i) {
        CHECK(wcs[i].wr_id == 100 + i);
        CHECK(wcs[i].status == IBV_WC_WR_FLUSH_ERR);
    }

    // A post in ERR flushes at once: into a full CQ it is counted and raised too.
    for (std::uint32_t i = 0; i < capacity; ++i)
        REQUIRE(post_wq(wq, 200 + i, buf.sge(i)) == 0);
    CHECK(fx.port().flush_cq_overflow.get() == kLost);
    REQUIRE(post_wq(wq, 300, buf.sge(0)) == 0);
    CHECK(fx.port().flush_cq_overflow.get() == kLost + 1);
    if (ignore)
        CHECK_FALSE(readable(fx.ctx->async_fd));
    else
        expect_cq_err(fx.ctx, cq);
    CHECK(drain(cq).size() == capacity);
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}
