// RC RDMA WRITE, WRITE with immediate, READ and atomics between two
// transport endpoints (datapath/README.md, "RoCE transport"), with and
// without a faulty channel, and the remote access error on both sides.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cstring>
#include <vector>

#include "support/roce_pair.hpp"

using namespace rdmasim;
using datapath::QpTransport;
using datapath::RoceRx;
using datapath::SendOp;
using datapath::SendWr;
using datapath::Sge;
using datapath::TransportEvent;
using datapath::TransportState;
using test::RocePair;
using test::rdma_wr;

namespace {

void fill(std::vector<std::uint8_t>& v, std::uint8_t seed) {
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<std::uint8_t>(seed + i * 13);
}

} // namespace

TEST_CASE("rc rdma: WRITE of 5000 bytes lands at the remote address; WRITE with immediate "
          "consumes a receive WQE",
          "[datapath][roce][rc]") {
    RocePair pr;
    std::vector<std::uint8_t> src(5000), dst(8192, 0);
    fill(src, 1);
    Sge s{reinterpret_cast<std::uint64_t>(src.data()), 5000, pr.a.reg(src.data(), src.size())};
    const std::uint32_t rkey = pr.b.reg(dst.data(), dst.size());
    REQUIRE(pr.a.qp->post_send(rdma_wr(1, SendOp::write, dst.data() + 100, rkey), test::one_sge(s),
                               pr.now) == 0);
    pr.run_idle();
    CHECK(std::memcmp(dst.data() + 100, src.data(), 5000) == 0);
    CHECK(dst[99] == 0);
    CHECK(dst[5100] == 0);
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].opcode == IBV_WC_RDMA_WRITE);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_SUCCESS);
    CHECK(pr.b.recv_cqes.empty()); // a plain WRITE consumes no receive WQE
    REQUIRE(pr.log_a_to_b.size() == 5);
    CHECK(pr.log_a_to_b[0].second == 0x06); // WRITE_FIRST (RETH)
    CHECK(pr.log_a_to_b[4].second == 0x08); // WRITE_LAST

    std::uint8_t rb[16];
    pr.b.post_recv(9, rb, sizeof rb, pr.b.reg(rb, sizeof rb));
    SendWr w = rdma_wr(2, SendOp::write_imm, dst.data(), rkey);
    w.imm = 0xcafe;
    s.length = 700;
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.b.recv_cqes.size() == 1);
    const auto& c = pr.b.recv_cqes[0];
    CHECK(c.wr_id == 9);
    CHECK(c.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
    CHECK(c.wc_flags == IBV_WC_WITH_IMM);
    CHECK(c.byte_len == 700);
    CHECK(pr.log_a_to_b.back().second == 0x0b); // WRITE_ONLY_WITH_IMMEDIATE
}

TEST_CASE("rc rdma: READ of 10,000 bytes comes back in responses scattered over two SGEs",
          "[datapath][roce][rc]") {
    test::Faults f;
    const bool faulty = GENERATE(false, true);
    if (faulty) {
        f.drop = 0.15;
        f.dup = 0.1;
        f.reorder = 0.1;
        f.seed = 7;
    }
    RocePair pr(QpTransport::rc, f);
    std::vector<std::uint8_t> remote(10000), local(12000, 0);
    fill(remote, 5);
    const std::uint32_t rkey = pr.b.reg(remote.data(), remote.size());
    const std::uint32_t lkey = pr.a.reg(local.data(), local.size());
    for (int round = 0; round < 20; ++round) {
        std::fill(local.begin(), local.end(), 0);
        Sge sg[2] = {{reinterpret_cast<std::uint64_t>(local.data()), 3000, lkey},
                     {reinterpret_cast<std::uint64_t>(local.data() + 4000), 7000, lkey}};
        REQUIRE(pr.a.qp->post_send(rdma_wr(round, SendOp::read, remote.data(), rkey), sg, pr.now) ==
                0);
        pr.run_until([&] { return pr.a.send_cqes.size() == static_cast<std::size_t>(round + 1); });
        REQUIRE(pr.a.send_cqes.size() == static_cast<std::size_t>(round + 1));
        const auto& c = pr.a.send_cqes.back();
        CHECK(c.status == IBV_WC_SUCCESS);
        CHECK(c.opcode == IBV_WC_RDMA_READ);
        CHECK(c.byte_len == 10000);
        CHECK(std::memcmp(local.data(), remote.data(), 3000) == 0);
        CHECK(local[3000] == 0);
        CHECK(std::memcmp(local.data() + 4000, remote.data() + 3000, 7000) == 0);
    }
    pr.run_idle();
    CHECK(pr.b.qp->counters().read_responses_sent.get() >= 20 * 10);
    if (faulty) CHECK(pr.b.qp->counters().get(RoceRx::duplicate) > 0);
}

TEST_CASE("rc rdma: compare-and-swap and fetch-and-add return the original value; a duplicate "
          "is answered from the saved result, not executed twice",
          "[datapath][roce][rc]") {
    const bool faulty = GENERATE(false, true);
    test::Faults f;
    if (faulty) {
        f.drop = 0.2;
        f.dup = 0.3;
        f.seed = 3;
    }
    RocePair pr(QpTransport::rc, f);
    alignas(8) std::uint64_t target = 10;
    alignas(8) std::uint64_t result[64] = {};
    const std::uint32_t rkey = pr.b.reg(&target, 8);
    const std::uint32_t lkey = pr.a.reg(result, sizeof result);
    // 50 fetch-and-adds of 3, then a failing and a succeeding compare-and-swap.
    for (int i = 0; i < 50; ++i) {
        SendWr w = rdma_wr(i, SendOp::fetch_add, &target, rkey);
        w.compare_add = 3;
        Sge s{reinterpret_cast<std::uint64_t>(&result[i]), 8, lkey};
        REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
    }
    pr.run_until([&] { return pr.a.send_cqes.size() == 50; });
    REQUIRE(pr.a.send_cqes.size() == 50);
    CHECK(target == 10 + 50 * 3); // each executed exactly once
    for (int i = 0; i < 50; ++i) {
        CHECK(pr.a.send_cqes[i].opcode == IBV_WC_FETCH_ADD);
        CHECK(pr.a.send_cqes[i].status == IBV_WC_SUCCESS);
        CHECK(pr.a.send_cqes[i].byte_len == 8);
        CHECK(result[i] == 10 + 3u * i);
    }
    SendWr miss = rdma_wr(100, SendOp::cmp_swp, &target, rkey);
    miss.compare_add = 1;
    miss.swap = 999;
    SendWr hit = rdma_wr(101, SendOp::cmp_swp, &target, rkey);
    hit.compare_add = 160;
    hit.swap = 7;
    Sge s1{reinterpret_cast<std::uint64_t>(&result[50]), 8, lkey};
    Sge s2{reinterpret_cast<std::uint64_t>(&result[51]), 8, lkey};
    REQUIRE(pr.a.qp->post_send(miss, test::one_sge(s1), pr.now) == 0);
    REQUIRE(pr.a.qp->post_send(hit, test::one_sge(s2), pr.now) == 0);
    pr.run_until([&] { return pr.a.send_cqes.size() == 52; });
    REQUIRE(pr.a.send_cqes.size() == 52);
    CHECK(pr.a.send_cqes[50].opcode == IBV_WC_COMP_SWAP);
    CHECK(result[50] == 160); // no swap: the value found
    CHECK(result[51] == 160); // swapped
    CHECK(target == 7);
}

TEST_CASE("rc rdma: a WRITE to an MR without remote write access: REM_ACCESS_ERR at the "
          "requester, the responder's QP goes to error with IBV_EVENT_QP_ACCESS_ERR",
          "[datapath][roce][rc]") {
    RocePair pr;
    std::vector<std::uint8_t> src(64, 1), dst(64, 0);
    Sge s{reinterpret_cast<std::uint64_t>(src.data()), 64, pr.a.reg(src.data(), 64)};
    const std::uint32_t ro = pr.b.reg(dst.data(), 64, true, false, false); // remote read only
    std::uint8_t rb[64];
    pr.b.post_recv(1, rb, 64, pr.b.reg(rb, 64));
    REQUIRE(pr.a.qp->post_send(rdma_wr(1, SendOp::write, dst.data(), ro), test::one_sge(s), pr.now) ==
            0);
    SendWr after;
    after.wr_id = 2;
    REQUIRE(pr.a.qp->post_send(after, {}, pr.now) == 0);
    pr.run_idle();
    CHECK(dst[0] == 0);
    REQUIRE(pr.a.send_cqes.size() == 2);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_REM_ACCESS_ERR);
    CHECK(pr.a.send_cqes[0].wr_id == 1);
    CHECK(pr.a.send_cqes[1].status == IBV_WC_WR_FLUSH_ERR);
    CHECK(pr.a.qp->state() == TransportState::error);
    CHECK(pr.b.qp->state() == TransportState::error);
    REQUIRE(pr.b.events.size() == 2);
    CHECK(pr.b.events[0] == TransportEvent::qp_access_err);
    CHECK(pr.b.events[1] == TransportEvent::entered_error);
    REQUIRE(pr.a.events.size() == 1);
    CHECK(pr.a.events[0] == TransportEvent::entered_error);
    REQUIRE(pr.b.recv_cqes.size() == 1); // the posted receive is flushed
    CHECK(pr.b.recv_cqes[0].status == IBV_WC_WR_FLUSH_ERR);
    CHECK(pr.b.qp->counters().get(RoceRx::remote_access) == 1);
    CHECK(pr.b.qp->counters().naks_sent.get() == 1);
    // A QP in error flushes what is posted next at once.
    REQUIRE(pr.a.qp->post_send(after, {}, pr.now) == 0);
    REQUIRE(pr.a.send_cqes.size() == 3);
    CHECK(pr.a.send_cqes[2].status == IBV_WC_WR_FLUSH_ERR);
}

TEST_CASE("rc rdma: READ with a bad rkey, and a READ out of the MR's bounds, fail with "
          "REM_ACCESS_ERR",
          "[datapath][roce][rc]") {
    const int variant = GENERATE(0, 1, 2);
    RocePair pr;
    std::vector<std::uint8_t> remote(256, 3), local(512, 0);
    const std::uint32_t rkey = pr.b.reg(remote.data(), remote.size(), variant != 2, true, true);
    const std::uint32_t lkey = pr.a.reg(local.data(), local.size());
    Sge s{reinterpret_cast<std::uint64_t>(local.data()), 512, lkey};
    const std::uint32_t key = variant == 0 ? rkey + 1 : rkey; // 0: wrong key
    const std::uint32_t len_ok = variant == 1 ? 512 : 256;    // 1: past the end
    s.length = len_ok;
    REQUIRE(pr.a.qp->post_send(rdma_wr(1, SendOp::read, remote.data(), key), test::one_sge(s),
                               pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_REM_ACCESS_ERR);
    CHECK(local[0] == 0);
    CHECK(pr.b.qp->state() == TransportState::error);
}

TEST_CASE("rc rdma: a local SGE that fails the MR check completes with LOC_PROT_ERR before "
          "anything is sent",
          "[datapath][roce][rc]") {
    RocePair pr;
    std::vector<std::uint8_t> src(64, 1);
    Sge s{reinterpret_cast<std::uint64_t>(src.data()), 64, pr.a.reg(src.data(), 32)};
    SendWr w;
    w.wr_id = 4;
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_LOC_PROT_ERR);
    CHECK(pr.log_a_to_b.empty());
    CHECK(pr.a.qp->state() == TransportState::error);
}
