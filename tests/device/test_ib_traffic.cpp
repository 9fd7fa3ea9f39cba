// RC, UC and UD traffic through the verbs, between two QPs of one device:
// their packets loop back through the port's RoCE side (device/README.md,
// "RC, UC and UD queue pairs", "The transport"). What a program sees:
// data placed, completions with their opcodes, immediates, GRHs and
// statuses, async events, a QP moved to ERR by a remote error.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <infiniband/verbs.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "tests/device/ib_qp_helpers.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                           IBV_ACCESS_REMOTE_ATOMIC;

struct Region {
    Region(ibv_pd* pd, std::size_t n, int access = kAllAccess) : bytes(n, 0) {
        mr = ibv_reg_mr(pd, bytes.data(), bytes.size(), access);
        REQUIRE(mr != nullptr);
    }
    ~Region() { CHECK(ibv_dereg_mr(mr) == 0); }
    Region(const Region&) = delete;
    Region& operator=(const Region&) = delete;
    ibv_sge sge(std::uint32_t len, std::size_t at = 0) {
        return {reinterpret_cast<std::uint64_t>(bytes.data() + at), len, mr->lkey};
    }
    std::uint64_t addr(std::size_t at = 0) { return reinterpret_cast<std::uint64_t>(bytes.data() + at); }
    std::vector<std::uint8_t> bytes;
    ibv_mr* mr = nullptr;
};

// Connects `a` to `b` (RC, UC) at the port's own GID 0: RESET -> RTS.
void connect(IbQp& a, IbQp& b, ibv_context* ctx, ibv_mtu mtu = IBV_MTU_1024) {
    ibv_gid own{};
    REQUIRE(ibv_query_gid(ctx, 1, 0, &own) == 0);
    const ibv_qp_type t = a.qp->qp_type;
    ibv_qp_attr at = good_attr(IBV_QPS_INIT);
    at.qp_access_flags = kAllAccess;
    REQUIRE(ibv_modify_qp(a.qp, &at, init_mask(t)) == 0);
    at = good_attr(IBV_QPS_RTR);
    at.ah_attr.grh.dgid = own;
    at.dest_qp_num = b.qp->qp_num;
    at.rq_psn = 0x100;
    at.path_mtu = mtu;
    REQUIRE(ibv_modify_qp(a.qp, &at, rtr_mask(t)) == 0);
    at = good_attr(IBV_QPS_RTS);
    at.sq_psn = 0x100;
    at.timeout = 10;
    REQUIRE(ibv_modify_qp(a.qp, &at, rts_mask(t)) == 0);
}

void post_recv(ibv_qp* qp, ibv_sge sge, std::uint64_t id) {
    ibv_recv_wr r{};
    r.wr_id = id;
    r.sg_list = &sge;
    r.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    REQUIRE(ibv_post_recv(qp, &r, &bad) == 0);
}

int post(ibv_qp* qp, ibv_send_wr wr) {
    wr.send_flags |= IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
}

void fill(std::vector<std::uint8_t>& v, std::uint8_t seed) {
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint8_t>(seed + i * 7);
}

// An AH to this port's own GID `gid_index` (0: IPv4-mapped, 1: IPv6); the
// GID in `gid`.
ibv_ah* own_ah(SimFixture& fx, int gid_index, ibv_gid& gid) {
    REQUIRE(ibv_query_gid(fx.ctx, 1, gid_index, &gid) == 0);
    ibv_ah_attr ah_attr{};
    ah_attr.is_global = 1;
    ah_attr.port_num = 1;
    ah_attr.grh.dgid = gid;
    ah_attr.grh.sgid_index = static_cast<std::uint8_t>(gid_index);
    ah_attr.grh.hop_limit = 64;
    ibv_ah* ah = ibv_create_ah(fx.pd, &ah_attr);
    REQUIRE(ah != nullptr);
    return ah;
}

// A UD SEND of `s` through `ah` to `dst`, with the QPs' Q_Key.
ibv_send_wr ud_send(ibv_sge& s, ibv_ah* ah, const IbQp& dst) {
    ibv_send_wr wr{};
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = dst.qp->qp_num;
    wr.wr.ud.remote_qkey = good_attr(IBV_QPS_RTS).qkey;
    return wr;
}

} // namespace

TEST_CASE("RC SEND: sizes below, at and above the MTU arrive whole, with their immediates",
          "[ib_traffic][rc]") {
    SimFixture fx;
    IbQp a(fx.pd, IBV_QPT_RC, 16), b(fx.pd, IBV_QPT_RC, 16);
    connect(a, b, fx.ctx);
    connect(b, a, fx.ctx);
    Region src(fx.pd, 8192), dst(fx.pd, 8192);
    fill(src.bytes, 3);
    for (const std::uint32_t len : {1u, 100u, 1024u, 1025u, 5000u}) {
        CAPTURE(len);
        std::fill(dst.bytes.begin(), dst.bytes.end(), 0);
        post_recv(b.qp, dst.sge(8192), len);
        ibv_sge s = src.sge(len);
        ibv_send_wr wr{};
        wr.wr_id = 1000 + len;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND_WITH_IMM;
        wr.imm_data = htobe32(len);
        REQUIRE(post(a.qp, wr) == 0);
        const auto rx = wait_for(b.cq, 1);
        REQUIRE(rx.size() == 1);
        CHECK(rx[0].status == IBV_WC_SUCCESS);
        CHECK(rx[0].opcode == IBV_WC_RECV);
        CHECK(rx[0].wr_id == len);
        CHECK(rx[0].byte_len == len);
        CHECK((rx[0].wc_flags & IBV_WC_WITH_IMM) != 0);
        CHECK(be32toh(rx[0].imm_data) == len);
        CHECK(rx[0].qp_num == b.qp->qp_num);
        CHECK(rx[0].sl == 0xA); // RoCE v2 over IPv4, as on every RoCE receive
        CHECK(std::equal(src.bytes.begin(), src.bytes.begin() + len, dst.bytes.begin()));
        CHECK(dst.bytes[len] == 0);
        const auto tx = wait_for(a.cq, 1);
        REQUIRE(tx.size() == 1);
        CHECK(tx[0].status == IBV_WC_SUCCESS);
        CHECK(tx[0].opcode == IBV_WC_SEND);
        CHECK(tx[0].wr_id == 1000 + len);
    }
    std::lock_guard lock(fx.device().port.mutex());
    const auto& c = fx.device().port.roce().counters();
    CHECK(c.loopback_frames.get() > 0);
    CHECK(c.unknown_qp.get() == 0);
}

TEST_CASE("RC RDMA WRITE, WRITE with immediate, READ and atomics", "[ib_traffic][rc]") {
    SimFixture fx;
    IbQp a(fx.pd, IBV_QPT_RC, 16), b(fx.pd, IBV_QPT_RC, 16);
    connect(a, b, fx.ctx);
    connect(b, a, fx.ctx);
    Region local(fx.pd, 8192), remote(fx.pd, 8192);
    fill(local.bytes, 11);
    ibv_sge s = local.sge(3000);
    ibv_send_wr wr{};
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.wr.rdma.rkey = remote.mr->rkey;

    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = remote.addr(100);
    REQUIRE(post(a.qp, wr) == 0);
    auto tx = wait_for(a.cq, 1);
    REQUIRE(tx.size() == 1);
    CHECK(tx[0].opcode == IBV_WC_RDMA_WRITE);
    CHECK(tx[0].status == IBV_WC_SUCCESS);
    CHECK(std::equal(local.bytes.begin(), local.bytes.begin() + 3000, remote.bytes.begin() + 100));
    CHECK(drain(b.cq).empty()); // a plain WRITE consumes no receive

    post_recv(b.qp, remote.sge(0, 0), 77); // WRITE with immediate: a zero-length receive
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = htobe32(0xabcdef);
    REQUIRE(post(a.qp, wr) == 0);
    const auto rx = wait_for(b.cq, 1);
    REQUIRE(rx.size() == 1);
    CHECK(rx[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
    CHECK(rx[0].wr_id == 77);
    CHECK(rx[0].byte_len == 3000);
    CHECK(be32toh(rx[0].imm_data) == 0xabcdef);
    CHECK(wait_for(a.cq, 1).size() == 1);

    std::fill(local.bytes.begin(), local.bytes.end(), 0);
    fill(remote.bytes, 99);
    wr.opcode = IBV_WR_RDMA_READ;
    wr.wr.rdma.remote_addr = remote.addr(50);
    REQUIRE(post(a.qp, wr) == 0);
    tx = wait_for(a.cq, 1);
    REQUIRE(tx.size() == 1);
    CHECK(tx[0].opcode == IBV_WC_RDMA_READ);
    CHECK(tx[0].byte_len == 3000);
    CHECK(std::equal(remote.bytes.begin() + 50, remote.bytes.begin() + 3050, local.bytes.begin()));

    std::uint64_t word = 40;
    std::memcpy(remote.bytes.data() + 8, &word, 8);
    ibv_sge eight = local.sge(8);
    wr.sg_list = &eight;
    wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
    wr.wr.atomic.remote_addr = remote.addr(8);
    wr.wr.atomic.rkey = remote.mr->rkey;
    wr.wr.atomic.compare_add = 2;
    REQUIRE(post(a.qp, wr) == 0);
    tx = wait_for(a.cq, 1);
    REQUIRE(tx.size() == 1);
    CHECK(tx[0].opcode == IBV_WC_FETCH_ADD);
    std::uint64_t got = 0;
    std::memcpy(&got, local.bytes.data(), 8);
    CHECK(got == 40);
    std::memcpy(&got, remote.bytes.data() + 8, 8);
    CHECK(got == 42);
    wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
    wr.wr.atomic.compare_add = 42;
    wr.wr.atomic.swap = 7;
    REQUIRE(post(a.qp, wr) == 0);
    tx = wait_for(a.cq, 1);
    REQUIRE(tx.size() == 1);
    CHECK(tx[0].opcode == IBV_WC_COMP_SWAP);
    std::memcpy(&got, remote.bytes.data() + 8, 8);
    CHECK(got == 7);
}

TEST_CASE("RC: a WRITE to an MR without remote write completes with IBV_WC_REM_ACCESS_ERR",
          "[ib_traffic][rc]") {
    SimFixture fx;
    const int flags = fcntl(fx.ctx->async_fd, F_GETFL);
    REQUIRE(fcntl(fx.ctx->async_fd, F_SETFL, flags | O_NONBLOCK) == 0);
    IbQp a(fx.pd, IBV_QPT_RC, 16), b(fx.pd, IBV_QPT_RC, 16);
    connect(a, b, fx.ctx);
    connect(b, a, fx.ctx);
    Region local(fx.pd, 64), remote(fx.pd, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
    ibv_sge s = local.sge(64);
    ibv_send_wr wr{};
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = remote.addr();
    wr.wr.rdma.rkey = remote.mr->rkey;
    REQUIRE(post(a.qp, wr) == 0);
    const auto tx = wait_for(a.cq, 1);
    REQUIRE(tx.size() == 1);
    CHECK(tx[0].status == IBV_WC_REM_ACCESS_ERR);
    CHECK(a.qp->state == IBV_QPS_ERR);
    CHECK(b.qp->state == IBV_QPS_ERR); // the responder's error too
    ibv_async_event ev{};
    REQUIRE(ibv_get_async_event(fx.ctx, &ev) == 0);
    CHECK(ev.event_type == IBV_EVENT_QP_ACCESS_ERR);
    CHECK(ev.element.qp == b.qp);
    ibv_ack_async_event(&ev);
}

TEST_CASE("RC: RNR NAKs until a receive is posted, then the SEND completes", "[ib_traffic][rc]") {
    SimFixture fx;
    IbQp a(fx.pd, IBV_QPT_RC, 16), b(fx.pd, IBV_QPT_RC, 16);
    connect(a, b, fx.ctx);
    connect(b, a, fx.ctx);
    Region src(fx.pd, 256), dst(fx.pd, 256);
    ibv_sge s = src.sge(200);
    ibv_send_wr wr{};
    wr.wr_id = 5;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    REQUIRE(post(a.qp, wr) == 0);
    CHECK(wait_for(a.cq, 1, 50).empty()); // waiting out RNR NAKs
    post_recv(b.qp, dst.sge(256), 6);
    const auto tx = wait_for(a.cq, 1);
    REQUIRE(tx.size() == 1);
    CHECK(tx[0].status == IBV_WC_SUCCESS);
    CHECK(wait_for(b.cq, 1).size() == 1);
    std::lock_guard lock(fx.device().port.mutex());
    CHECK(fx.device().port.roce().counters().qps.rnr_naks_received.get() > 0);
}

TEST_CASE("UD: the GRH fills the first 40 bytes; src_qp names the sender", "[ib_traffic][ud]") {
    SimFixture fx;
    IbQp a(fx.pd, IBV_QPT_UD, 16), b(fx.pd, IBV_QPT_UD, 16);
    a.to_rts();
    b.to_rts();
    ibv_gid own{};
    ibv_ah* ah = own_ah(fx, 0, own);
    Region src(fx.pd, 1024), dst(fx.pd, 2048);
    fill(src.bytes, 5);
    post_recv(b.qp, dst.sge(40 + 1024), 9);
    ibv_sge s = src.sge(1000);
    ibv_send_wr wr = ud_send(s, ah, b);
    REQUIRE(post(a.qp, wr) == 0);
    const auto rx = wait_for(b.cq, 1);
    REQUIRE(rx.size() == 1);
    CHECK(rx[0].status == IBV_WC_SUCCESS);
    CHECK(rx[0].byte_len == 40 + 1000);
    CHECK((rx[0].wc_flags & IBV_WC_GRH) != 0);
    CHECK(rx[0].src_qp == a.qp->qp_num);
    CHECK(rx[0].sl == 0xA); // RoCE v2 over IPv4, as a ConnectX reports it
    CHECK(std::equal(src.bytes.begin(), src.bytes.begin() + 1000, dst.bytes.begin() + 40));
    // Where UCX looks for the destination: the last 4 bytes of the 40 (IPv4).
    CHECK(std::equal(own.raw + 12, own.raw + 16, dst.bytes.begin() + 36));
    // ibv_create_ah_from_wc turns the receive around.
    ibv_wc wc = rx[0];
    ibv_ah* back = ibv_create_ah_from_wc(fx.pd, &wc, reinterpret_cast<ibv_grh*>(dst.bytes.data()), 1);
    CHECK(back != nullptr);
    if (back) CHECK(ibv_destroy_ah(back) == 0);
    // A wrong Q_Key is dropped.
    post_recv(b.qp, dst.sge(40 + 1024), 10);
    wr.wr.ud.remote_qkey = 0x1;
    REQUIRE(post(a.qp, wr) == 0);
    CHECK(wait_for(b.cq, 1, 50).empty());
    CHECK(wait_for(a.cq, 2).size() == 2); // both sends completed on the sender
    CHECK(ibv_destroy_ah(ah) == 0);
}

TEST_CASE("UD over IPv6: sl says IPv6 and the GRH's last 16 bytes are the destination GID",
          "[ib_traffic][ud]") {
    SimFixture fx;
    IbQp a(fx.pd, IBV_QPT_UD, 16), b(fx.pd, IBV_QPT_UD, 16);
    a.to_rts();
    b.to_rts();
    ibv_gid own6{};
    ibv_ah* ah = own_ah(fx, 1, own6); // index 1: the port's IPv6 address
    Region src(fx.pd, 256), dst(fx.pd, 512);
    fill(src.bytes, 7);
    post_recv(b.qp, dst.sge(40 + 256), 3);
    ibv_sge s = src.sge(100);
    REQUIRE(post(a.qp, ud_send(s, ah, b)) == 0);
    const auto rx = wait_for(b.cq, 1);
    REQUIRE(rx.size() == 1);
    CHECK(rx[0].status == IBV_WC_SUCCESS);
    CHECK((rx[0].wc_flags & IBV_WC_GRH) != 0);
    CHECK(rx[0].sl == 0x9); // RoCE v2 over IPv6
    CHECK(std::equal(own6.raw, own6.raw + 16, dst.bytes.begin() + 24));
    CHECK(std::equal(src.bytes.begin(), src.bytes.begin() + 100, dst.bytes.begin() + 40));
    CHECK(wait_for(a.cq, 1).size() == 1);
    CHECK(ibv_destroy_ah(ah) == 0);
}

TEST_CASE("SRQ: two RC QPs take their receives from one SRQ", "[ib_traffic][srq]") {
    SimFixture fx;
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = 16;
    sa.attr.max_sge = 1;
    ibv_srq* srq = ibv_create_srq(fx.pd, &sa);
    REQUIRE(srq != nullptr);
    {
        IbQp a(fx.pd, IBV_QPT_RC, 16), b1(fx.pd, IBV_QPT_RC, 16, srq), c(fx.pd, IBV_QPT_RC, 16),
            b2(fx.pd, IBV_QPT_RC, 16, srq);
        connect(a, b1, fx.ctx);
        connect(b1, a, fx.ctx);
        connect(c, b2, fx.ctx);
        connect(b2, c, fx.ctx);
        Region src(fx.pd, 64), dst(fx.pd, 4 * 64);
        for (std::uint64_t i = 0; i < 4; ++i) {
            ibv_sge g = dst.sge(64, i * 64);
            ibv_recv_wr r{};
            r.wr_id = i;
            r.sg_list = &g;
            r.num_sge = 1;
            ibv_recv_wr* bad = nullptr;
            REQUIRE(ibv_post_srq_recv(srq, &r, &bad) == 0);
        }
        ibv_sge s = src.sge(64);
        ibv_send_wr wr{};
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        REQUIRE(post(a.qp, wr) == 0);
        REQUIRE(post(c.qp, wr) == 0);
        const auto r1 = wait_for(b1.cq, 1);
        const auto r2 = wait_for(b2.cq, 1);
        REQUIRE(r1.size() == 1);
        REQUIRE(r2.size() == 1);
        CHECK(r1[0].wr_id == 0); // in posting order, whichever QP takes it
        CHECK(r2[0].wr_id == 1);
        CHECK(r1[0].qp_num == b1.qp->qp_num);
        CHECK(r2[0].qp_num == b2.qp->qp_num);
    }
    CHECK(ibv_destroy_srq(srq) == 0);
}

TEST_CASE("UC: a WRITE with immediate and a SEND arrive; UC has no ACKs", "[ib_traffic][uc]") {
    SimFixture fx;
    IbQp a(fx.pd, IBV_QPT_UC, 16), b(fx.pd, IBV_QPT_UC, 16);
    connect(a, b, fx.ctx);
    connect(b, a, fx.ctx);
    Region src(fx.pd, 4096), dst(fx.pd, 4096);
    fill(src.bytes, 1);
    post_recv(b.qp, dst.sge(4096), 1);
    post_recv(b.qp, dst.sge(4096), 2);
    ibv_sge s = src.sge(2500);
    ibv_send_wr wr{};
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.wr.rdma.remote_addr = dst.addr();
    wr.wr.rdma.rkey = dst.mr->rkey;
    REQUIRE(post(a.qp, wr) == 0);
    wr.opcode = IBV_WR_SEND;
    REQUIRE(post(a.qp, wr) == 0);
    const auto rx = wait_for(b.cq, 2);
    REQUIRE(rx.size() == 2);
    CHECK(rx[0].opcode == IBV_WC_RECV_RDMA_WITH_IMM);
    CHECK(rx[1].opcode == IBV_WC_RECV);
    CHECK(rx[1].byte_len == 2500);
    CHECK(std::equal(src.bytes.begin(), src.bytes.begin() + 2500, dst.bytes.begin()));
    CHECK(wait_for(a.cq, 2).size() == 2);
    std::lock_guard lock(fx.device().port.mutex());
    CHECK(fx.device().port.roce().counters().qps.acks_sent.get() == 0);
}

TEST_CASE("ibv_req_notify_cq(cq, 1): the event waits for a solicited completion", "[ib_traffic][rc]") {
    SimFixture fx;
    ibv_comp_channel* ch = ibv_create_comp_channel(fx.ctx);
    REQUIRE(ch != nullptr);
    const int flags = fcntl(ch->fd, F_GETFL);
    REQUIRE(fcntl(ch->fd, F_SETFL, flags | O_NONBLOCK) == 0);
    {
        IbQp a(fx.pd, IBV_QPT_RC, 16), b(fx.pd, IBV_QPT_RC, 16, nullptr, false, ch);
        connect(a, b, fx.ctx);
        connect(b, a, fx.ctx);
        Region src(fx.pd, 64), dst(fx.pd, 256);
        for (std::uint64_t i = 0; i < 2; ++i) post_recv(b.qp, dst.sge(64, i * 64), i);
        REQUIRE(ibv_req_notify_cq(b.cq, 1) == 0);
        ibv_sge s = src.sge(64);
        ibv_send_wr wr{};
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        REQUIRE(post(a.qp, wr) == 0);
        REQUIRE(wait_for(a.cq, 1).size() == 1);
        ibv_cq* got = nullptr;
        void* ctx = nullptr;
        const bool early = ibv_get_cq_event(ch, &got, &ctx) == 0;
        if (early) ibv_ack_cq_events(got, 1); // or destroying the CQ would wait for it
        CHECK_FALSE(early); // not solicited: no event
        wr.send_flags = IBV_SEND_SOLICITED;
        REQUIRE(post(a.qp, wr) == 0);
        REQUIRE(wait_for(a.cq, 1).size() == 1);
        REQUIRE(ibv_get_cq_event(ch, &got, &ctx) == 0);
        CHECK(got == b.cq);
        ibv_ack_cq_events(got, 1);
        const auto rx = drain(b.cq);
        REQUIRE(rx.size() == 2);
        CHECK(rx[1].wr_id == 1);
    }
    CHECK(ibv_destroy_comp_channel(ch) == 0);
}
