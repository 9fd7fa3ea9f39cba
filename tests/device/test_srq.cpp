// Shared receive queues (device/README.md, "Shared receive queues"): sizes
// as mlx5 rounds them, the limits, modify (limit only), query, EBUSY while a
// QP uses it, posting, the QP's receives coming from it, and
// IBV_EVENT_SRQ_LIMIT_REACHED when the transport takes WQEs below the armed
// limit; IBV_EVENT_QP_LAST_WQE_REACHED when its QP enters ERR.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <infiniband/verbs.h>

#include <vector>

#include "device/objects.hpp"
#include "device/qp_ib.hpp"
#include "device/srq.hpp"
#include "tests/device/ib_qp_helpers.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

ibv_srq* make_srq(ibv_pd* pd, std::uint32_t max_wr, std::uint32_t max_sge, ibv_srq_attr* out = nullptr) {
    ibv_srq_init_attr a{};
    a.attr.max_wr = max_wr;
    a.attr.max_sge = max_sge;
    ibv_srq* srq = ibv_create_srq(pd, &a);
    if (out) *out = a.attr;
    return srq;
}

int post(ibv_srq* srq, std::uint64_t id, int num_sge = 1) {
    static std::uint8_t byte;
    ibv_sge sge{reinterpret_cast<std::uint64_t>(&byte), 1, 0};
    std::vector<ibv_sge> sges(static_cast<std::size_t>(std::max(num_sge, 0)), sge);
    ibv_recv_wr wr{};
    wr.wr_id = id;
    wr.sg_list = sges.data();
    wr.num_sge = num_sge;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_srq_recv(srq, &wr, &bad);
}

bool take(SimFixture& fx, ibv_srq* srq, std::uint64_t& id) {
    device::Device& dev = fx.device();
    std::lock_guard lock(dev.port.mutex());
    device::Srq& s = *device::from_verbs(srq);
    if (s.rq.ring.empty()) return false;
    id = s.rq.ring.front().wr_id;
    device::pop_srq_wqe(s); // as the transport consumes a WQE
    return true;
}

} // namespace

TEST_CASE("ibv_create_srq: sizes rounded as mlx5 does, limits EINVAL", "[srq]") {
    SimFixture fx;
    ibv_device_attr dev{};
    REQUIRE(ibv_query_device(fx.ctx, &dev) == 0);
    CHECK(dev.max_srq == 4096);
    CHECK(dev.max_srq_wr == 32767);
    CHECK(dev.max_srq_sge == 15);
    ibv_srq_attr got{};
    ibv_srq* srq = make_srq(fx.pd, 100, 2, &got);
    REQUIRE(srq != nullptr);
    CHECK(got.max_wr == 127); // a ring of 128, one slot kept empty
    CHECK(got.max_sge == 3);  // a 64-byte WQE: header and three data segments
    ibv_srq_attr q{};
    REQUIRE(ibv_query_srq(srq, &q) == 0);
    CHECK(q.max_wr == 127);
    CHECK(q.max_sge == 3);
    CHECK(q.srq_limit == 0);
    uint32_t num = 0;
    CHECK(ibv_get_srq_num(srq, &num) == 0);
    CHECK(num != 0);
    CHECK(ibv_dealloc_pd(fx.pd) == EBUSY);
    CHECK(ibv_destroy_srq(srq) == 0);
    errno = 0;
    CHECK(make_srq(fx.pd, static_cast<std::uint32_t>(dev.max_srq_wr) + 1, 1) == nullptr);
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(make_srq(fx.pd, 4, static_cast<std::uint32_t>(dev.max_srq_sge) + 1) == nullptr);
    CHECK(errno == EINVAL);
}

TEST_CASE("ibv_create_srq_ex: basic here, TM needs an extended CQ, XRC needs its domain", "[srq]") {
    SimFixture fx;
    ibv_cq* cq = ibv_create_cq(fx.ctx, 4, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    ibv_srq_init_attr_ex a{};
    a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ;
    a.srq_type = IBV_SRQT_BASIC;
    a.pd = fx.pd;
    a.cq = cq;
    a.attr.max_wr = 8;
    a.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq_ex(fx.ctx, &a); // through the create_srq_ex op
    REQUIRE(srq != nullptr);
    CHECK(a.attr.max_wr == 15);
    CHECK(ibv_destroy_srq(srq) == 0);
    a.srq_type = IBV_SRQT_TM; // needs an extended CQ (test_tag_matching)
    errno = 0;
    CHECK(ibv_create_srq_ex(fx.ctx, &a) == nullptr);
    CHECK(errno == EINVAL);
    a.srq_type = IBV_SRQT_XRC; // without IBV_SRQ_INIT_ATTR_XRCD (test_xrc)
    errno = 0;
    CHECK(ibv_create_srq_ex(fx.ctx, &a) == nullptr);
    CHECK(errno == EINVAL);
    a.srq_type = IBV_SRQT_BASIC;
    a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_CQ; // no PD
    errno = 0;
    CHECK(ibv_create_srq_ex(fx.ctx, &a) == nullptr);
    CHECK(errno == EINVAL);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_modify_srq arms the limit; no resize", "[srq]") {
    SimFixture fx;
    ibv_srq* srq = make_srq(fx.pd, 8, 1);
    REQUIRE(srq != nullptr);
    ibv_srq_attr a{};
    a.max_wr = 32;
    CHECK(ibv_modify_srq(srq, &a, IBV_SRQ_MAX_WR) == EINVAL);
    a.srq_limit = 16; // above the 15 WQEs it holds
    CHECK(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT) == EINVAL);
    CHECK(ibv_modify_srq(srq, &a, 1 << 5) == EINVAL);
    a.srq_limit = 4;
    REQUIRE(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT) == 0);
    ibv_srq_attr q{};
    REQUIRE(ibv_query_srq(srq, &q) == 0);
    CHECK(q.srq_limit == 4);
    CHECK(ibv_destroy_srq(srq) == 0);
}

TEST_CASE("ibv_post_srq_recv: checks, ENOMEM when full; a QP with an SRQ", "[srq]") {
    SimFixture fx;
    ibv_srq_attr got{};
    ibv_srq* srq = make_srq(fx.pd, 3, 1, &got);
    REQUIRE(srq != nullptr);
    CHECK(post(srq, 1, 2) == EINVAL);
    CHECK(post(srq, 1, -1) == EINVAL);
    for (std::uint64_t i = 0; i < got.max_wr; ++i) REQUIRE(post(srq, i) == 0);
    CHECK(post(srq, 99) == ENOMEM);
    {
        IbQp q(fx.pd, IBV_QPT_RC, 4, srq);
        ibv_qp_attr qa{};
        ibv_qp_init_attr init{};
        REQUIRE(ibv_query_qp(q.qp, &qa, IBV_QP_CAP, &init) == 0);
        CHECK(init.srq == srq);
        CHECK(q.cap.max_recv_wr == 0);
        CHECK(q.cap.max_recv_sge == 0);
        CHECK(ibv_destroy_srq(srq) == EBUSY);
        // Its receives come from the SRQ.
        ibv_recv_wr wr{};
        ibv_recv_wr* bad = nullptr;
        CHECK(ibv_post_recv(q.qp, &wr, &bad) == EINVAL);
        CHECK(bad == &wr);
        std::uint64_t id = 99;
        REQUIRE(take(fx, srq, id));
        CHECK(id == 0);
    }
    CHECK(ibv_destroy_srq(srq) == 0);
}

TEST_CASE("IBV_EVENT_SRQ_LIMIT_REACHED once the WQEs drop below the armed limit", "[srq]") {
    SimFixture fx;
    const int flags = fcntl(fx.ctx->async_fd, F_GETFL);
    REQUIRE(fcntl(fx.ctx->async_fd, F_SETFL, flags | O_NONBLOCK) == 0);
    ibv_srq* srq = make_srq(fx.pd, 16, 1);
    REQUIRE(srq != nullptr);
    for (std::uint64_t i = 0; i < 10; ++i) REQUIRE(post(srq, i) == 0);
    ibv_srq_attr a{};
    a.srq_limit = 5;
    REQUIRE(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT) == 0);
    ibv_async_event ev{};
    std::uint64_t id = 0;
    for (std::uint64_t i = 0; i < 5; ++i) {
        REQUIRE(take(fx, srq, id));
        CHECK(id == i);
    }
    CHECK(ibv_get_async_event(fx.ctx, &ev) == -1); // 5 left: not below 5
    REQUIRE(take(fx, srq, id));
    REQUIRE(ibv_get_async_event(fx.ctx, &ev) == 0);
    CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED);
    CHECK(ev.element.srq == srq);
    ibv_ack_async_event(&ev);
    // The limit disarmed: no second event, and the query says 0.
    REQUIRE(take(fx, srq, id));
    CHECK(ibv_get_async_event(fx.ctx, &ev) == -1);
    REQUIRE(ibv_query_srq(srq, &a) == 0);
    CHECK(a.srq_limit == 0);
    CHECK(ibv_destroy_srq(srq) == 0);
}

TEST_CASE("a QP with an SRQ entering ERR raises IBV_EVENT_QP_LAST_WQE_REACHED", "[srq]") {
    SimFixture fx;
    const int flags = fcntl(fx.ctx->async_fd, F_GETFL);
    REQUIRE(fcntl(fx.ctx->async_fd, F_SETFL, flags | O_NONBLOCK) == 0);
    ibv_srq* srq = make_srq(fx.pd, 4, 1);
    REQUIRE(srq != nullptr);
    REQUIRE(post(srq, 1) == 0);
    {
        IbQp q(fx.pd, IBV_QPT_RC, 4, srq);
        q.to_rts();
        REQUIRE(q.modify(IBV_QPS_ERR, IBV_QP_STATE) == 0);
        ibv_async_event ev{};
        REQUIRE(ibv_get_async_event(fx.ctx, &ev) == 0);
        CHECK(ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED);
        CHECK(ev.element.qp == q.qp);
        ibv_ack_async_event(&ev);
        CHECK(drain(q.cq).empty()); // the SRQ's WQEs are not the QP's to flush
    }
    ibv_srq_attr a{};
    REQUIRE(ibv_query_srq(srq, &a) == 0);
    CHECK(ibv_destroy_srq(srq) == 0);
}
