// Memory windows through the verbs (device/README.md, "Memory windows"):
// type 1 windows bound with ibv_bind_mw, type 2 windows bound with
// IBV_WR_BIND_MW, used by RDMA WRITE and READ from a second RC QP of the
// device (the packets loop back through the port), invalidated locally,
// remotely (SEND with invalidate) and by a zero-length bind; bounds, access,
// the QP a type 2 window belongs to, and binds the HCA refuses.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "tests/device/ib_qp_helpers.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

constexpr int kQpAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
constexpr std::size_t kLen = 4096;

// The one completion of `cq` (its status and opcode checked by the caller).
ibv_wc one(ibv_cq* cq) {
    const auto wcs = wait_for(cq, 1);
    REQUIRE(wcs.size() == 1);
    return wcs[0];
}

// Two connected RC QPs: `a` the requester, `b` the window's owner; b's
// buffer is registered for binding only (no remote access of its own).
struct Pair {
    explicit Pair(int mr_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND,
                  ibv_qp_type type = IBV_QPT_RC)
        : a(fx.pd, type, 16), b(fx.pd, type, 16), local(kLen, 0), remote(kLen, 0) {
        connect_to_own_gid(a, b, fx.ctx, kQpAccess, 10);
        connect_to_own_gid(b, a, fx.ctx, kQpAccess, 10);
        local_mr = ibv_reg_mr(fx.pd, local.data(), kLen, IBV_ACCESS_LOCAL_WRITE);
        remote_mr = ibv_reg_mr(fx.pd, remote.data(), kLen, mr_access);
        REQUIRE(local_mr != nullptr);
        REQUIRE(remote_mr != nullptr);
        for (std::size_t i = 0; i < kLen; ++i)
            local[i] = static_cast<std::uint8_t>(i * 7 + 1);
    }
    ~Pair() {
        if (remote_mr) CHECK(ibv_dereg_mr(remote_mr) == 0);
        CHECK(ibv_dereg_mr(local_mr) == 0);
    }
    std::uint64_t raddr(std::size_t at) const {
        return reinterpret_cast<std::uint64_t>(remote.data() + at);
    }

    // a's RDMA WRITE or READ of `len` bytes at remote offset `at` with `rkey`: its completion.
    ibv_wc rdma(ibv_wr_opcode op, std::uint32_t rkey, std::size_t at, std::uint32_t len) {
        ibv_sge s{reinterpret_cast<std::uint64_t>(local.data()), len, local_mr->lkey};
        ibv_send_wr wr{};
        wr.wr_id = 7;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = op;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma.remote_addr = raddr(at);
        wr.wr.rdma.rkey = rkey;
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(a.qp, &wr, &bad) == 0);
        return one(a.cq);
    }
    // A type 2 bind posted on `qp`: the new rkey (key byte `key`), or 0 if the post failed.
    std::uint32_t bind2(ibv_qp* qp, ibv_mw* mw, std::uint8_t key, std::size_t at, std::uint64_t len,
                        unsigned access) {
        ibv_send_wr wr{};
        wr.wr_id = 0xb1d;
        wr.opcode = IBV_WR_BIND_MW;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.bind_mw.mw = mw;
        wr.bind_mw.rkey = (mw->rkey & ~0xffu) | key;
        wr.bind_mw.bind_info = {remote_mr, raddr(at), len, access};
        ibv_send_wr* bad = nullptr;
        return ibv_post_send(qp, &wr, &bad) == 0 ? wr.bind_mw.rkey : 0;
    }

    SimFixture fx;
    IbQp a, b;
    std::vector<std::uint8_t> local, remote;
    ibv_mr* local_mr = nullptr;
    ibv_mr* remote_mr = nullptr;
};

} // namespace

TEST_CASE("memory windows: the device reports them as mlx5 does", "[mw]") {
    SimFixture fx;
    ibv_device_attr_ex a{};
    REQUIRE(ibv_query_device_ex(fx.ctx, nullptr, &a) == 0);
    CHECK((a.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) != 0);
    CHECK((a.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0);
    CHECK((a.orig_attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A) == 0);
    CHECK((a.device_cap_flags_ex & IBV_DEVICE_MEM_WINDOW) != 0);
    CHECK(a.orig_attr.max_mw == a.orig_attr.max_mr);
}

TEST_CASE("memory windows: allocation, the PD, dealloc", "[mw]") {
    SimFixture fx;
    ibv_mw* w1 = ibv_alloc_mw(fx.pd, IBV_MW_TYPE_1);
    ibv_mw* w2 = ibv_alloc_mw(fx.pd, IBV_MW_TYPE_2);
    REQUIRE(w1 != nullptr);
    REQUIRE(w2 != nullptr);
    CHECK(w1->type == IBV_MW_TYPE_1);
    CHECK(w2->type == IBV_MW_TYPE_2);
    CHECK(w1->pd == fx.pd);
    CHECK(w1->context == fx.ctx);
    CHECK(w1->rkey != w2->rkey);
    CHECK((w1->rkey >> 8) != (w2->rkey >> 8)); // each its own key index
    CHECK(ibv_dealloc_pd(fx.pd) == EBUSY);
    CHECK(ibv_dealloc_mw(w1) == 0);
    CHECK(ibv_dealloc_mw(w2) == 0);
    errno = 0;
    CHECK(ibv_alloc_mw(fx.pd, static_cast<ibv_mw_type>(3)) == nullptr);
    CHECK(errno == EINVAL);
}

TEST_CASE("memory windows: a type 1 window grants remote WRITE and READ inside its bounds",
          "[mw]") {
    Pair p;
    ibv_mw* mw = ibv_alloc_mw(p.fx.pd, IBV_MW_TYPE_1);
    REQUIRE(mw != nullptr);
    const std::uint32_t before = mw->rkey;
    ibv_mw_bind bind{};
    bind.wr_id = 0x51;
    bind.send_flags = IBV_SEND_SIGNALED;
    bind.bind_info = {p.remote_mr, p.raddr(64), 256,
                      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
    REQUIRE(ibv_bind_mw(p.b.qp, mw, &bind) == 0);
    CHECK(mw->rkey == ibv_inc_rkey(before)); // the new key, as mlx5_bind_mw sets it
    const ibv_wc bound = one(p.b.cq);
    CHECK(bound.status == IBV_WC_SUCCESS);
    CHECK(bound.opcode == IBV_WC_BIND_MW);
    CHECK(bound.wr_id == 0x51);

    SECTION("inside the window") {
        ibv_wc wc = p.rdma(IBV_WR_RDMA_WRITE, mw->rkey, 64, 256);
        CHECK(wc.status == IBV_WC_SUCCESS);
        CHECK(std::equal(p.local.begin(), p.local.begin() + 256, p.remote.begin() + 64));
        CHECK(p.remote[63] == 0);
        CHECK(p.remote[320] == 0);
        std::fill(p.local.begin(), p.local.end(), 0);
        wc = p.rdma(IBV_WR_RDMA_READ, mw->rkey, 100, 100);
        CHECK(wc.status == IBV_WC_SUCCESS);
        CHECK(std::equal(p.remote.begin() + 100, p.remote.begin() + 200, p.local.begin()));
    }
    SECTION("one byte past the window") {
        CHECK(p.rdma(IBV_WR_RDMA_WRITE, mw->rkey, 64, 257).status == IBV_WC_REM_ACCESS_ERR);
        CHECK(p.a.qp->state == IBV_QPS_ERR);
    }
    SECTION("one byte before the window") {
        CHECK(p.rdma(IBV_WR_RDMA_READ, mw->rkey, 63, 8).status == IBV_WC_REM_ACCESS_ERR);
    }
    SECTION("the key before the bind") {
        CHECK(p.rdma(IBV_WR_RDMA_WRITE, before, 64, 8).status == IBV_WC_REM_ACCESS_ERR);
    }
    SECTION("the MR's own rkey grants nothing remote") {
        CHECK(p.rdma(IBV_WR_RDMA_WRITE, p.remote_mr->rkey, 64, 8).status == IBV_WC_REM_ACCESS_ERR);
    }
    SECTION("a rebind moves the key and changes the access") {
        bind.bind_info = {p.remote_mr, p.raddr(0), kLen, IBV_ACCESS_REMOTE_READ};
        REQUIRE(ibv_bind_mw(p.b.qp, mw, &bind) == 0);
        CHECK(one(p.b.cq).status == IBV_WC_SUCCESS);
        CHECK(p.rdma(IBV_WR_RDMA_READ, mw->rkey, 0, 64).status == IBV_WC_SUCCESS);
        CHECK(p.rdma(IBV_WR_RDMA_WRITE, mw->rkey, 0, 64).status ==
              IBV_WC_REM_ACCESS_ERR); // read only
    }
    SECTION("a zero-length bind unbinds") {
        bind.bind_info = {p.remote_mr, 0, 0, 0};
        REQUIRE(ibv_bind_mw(p.b.qp, mw, &bind) == 0);
        CHECK(one(p.b.cq).status == IBV_WC_SUCCESS);
        CHECK(p.rdma(IBV_WR_RDMA_WRITE, mw->rkey, 64, 8).status == IBV_WC_REM_ACCESS_ERR);
    }
    SECTION("the MR deregistered under the window") {
        REQUIRE(ibv_dereg_mr(p.remote_mr) == 0);
        p.remote_mr = nullptr;
        CHECK(p.rdma(IBV_WR_RDMA_WRITE, mw->rkey, 64, 8).status == IBV_WC_REM_ACCESS_ERR);
    }
    CHECK(ibv_dealloc_mw(mw) == 0);
}

TEST_CASE("memory windows: type 2, bound to its QP, invalidated locally and remotely", "[mw]") {
    Pair p;
    ibv_mw* mw = ibv_alloc_mw(p.fx.pd, IBV_MW_TYPE_2);
    REQUIRE(mw != nullptr);
    const std::uint32_t rkey = p.bind2(p.b.qp, mw, 0x5a, 0, kLen, IBV_ACCESS_REMOTE_WRITE);
    REQUIRE(rkey == ((mw->rkey & ~0xffu) | 0x5a));
    const ibv_wc bound = one(p.b.cq);
    CHECK(bound.status == IBV_WC_SUCCESS);
    CHECK(bound.opcode == IBV_WC_BIND_MW);
    CHECK(bound.wr_id == 0xb1d);
    CHECK(p.rdma(IBV_WR_RDMA_WRITE, rkey, 8, 32).status == IBV_WC_SUCCESS);
    CHECK(std::equal(p.local.begin(), p.local.begin() + 32, p.remote.begin() + 8));

    SECTION("another QP of the PD may not use it") {
        IbQp c(p.fx.pd, IBV_QPT_RC, 4), d(p.fx.pd, IBV_QPT_RC, 4);
        connect_to_own_gid(c, d, p.fx.ctx, kQpAccess, 10);
        connect_to_own_gid(d, c, p.fx.ctx, kQpAccess, 10);
        ibv_sge s{reinterpret_cast<std::uint64_t>(p.local.data()), 8, p.local_mr->lkey};
        ibv_send_wr wr{};
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr.rdma = {p.raddr(0), rkey};
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(c.qp, &wr, &bad) == 0);
        CHECK(one(c.cq).status == IBV_WC_REM_ACCESS_ERR);
    }
    SECTION("no READ access was granted") {
        CHECK(p.rdma(IBV_WR_RDMA_READ, rkey, 0, 8).status == IBV_WC_REM_ACCESS_ERR);
    }
    SECTION("a second bind of a bound type 2 window fails, and the QP with it") {
        CHECK(p.bind2(p.b.qp, mw, 0x5b, 0, 64, IBV_ACCESS_REMOTE_WRITE) != 0);
        const ibv_wc wc = one(p.b.cq);
        CHECK(wc.status == IBV_WC_MW_BIND_ERR);
        CHECK(wc.opcode == IBV_WC_BIND_MW);
        CHECK(p.b.qp->state == IBV_QPS_ERR);
    }
    SECTION("LOCAL_INV by its QP") {
        ibv_send_wr wr{};
        wr.wr_id = 0x1e;
        wr.opcode = IBV_WR_LOCAL_INV;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.invalidate_rkey = rkey;
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(p.b.qp, &wr, &bad) == 0);
        const ibv_wc wc = one(p.b.cq);
        CHECK(wc.status == IBV_WC_SUCCESS);
        CHECK(wc.opcode == IBV_WC_LOCAL_INV);
        CHECK(wc.wr_id == 0x1e);
        CHECK(p.rdma(IBV_WR_RDMA_WRITE, rkey, 8, 32).status == IBV_WC_REM_ACCESS_ERR);
    }
    SECTION("LOCAL_INV by another QP fails") {
        ibv_send_wr wr{};
        wr.opcode = IBV_WR_LOCAL_INV;
        wr.invalidate_rkey = rkey; // unsignalled: an error completes all the same
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(p.a.qp, &wr, &bad) == 0);
        CHECK(one(p.a.cq).status == IBV_WC_MW_BIND_ERR);
        CHECK(p.a.qp->state == IBV_QPS_ERR);
    }
    SECTION("SEND with invalidate from the peer, then rebind with a new key") {
        std::vector<std::uint8_t> rbuf(64);
        ibv_mr* rmr = ibv_reg_mr(p.fx.pd, rbuf.data(), rbuf.size(), IBV_ACCESS_LOCAL_WRITE);
        REQUIRE(rmr != nullptr);
        ibv_sge rs{reinterpret_cast<std::uint64_t>(rbuf.data()), 64, rmr->lkey};
        ibv_recv_wr rwr{};
        rwr.wr_id = 0x7ec;
        rwr.sg_list = &rs;
        rwr.num_sge = 1;
        ibv_recv_wr* rbad = nullptr;
        REQUIRE(ibv_post_recv(p.b.qp, &rwr, &rbad) == 0);
        ibv_sge s{reinterpret_cast<std::uint64_t>(p.local.data()), 16, p.local_mr->lkey};
        ibv_send_wr wr{};
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND_WITH_INV;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.invalidate_rkey = rkey;
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(p.a.qp, &wr, &bad) == 0);
        const ibv_wc sent = one(p.a.cq);
        CHECK(sent.status == IBV_WC_SUCCESS);
        CHECK(sent.opcode == IBV_WC_SEND);
        const ibv_wc got = one(p.b.cq);
        CHECK(got.status == IBV_WC_SUCCESS);
        CHECK(got.opcode == IBV_WC_RECV);
        CHECK(got.wr_id == 0x7ec);
        CHECK(got.byte_len == 16);
        CHECK((got.wc_flags & IBV_WC_WITH_INV) != 0);
        CHECK((got.wc_flags & IBV_WC_WITH_IMM) == 0);
        CHECK(got.invalidated_rkey == rkey);
        CHECK(std::equal(p.local.begin(), p.local.begin() + 16, rbuf.begin()));
        CHECK(p.rdma(IBV_WR_RDMA_WRITE, rkey, 8, 32).status == IBV_WC_REM_ACCESS_ERR);
        CHECK(ibv_dereg_mr(rmr) == 0);
    }
    SECTION("the window deallocated") {
        REQUIRE(ibv_dealloc_mw(mw) == 0);
        mw = nullptr;
        CHECK(p.rdma(IBV_WR_RDMA_WRITE, rkey, 8, 32).status == IBV_WC_REM_ACCESS_ERR);
    }
    if (mw) CHECK(ibv_dealloc_mw(mw) == 0);
}

TEST_CASE("memory windows: a UC WRITE through a type 2 window, dropped outside it", "[mw]") {
    Pair p(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, IBV_QPT_UC);
    ibv_mw* mw = ibv_alloc_mw(p.fx.pd, IBV_MW_TYPE_2);
    REQUIRE(mw != nullptr);
    const std::uint32_t rkey = p.bind2(p.b.qp, mw, 0x33, 128, 128, IBV_ACCESS_REMOTE_WRITE);
    REQUIRE(rkey != 0);
    CHECK(one(p.b.cq).opcode == IBV_WC_BIND_MW);
    CHECK(p.rdma(IBV_WR_RDMA_WRITE, rkey, 128, 128).status == IBV_WC_SUCCESS);
    CHECK(std::equal(p.local.begin(), p.local.begin() + 128, p.remote.begin() + 128));
    std::fill(p.remote.begin(), p.remote.end(), 0);
    // UC has no NAK: the sender completes, the receiver drops the WRITE.
    CHECK(p.rdma(IBV_WR_RDMA_WRITE, rkey, 200, 128).status == IBV_WC_SUCCESS);
    CHECK(std::all_of(p.remote.begin(), p.remote.end(), [](std::uint8_t v) { return v == 0; }));
    {
        std::lock_guard lock(p.fx.device().port.mutex());
        CHECK(p.fx.device()
                  .port.roce()
                  .qp_counters()
                  ->rx[static_cast<std::size_t>(datapath::RoceRx::remote_access)]
                  .get() == 1);
    }
    CHECK(ibv_dealloc_mw(mw) == 0);
}

TEST_CASE("memory windows: a SEND with invalidate naming no window of the QP is an invalid request",
          "[mw]") {
    Pair p;
    std::vector<std::uint8_t> rbuf(64);
    ibv_mr* rmr = ibv_reg_mr(p.fx.pd, rbuf.data(), rbuf.size(), IBV_ACCESS_LOCAL_WRITE);
    REQUIRE(rmr != nullptr);
    ibv_sge rs{reinterpret_cast<std::uint64_t>(rbuf.data()), 64, rmr->lkey};
    ibv_recv_wr rwr{};
    rwr.sg_list = &rs;
    rwr.num_sge = 1;
    ibv_recv_wr* rbad = nullptr;
    REQUIRE(ibv_post_recv(p.b.qp, &rwr, &rbad) == 0);
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND_WITH_INV;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.invalidate_rkey = p.remote_mr->rkey; // an MR: not invalidatable
    ibv_send_wr* bad = nullptr;
    REQUIRE(ibv_post_send(p.a.qp, &wr, &bad) == 0);
    CHECK(one(p.a.cq).status == IBV_WC_REM_INV_REQ_ERR);
    CHECK(one(p.b.cq).status == IBV_WC_REM_INV_REQ_ERR);
    CHECK(p.b.qp->state == IBV_QPS_ERR);
    CHECK(ibv_dereg_mr(rmr) == 0);
}

TEST_CASE("memory windows: binds the HCA refuses complete with IBV_WC_MW_BIND_ERR", "[mw]") {
    const auto refused = [](Pair& p, ibv_mw* mw, std::size_t at, std::uint64_t len,
                            unsigned access) {
        REQUIRE(p.bind2(p.b.qp, mw, 1, at, len, access) != 0);
        // A WR after it never runs: it is flushed.
        ibv_send_wr next{};
        next.wr_id = 2;
        next.opcode = IBV_WR_SEND;
        next.send_flags = IBV_SEND_SIGNALED;
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(p.b.qp, &next, &bad) == 0);
        const auto wcs = wait_for(p.b.cq, 2);
        REQUIRE(wcs.size() == 2);
        CHECK(wcs[0].status == IBV_WC_MW_BIND_ERR);
        CHECK(wcs[0].opcode == IBV_WC_BIND_MW);
        CHECK(wcs[1].status == IBV_WC_WR_FLUSH_ERR);
        CHECK(p.b.qp->state == IBV_QPS_ERR);
    };
    SECTION("an MR without IBV_ACCESS_MW_BIND") {
        Pair p(IBV_ACCESS_LOCAL_WRITE);
        ibv_mw* mw = ibv_alloc_mw(p.fx.pd, IBV_MW_TYPE_2);
        refused(p, mw, 0, 64, IBV_ACCESS_REMOTE_READ);
        CHECK(ibv_dealloc_mw(mw) == 0);
    }
    SECTION("a range past the MR") {
        Pair p;
        ibv_mw* mw = ibv_alloc_mw(p.fx.pd, IBV_MW_TYPE_2);
        refused(p, mw, kLen - 8, 16, IBV_ACCESS_REMOTE_READ);
        CHECK(ibv_dealloc_mw(mw) == 0);
    }
    SECTION("remote write over an MR without local write") {
        Pair p(IBV_ACCESS_MW_BIND);
        ibv_mw* mw = ibv_alloc_mw(p.fx.pd, IBV_MW_TYPE_2);
        refused(p, mw, 0, 64, IBV_ACCESS_REMOTE_WRITE);
        CHECK(ibv_dealloc_mw(mw) == 0);
    }
    SECTION("a window of another PD") {
        Pair p;
        ibv_pd* other = ibv_alloc_pd(p.fx.ctx);
        REQUIRE(other != nullptr);
        ibv_mw* mw = ibv_alloc_mw(other, IBV_MW_TYPE_2);
        refused(p, mw, 0, 64, IBV_ACCESS_REMOTE_READ);
        CHECK(ibv_dealloc_mw(mw) == 0);
        CHECK(ibv_dealloc_pd(other) == 0);
    }
}

TEST_CASE("memory windows: extended QPs bind, invalidate and send with invalidate", "[mw][qp_ex]") {
    SimFixture fx;
    const auto make = [&](ibv_cq_ex*& cq) {
        ibv_cq_init_attr_ex ca{};
        ca.cqe = 16;
        ca.wc_flags = IBV_WC_STANDARD_FLAGS;
        cq = ibv_create_cq_ex(fx.ctx, &ca);
        REQUIRE(cq != nullptr);
        ibv_qp_init_attr_ex a{};
        a.qp_type = IBV_QPT_RC;
        a.send_cq = a.recv_cq = ibv_cq_ex_to_cq(cq);
        a.cap.max_send_wr = a.cap.max_recv_wr = 8;
        a.cap.max_send_sge = a.cap.max_recv_sge = 1;
        a.pd = fx.pd;
        a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        a.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_BIND_MW |
                           IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_SEND_WITH_INV;
        ibv_qp* qp = ibv_create_qp_ex(fx.ctx, &a);
        REQUIRE(qp != nullptr);
        return qp;
    };
    ibv_cq_ex *cqa = nullptr, *cqb = nullptr;
    ibv_qp* qa = make(cqa);
    ibv_qp* qb = make(cqb);
    {
        // IbQp's connect walks a QP it owns; these are created here, so walk them by hand.
        ibv_gid own{};
        REQUIRE(ibv_query_gid(fx.ctx, 1, 0, &own) == 0);
        for (auto [x, y] : {std::pair{qa, qb}, std::pair{qb, qa}}) {
            ibv_qp_attr at = good_attr(IBV_QPS_INIT);
            at.qp_access_flags = kQpAccess;
            REQUIRE(ibv_modify_qp(x, &at, init_mask(IBV_QPT_RC)) == 0);
            at = good_attr(IBV_QPS_RTR);
            at.ah_attr.grh.dgid = own;
            at.dest_qp_num = y->qp_num;
            at.rq_psn = 0x100;
            REQUIRE(ibv_modify_qp(x, &at, rtr_mask(IBV_QPT_RC)) == 0);
            at = good_attr(IBV_QPS_RTS);
            at.sq_psn = 0x100;
            REQUIRE(ibv_modify_qp(x, &at, rts_mask(IBV_QPT_RC)) == 0);
        }
    }
    std::vector<std::uint8_t> buf(256), src(64, 0x3c);
    ibv_mr* mr =
        ibv_reg_mr(fx.pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
    ibv_mr* smr = ibv_reg_mr(fx.pd, src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
    REQUIRE(mr != nullptr);
    REQUIRE(smr != nullptr);
    ibv_mw* mw = ibv_alloc_mw(fx.pd, IBV_MW_TYPE_2);
    REQUIRE(mw != nullptr);
    const auto poll1 = [&](ibv_cq_ex* cq, std::uint32_t* inv = nullptr) {
        ibv_poll_cq_attr pa{};
        int r = ENOENT;
        for (int i = 0; i < 100000 && r == ENOENT; ++i)
            r = ibv_start_poll(cq, &pa);
        REQUIRE(r == 0);
        const ibv_wc_status st = cq->status;
        const ibv_wc_opcode op = ibv_wc_read_opcode(cq);
        if (inv && (ibv_wc_read_wc_flags(cq) & IBV_WC_WITH_INV))
            *inv = ibv_wc_read_invalidated_rkey(cq);
        ibv_end_poll(cq);
        return std::pair{st, op};
    };
    ibv_qp_ex* xb = ibv_qp_to_qp_ex(qb);
    ibv_qp_ex* xa = ibv_qp_to_qp_ex(qa);
    REQUIRE(xa != nullptr);
    REQUIRE(xb != nullptr);
    const std::uint32_t rkey = ibv_inc_rkey(mw->rkey);
    const ibv_mw_bind_info info{mr, reinterpret_cast<std::uint64_t>(buf.data()), buf.size(),
                                IBV_ACCESS_REMOTE_WRITE};
    ibv_wr_start(xb);
    xb->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_bind_mw(xb, mw, rkey, &info);
    REQUIRE(ibv_wr_complete(xb) == 0);
    CHECK(poll1(cqb) == std::pair{IBV_WC_SUCCESS, IBV_WC_BIND_MW});

    ibv_wr_start(xa);
    xa->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_rdma_write(xa, rkey, reinterpret_cast<std::uint64_t>(buf.data()) + 16);
    ibv_wr_set_sge(xa, smr->lkey, reinterpret_cast<std::uint64_t>(src.data()), 64);
    REQUIRE(ibv_wr_complete(xa) == 0);
    CHECK(poll1(cqa) == std::pair{IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE});
    CHECK(buf[16] == 0x3c);
    CHECK(buf[80] == 0);

    // The peer invalidates it with a SEND; the receive names the key.
    std::vector<std::uint8_t> rbuf(64);
    ibv_mr* rmr = ibv_reg_mr(fx.pd, rbuf.data(), rbuf.size(), IBV_ACCESS_LOCAL_WRITE);
    REQUIRE(rmr != nullptr);
    ibv_sge rs{reinterpret_cast<std::uint64_t>(rbuf.data()), 64, rmr->lkey};
    ibv_recv_wr rwr{};
    rwr.sg_list = &rs;
    rwr.num_sge = 1;
    ibv_recv_wr* rbad = nullptr;
    REQUIRE(ibv_post_recv(qb, &rwr, &rbad) == 0);
    ibv_wr_start(xa);
    xa->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_send_inv(xa, rkey);
    ibv_wr_set_sge(xa, smr->lkey, reinterpret_cast<std::uint64_t>(src.data()), 8);
    REQUIRE(ibv_wr_complete(xa) == 0);
    CHECK(poll1(cqa) == std::pair{IBV_WC_SUCCESS, IBV_WC_SEND});
    std::uint32_t invalidated = 0;
    CHECK(poll1(cqb, &invalidated) == std::pair{IBV_WC_SUCCESS, IBV_WC_RECV});
    CHECK(invalidated == rkey);

    // Bound again (it is free now), then invalidated by its own QP.
    const std::uint32_t rkey2 = ibv_inc_rkey(rkey);
    ibv_wr_start(xb);
    xb->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_bind_mw(xb, mw, rkey2, &info);
    ibv_wr_local_inv(xb, rkey2);
    REQUIRE(ibv_wr_complete(xb) == 0);
    CHECK(poll1(cqb) == std::pair{IBV_WC_SUCCESS, IBV_WC_BIND_MW});
    CHECK(poll1(cqb) == std::pair{IBV_WC_SUCCESS, IBV_WC_LOCAL_INV});

    CHECK(ibv_dealloc_mw(mw) == 0);
    CHECK(ibv_dereg_mr(rmr) == 0);
    CHECK(ibv_dereg_mr(smr) == 0);
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(ibv_destroy_qp(qa) == 0);
    CHECK(ibv_destroy_qp(qb) == 0);
    CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqa)) == 0);
    CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqb)) == 0);
}
