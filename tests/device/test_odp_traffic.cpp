// RC traffic through ODP MRs, between two QPs of one device (their packets
// loop back through the port's RoCE side): memory mapped after registration
// is reached; memory unmapped under an ODP MR is the peer's remote access
// error and a local protection error here, never a crash of the emulator
// (device/README.md, datapath/README.md, "On-demand paging").
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/device/ib_qp_helpers.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

constexpr unsigned kRemote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                             IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr unsigned kOdp = kRemote | IBV_ACCESS_ON_DEMAND;
const std::size_t kPage = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

// Two connected RC QPs and a plain local buffer of two pages.
struct Pair {
    explicit Pair(SimFixture& fx)
        : a(fx.pd, IBV_QPT_RC, 16), b(fx.pd, IBV_QPT_RC, 16), local(2 * kPage) {
        connect_to_own_gid(a, b, fx.ctx, kRemote, 10);
        connect_to_own_gid(b, a, fx.ctx, kRemote, 10);
        mr = ibv_reg_mr(fx.pd, local.data(), local.size(), kRemote);
        REQUIRE(mr != nullptr);
    }
    ~Pair() { CHECK(ibv_dereg_mr(mr) == 0); }
    // One signalled WR of `op` from a's local buffer to (rkey, at); its completion.
    ibv_wc run(ibv_wr_opcode op, std::uint32_t rkey, std::uint64_t at, std::uint32_t len) {
        ibv_sge s{reinterpret_cast<std::uint64_t>(local.data()), len, mr->lkey};
        ibv_send_wr wr{};
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = op;
        wr.send_flags = IBV_SEND_SIGNALED;
        if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
            wr.wr.atomic = {at, 5, 5, rkey};
        } else {
            wr.wr.rdma.remote_addr = at;
            wr.wr.rdma.rkey = rkey;
        }
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(a.qp, &wr, &bad) == 0);
        const auto wc = wait_for(a.cq, 1);
        REQUIRE(wc.size() == 1);
        return wc[0];
    }
    IbQp a, b;
    std::vector<std::uint8_t> local;
    ibv_mr* mr = nullptr;
};

std::uint8_t* map_pages(std::size_t n, int prot, void* at = nullptr) {
    void* p = mmap(at, n * kPage, prot, MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);
    REQUIRE(p != MAP_FAILED);
    return static_cast<std::uint8_t*>(p);
}

} // namespace

TEST_CASE("ODP: WRITE and READ reach memory mapped after registration", "[odp][ib_traffic]") {
    SimFixture fx;
    std::uint8_t* area = map_pages(2, PROT_NONE); // reserved, not accessible yet
    ibv_mr* odp = ibv_reg_mr(fx.pd, area, 2 * kPage, kOdp);
    REQUIRE(odp != nullptr);
    REQUIRE(map_pages(2, PROT_READ | PROT_WRITE, area) == area);
    Pair p(fx);
    for (std::size_t i = 0; i < p.local.size(); ++i)
        p.local[i] = static_cast<std::uint8_t>(i * 7);
    const auto at = reinterpret_cast<std::uint64_t>(area);
    CHECK(p.run(IBV_WR_RDMA_WRITE, odp->rkey, at + 100, 3000).status == IBV_WC_SUCCESS);
    CHECK(std::memcmp(area + 100, p.local.data(), 3000) == 0);
    std::memset(area, 0x5a, 2 * kPage);
    CHECK(p.run(IBV_WR_RDMA_READ, odp->rkey, at + 8, 2500).status == IBV_WC_SUCCESS);
    CHECK(p.local[0] == 0x5a);
    CHECK(p.local[2499] == 0x5a);
    CHECK(p.run(IBV_WR_ATOMIC_FETCH_AND_ADD, odp->rkey, at + 64, 8).status == IBV_WC_SUCCESS);
    CHECK(area[64] == 0x5a + 5);
    CHECK(ibv_dereg_mr(odp) == 0);
    CHECK(munmap(area, 2 * kPage) == 0);
}

TEST_CASE("Implicit ODP: a buffer mapped after registration takes a WRITE", "[odp][ib_traffic]") {
    SimFixture fx;
    ibv_mr* all = ibv_reg_mr(fx.pd, nullptr, SIZE_MAX, kOdp);
    REQUIRE(all != nullptr);
    std::uint8_t* area = map_pages(1, PROT_READ | PROT_WRITE);
    Pair p(fx);
    p.local.assign(p.local.size(), 0x3c);
    CHECK(p.run(IBV_WR_RDMA_WRITE, all->rkey, reinterpret_cast<std::uint64_t>(area), 1500).status ==
          IBV_WC_SUCCESS);
    CHECK(area[0] == 0x3c);
    CHECK(area[1499] == 0x3c);
    CHECK(ibv_dereg_mr(all) == 0);
    CHECK(munmap(area, kPage) == 0);
}

TEST_CASE("ODP: WRITE, READ and atomics to memory unmapped under the MR complete "
          "IBV_WC_REM_ACCESS_ERR; the emulator goes on",
          "[odp][ib_traffic]") {
    SimFixture fx;
    std::uint8_t* area = map_pages(3, PROT_READ | PROT_WRITE);
    ibv_mr* odp = ibv_reg_mr(fx.pd, area, 3 * kPage, kOdp);
    REQUIRE(odp != nullptr);
    REQUIRE(munmap(area + kPage, kPage) == 0); // a hole in the middle of the MR
    const auto hole = reinterpret_cast<std::uint64_t>(area + kPage);
    for (const ibv_wr_opcode op : {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD,
                                   IBV_WR_ATOMIC_CMP_AND_SWP}) {
        CAPTURE(op);
        Pair p(fx); // the error moves both QPs to ERR: a new pair for each
        const ibv_wc wc = p.run(op, odp->rkey, hole, op == IBV_WR_RDMA_WRITE ? 2000 : 8);
        CHECK(wc.status == IBV_WC_REM_ACCESS_ERR);
        CHECK(p.b.qp->state == IBV_QPS_ERR);
    }
    // A WRITE that starts in mapped memory and runs into the hole fails too.
    Pair p(fx);
    CHECK(p.run(IBV_WR_RDMA_WRITE, odp->rkey, hole - 1000, 3000).status == IBV_WC_REM_ACCESS_ERR);
    Pair q(fx); // and the mapped pages still work
    q.local.assign(q.local.size(), 0x77);
    CHECK(q.run(IBV_WR_RDMA_WRITE, odp->rkey, reinterpret_cast<std::uint64_t>(area), 100).status ==
          IBV_WC_SUCCESS);
    CHECK(area[99] == 0x77);
    CHECK(ibv_dereg_mr(odp) == 0);
    CHECK(munmap(area, kPage) == 0);
    CHECK(munmap(area + 2 * kPage, kPage) == 0);
}

TEST_CASE("ODP: a local SGE over unmapped memory completes IBV_WC_LOC_PROT_ERR",
          "[odp][ib_traffic]") {
    SimFixture fx;
    std::uint8_t* area = map_pages(1, PROT_READ | PROT_WRITE);
    ibv_mr* odp = ibv_reg_mr(fx.pd, area, kPage, kOdp);
    REQUIRE(odp != nullptr);
    REQUIRE(munmap(area, kPage) == 0);
    const auto at = reinterpret_cast<std::uint64_t>(area);
    SECTION("a SEND gathering from it") {
        Pair p(fx);
        ibv_recv_wr r{};
        ibv_sge rs{reinterpret_cast<std::uint64_t>(p.local.data()), 64, p.mr->lkey};
        r.sg_list = &rs;
        r.num_sge = 1;
        ibv_recv_wr* rbad = nullptr;
        REQUIRE(ibv_post_recv(p.b.qp, &r, &rbad) == 0);
        ibv_sge s{at, 64, odp->lkey};
        ibv_send_wr wr{};
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(p.a.qp, &wr, &bad) == 0);
        const auto wc = wait_for(p.a.cq, 1);
        REQUIRE(wc.size() == 1);
        CHECK(wc[0].status == IBV_WC_LOC_PROT_ERR);
    }
    SECTION("a receive placing into it") {
        Pair p(fx);
        ibv_recv_wr r{};
        ibv_sge rs{at, 64, odp->lkey};
        r.wr_id = 9;
        r.sg_list = &rs;
        r.num_sge = 1;
        ibv_recv_wr* rbad = nullptr;
        REQUIRE(ibv_post_recv(p.b.qp, &r, &rbad) == 0);
        CHECK(p.run(IBV_WR_SEND, 0, 0, 64).status == IBV_WC_REM_OP_ERR);
        const auto rx = wait_for(p.b.cq, 1);
        REQUIRE(rx.size() == 1);
        CHECK(rx[0].wr_id == 9);
        CHECK(rx[0].status == IBV_WC_LOC_PROT_ERR);
    }
    CHECK(ibv_dereg_mr(odp) == 0);
}
