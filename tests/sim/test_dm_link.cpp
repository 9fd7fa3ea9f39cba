// Device memory reached by a peer on another device (device/README.md,
// "Device memory"): rdmasim0 and rdmasim1 of one process wired back to back
// (--link rdmasim0:rdmasim1), each pumped by its own engine thread; an RC QP
// on rdmasim0 WRITEs into, READs from and runs an atomic on a DM MR of
// rdmasim1 through its rkey.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cstring>
#include <memory>
#include <vector>

#include "sim/simulator.hpp"
#include "tests/device/ib_qp_helpers.hpp"
#include "tests/sim/port_io_helpers.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

std::unique_ptr<sim::Simulator> linked() {
    sim::Config c;
    REQUIRE(c.set("devices", "2"));
    REQUIRE(c.set("link", "rdmasim0:rdmasim1"));
    REQUIRE(c.set("start", "now"));
    c.engine = sim::EngineKind::thread;
    auto s = sim::Simulator::create(c);
    REQUIRE(s);
    return std::move(s.value());
}

// Moves `qp` to RTS towards `peer_qpn` at the GID 0 of `peer`'s port.
void connect(IbQp& qp, std::uint32_t peer_qpn, ibv_context* peer) {
    ibv_gid gid{};
    REQUIRE(ibv_query_gid(peer, 1, 0, &gid) == 0);
    ibv_qp_attr at = good_attr(IBV_QPS_INIT);
    at.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                         IBV_ACCESS_REMOTE_ATOMIC;
    REQUIRE(ibv_modify_qp(qp.qp, &at, init_mask(IBV_QPT_RC)) == 0);
    at = good_attr(IBV_QPS_RTR);
    at.ah_attr.grh.dgid = gid;
    at.dest_qp_num = peer_qpn;
    at.rq_psn = 0x100;
    REQUIRE(ibv_modify_qp(qp.qp, &at, rtr_mask(IBV_QPT_RC)) == 0);
    at = good_attr(IBV_QPS_RTS);
    at.sq_psn = 0x100;
    at.timeout = 14;
    REQUIRE(ibv_modify_qp(qp.qp, &at, rts_mask(IBV_QPT_RC)) == 0);
}

ibv_wc run(IbQp& qp, ibv_send_wr wr) {
    wr.send_flags |= IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    REQUIRE(ibv_post_send(qp.qp, &wr, &bad) == 0);
    std::vector<ibv_wc> wc;
    for (int i = 0; i < 2000 && wc.empty(); ++i) {
        wc = wait_for(qp.cq, 1, 1000);
        if (wc.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    REQUIRE(wc.size() == 1);
    return wc[0];
}

} // namespace

TEST_CASE("a peer on another device WRITEs, READs and adds into DM through its rkey",
          "[sim][link][dm]") {
    auto s = linked();
    NamedDevice a(0), b(1);
    IbQp qa(a.pd, IBV_QPT_RC, 16), qb(b.pd, IBV_QPT_RC, 16);
    connect(qa, qb.qp->qp_num, b.ctx);
    connect(qb, qa.qp->qp_num, a.ctx);
    ibv_alloc_dm_attr attr{};
    attr.length = 4096;
    ibv_dm* dm = ibv_alloc_dm(b.ctx, &attr);
    REQUIRE(dm != nullptr);
    const int access = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    ibv_mr* dmr = ibv_reg_dm_mr(b.pd, dm, 0, 4096, access);
    REQUIRE(dmr != nullptr);
    std::vector<std::uint8_t> local(4096);
    for (std::size_t i = 0; i < local.size(); ++i)
        local[i] = static_cast<std::uint8_t>(i * 7 + 1);
    ibv_mr* lmr = ibv_reg_mr(a.pd, local.data(), local.size(), access & ~IBV_ACCESS_ZERO_BASED);
    REQUIRE(lmr != nullptr);
    const auto at = [&](std::size_t off) { return reinterpret_cast<std::uint64_t>(&local[off]); };

    ibv_sge sge{at(0), 2048, lmr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = 1024; // zero-based: DM byte 1024
    wr.wr.rdma.rkey = dmr->rkey;
    CHECK(run(qa, wr).status == IBV_WC_SUCCESS);
    std::vector<std::uint8_t> got(2048);
    REQUIRE(ibv_memcpy_from_dm(got.data(), dm, 1024, got.size()) == 0);
    CHECK(std::equal(got.begin(), got.end(), local.begin()));

    sge = {at(2048), 2048, lmr->lkey};
    wr.opcode = IBV_WR_RDMA_READ;
    CHECK(run(qa, wr).status == IBV_WC_SUCCESS);
    CHECK(std::equal(got.begin(), got.end(), local.begin() + 2048));

    const std::uint64_t five = 5;
    REQUIRE(ibv_memcpy_to_dm(dm, 8, &five, 8) == 0);
    sge = {at(0), 8, lmr->lkey};
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.wr.atomic.remote_addr = 8;
    wr.wr.atomic.rkey = dmr->rkey;
    wr.wr.atomic.compare_add = 10;
    CHECK(run(qa, wr).status == IBV_WC_SUCCESS);
    std::uint64_t word = 0;
    REQUIRE(ibv_memcpy_from_dm(&word, dm, 8, 8) == 0);
    CHECK(word == 15);

    CHECK(ibv_dereg_mr(lmr) == 0);
    CHECK(ibv_dereg_mr(dmr) == 0);
    CHECK(ibv_free_dm(dm) == 0);
}
