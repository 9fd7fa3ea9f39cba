// RC ATOMIC WRITE between two transport endpoints (datapath/README.md,
// "RoCE transport"): one packet with a RETH and 8 bytes, answered by an
// empty READ RESPONSE ONLY; a duplicate is answered again, never written
// again; remote write access and alignment checked.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cstring>
#include <vector>

#include "support/roce_pair.hpp"

using namespace rdmasim;
using datapath::SendOp;
using datapath::SendWr;
using datapath::Sge;
using test::Faults;
using test::RocePair;
using test::rdma_wr;

namespace {

std::uint64_t bytes_of(const char (&s)[9]) {
    std::uint64_t v;
    std::memcpy(&v, s, 8);
    return v;
}

} // namespace

TEST_CASE("atomic write: one packet out, an empty READ RESPONSE ONLY back, IBV_WC_ATOMIC_WRITE",
          "[datapath][roce][atomic_write]") {
    RocePair pr;
    alignas(8) std::uint8_t dst[24] = {};
    const std::uint32_t rkey = pr.b.reg(dst, sizeof dst);
    REQUIRE(pr.a.qp->post_send(rdma_wr(9, SendOp::atomic_write, dst + 8, rkey, bytes_of("atomic!!")),
                               {}, pr.now) == 0);
    pr.run_idle();
    CHECK(std::memcmp(dst + 8, "atomic!!", 8) == 0);
    CHECK(dst[7] == 0);
    CHECK(dst[16] == 0);
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_SUCCESS);
    CHECK(pr.a.send_cqes[0].opcode == IBV_WC_ATOMIC_WRITE);
    CHECK(pr.a.send_cqes[0].byte_len == 8);
    REQUIRE(pr.log_a_to_b.size() == 1);
    CHECK(pr.log_a_to_b[0].second == 0x1d);
    CHECK(pr.b.qp->counters().read_responses_sent.get() == 1);
    CHECK(pr.b.qp->counters().acks_sent.get() == 0);
    CHECK(pr.b.recv_cqes.empty());

    // Not on UC, not with SGEs, not inline.
    Sge s{reinterpret_cast<std::uint64_t>(dst), 8, 0};
    CHECK(pr.a.qp->post_send(rdma_wr(10, SendOp::atomic_write, dst, rkey), test::one_sge(s), pr.now) ==
          EINVAL);
    RocePair uc(datapath::QpTransport::uc);
    CHECK(uc.a.qp->post_send(rdma_wr(1, SendOp::atomic_write, dst, rkey), {}, uc.now) == EINVAL);
}

TEST_CASE("atomic write: duplicates are answered, not executed again (lossy channel)",
          "[datapath][roce][atomic_write]") {
    // Each round: ATOMIC WRITE "first..." then an RDMA WRITE "second.." to the
    // same address. A duplicate of the atomic write executed after the
    // RDMA WRITE would leave "first..." behind.
    std::uint64_t answered_again = 0; // duplicates of an atomic write seen and answered
    for (std::uint64_t seed = 1; seed <= 30; ++seed) {
        CAPTURE(seed);
        RocePair pr(datapath::QpTransport::rc, Faults{0.2, 0.3, 0.3, seed});
        alignas(8) std::uint8_t dst[8 * 4] = {};
        const std::uint32_t rkey = pr.b.reg(dst, sizeof dst);
        std::uint8_t second[8];
        std::memcpy(second, "second..", 8);
        Sge s{reinterpret_cast<std::uint64_t>(second), 8, pr.a.reg(second, 8)};
        std::uint64_t id = 0;
        for (int k = 0; k < 4; ++k) {
            REQUIRE(pr.a.qp->post_send(rdma_wr(++id, SendOp::atomic_write, dst + 8 * k, rkey,
                                             bytes_of("first...")),
                                       {}, pr.now) == 0);
            REQUIRE(pr.a.qp->post_send(rdma_wr(++id, SendOp::write, dst + 8 * k, rkey),
                                       test::one_sge(s), pr.now) == 0);
        }
        pr.run_until([&] { return pr.a.send_cqes.size() == 8; });
        pr.run_idle(pr.now + 100'000'000);
        REQUIRE(pr.a.send_cqes.size() == 8);
        for (std::size_t i = 0; i < 8; ++i) {
            CHECK(pr.a.send_cqes[i].status == IBV_WC_SUCCESS);
            CHECK(pr.a.send_cqes[i].wr_id == i + 1);
            CHECK(pr.a.send_cqes[i].opcode == (i % 2 ? IBV_WC_RDMA_WRITE : IBV_WC_ATOMIC_WRITE));
        }
        for (int k = 0; k < 4; ++k) CHECK(std::memcmp(dst + 8 * k, "second..", 8) == 0);
        answered_again += pr.b.qp->counters().read_responses_sent.get() - 4;
    }
    CHECK(answered_again > 0); // the channel did make duplicates of them
}

TEST_CASE("atomic write: no remote write access is a remote access error; misaligned is invalid",
          "[datapath][roce][atomic_write]") {
    alignas(8) std::uint8_t dst[16] = {};
    SECTION("MR without remote write") {
        RocePair pr;
        const std::uint32_t rkey = pr.b.reg(dst, sizeof dst, true, false, true);
        REQUIRE(pr.a.qp->post_send(rdma_wr(1, SendOp::atomic_write, dst, rkey, 1), {}, pr.now) == 0);
        pr.run_idle();
        REQUIRE(pr.a.send_cqes.size() == 1);
        CHECK(pr.a.send_cqes[0].status == IBV_WC_REM_ACCESS_ERR);
        CHECK(dst[0] == 0);
    }
    SECTION("QP without remote write") {
        RocePair pr(datapath::QpTransport::rc, {}, {},
                    [](auto&, auto& b) { b.access = IBV_ACCESS_REMOTE_READ; });
        const std::uint32_t rkey = pr.b.reg(dst, sizeof dst);
        REQUIRE(pr.a.qp->post_send(rdma_wr(1, SendOp::atomic_write, dst, rkey, 1), {}, pr.now) == 0);
        pr.run_idle();
        REQUIRE(pr.a.send_cqes.size() == 1);
        CHECK(pr.a.send_cqes[0].status == IBV_WC_REM_ACCESS_ERR);
    }
    SECTION("an address not 8-byte aligned") {
        RocePair pr;
        const std::uint32_t rkey = pr.b.reg(dst, sizeof dst);
        REQUIRE(pr.a.qp->post_send(rdma_wr(1, SendOp::atomic_write, dst + 4, rkey, 1), {}, pr.now) == 0);
        pr.run_idle();
        REQUIRE(pr.a.send_cqes.size() == 1);
        CHECK(pr.a.send_cqes[0].status == IBV_WC_REM_INV_REQ_ERR);
        CHECK(dst[4] == 0);
    }
}
