// Device faults of the fault plan (sim/README.md, "Fault injection"), as a
// program sees them through the verbs API: wq-fatal (the WQ goes to ERR, what
// was posted is flushed, IBV_EVENT_WQ_FATAL names it) and port-down (the
// frames of that time never arrive, IBV_EVENT_PORT_ERR then
// IBV_EVENT_PORT_ACTIVE, the state in ibv_query_port). Both fire counted in
// frames from the device's source, so the inline engine makes them exact.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "support/golden_frames.hpp"
#include "tests/device/verbs_helpers.hpp"
#include "tests/support/verbs_events.hpp"

using namespace rdmasim;
using namespace rdmasim::test;
using datapath::Drop;
namespace golden = rdmasim::test::golden;

namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

ibv_port_state port_state(ibv_context* ctx) {
    ibv_port_attr a{};
    REQUIRE(ibv_query_port(ctx, 1, &a) == 0);
    return a.state;
}

} // namespace

TEST_CASE("wq-fatal:wq=1,after=2: the second WQ created goes to ERR after two frames",
          "[device][faults]") {
    SimFixture fx(Settings{{"faults", "wq-fatal:wq=1,after=2"}});
    MrBuffer buf(fx.pd, 8);
    ibv_cq* cq = make_cq(fx.ctx, 16);
    ibv_wq* first = make_wq(fx.pd, cq, 8);
    ibv_wq* wq = make_wq(fx.pd, cq, 8); // index 1: the target
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    for (std::uint64_t i = 0; i < 6; ++i) REQUIRE(post_wq(wq, i, buf.sge(i)) == 0);
    {
        Steering steering(fx.pd, {wq});
        for (int i = 0; i < 4; ++i) fx.offer(golden::concat(golden::kUntagged), i * 1000ull);
        fx.pump_all();
        const auto wcs = drain(cq);
        REQUIRE(wcs.size() == 6);
        for (std::size_t i = 0; i < wcs.size(); ++i) {
            INFO(i);
            CHECK(wcs[i].wr_id == i);
            CHECK(wcs[i].status == (i < 2 ? IBV_WC_SUCCESS : IBV_WC_WR_FLUSH_ERR));
        }
        CHECK(wq->state == IBV_WQS_ERR);
        CHECK(drops(fx, Drop::wq_not_ready) == 2);
        CHECK(fx.balanced());
        const auto ev = next_async_event(fx.ctx);
        REQUIRE(ev.has_value());
        CHECK(ev->event_type == IBV_EVENT_WQ_FATAL);
        CHECK(ev->element.wq == wq);
        CHECK_FALSE(next_async_event(fx.ctx).has_value());
        const auto injected = fx.simulator().faults_injected(0);
        CHECK(injected[static_cast<std::size_t>(sim::FaultKind::wq_fatal)] == 1);
    }
    CHECK(ibv_destroy_wq(wq) == 0);
    CHECK(ibv_destroy_wq(first) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("port-down:after=1,frames=2: two frames are missed, the port goes down and comes back",
          "[device][faults]") {
    SimFixture fx(Settings{{"faults", "port-down:after=1,frames=2"}, {"burst", "1"}});
    MrBuffer buf(fx.pd, 8);
    ibv_cq* cq = make_cq(fx.ctx, 16);
    ibv_wq* wq = make_wq(fx.pd, cq, 8);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    for (std::uint64_t i = 0; i < 4; ++i) REQUIRE(post_wq(wq, i, buf.sge(i)) == 0);
    {
        Steering steering(fx.pd, {wq});
        for (int i = 0; i < 4; ++i) fx.offer(golden::concat(golden::kUntagged), i * 1000ull);
        CHECK(port_state(fx.ctx) == IBV_PORT_ACTIVE);
        fx.pump(); // frame 1: delivered
        fx.pump(); // frame 2: the port goes down, the frame is missed
        CHECK(port_state(fx.ctx) == IBV_PORT_DOWN);
        auto ev = next_async_event(fx.ctx);
        REQUIRE(ev.has_value());
        CHECK(ev->event_type == IBV_EVENT_PORT_ERR);
        CHECK(ev->element.port_num == 1);
        fx.pump_all(); // frame 3 missed, the port comes up; frame 4 delivered
        CHECK(port_state(fx.ctx) == IBV_PORT_ACTIVE);
        ev = next_async_event(fx.ctx);
        REQUIRE(ev.has_value());
        CHECK(ev->event_type == IBV_EVENT_PORT_ACTIVE);
        CHECK(ev->element.port_num == 1);
        const auto wcs = drain(cq);
        REQUIRE(wcs.size() == 2);
        CHECK(wcs[0].status == IBV_WC_SUCCESS);
        CHECK(wcs[1].status == IBV_WC_SUCCESS);
        CHECK(drops(fx, Drop::fault_injected) == 2);
        CHECK(fx.port().frames.get() == 4);
        CHECK(fx.balanced());
    }
    CHECK(ibv_destroy_wq(wq) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("cq-overrun:wq=0,after=1: IBV_EVENT_CQ_ERR names the WQ's CQ; a CQ that ignores "
          "overruns hears nothing",
          "[device][faults]") {
    for (const bool ignore : {false, true}) {
        INFO("ignore_overrun " << ignore);
        SimFixture fx(Settings{{"faults", "cq-overrun:wq=0,after=1"}});
        ibv_cq_init_attr_ex ca{};
        ca.cqe = 16;
        ca.wc_flags = IBV_WC_STANDARD_FLAGS;
        if (ignore) {
            ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
            ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
        }
        ibv_cq_ex* cqx = ibv_create_cq_ex(fx.ctx, &ca);
        REQUIRE(cqx != nullptr);
        ibv_cq* cq = ibv_cq_ex_to_cq(cqx);
        ibv_wq* wq = make_wq(fx.pd, cq, 8);
        REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
        {
            Steering steering(fx.pd, {wq});
            for (int i = 0; i < 3; ++i) fx.offer(golden::concat(golden::kUntagged), i * 1000ull);
            fx.pump_all();
            const auto ev = next_async_event(fx.ctx);
            if (ignore) {
                CHECK_FALSE(ev.has_value());
            } else {
                REQUIRE(ev.has_value());
                CHECK(ev->event_type == IBV_EVENT_CQ_ERR);
                CHECK(ev->element.cq == cq);
            }
            CHECK(fx.balanced());
        }
        CHECK(ibv_destroy_wq(wq) == 0);
        CHECK(ibv_destroy_cq(cq) == 0);
    }
}

TEST_CASE("device-fatal:after=2: IBV_EVENT_DEVICE_FATAL, later frames lost, verbs fail with EIO "
          "but destroys still work",
          "[device][faults]") {
    SimFixture fx(Settings{{"faults", "device-fatal:after=2"}});
    MrBuffer buf(fx.pd, 8);
    ibv_cq* cq = make_cq(fx.ctx, 16);
    ibv_wq* wq = make_wq(fx.pd, cq, 8);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    for (std::uint64_t i = 0; i < 4; ++i) REQUIRE(post_wq(wq, i, buf.sge(i)) == 0);
    {
        Steering steering(fx.pd, {wq});
        for (int i = 0; i < 5; ++i) fx.offer(golden::concat(golden::kUntagged), i * 1000ull);
        fx.pump_all();
        CHECK(drain(cq).size() == 2);
        CHECK(drops(fx, Drop::fault_injected) == 3);
        CHECK(fx.balanced());
        const auto ev = next_async_event(fx.ctx);
        REQUIRE(ev.has_value());
        CHECK(ev->event_type == IBV_EVENT_DEVICE_FATAL);
        ibv_port_attr pa{};
        CHECK(ibv_query_port(fx.ctx, 1, &pa) == EIO);
        errno = 0;
        CHECK(ibv_alloc_pd(fx.ctx) == nullptr);
        CHECK(errno == EIO);
        CHECK(post_wq(wq, 9, buf.sge(5)) == EIO);
        CHECK(set_wq_state(wq, IBV_WQS_ERR) == EIO);
    }
    CHECK(ibv_destroy_wq(wq) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}
