// A local protection error stops the receive queue (datapath/README.md,
// "Per-frame order", step 14; device/README.md, "Work queues" and "Raw-packet
// QPs"): mlx5 creates every RQ with flush_in_error_en, so the WQE that failed
// the MR check completes with IBV_WC_LOC_PROT_ERR, the WQ goes to ERR and
// every other WQE, posted before or after, completes with
// IBV_WC_WR_FLUSH_ERR in posting order. No async event: the error is in the
// completion. A length error does not stop the queue.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "support/golden_frames.hpp"
#include "tests/device/verbs_helpers.hpp"
#include "tests/support/verbs_events.hpp"

using namespace rdmasim;
using namespace rdmasim::test;
using datapath::Drop;
namespace golden = rdmasim::test::golden;

namespace {

constexpr std::uint64_t kMs = 1'000'000;

// Memory registered without IBV_ACCESS_LOCAL_WRITE: a receive may not write it.
struct ReadOnlyMr {
    explicit ReadOnlyMr(ibv_pd* pd) : bytes(4096, 0) {
        mr = ibv_reg_mr(pd, bytes.data(), bytes.size(), 0);
        REQUIRE(mr != nullptr);
    }
    ~ReadOnlyMr() { CHECK(ibv_dereg_mr(mr) == 0); }
    ReadOnlyMr(const ReadOnlyMr&) = delete;
    ReadOnlyMr& operator=(const ReadOnlyMr&) = delete;
    [[nodiscard]] ibv_sge sge() const {
        return {reinterpret_cast<std::uint64_t>(bytes.data()), 2048, mr->lkey};
    }
    std::vector<std::uint8_t> bytes;
    ibv_mr* mr = nullptr;
};

} // namespace

TEST_CASE("a protection error completes its WQE, moves the WQ to ERR and flushes the rest in "
          "order; later posts flush at once",
          "[device][receive][protection]") {
    SimFixture fx;
    MrBuffer buf(fx.pd, 8);
    ReadOnlyMr read_only(fx.pd);
    ibv_pd* other_pd = ibv_alloc_pd(fx.ctx);
    REQUIRE(other_pd != nullptr);
    {
        MrBuffer foreign(other_pd, 1);
        struct Kind {
            const char* name;
            ibv_sge sge;
        };
        ibv_sge bad_key = buf.sge(0);
        bad_key.lkey += 1;
        ibv_sge beyond = buf.sge(7);
        beyond.length += 1; // one byte past the MR
        const std::vector<Kind> kinds = {{"lkey of no MR", bad_key},
                                         {"MR without LOCAL_WRITE", read_only.sge()},
                                         {"MR of another PD", foreign.sge(0)},
                                         {"SGE running past the MR", beyond}};
        for (const Kind& k : kinds) {
            INFO(k.name);
            const std::uint64_t prot0 = drops(fx, Drop::protection_error);
            const std::uint64_t flushed0 = fx.port().flushed_wqes.get();
            const std::uint64_t not_ready0 = drops(fx, Drop::wq_not_ready);
            SteeredWq q(fx.pd);
            REQUIRE(post_wq(q.wq, 1, k.sge) == 0);
            REQUIRE(post_wq(q.wq, 2, buf.sge(1)) == 0);
            REQUIRE(post_wq(q.wq, 3, buf.sge(2)) == 0);
            fx.offer(golden::concat(golden::kUntagged));
            fx.offer(golden::concat(golden::kTcpGood)); // same burst: the queue has stopped
            fx.pump();
            const auto wc = seen(q.cq);
            INFO(show(wc));
            CHECK(wc == std::vector<Seen>{{1, IBV_WC_LOC_PROT_ERR},
                                          {2, IBV_WC_WR_FLUSH_ERR},
                                          {3, IBV_WC_WR_FLUSH_ERR}});
            CHECK(q.wq->state == IBV_WQS_ERR);
            CHECK(drops(fx, Drop::protection_error) == prot0 + 1);
            CHECK(drops(fx, Drop::wq_not_ready) == not_ready0 + 1);
            // A later post is flushed at once; later frames are not received.
            REQUIRE(post_wq(q.wq, 4, buf.sge(3)) == 0);
            fx.offer(golden::concat(golden::kUntagged));
            fx.pump();
            CHECK(seen(q.cq) == std::vector<Seen>{{4, IBV_WC_WR_FLUSH_ERR}});
            CHECK(drops(fx, Drop::wq_not_ready) == not_ready0 + 2);
            CHECK(fx.port().flushed_wqes.get() == flushed0 + 3);
            CHECK(no_async_event(fx.ctx));
            CHECK(fx.balanced());
        }
    }
    CHECK(ibv_dealloc_pd(other_pd) == 0);
}

TEST_CASE("after a protection error the WQ recovers through RESET and RDY",
          "[device][receive][protection]") {
    SimFixture fx;
    MrBuffer buf(fx.pd, 4);
    SteeredWq q(fx.pd);
    ibv_sge bad = buf.sge(0);
    bad.lkey += 1;
    REQUIRE(post_wq(q.wq, 1, buf.sge(0)) == 0);
    REQUIRE(post_wq(q.wq, 2, bad) == 0);
    REQUIRE(post_wq(q.wq, 3, buf.sge(1)) == 0);
    // Frames before the bad WQE are delivered; the one that meets it fails.
    fx.offer(golden::concat(golden::kUntagged));
    fx.offer(golden::concat(golden::kUntagged));
    fx.pump();
    CHECK(seen(q.cq) == std::vector<Seen>{{1, IBV_WC_SUCCESS},
                                          {2, IBV_WC_LOC_PROT_ERR},
                                          {3, IBV_WC_WR_FLUSH_ERR}});
    REQUIRE(q.wq->state == IBV_WQS_ERR);
    CHECK(set_wq_state(q.wq, IBV_WQS_RDY) == EINVAL); // ERR -> RDY is not a transition
    REQUIRE(set_wq_state(q.wq, IBV_WQS_RESET) == 0);
    REQUIRE(set_wq_state(q.wq, IBV_WQS_RDY) == 0);
    REQUIRE(post_wq(q.wq, 4, buf.sge(2)) == 0);
    fx.offer(golden::concat(golden::kTcpGood));
    fx.pump();
    const auto wc = drain(q.cq);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].wr_id == 4);
    CHECK(wc[0].status == IBV_WC_SUCCESS);
    CHECK(wc[0].byte_len == golden::kTcpGood.size());
    CHECK(fx.balanced());
}

TEST_CASE("a length error does not stop the WQ", "[device][receive][protection]") {
    SimFixture fx;
    MrBuffer buf(fx.pd, 4);
    SteeredWq q(fx.pd);
    ibv_sge short_sge = buf.sge(0);
    short_sge.length = 20;
    REQUIRE(post_wq(q.wq, 1, short_sge) == 0);
    REQUIRE(post_wq(q.wq, 2, buf.sge(1)) == 0);
    fx.offer(golden::concat(golden::kUntagged));
    fx.offer(golden::concat(golden::kUntagged));
    fx.pump();
    CHECK(seen(q.cq) == std::vector<Seen>{{1, IBV_WC_LOC_LEN_ERR}, {2, IBV_WC_SUCCESS}});
    CHECK(q.wq->state == IBV_WQS_RDY);
    CHECK(fx.port().flushed_wqes.get() == 0);
    CHECK(fx.balanced());
}

TEST_CASE("a protection error met by a held frame discards the frames held behind it",
          "[device][receive][protection]") {
    SimFixture fx;
    MrBuffer buf(fx.pd, 4);
    SteeredWq q(fx.pd, IBV_WQ_FLAGS_DELAY_DROP);
    fx.offer(golden::concat(golden::kUntagged), 0);
    fx.offer(golden::concat(golden::kTcpGood), kMs);
    fx.pump();
    REQUIRE(fx.port().delay_drop_waits.get() == 2);
    // One post of two WRs: the first held frame takes the bad one.
    ibv_sge bad = buf.sge(0);
    bad.lkey += 1;
    std::array<ibv_sge, 2> s = {bad, buf.sge(1)};
    std::array<ibv_recv_wr, 2> wr{};
    wr[0].wr_id = 1;
    wr[0].sg_list = &s[0];
    wr[0].num_sge = 1;
    wr[0].next = &wr[1];
    wr[1].wr_id = 2;
    wr[1].sg_list = &s[1];
    wr[1].num_sge = 1;
    ibv_recv_wr* bad_wr = nullptr;
    REQUIRE(ibv_post_wq_recv(q.wq, wr.data(), &bad_wr) == 0);
    fx.pump();
    CHECK(seen(q.cq) == std::vector<Seen>{{1, IBV_WC_LOC_PROT_ERR}, {2, IBV_WC_WR_FLUSH_ERR}});
    CHECK(q.wq->state == IBV_WQS_ERR);
    CHECK(drops(fx, Drop::protection_error) == 1);
    CHECK(drops(fx, Drop::discarded) == 1);
    CHECK(fx.port().delivered.get() == 0);
    CHECK(fx.balanced());
}

TEST_CASE("a protection error on a raw QP stops its receive queue; its send side and state "
          "stay",
          "[device][receive][protection]") {
    SimFixture fx;
    MrBuffer buf(fx.pd, 4);
    RawQp q(fx.pd);
    ibv_flow* flow = make_flow(q.qp, eth_flow());
    ibv_sge bad = buf.sge(0);
    bad.lkey += 1;
    REQUIRE(post_qp(q.qp, 1, bad) == 0);
    REQUIRE(post_qp(q.qp, 2, buf.sge(1)) == 0);
    fx.offer(golden::concat(golden::kUntagged));
    fx.pump();
    CHECK(seen(q.cq) == std::vector<Seen>{{1, IBV_WC_LOC_PROT_ERR}, {2, IBV_WC_WR_FLUSH_ERR}});
    REQUIRE(post_qp(q.qp, 3, buf.sge(2)) == 0); // flushed at once
    fx.offer(golden::concat(golden::kUntagged));
    fx.pump();
    CHECK(seen(q.cq) == std::vector<Seen>{{3, IBV_WC_WR_FLUSH_ERR}});
    CHECK(drops(fx, Drop::wq_not_ready) == 1);
    // mlx5's raw QP has an RQ and an SQ of its own: the send queue is not in error.
    CHECK(q.qp->state == IBV_QPS_RTS);
    ibv_sge out = buf.sge(3);
    out.length = golden::kUntagged.size();
    ibv_send_wr swr{};
    swr.wr_id = 9;
    swr.sg_list = &out;
    swr.num_sge = 1;
    swr.opcode = IBV_WR_SEND;
    swr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad_swr = nullptr;
    REQUIRE(ibv_post_send(q.qp, &swr, &bad_swr) == 0);
    CHECK(seen(q.cq) == std::vector<Seen>{{9, IBV_WC_SUCCESS}});
    CHECK(no_async_event(fx.ctx));
    // Back to receiving: RESET, INIT, RTR.
    ibv_qp_attr m{};
    for (const ibv_qp_state st : {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR}) {
        m.qp_state = st;
        REQUIRE(ibv_modify_qp(q.qp, &m, IBV_QP_STATE) == 0);
    }
    REQUIRE(post_qp(q.qp, 4, buf.sge(2)) == 0);
    fx.offer(golden::concat(golden::kUntagged));
    fx.pump();
    CHECK(seen(q.cq) == std::vector<Seen>{{4, IBV_WC_SUCCESS}});
    CHECK(ibv_destroy_flow(flow) == 0);
    CHECK(fx.balanced());
}

// The service a state change runs may stop another queue: modify_wq on one
// WQ (its post lock held) moves the other to ERR (its post lock taken after
// the port's), and a queue's own transition is never undone by it.
TEST_CASE("a protection error found while another WQ changes state stops only the failed WQ",
          "[device][receive][protection]") {
    SimFixture fx;
    MrBuffer buf(fx.pd, 4);
    SteeredWq held(fx.pd, IBV_WQ_FLAGS_DELAY_DROP);
    fx.offer(golden::concat(golden::kUntagged), 0);
    fx.pump();
    REQUIRE(fx.port().delay_drop_waits.get() == 1);
    ibv_sge bad = buf.sge(0);
    bad.lkey += 1;
    ibv_recv_wr wr{};
    wr.wr_id = 7;
    wr.sg_list = &bad;
    wr.num_sge = 1;
    ibv_recv_wr* bad_wr = nullptr;
    REQUIRE(ibv_post_wq_recv(held.wq, &wr, &bad_wr) == 0); // the held frame waits for a service

    ibv_cq* cq = make_cq(fx.ctx, 16);
    ibv_wq_init_attr a = wq_init_attr(fx.pd, cq, 16, 1, 0);
    ibv_wq* other = ibv_create_wq(fx.ctx, &a);
    REQUIRE(other != nullptr);
    REQUIRE(set_wq_state(other, IBV_WQS_RDY) == 0); // services the port: the release fails
    CHECK(other->state == IBV_WQS_RDY);
    CHECK(held.wq->state == IBV_WQS_ERR);
    CHECK(seen(held.cq) == std::vector<Seen>{{7, IBV_WC_LOC_PROT_ERR}});
    CHECK(drops(fx, Drop::protection_error) == 1);
    CHECK(fx.balanced());
    CHECK(ibv_destroy_wq(other) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}
