// Restarting or destroying a queue takes its completions out of its CQ, as
// mlx5 does (__mlx5_cq_clean, called by mlx5_modify_wq on RESET -> RDY, by
// mlx5_modify_qp on a move to RESET, by mlx5_destroy_wq and mlx5_destroy_qp):
// a program that restarts a queue never polls its completions from before,
// and completions of the other queues on the same CQ stay, in order
// (device/README.md, "Work queues", "Raw-packet QPs").
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <utility>
#include <vector>

#include "tests/device/thread_helpers.hpp"
#include "tests/device/verbs_helpers.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

// A completion with the queue it names: (wr_id, status, qp_num).
struct SeenOn {
    std::uint64_t wr_id;
    ibv_wc_status status;
    std::uint32_t qp_num;
    bool operator==(const SeenOn&) const = default;
};

std::vector<SeenOn> seen_on(const std::vector<ibv_wc>& wcs) {
    std::vector<SeenOn> out;
    for (const ibv_wc& wc : wcs)
        out.push_back({wc.wr_id, wc.status, wc.qp_num});
    return out;
}

void move(ibv_wq* wq, std::initializer_list<ibv_wq_state> states) {
    for (ibv_wq_state s : states)
        REQUIRE(set_wq_state(wq, s) == 0);
}

int set_qp_state(ibv_qp* qp, ibv_qp_state state) {
    ibv_qp_attr a{};
    a.qp_state = state;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

void move(ibv_qp* qp, std::initializer_list<ibv_qp_state> states) {
    for (ibv_qp_state s : states)
        REQUIRE(set_qp_state(qp, s) == 0);
}

// A raw-packet QP in RESET: 8 WQEs each way, 128 bytes inline.
constexpr RawQpCaps kRawCaps{.send_wr = 8, .recv_wr = 8, .max_inline = 128};

// Sends one signaled frame to `dst` (inline); it loops back to the port's flows.
void send_to(ibv_qp* qp, const Mac& dst, std::uint64_t wr_id) {
    Frame f = eth_frame(dst, kSrcMac, 0x88b5);
    REQUIRE(post_inline_send(qp, f.data(), static_cast<std::uint32_t>(f.size()), wr_id) == 0);
}

constexpr Mac kMacOne = {0x02, 0x00, 0x00, 0x00, 0x01, 0x01};
constexpr Mac kMacTwo = {0x02, 0x00, 0x00, 0x00, 0x02, 0x02};

} // namespace

TEST_CASE("RDY -> ERR -> RESET -> RDY: the WQ's flushed completions are gone, another "
          "WQ's stay in order",
          "[device][wq][cq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx, 16);
    ibv_wq* a = make_wq(fx.pd, cq, 8);
    ibv_wq* b = make_wq(fx.pd, cq, 8);
    MrBuffer buf(fx.pd, 8);
    move(a, {IBV_WQS_RDY});
    move(b, {IBV_WQS_RDY});
    REQUIRE(post_wq(b, 201, buf.sge(0)) == 0);
    REQUIRE(post_wq(b, 202, buf.sge(1)) == 0);
    for (std::uint64_t id : {101, 102, 103})
        REQUIRE(post_wq(a, id, buf.sge(2 + id - 101)) == 0);
    move(b, {IBV_WQS_ERR});                    // 201, 202 flushed
    move(a, {IBV_WQS_ERR});                    // 101, 102, 103 flushed
    REQUIRE(post_wq(b, 203, buf.sge(5)) == 0); // flushed at once
    // The CQ holds b b a a a b; restarting a takes its three out.
    move(a, {IBV_WQS_RESET, IBV_WQS_RDY});
    REQUIRE(post_wq(a, 104, buf.sge(6)) == 0);
    {
        Steering steer(fx.pd, {a});
        fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        const std::vector<SeenOn> want = {{201, IBV_WC_WR_FLUSH_ERR, b->wq_num},
                                        {202, IBV_WC_WR_FLUSH_ERR, b->wq_num},
                                        {203, IBV_WC_WR_FLUSH_ERR, b->wq_num},
                                        {104, IBV_WC_SUCCESS, a->wq_num}};
        CHECK(seen_on(drain(cq)) == want);
        CHECK(fx.balanced());
    }
    REQUIRE(ibv_destroy_wq(a) == 0);
    REQUIRE(ibv_destroy_wq(b) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("RDY -> RESET -> RDY: frames the WQ delivered before the restart are not polled "
          "after it",
          "[device][wq][cq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx, 16);
    ibv_wq* a = make_wq(fx.pd, cq, 8);
    ibv_wq* b = make_wq(fx.pd, cq, 8);
    MrBuffer buf(fx.pd, 8);
    move(b, {IBV_WQS_RDY});
    REQUIRE(post_wq(b, 201, buf.sge(0)) == 0);
    move(b, {IBV_WQS_ERR}); // 201 flushed
    move(a, {IBV_WQS_RDY});
    REQUIRE(post_wq(a, 101, buf.sge(1)) == 0);
    REQUIRE(post_wq(a, 102, buf.sge(2)) == 0);
    {
        Steering steer(fx.pd, {a});
        fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        fx.pump_all(); // 101, 102 delivered, not polled
        move(a, {IBV_WQS_RESET, IBV_WQS_RDY});
        REQUIRE(post_wq(a, 103, buf.sge(3)) == 0);
        fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        const std::vector<SeenOn> want = {{201, IBV_WC_WR_FLUSH_ERR, b->wq_num},
                                        {103, IBV_WC_SUCCESS, a->wq_num}};
        CHECK(seen_on(drain(cq)) == want);
        CHECK(fx.port().delivered.get() == 3); // the frames were delivered all the same
        CHECK(fx.balanced());
    }
    REQUIRE(ibv_destroy_wq(a) == 0);
    REQUIRE(ibv_destroy_wq(b) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_destroy_wq takes the WQ's completions out of its CQ, and only those",
          "[device][wq][cq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx, 16);
    ibv_wq* a = make_wq(fx.pd, cq, 8);
    ibv_wq* b = make_wq(fx.pd, cq, 8);
    MrBuffer buf(fx.pd, 8);
    move(a, {IBV_WQS_RDY});
    move(b, {IBV_WQS_RDY});
    REQUIRE(post_wq(b, 201, buf.sge(0)) == 0);
    REQUIRE(post_wq(a, 101, buf.sge(1)) == 0);
    REQUIRE(post_wq(a, 102, buf.sge(2)) == 0);
    move(b, {IBV_WQS_ERR});
    move(a, {IBV_WQS_ERR});
    REQUIRE(post_wq(b, 202, buf.sge(3)) == 0);
    REQUIRE(ibv_destroy_wq(a) == 0);
    const std::vector<SeenOn> want = {{201, IBV_WC_WR_FLUSH_ERR, b->wq_num},
                                    {202, IBV_WC_WR_FLUSH_ERR, b->wq_num}};
    CHECK(seen_on(drain(cq)) == want);
    REQUIRE(ibv_destroy_wq(b) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("a raw QP moved to RESET, or destroyed, leaves none of its completions in its "
          "receive and send CQs",
          "[device][qp][cq]") {
    SimFixture fx;
    ibv_cq* rcq = make_cq(fx.ctx, 16);
    ibv_cq* scq = make_cq(fx.ctx, 16);
    ibv_qp* one = make_raw_qp(fx.pd, rcq, scq, kRawCaps);
    ibv_qp* two = make_raw_qp(fx.pd, rcq, scq, kRawCaps);
    move(one, {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS});
    move(two, {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS});
    ibv_flow* to_one = make_flow(one, eth_flow(&kMacOne));
    ibv_flow* to_two = make_flow(two, eth_flow(&kMacTwo));
    MrBuffer buf(fx.pd, 8);

    // Each QP receives one frame the other sent: the receive CQ holds
    // one, two; the send CQ two, one.
    REQUIRE(post_qp(one, 11, buf.sge(0)) == 0);
    REQUIRE(post_qp(two, 21, buf.sge(1)) == 0);
    send_to(two, kMacOne, 901);
    send_to(one, kMacTwo, 801);

    SECTION("RESET") {
        move(one, {IBV_QPS_RESET});
        // Back to work: what it completes now is all a program sees of it.
        move(one, {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS});
        REQUIRE(post_qp(one, 12, buf.sge(2)) == 0);
        send_to(two, kMacOne, 902);
        send_to(one, kMacTwo, 802); // nothing posted on two: rx_out_of_buffer
        const std::vector<SeenOn> want_recv = {{21, IBV_WC_SUCCESS, two->qp_num},
                                             {12, IBV_WC_SUCCESS, one->qp_num}};
        const std::vector<SeenOn> want_send = {{901, IBV_WC_SUCCESS, two->qp_num},
                                             {902, IBV_WC_SUCCESS, two->qp_num},
                                             {802, IBV_WC_SUCCESS, one->qp_num}};
        CHECK(seen_on(drain(rcq)) == want_recv);
        CHECK(seen_on(drain(scq)) == want_send);
        CHECK(ibv_destroy_flow(to_one) == 0);
    }
    SECTION("destroy") {
        CHECK(ibv_destroy_flow(to_one) == 0);
        REQUIRE(ibv_destroy_qp(one) == 0);
        one = nullptr;
        const std::vector<SeenOn> want_recv = {{21, IBV_WC_SUCCESS, two->qp_num}};
        const std::vector<SeenOn> want_send = {{901, IBV_WC_SUCCESS, two->qp_num}};
        CHECK(seen_on(drain(rcq)) == want_recv);
        CHECK(seen_on(drain(scq)) == want_send);
    }
    CHECK(fx.balanced());
    CHECK(ibv_destroy_flow(to_two) == 0);
    if (one != nullptr) REQUIRE(ibv_destroy_qp(one) == 0);
    REQUIRE(ibv_destroy_qp(two) == 0);
    REQUIRE(ibv_destroy_cq(rcq) == 0);
    REQUIRE(ibv_destroy_cq(scq) == 0);
}

TEST_CASE("restarting a WQ between the same thread's ibv_start_poll and ibv_end_poll: no "
          "deadlock, the exposed completion stays",
          "[device][wq][cq]") {
    SimFixture fx;
    ibv_cq_init_attr_ex ca{};
    ca.cqe = 16;
    ca.wc_flags = IBV_WC_STANDARD_FLAGS;
    ibv_cq_ex* cqx = ibv_create_cq_ex(fx.ctx, &ca);
    REQUIRE(cqx != nullptr);
    ibv_cq* cq = ibv_cq_ex_to_cq(cqx);
    ibv_wq* a = make_wq(fx.pd, cq, 8);
    ibv_wq* b = make_wq(fx.pd, cq, 8);
    MrBuffer buf(fx.pd, 8);
    move(a, {IBV_WQS_RDY});
    move(b, {IBV_WQS_RDY});
    REQUIRE(post_wq(a, 101, buf.sge(0)) == 0);
    REQUIRE(post_wq(b, 201, buf.sge(1)) == 0);
    move(a, {IBV_WQS_ERR});
    move(b, {IBV_WQS_ERR});
    REQUIRE(post_wq(a, 102, buf.sge(2)) == 0); // the CQ: 101 201 102
    move(a, {IBV_WQS_RESET});

    // Bounded: a deadlock fails the test instead of hanging it.
    std::vector<std::uint64_t> ids;
    Background poller([&] {
        ibv_poll_cq_attr pa{};
        int rc = ibv_start_poll(cqx, &pa);
        if (rc != 0) return rc;
        ids.push_back(cqx->wr_id); // 101, exposed: handed out already
        rc = set_wq_state(a, IBV_WQS_RDY);
        if (rc != 0) {
            ibv_end_poll(cqx);
            return rc;
        }
        while ((rc = ibv_next_poll(cqx)) == 0)
            ids.push_back(cqx->wr_id);
        ibv_end_poll(cqx);
        return rc == ENOENT ? 0 : rc;
    });
    REQUIRE(poller.finished_within(kReturns));
    CHECK(poller.result() == 0);
    CHECK(ids == std::vector<std::uint64_t>{101, 201});
    CHECK(drain(cq).empty());
    REQUIRE(ibv_destroy_wq(a) == 0);
    REQUIRE(ibv_destroy_wq(b) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("a restart waits for another thread's ibv_end_poll on the CQ, as mlx5's CQ lock "
          "makes it",
          "[device][wq][cq]") {
    SimFixture fx;
    ibv_cq_init_attr_ex ca{};
    ca.cqe = 16;
    ca.wc_flags = IBV_WC_STANDARD_FLAGS;
    ibv_cq_ex* cqx = ibv_create_cq_ex(fx.ctx, &ca);
    REQUIRE(cqx != nullptr);
    ibv_cq* cq = ibv_cq_ex_to_cq(cqx);
    ibv_wq* a = make_wq(fx.pd, cq, 8);
    ibv_wq* b = make_wq(fx.pd, cq, 8);
    MrBuffer buf(fx.pd, 8);
    move(a, {IBV_WQS_RDY});
    move(b, {IBV_WQS_RDY});
    REQUIRE(post_wq(b, 201, buf.sge(0)) == 0);
    REQUIRE(post_wq(a, 101, buf.sge(1)) == 0);
    move(b, {IBV_WQS_ERR});
    move(a, {IBV_WQS_ERR, IBV_WQS_RESET}); // the CQ: 201 101

    ibv_poll_cq_attr pa{};
    REQUIRE(ibv_start_poll(cqx, &pa) == 0);
    CHECK(cqx->wr_id == 201);
    {
        Background restart([a] { return set_wq_state(a, IBV_WQS_RDY); });
        // The program is reading the CQ: the purge must not move entries under it.
        CHECK_FALSE(restart.finished_within(kStillBlocked));
        CHECK(ibv_next_poll(cqx) == 0);
        CHECK(cqx->wr_id == 101); // still there: the purge has not run
        ibv_end_poll(cqx);
        REQUIRE(restart.finished_within(kReturns));
        CHECK(restart.result() == 0);
    }
    CHECK(drain(cq).empty());
    REQUIRE(ibv_destroy_wq(a) == 0);
    REQUIRE(ibv_destroy_wq(b) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}
