// Device memory (device/README.md, "Device memory"): the limits
// ibv_query_device_ex reports and ibv_alloc_dm enforces, mlx5's errnos for
// bad sizes, masks, offsets and access bits, the memcpy ops, and MRs on DM
// used locally (SGEs with the DM MR's lkey, zero-based) and by a peer's
// RDMA READ, WRITE and atomics through its rkey, over RC loopback.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cstring>
#include <vector>

#include "device/dm.hpp"
#include "tests/device/ib_qp_helpers.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

constexpr int kDmAccess = IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                          IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

ibv_dm* alloc(ibv_context* ctx, std::size_t length, std::uint32_t log_align = 0,
              std::uint32_t comp_mask = 0) {
    ibv_alloc_dm_attr a{};
    a.length = length;
    a.log_align_req = log_align;
    a.comp_mask = comp_mask;
    errno = 0;
    return ibv_alloc_dm(ctx, &a);
}

constexpr int kAllRemote = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

// Posts one signalled WR on `qp` and returns its completion.
ibv_wc run(IbQp& qp, ibv_send_wr wr) {
    wr.send_flags |= IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    REQUIRE(ibv_post_send(qp.qp, &wr, &bad) == 0);
    const auto wc = wait_for(qp.cq, 1);
    REQUIRE(wc.size() == 1);
    return wc[0];
}

ibv_send_wr remote_wr(ibv_wr_opcode op, ibv_sge* sge, std::uint64_t remote, std::uint32_t rkey) {
    ibv_send_wr wr{};
    wr.opcode = op;
    wr.sg_list = sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = rkey;
    return wr;
}

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::uint8_t>(seed + i * 13);
    return v;
}

} // namespace

TEST_CASE("ibv_query_device_ex reports a ConnectX's 128 KiB of device memory", "[dm]") {
    SimFixture fx;
    ibv_device_attr_ex attr{};
    REQUIRE(ibv_query_device_ex(fx.ctx, nullptr, &attr) == 0);
    CHECK(attr.max_dm_size == 128 * 1024);
}

TEST_CASE("ibv_alloc_dm: EINVAL for a comp_mask, length 0 or above max_dm_size, a large alignment",
          "[dm]") {
    SimFixture fx;
    CHECK(alloc(fx.ctx, 64, 0, 1) == nullptr);
    CHECK(errno == EINVAL);
    CHECK(alloc(fx.ctx, 0) == nullptr);
    CHECK(errno == EINVAL);
    CHECK(alloc(fx.ctx, device::kMaxDmSize + 1) == nullptr);
    CHECK(errno == EINVAL);
    CHECK(alloc(fx.ctx, 64, 13) == nullptr);
    CHECK(errno == EINVAL);
    ibv_dm* dm = alloc(fx.ctx, device::kMaxDmSize, 12);
    REQUIRE(dm != nullptr);
    CHECK(dm->context == fx.ctx);
    CHECK((dm->comp_mask & IBV_DM_MASK_HANDLE) != 0);
    CHECK(ibv_free_dm(dm) == 0);
}

TEST_CASE("ibv_alloc_dm: a DM takes whole 4 KiB pages; ENOMEM once the BAR is full", "[dm]") {
    SimFixture fx;
    std::vector<ibv_dm*> dms;
    for (std::uint32_t i = 0; i < device::kDmPages; ++i) {
        dms.push_back(alloc(fx.ctx, 100)); // 100 bytes: a page each
        REQUIRE(dms.back() != nullptr);
    }
    CHECK(alloc(fx.ctx, 4) == nullptr);
    CHECK(errno == ENOMEM);
    REQUIRE(ibv_free_dm(dms.back()) == 0);
    dms.back() = alloc(fx.ctx, 4096); // the freed page serves again
    CHECK(dms.back() != nullptr);
    CHECK(alloc(fx.ctx, 4) == nullptr);
    CHECK(errno == ENOMEM);
    for (ibv_dm* dm : dms)
        if (dm != nullptr) CHECK(ibv_free_dm(dm) == 0);
    ibv_dm* whole = alloc(fx.ctx, device::kMaxDmSize);
    CHECK(whole != nullptr);
    if (whole != nullptr) CHECK(ibv_free_dm(whole) == 0);
}

TEST_CASE("ibv_memcpy_to_dm / _from_dm: round trips; EINVAL unaligned, EFAULT outside the DM",
          "[dm]") {
    SimFixture fx;
    ibv_dm* dm = alloc(fx.ctx, 100);
    REQUIRE(dm != nullptr);
    const auto data = pattern(96, 5);
    REQUIRE(ibv_memcpy_to_dm(dm, 4, data.data(), data.size()) == 0);
    std::vector<std::uint8_t> back(96);
    REQUIRE(ibv_memcpy_from_dm(back.data(), dm, 4, back.size()) == 0);
    CHECK(back == data);
    std::vector<std::uint8_t> head(4, 0xff);
    REQUIRE(ibv_memcpy_from_dm(head.data(), dm, 0, 4) == 0);
    CHECK(head == std::vector<std::uint8_t>(4, 0)); // a new DM reads as zeros

    CHECK(ibv_memcpy_to_dm(dm, 1, data.data(), 4) == EINVAL); // offset not a multiple of 4
    CHECK(ibv_memcpy_to_dm(dm, 4, data.data(), 3) == EINVAL); // nor the length
    CHECK(ibv_memcpy_from_dm(back.data(), dm, 2, 4) == EINVAL);
    CHECK(ibv_memcpy_to_dm(dm, 104, data.data(), 4) == EFAULT); // past the end
    CHECK(ibv_memcpy_to_dm(dm, 0, back.data(), 104) == EFAULT);
    CHECK(ibv_memcpy_from_dm(back.data(), dm, 100, 4) == EFAULT);
    CHECK(ibv_memcpy_from_dm(back.data(), dm, ~0ull - 3, 8) == EFAULT); // no wrap-around
    REQUIRE(ibv_memcpy_from_dm(back.data(), dm, 4, back.size()) == 0);
    CHECK(back == data); // the refused copies wrote nothing
    CHECK(ibv_free_dm(dm) == 0);
}

TEST_CASE("ibv_reg_dm_mr: mlx5's EINVALs; the DM and PD are busy while the MR lives", "[dm]") {
    SimFixture fx;
    ibv_dm* dm = alloc(fx.ctx, 100);
    REQUIRE(dm != nullptr);
    const auto refused = [&](std::uint64_t off, std::size_t len, unsigned access) {
        errno = 0;
        ibv_mr* mr = ibv_reg_dm_mr(fx.pd, dm, off, len, access);
        if (mr != nullptr) ibv_dereg_mr(mr);
        return mr == nullptr && errno == EINVAL;
    };
    CHECK(refused(0, 100, IBV_ACCESS_LOCAL_WRITE));                          // not zero-based
    CHECK(refused(0, 100, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_MW_BIND));      // not a DM bit
    CHECK(refused(0, 100, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_WRITE)); // no local write
    CHECK(refused(0, 104, kDmAccess));                                       // longer than the DM
    CHECK(refused(52, 52, kDmAccess));                                       // ends past it
    CHECK(refused(104, 0, kDmAccess));                                       // starts past it

    ibv_mr* mr = ibv_reg_dm_mr(fx.pd, dm, 4, 96, kDmAccess);
    REQUIRE(mr != nullptr);
    CHECK(mr->addr == nullptr); // zero-based
    CHECK(mr->length == 96);
    CHECK(mr->pd == fx.pd);
    CHECK(mr->lkey == mr->rkey);
    CHECK(ibv_free_dm(dm) == EBUSY);
    CHECK(ibv_dealloc_pd(fx.pd) == EBUSY);
    errno = 0;
    CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, kDmAccess) ==
          IBV_REREG_MR_ERR_INPUT);
    CHECK(errno == EINVAL);
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(ibv_free_dm(dm) == 0);
}

TEST_CASE("DM MR locally: a SEND gathers from DM and scatters into DM, zero-based", "[dm]") {
    SimFixture fx;
    IbQp a(fx.pd, IBV_QPT_RC, 16), b(fx.pd, IBV_QPT_RC, 16);
    connect_to_own_gid(a, b, fx.ctx, kAllRemote, 10);
    connect_to_own_gid(b, a, fx.ctx, kAllRemote, 10);
    ibv_dm* src = alloc(fx.ctx, 4096);
    ibv_dm* dst = alloc(fx.ctx, 4096);
    REQUIRE((src != nullptr && dst != nullptr));
    const auto data = pattern(2000, 9);
    REQUIRE(ibv_memcpy_to_dm(src, 0, data.data(), data.size()) == 0);
    ibv_mr* smr = ibv_reg_dm_mr(fx.pd, src, 0, 4096, kDmAccess);
    ibv_mr* dmr = ibv_reg_dm_mr(fx.pd, dst, 1024, 3072, kDmAccess); // MR address 0 = DM byte 1024
    REQUIRE((smr != nullptr && dmr != nullptr));

    ibv_sge rsge{16, 3000, dmr->lkey};
    ibv_recv_wr r{};
    r.sg_list = &rsge;
    r.num_sge = 1;
    ibv_recv_wr* bad_r = nullptr;
    REQUIRE(ibv_post_recv(b.qp, &r, &bad_r) == 0);
    ibv_sge ssge{0, 2000, smr->lkey};
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND;
    wr.sg_list = &ssge;
    wr.num_sge = 1;
    CHECK(run(a, wr).status == IBV_WC_SUCCESS);
    const auto rx = wait_for(b.cq, 1);
    REQUIRE(rx.size() == 1);
    CHECK(rx[0].status == IBV_WC_SUCCESS);
    CHECK(rx[0].byte_len == 2000);
    std::vector<std::uint8_t> got(2000);
    REQUIRE(ibv_memcpy_from_dm(got.data(), dst, 1024 + 16, got.size()) == 0);
    CHECK(got == data);

    ssge = {4000, 200, smr->lkey}; // past the MR's 4096 bytes: a local protection error
    const ibv_wc wc = run(a, wr);
    CHECK(wc.status == IBV_WC_LOC_PROT_ERR);
    CHECK(ibv_dereg_mr(smr) == 0);
    CHECK(ibv_dereg_mr(dmr) == 0);
    CHECK(ibv_free_dm(src) == 0);
    CHECK(ibv_free_dm(dst) == 0);
}

TEST_CASE("DM MR remotely: a peer's WRITE, READ and atomics reach it through the rkey", "[dm]") {
    SimFixture fx;
    IbQp a(fx.pd, IBV_QPT_RC, 16), b(fx.pd, IBV_QPT_RC, 16);
    connect_to_own_gid(a, b, fx.ctx, kAllRemote, 10);
    connect_to_own_gid(b, a, fx.ctx, kAllRemote, 10);
    std::vector<std::uint8_t> local = pattern(4096, 21);
    ibv_mr* lmr = ibv_reg_mr(fx.pd, local.data(), local.size(), kDmAccess & ~IBV_ACCESS_ZERO_BASED);
    ibv_dm* dm = alloc(fx.ctx, 8192);
    REQUIRE((lmr != nullptr && dm != nullptr));
    ibv_mr* mr = ibv_reg_dm_mr(fx.pd, dm, 4096, 4096, kDmAccess);
    REQUIRE(mr != nullptr);
    const auto at = [&](std::size_t off) {
        return reinterpret_cast<std::uint64_t>(local.data() + off);
    };

    ibv_sge s{at(0), 3000, lmr->lkey};
    CHECK(run(a, remote_wr(IBV_WR_RDMA_WRITE, &s, 100, mr->rkey)).status == IBV_WC_SUCCESS);
    std::vector<std::uint8_t> got(3000);
    REQUIRE(ibv_memcpy_from_dm(got.data(), dm, 4096 + 100, got.size()) == 0);
    CHECK(std::equal(got.begin(), got.end(), local.begin()));

    const auto back = pattern(1000, 77);
    REQUIRE(ibv_memcpy_to_dm(dm, 4096 + 2000, back.data(), back.size()) == 0);
    s = {at(3000), 1000, lmr->lkey};
    CHECK(run(a, remote_wr(IBV_WR_RDMA_READ, &s, 2000, mr->rkey)).status == IBV_WC_SUCCESS);
    CHECK(std::equal(back.begin(), back.end(), local.begin() + 3000));

    const std::uint64_t forty = 40;
    REQUIRE(ibv_memcpy_to_dm(dm, 4096 + 8, &forty, 8) == 0);
    s = {at(0), 8, lmr->lkey};
    ibv_send_wr fa = remote_wr(IBV_WR_ATOMIC_FETCH_AND_ADD, &s, 0, 0);
    fa.wr.atomic.remote_addr = 8;
    fa.wr.atomic.rkey = mr->rkey;
    fa.wr.atomic.compare_add = 2;
    CHECK(run(a, fa).status == IBV_WC_SUCCESS);
    std::uint64_t word = 0;
    std::memcpy(&word, local.data(), 8);
    CHECK(word == 40);
    REQUIRE(ibv_memcpy_from_dm(&word, dm, 4096 + 8, 8) == 0);
    CHECK(word == 42);

    CHECK(run(a, remote_wr(IBV_WR_RDMA_WRITE, &s, 4092, mr->rkey)).status ==
          IBV_WC_REM_ACCESS_ERR); // 8 bytes from 4092 end past the MR
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(ibv_dereg_mr(lmr) == 0);
    CHECK(ibv_free_dm(dm) == 0);
}

TEST_CASE("DM MR remotely: no remote write, or deregistered, is a remote access error", "[dm]") {
    SimFixture fx;
    std::vector<std::uint8_t> local = pattern(64, 3);
    ibv_mr* lmr = ibv_reg_mr(fx.pd, local.data(), local.size(), int{IBV_ACCESS_LOCAL_WRITE});
    ibv_dm* dm = alloc(fx.ctx, 64);
    REQUIRE((lmr != nullptr && dm != nullptr));
    ibv_sge s{reinterpret_cast<std::uint64_t>(local.data()), 64, lmr->lkey};
    {
        IbQp a(fx.pd, IBV_QPT_RC, 16), b(fx.pd, IBV_QPT_RC, 16);
        connect_to_own_gid(a, b, fx.ctx, kAllRemote, 10);
        connect_to_own_gid(b, a, fx.ctx, kAllRemote, 10);
        ibv_mr* ro =
            ibv_reg_dm_mr(fx.pd, dm, 0, 64, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_REMOTE_READ);
        REQUIRE(ro != nullptr);
        CHECK(run(a, remote_wr(IBV_WR_RDMA_READ, &s, 0, ro->rkey)).status == IBV_WC_SUCCESS);
        CHECK(run(a, remote_wr(IBV_WR_RDMA_WRITE, &s, 0, ro->rkey)).status ==
              IBV_WC_REM_ACCESS_ERR);
        CHECK(ibv_dereg_mr(ro) == 0);
    }
    IbQp a(fx.pd, IBV_QPT_RC, 16), b(fx.pd, IBV_QPT_RC, 16);
    connect_to_own_gid(a, b, fx.ctx, kAllRemote, 10);
    connect_to_own_gid(b, a, fx.ctx, kAllRemote, 10);
    ibv_mr* rw = ibv_reg_dm_mr(fx.pd, dm, 0, 64, kDmAccess);
    REQUIRE(rw != nullptr);
    const std::uint32_t rkey = rw->rkey;
    CHECK(run(a, remote_wr(IBV_WR_RDMA_WRITE, &s, 0, rkey)).status == IBV_WC_SUCCESS);
    CHECK(ibv_dereg_mr(rw) == 0);
    CHECK(run(a, remote_wr(IBV_WR_RDMA_WRITE, &s, 0, rkey)).status == IBV_WC_REM_ACCESS_ERR);
    CHECK(ibv_dereg_mr(lmr) == 0);
    CHECK(ibv_free_dm(dm) == 0);
}
