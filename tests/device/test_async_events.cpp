// Asynchronous events and the lifetime of the objects they name
// (device/README.md, "Completion queues and events"): an event read with
// ibv_get_async_event keeps its CQ, WQ or QP alive until it is acked (the
// destroy verb waits, as ibv_cmd_destroy_cq / _wq / _qp do); an event still
// queued when its object is destroyed is dropped (ib_uverbs_release_ucq /
// ib_uverbs_release_uevent), so a program never reads a freed object.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "device/async_events.hpp"
#include "device/wq.hpp"
#include "tests/device/thread_helpers.hpp"
#include "tests/device/verbs_helpers.hpp"
#include "tests/support/verbs_events.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

// Overflows `cq` (capacity + 1 frames into a WQ completing on it), then
// removes the WQ and its steering: IBV_EVENT_CQ_ERR for `cq` is queued and
// nothing else uses the CQ.
void overflow(SimFixture& fx, ibv_cq* cq) {
    complete_through_wq(fx, cq, static_cast<std::uint32_t>(cq->cqe) + 1);
    REQUIRE(drops(fx, datapath::Drop::cq_overflow) >= 1);
}

// The next event, which must be there.
ibv_async_event next_event(ibv_context* ctx) {
    ibv_async_event ev{};
    REQUIRE(ibv_get_async_event(ctx, &ev) == 0);
    return ev;
}

// No event is left to read: the fd does not poll readable and a non-blocking
// read says EAGAIN. An event that comes anyway is acked, as a program would.
void check_no_event(ibv_context* ctx) {
    CHECK_FALSE(readable(ctx->async_fd));
    ibv_async_event ev{};
    errno = 0;
    const int rc = ibv_get_async_event(ctx, &ev);
    CHECK(rc == -1);
    CHECK(errno == EAGAIN);
    if (rc == 0) ibv_ack_async_event(&ev);
}

// What the hardware would raise on a QP: the emulator has no fault that
// does, so the test queues it the way the device layer would.
void raise_qp_fatal(ibv_qp* qp) {
    ibv_async_event ev{};
    ev.element.qp = qp;
    ev.event_type = IBV_EVENT_QP_FATAL;
    device::raise_async_event(*device::from_verbs(qp->context), ev);
}

} // namespace

TEST_CASE("a CQ destroyed with its IBV_EVENT_CQ_ERR unread takes the event with it",
          "[device][events][cq]") {
    SimFixture fx;
    set_nonblocking(fx.ctx->async_fd);
    ibv_cq* cq = make_cq(fx.ctx, 4);
    overflow(fx, cq);
    REQUIRE(readable(fx.ctx->async_fd));

    // Nothing read, nothing to wait for: destroy returns at once.
    CHECK(ibv_destroy_cq(cq) == 0);
    // The event went with the CQ (on the old code it was still queued, naming
    // freed memory, and acking it locked the freed CQ's mutex).
    check_no_event(fx.ctx);
}

TEST_CASE("only the destroyed CQ's events go; another CQ's stay queued, in order",
          "[device][events][cq]") {
    SimFixture fx;
    set_nonblocking(fx.ctx->async_fd);
    ibv_cq* first = make_cq(fx.ctx, 4);
    ibv_cq* gone = make_cq(fx.ctx, 4);
    ibv_cq* last = make_cq(fx.ctx, 4);
    overflow(fx, first);
    overflow(fx, gone);
    overflow(fx, last);

    REQUIRE(ibv_destroy_cq(gone) == 0);
    REQUIRE(readable(fx.ctx->async_fd));
    for (ibv_cq* want : {first, last}) {
        ibv_async_event ev = next_event(fx.ctx);
        CHECK(ev.event_type == IBV_EVENT_CQ_ERR);
        CHECK(ev.element.cq == want);
        ibv_ack_async_event(&ev);
    }
    check_no_event(fx.ctx);
    CHECK(ibv_destroy_cq(first) == 0);
    CHECK(ibv_destroy_cq(last) == 0);
}

TEST_CASE("ibv_destroy_cq returns only after the IBV_EVENT_CQ_ERR it read is acked",
          "[device][events][cq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx, 4);
    overflow(fx, cq);
    ibv_async_event ev = next_event(fx.ctx);
    REQUIRE(ev.event_type == IBV_EVENT_CQ_ERR);
    REQUIRE(ev.element.cq == cq);

    Background destroy([cq] { return ibv_destroy_cq(cq); });
    // Read, not acked: the CQ must outlive the event the program holds.
    REQUIRE_FALSE(destroy.finished_within(kStillBlocked));
    ibv_ack_async_event(&ev);
    REQUIRE(destroy.finished_within(kReturns));
    CHECK(destroy.result() == 0);
}

TEST_CASE("ibv_destroy_cq does not wait for events acked before it", "[device][events][cq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx, 4);
    overflow(fx, cq);
    ibv_async_event ev = next_event(fx.ctx);
    ibv_ack_async_event(&ev);
    CHECK(cq->async_events_completed == 1);
    Background destroy([cq] { return ibv_destroy_cq(cq); });
    REQUIRE(destroy.finished_within(kReturns));
    CHECK(destroy.result() == 0);
}

TEST_CASE("IBV_EVENT_WQ_FATAL: an unread one goes with its WQ, a read one holds "
          "ibv_destroy_wq until acked",
          "[device][events][wq]") {
    SimFixture fx;
    set_nonblocking(fx.ctx->async_fd);
    ibv_cq* cq = make_cq(fx.ctx);

    SECTION("unread: dropped") {
        ibv_wq* wq = make_wq(fx.pd, cq);
        REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
        device::wq_fatal(*device::from_verbs(wq));
        CHECK(wq->state == IBV_WQS_ERR);
        REQUIRE(readable(fx.ctx->async_fd));
        CHECK(ibv_destroy_wq(wq) == 0);
        check_no_event(fx.ctx);
    }
    SECTION("read: destroy waits for the ack") {
        ibv_wq* wq = make_wq(fx.pd, cq);
        REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
        device::wq_fatal(*device::from_verbs(wq));
        ibv_async_event ev = next_event(fx.ctx);
        REQUIRE(ev.event_type == IBV_EVENT_WQ_FATAL);
        REQUIRE(ev.element.wq == wq);
        {
            Background destroy([wq] { return ibv_destroy_wq(wq); });
            REQUIRE_FALSE(destroy.finished_within(kStillBlocked));
            ibv_ack_async_event(&ev);
            REQUIRE(destroy.finished_within(kReturns));
            CHECK(destroy.result() == 0);
        }
        check_no_event(fx.ctx);
    }
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("a QP event: an unread one goes with its QP, a read one holds ibv_destroy_qp "
          "until acked",
          "[device][events][qp]") {
    SimFixture fx;
    set_nonblocking(fx.ctx->async_fd);
    ibv_cq* cq = make_cq(fx.ctx);

    SECTION("unread: dropped") {
        ibv_qp* qp = make_raw_qp(fx.pd, cq, cq, {.send_wr = 4, .recv_wr = 4});
        raise_qp_fatal(qp);
        REQUIRE(readable(fx.ctx->async_fd));
        CHECK(ibv_destroy_qp(qp) == 0);
        check_no_event(fx.ctx);
    }
    SECTION("read: destroy waits for the ack") {
        ibv_qp* qp = make_raw_qp(fx.pd, cq, cq, {.send_wr = 4, .recv_wr = 4});
        raise_qp_fatal(qp);
        ibv_async_event ev = next_event(fx.ctx);
        REQUIRE(ev.event_type == IBV_EVENT_QP_FATAL);
        REQUIRE(ev.element.qp == qp);
        {
            Background destroy([qp] { return ibv_destroy_qp(qp); });
            REQUIRE_FALSE(destroy.finished_within(kStillBlocked));
            ibv_ack_async_event(&ev);
            REQUIRE(destroy.finished_within(kReturns));
            CHECK(destroy.result() == 0);
        }
        check_no_event(fx.ctx);
    }
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_get_async_event blocks on an empty blocking fd until an event comes",
          "[device][events]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx, 4);
    ibv_async_event ev{};
    Background get([&] { return ibv_get_async_event(fx.ctx, &ev); });
    REQUIRE_FALSE(get.finished_within(kStillBlocked));
    overflow(fx, cq);
    REQUIRE(get.finished_within(kReturns));
    REQUIRE(get.result() == 0);
    CHECK(ev.event_type == IBV_EVENT_CQ_ERR);
    CHECK(ev.element.cq == cq);
    ibv_ack_async_event(&ev);
    CHECK(ibv_destroy_cq(cq) == 0);
}
