// Completion channels and the lifetime of the CQs whose events they carry
// (device/README.md, "Completion queues and events"): a completion event read
// with ibv_get_cq_event keeps its CQ alive until ibv_ack_cq_events counts it
// (ibv_cmd_destroy_cq waits); an event not yet read when its CQ is destroyed
// leaves the channel (ib_uverbs_release_ucq), and the channel's fd says so.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "tests/device/thread_helpers.hpp"
#include "tests/device/verbs_helpers.hpp"
#include "tests/support/verbs_events.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

// Arms `cq` and completes one frame on it through a WQ that is then removed:
// one completion event for `cq` is on its channel, one completion in `cq`.
void fire(SimFixture& fx, ibv_cq* cq) {
    REQUIRE(ibv_req_notify_cq(cq, 0) == 0);
    complete_through_wq(fx, cq, 1);
}

// Nothing is left on the channel: its fd does not poll readable and a
// non-blocking read says EAGAIN. An event that comes anyway is acked.
void check_no_event(ibv_comp_channel* ch) {
    CHECK_FALSE(readable(ch->fd));
    ibv_cq* cq = nullptr;
    void* cookie = nullptr;
    errno = 0;
    const int rc = ibv_get_cq_event(ch, &cq, &cookie);
    CHECK(rc == -1);
    CHECK(errno == EAGAIN);
    if (rc == 0) ibv_ack_cq_events(cq, 1);
}

} // namespace

TEST_CASE("a CQ destroyed with its completion event unread takes the event with it",
          "[device][events][cq]") {
    SimFixture fx;
    ibv_comp_channel* ch = ibv_create_comp_channel(fx.ctx);
    REQUIRE(ch != nullptr);
    set_nonblocking(ch->fd);
    int first_cookie = 1;
    int gone_cookie = 2;
    ibv_cq* first = ibv_create_cq(fx.ctx, 8, &first_cookie, ch, 0);
    ibv_cq* gone = ibv_create_cq(fx.ctx, 8, &gone_cookie, ch, 0);
    REQUIRE(first != nullptr);
    REQUIRE(gone != nullptr);
    fire(fx, first);
    fire(fx, gone);
    REQUIRE(readable(ch->fd));

    REQUIRE(ibv_destroy_cq(gone) == 0); // nothing read: no wait
    // The other CQ's event is still there, and it is the only one.
    ibv_cq* ev_cq = nullptr;
    void* ev_cookie = nullptr;
    REQUIRE(ibv_get_cq_event(ch, &ev_cq, &ev_cookie) == 0);
    CHECK(ev_cq == first);
    CHECK(ev_cookie == &first_cookie);
    ibv_ack_cq_events(first, 1);
    check_no_event(ch);

    REQUIRE(ibv_destroy_cq(first) == 0);
    REQUIRE(ibv_destroy_comp_channel(ch) == 0);
}

TEST_CASE("ibv_destroy_cq returns only after ibv_ack_cq_events counts the events it read",
          "[device][events][cq]") {
    SimFixture fx;
    ibv_comp_channel* ch = ibv_create_comp_channel(fx.ctx);
    REQUIRE(ch != nullptr);
    ibv_cq* cq = ibv_create_cq(fx.ctx, 8, nullptr, ch, 0);
    REQUIRE(cq != nullptr);
    fire(fx, cq);
    ibv_cq* ev_cq = nullptr;
    void* ev_cookie = nullptr;
    REQUIRE(ibv_get_cq_event(ch, &ev_cq, &ev_cookie) == 0);
    REQUIRE(ev_cq == cq);
    fire(fx, cq);
    REQUIRE(ibv_get_cq_event(ch, &ev_cq, &ev_cookie) == 0);
    REQUIRE(ev_cq == cq);
    {
        Background destroy([cq] { return ibv_destroy_cq(cq); });
        REQUIRE_FALSE(destroy.finished_within(kStillBlocked));
        ibv_ack_cq_events(cq, 1); // one of two
        REQUIRE_FALSE(destroy.finished_within(kStillBlocked));
        ibv_ack_cq_events(cq, 1);
        REQUIRE(destroy.finished_within(kReturns));
        CHECK(destroy.result() == 0);
    }
    REQUIRE(ibv_destroy_comp_channel(ch) == 0);
}

TEST_CASE("ibv_get_cq_event blocks on an empty blocking channel until an event comes",
          "[device][events][cq]") {
    SimFixture fx;
    ibv_comp_channel* ch = ibv_create_comp_channel(fx.ctx);
    REQUIRE(ch != nullptr);
    ibv_cq* cq = ibv_create_cq(fx.ctx, 8, nullptr, ch, 0);
    REQUIRE(cq != nullptr);
    ibv_cq* ev_cq = nullptr;
    void* ev_cookie = nullptr;
    {
        Background get([&] { return ibv_get_cq_event(ch, &ev_cq, &ev_cookie); });
        REQUIRE_FALSE(get.finished_within(kStillBlocked));
        fire(fx, cq);
        REQUIRE(get.finished_within(kReturns));
        REQUIRE(get.result() == 0);
    }
    CHECK(ev_cq == cq);
    ibv_ack_cq_events(cq, 1);
    REQUIRE(ibv_destroy_cq(cq) == 0);
    REQUIRE(ibv_destroy_comp_channel(ch) == 0);
}
