// verb-fail faults (sim/README.md, "Fault injection"): the Nth call of a
// named verb fails the way the real verb fails, and the other calls, of it
// and of every other verb, are untouched.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "tests/device/verbs_helpers.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

using Settings = std::vector<std::pair<std::string, std::string>>;

std::uint64_t verb_failures(SimFixture& fx) {
    return fx.simulator().faults_injected(0)[static_cast<std::size_t>(sim::FaultKind::verb_fail)];
}

} // namespace

TEST_CASE("verb-fail:create_wq,nth=2: the second ibv_create_wq is NULL with ENOMEM",
          "[device][faults][verbs]") {
    SimFixture fx(Settings{{"faults", "verb-fail:create_wq,nth=2,errno=ENOMEM"}});
    ibv_cq* cq = make_cq(fx.ctx, 16);
    ibv_wq_init_attr a = wq_attr(fx.pd, cq);
    ibv_wq* first = ibv_create_wq(fx.ctx, &a);
    REQUIRE(first != nullptr);
    errno = 0;
    CHECK(ibv_create_wq(fx.ctx, &a) == nullptr);
    CHECK(errno == ENOMEM);
    ibv_wq* third = ibv_create_wq(fx.ctx, &a);
    CHECK(third != nullptr);
    CHECK(verb_failures(fx) == 1);
    if (third) CHECK(ibv_destroy_wq(third) == 0);
    CHECK(ibv_destroy_wq(first) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("verb-fail on a post: the error is returned and bad_wr names the first WR, nothing posted",
          "[device][faults][verbs]") {
    SimFixture fx(Settings{{"faults", "verb-fail:post_wq_recv,every=2,errno=EAGAIN"}});
    MrBuffer buf(fx.pd, 4);
    ibv_cq* cq = make_cq(fx.ctx, 16);
    ibv_wq* wq = make_wq(fx.pd, cq, 8);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    CHECK(post_wq(wq, 1, buf.sge(0)) == 0);
    ibv_sge sge = buf.sge(1);
    ibv_recv_wr wr{};
    wr.wr_id = 2;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    CHECK(ibv_post_wq_recv(wq, &wr, &bad) == EAGAIN);
    CHECK(bad == &wr);
    CHECK(post_wq(wq, 3, buf.sge(2)) == 0);
    // Flushed on the way to ERR: what was posted, in order; WR 2 never was.
    ibv_wq_attr attr{};
    attr.attr_mask = IBV_WQ_ATTR_STATE;
    attr.wq_state = IBV_WQS_ERR;
    REQUIRE(ibv_modify_wq(wq, &attr) == 0);
    std::vector<std::uint64_t> ids;
    for (const ibv_wc& wc : drain(cq)) ids.push_back(wc.wr_id);
    CHECK(ids == std::vector<std::uint64_t>{1, 3});
    CHECK(ibv_destroy_wq(wq) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("verb-fail: modify and create_qp / create_qp_ex are counted apart",
          "[device][faults][verbs]") {
    SimFixture fx(Settings{{"faults", "verb-fail:modify_wq,nth=1,errno=EBUSY; verb-fail:create_qp_ex,nth=1,errno=ENOSPC"}});
    ibv_cq* cq = make_cq(fx.ctx, 16);
    ibv_wq* wq = make_wq(fx.pd, cq, 8);
    CHECK(set_wq_state(wq, IBV_WQS_RDY) == EBUSY);
    CHECK(wq->state == IBV_WQS_RESET); // nothing changed
    CHECK(set_wq_state(wq, IBV_WQS_RDY) == 0);
    // ibv_create_qp is its own verb: the create_qp_ex fault does not see it.
    ibv_qp_init_attr a{};
    a.qp_type = IBV_QPT_RAW_PACKET;
    a.send_cq = cq;
    a.recv_cq = cq;
    a.cap.max_send_wr = 4;
    a.cap.max_recv_wr = 4;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    ibv_qp* qp = ibv_create_qp(fx.pd, &a);
    REQUIRE(qp != nullptr);
    ibv_qp_init_attr_ex ex{};
    ex.qp_type = IBV_QPT_RAW_PACKET;
    ex.send_cq = cq;
    ex.recv_cq = cq;
    ex.cap = a.cap;
    // With IBV_QP_INIT_ATTR_PD alone libibverbs' inline ibv_create_qp_ex
    // calls ibv_create_qp; another mask bit reaches the _ex verb.
    ex.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
    ex.pd = fx.pd;
    errno = 0;
    CHECK(ibv_create_qp_ex(fx.ctx, &ex) == nullptr);
    CHECK(errno == ENOSPC);
    CHECK(verb_failures(fx) == 2);
    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_destroy_wq(wq) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("verb-fail with p= is seeded: the same calls fail in every run", "[device][faults][verbs]") {
    auto failures = [](const std::string& seed) {
        SimFixture fx(Settings{{"faults", "seed=" + seed + "; verb-fail:alloc_pd,p=0.3,errno=ENOMEM"}});
        std::vector<int> failed;
        for (int i = 0; i < 200; ++i) {
            ibv_pd* pd = ibv_alloc_pd(fx.ctx);
            if (pd == nullptr) {
                REQUIRE(errno == ENOMEM);
                failed.push_back(i);
            } else {
                REQUIRE(ibv_dealloc_pd(pd) == 0);
            }
        }
        return failed;
    };
    const auto a = failures("11"), b = failures("11"), c = failures("12");
    CHECK(a == b);
    CHECK(a != c);
    CHECK(a.size() > 30);
    CHECK(a.size() < 90);
}
