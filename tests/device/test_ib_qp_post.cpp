// RC/UC/UD creation and posting (device/README.md, "RC, UC and UD queue
// pairs"): caps checked and written back as mlx5 sizes them, post
// validation errnos, flushes on ERR, RESET clearing the queues. Traffic
// itself: tests/device/test_ib_traffic.cpp and the datapath's RoCE tests.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <infiniband/verbs.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "device/objects.hpp"
#include "device/qp_ib.hpp"
#include "device/qp_transport.hpp"
#include "tests/device/ib_qp_helpers.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

ibv_qp* create(ibv_pd* pd, ibv_cq* cq, ibv_qp_type t, ibv_qp_cap& cap, ibv_srq* srq = nullptr) {
    ibv_qp_init_attr a{};
    a.qp_type = t;
    a.send_cq = cq;
    a.recv_cq = cq;
    a.srq = srq;
    a.cap = cap;
    ibv_qp* qp = ibv_create_qp(pd, &a);
    cap = a.cap;
    return qp;
}

int post_send(ibv_qp* qp, ibv_send_wr& wr, ibv_send_wr** bad) { return ibv_post_send(qp, &wr, bad); }

struct Buffer {
    explicit Buffer(ibv_pd* pd, std::size_t n = 4096) : bytes(n, 0x5a) {
        mr = ibv_reg_mr(pd, bytes.data(), bytes.size(), IBV_ACCESS_LOCAL_WRITE);
        REQUIRE(mr != nullptr);
    }
    ~Buffer() { CHECK(ibv_dereg_mr(mr) == 0); }
    ibv_sge sge(std::uint32_t len, std::size_t at = 0) {
        return {reinterpret_cast<std::uint64_t>(bytes.data() + at), len, mr->lkey};
    }
    std::vector<std::uint8_t> bytes;
    ibv_mr* mr = nullptr;
};

} // namespace

TEST_CASE("RC/UC/UD creation: caps checked, then rounded and written back", "[ib_qp][post]") {
    SimFixture fx;
    ibv_cq* cq = ibv_create_cq(fx.ctx, 64, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    ibv_device_attr dev{};
    REQUIRE(ibv_query_device(fx.ctx, &dev) == 0);
    SECTION("RC: 64-byte send WQE blocks, power-of-two receive ring") {
        ibv_qp_cap cap{};
        cap.max_send_wr = 10;
        cap.max_recv_wr = 10;
        cap.max_send_sge = 1;
        cap.max_recv_sge = 3;
        cap.max_inline_data = 100;
        ibv_qp* qp = create(fx.pd, cq, IBV_QPT_RC, cap);
        REQUIRE(qp != nullptr);
        // mlx5's RC overhead with every operation (a UMR for MW binds: 192
        // bytes) + 4 + 100 inline -> 320.
        CHECK(cap.max_inline_data == 124);
        CHECK(cap.max_send_sge == 8);
        CHECK(cap.max_send_wr == 12); // 4096 bytes (10 x 320, a power of two) hold 12
        CHECK(cap.max_recv_wr == 16);
        CHECK(cap.max_recv_sge == 4);
        CHECK(qp->qp_type == IBV_QPT_RC);
        CHECK(qp->state == IBV_QPS_RESET);
        CHECK(ibv_destroy_qp(qp) == 0);
    }
    SECTION("UD: the datagram segment makes a 64-byte overhead") {
        ibv_qp_cap cap{};
        cap.max_send_wr = 1;
        cap.max_recv_wr = 1;
        cap.max_send_sge = 1;
        cap.max_recv_sge = 1;
        ibv_qp* qp = create(fx.pd, cq, IBV_QPT_UD, cap);
        REQUIRE(qp != nullptr);
        CHECK(cap.max_inline_data == 60);
        CHECK(cap.max_send_sge == 4);
        CHECK(ibv_destroy_qp(qp) == 0);
    }
    SECTION("over-limit caps are EINVAL") {
        for (int which = 0; which < 5; ++which) {
            CAPTURE(which);
            ibv_qp_cap cap{};
            cap.max_send_wr = cap.max_recv_wr = 4;
            cap.max_send_sge = cap.max_recv_sge = 1;
            if (which == 0) cap.max_send_wr = static_cast<std::uint32_t>(dev.max_qp_wr) + 1;
            if (which == 1) cap.max_recv_wr = static_cast<std::uint32_t>(dev.max_qp_wr) + 1;
            if (which == 2) cap.max_send_sge = static_cast<std::uint32_t>(dev.max_sge) + 1;
            if (which == 3) cap.max_recv_sge = static_cast<std::uint32_t>(dev.max_sge) + 1;
            if (which == 4) cap.max_inline_data = 1024;
            errno = 0;
            CHECK(create(fx.pd, cq, IBV_QPT_RC, cap) == nullptr);
            CHECK(errno == EINVAL);
        }
    }
    SECTION("a CQ of another context, or create flags") {
        ibv_qp_init_attr_ex a{};
        a.qp_type = IBV_QPT_RC;
        a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
        a.pd = fx.pd;
        a.send_cq = cq;
        a.recv_cq = cq;
        a.create_flags = IBV_QP_CREATE_SCATTER_FCS;
        errno = 0;
        CHECK(ibv_create_qp_ex(fx.ctx, &a) == nullptr);
        CHECK(errno == EOPNOTSUPP);
        a.create_flags = 0;
        a.send_cq = nullptr;
        errno = 0;
        CHECK(ibv_create_qp_ex(fx.ctx, &a) == nullptr);
        CHECK(errno == EINVAL);
    }
    SECTION("a CQ or PD with a QP is busy") {
        ibv_qp_cap cap{};
        cap.max_send_wr = cap.max_recv_wr = 1;
        ibv_qp* qp = create(fx.pd, cq, IBV_QPT_UC, cap);
        REQUIRE(qp != nullptr);
        CHECK(ibv_destroy_cq(cq) == EBUSY);
        CHECK(ibv_dealloc_pd(fx.pd) == EBUSY);
        CHECK(ibv_destroy_qp(qp) == 0);
    }
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_post_send: state and per-WR checks", "[ib_qp][post]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    ibv_sge sge = buf.sge(64);
    ibv_send_wr wr{};
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    ibv_send_wr* bad = nullptr;
    SECTION("RESET, INIT and RTR refuse sends") {
        IbQp q(fx.pd, IBV_QPT_RC);
        CHECK(post_send(q.qp, wr, &bad) == EINVAL);
        CHECK(bad == &wr);
        REQUIRE(q.modify(IBV_QPS_INIT, init_mask(IBV_QPT_RC)) == 0);
        CHECK(post_send(q.qp, wr, &bad) == EINVAL);
        REQUIRE(q.modify(IBV_QPS_RTR, rtr_mask(IBV_QPT_RC)) == 0);
        CHECK(post_send(q.qp, wr, &bad) == EINVAL);
    }
    SECTION("opcodes per type") {
        IbQp rc(fx.pd, IBV_QPT_RC), uc(fx.pd, IBV_QPT_UC), ud(fx.pd, IBV_QPT_UD);
        rc.to_rts();
        uc.to_rts();
        ud.to_rts();
        wr.opcode = IBV_WR_RDMA_READ;
        CHECK(post_send(rc.qp, wr, &bad) == 0);
        CHECK(post_send(uc.qp, wr, &bad) == EINVAL);
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        CHECK(post_send(uc.qp, wr, &bad) == 0);
        CHECK(post_send(ud.qp, wr, &bad) == EINVAL);
        wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
        CHECK(post_send(uc.qp, wr, &bad) == EINVAL);
        CHECK(post_send(rc.qp, wr, &bad) == EINVAL); // 64 bytes: an atomic moves 8
        ibv_sge eight = buf.sge(8);
        wr.sg_list = &eight;
        wr.wr.atomic.remote_addr = 0x1000;
        CHECK(post_send(rc.qp, wr, &bad) == 0);
        wr.wr.atomic.remote_addr = 0x1004; // not 8-byte aligned
        CHECK(post_send(rc.qp, wr, &bad) == EINVAL);
        wr.sg_list = &sge;
        // As ints, stored by memcpy: an enum object never holds 99 (UBSan's -fsanitize=enum).
        wr.opcode = IBV_WR_SEND_WITH_INV; // RC only: UC has no such opcode
        CHECK(post_send(uc.qp, wr, &bad) == EINVAL);
        wr.opcode = IBV_WR_LOCAL_INV; // RC and UC (device/README.md, "Memory windows")
        CHECK(post_send(ud.qp, wr, &bad) == EINVAL);
        for (const int op : {int{IBV_WR_TSO}, 99}) {
            CAPTURE(op);
            std::memcpy(&wr.opcode, &op, sizeof op);
            CHECK(post_send(rc.qp, wr, &bad) == EINVAL);
        }
    }
    SECTION("SGE count, inline size, UD address handle and MTU") {
        IbQp rc(fx.pd, IBV_QPT_RC), ud(fx.pd, IBV_QPT_UD);
        rc.to_rts();
        ud.to_rts();
        std::vector<ibv_sge> many(rc.cap.max_send_sge + 1, sge);
        wr.sg_list = many.data();
        wr.num_sge = static_cast<int>(many.size());
        CHECK(post_send(rc.qp, wr, &bad) == EINVAL);
        wr.num_sge = -1;
        CHECK(post_send(rc.qp, wr, &bad) == EINVAL);
        wr.num_sge = 1;
        wr.sg_list = nullptr;
        CHECK(post_send(rc.qp, wr, &bad) == EINVAL);
        ibv_sge big = buf.sge(rc.cap.max_inline_data + 1);
        wr.sg_list = &big;
        wr.send_flags = IBV_SEND_INLINE;
        CHECK(post_send(rc.qp, wr, &bad) == EINVAL);
        big.length = rc.cap.max_inline_data;
        CHECK(post_send(rc.qp, wr, &bad) == 0);
        wr.send_flags = 0;
        wr.sg_list = &sge;
        CHECK(post_send(ud.qp, wr, &bad) == EINVAL); // no AH
        ibv_ah_attr ah_attr{};
        ah_attr.is_global = 1;
        ah_attr.port_num = 1;
        const std::uint8_t peer[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 99};
        std::memcpy(ah_attr.grh.dgid.raw, peer, sizeof peer); // IPv4, as GID 0 (the source)
        ibv_ah* ah = ibv_create_ah(fx.pd, &ah_attr);
        REQUIRE(ah != nullptr);
        wr.wr.ud.ah = ah;
        wr.wr.ud.remote_qpn = 0x77;
        wr.wr.ud.remote_qkey = 0x11111111;
        CHECK(post_send(ud.qp, wr, &bad) == 0);
        ibv_port_attr port{};
        REQUIRE(ibv_query_port(fx.ctx, 1, &port) == 0);
        ibv_sge over = buf.sge((128u << port.active_mtu) + 1);
        wr.sg_list = &over;
        CHECK(post_send(ud.qp, wr, &bad) == EINVAL); // a UD message fits one MTU
        // Only the accepted WR reached the transport: one packet out.
        CHECK(device::ib_qp(ud.qp)->transport->roce().counters().tx_packets.get() == 1);
        CHECK(ibv_destroy_ah(ah) == 0);
    }
    SECTION("a full send queue is ENOMEM; bad_wr names the first WR not posted") {
        // RC keeps each WR until its ACK (none comes: the peer is unreachable).
        IbQp q(fx.pd, IBV_QPT_RC, 2);
        q.to_rts();
        std::vector<ibv_send_wr> list(q.cap.max_send_wr + 2, wr);
        for (std::size_t i = 0; i + 1 < list.size(); ++i) list[i].next = &list[i + 1];
        CHECK(post_send(q.qp, list[0], &bad) == ENOMEM);
        CHECK(bad == &list[q.cap.max_send_wr]);
        CHECK(device::ib_qp(q.qp)->transport->roce().send_queue_size() == q.cap.max_send_wr);
    }
}

TEST_CASE("ERR flushes the posted WRs; posts in ERR flush at once", "[ib_qp][post]") {
    // The peer (fe80::42) is unreachable: RC sends wait for an ACK until
    // flushed; UC and UD sends complete once they are sent.
    SimFixture fx;
    Buffer buf(fx.pd);
    ibv_sge sge = buf.sge(64);
    for (const ibv_qp_type t : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD}) {
        CAPTURE(t);
        IbQp q(fx.pd, t);
        q.to_rts();
        ibv_ah_attr ah_attr{};
        ah_attr.is_global = 1;
        ah_attr.port_num = 1;
        ibv_ah* ah = ibv_create_ah(fx.pd, &ah_attr);
        REQUIRE(ah != nullptr);
        ibv_send_wr* bad = nullptr;
        for (std::uint64_t id = 1; id <= 3; ++id) {
            ibv_send_wr wr{};
            wr.wr_id = id;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            wr.opcode = IBV_WR_SEND;
            wr.send_flags = id == 2 ? 0 : IBV_SEND_SIGNALED; // flushes ignore signalling
            wr.wr.ud.ah = ah;
            REQUIRE(ibv_post_send(q.qp, &wr, &bad) == 0);
        }
        ibv_recv_wr* rbad = nullptr;
        for (std::uint64_t id = 10; id <= 11; ++id) {
            ibv_recv_wr r{};
            r.wr_id = id;
            r.sg_list = &sge;
            r.num_sge = 1;
            REQUIRE(ibv_post_recv(q.qp, &r, &rbad) == 0);
        }
        std::vector<ibv_wc> wcs = drain(q.cq);
        const std::size_t sends = t == IBV_QPT_RC ? 3 : 0;
        if (t != IBV_QPT_RC) { // the signalled ones, done
            REQUIRE(wcs.size() == 2);
            CHECK(wcs[0].wr_id == 1);
            CHECK(wcs[1].wr_id == 3);
            CHECK(wcs[1].status == IBV_WC_SUCCESS);
            CHECK(wcs[1].opcode == IBV_WC_SEND);
        } else {
            CHECK(wcs.empty());
        }
        REQUIRE(q.modify(IBV_QPS_ERR, IBV_QP_STATE) == 0);
        wcs = drain(q.cq);
        REQUIRE(wcs.size() == sends + 2);
        for (std::size_t i = 0; i < sends; ++i) { // flushes ignore signalling
            CHECK(wcs[i].wr_id == i + 1);
            CHECK(wcs[i].status == IBV_WC_WR_FLUSH_ERR);
            CHECK(wcs[i].qp_num == q.qp->qp_num);
        }
        CHECK(wcs[sends].wr_id == 10);
        CHECK(wcs[sends + 1].wr_id == 11);
        CHECK(wcs[sends + 1].status == IBV_WC_WR_FLUSH_ERR);
        CHECK(wcs[sends + 1].opcode == IBV_WC_RECV);
        // In ERR, both kinds of post complete at once.
        ibv_send_wr wr{};
        wr.wr_id = 7;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.wr.ud.ah = ah;
        REQUIRE(ibv_post_send(q.qp, &wr, &bad) == 0);
        ibv_recv_wr r{};
        r.wr_id = 8;
        r.sg_list = &sge;
        r.num_sge = 1;
        REQUIRE(ibv_post_recv(q.qp, &r, &rbad) == 0);
        wcs = drain(q.cq);
        REQUIRE(wcs.size() == 2);
        CHECK(wcs[0].wr_id == 7);
        CHECK(wcs[1].wr_id == 8);
        CHECK(ibv_destroy_ah(ah) == 0);
    }
}

TEST_CASE("RESET forgets posted WRs and purges the QP's completions", "[ib_qp][post]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    ibv_sge sge = buf.sge(64);
    IbQp q(fx.pd, IBV_QPT_RC);
    ibv_recv_wr r{};
    r.wr_id = 5;
    r.sg_list = &sge;
    r.num_sge = 1;
    ibv_recv_wr* rbad = nullptr;
    // RESET refuses receives (mlx5: the RQ opens at INIT).
    CHECK(ibv_post_recv(q.qp, &r, &rbad) == EINVAL);
    CHECK(rbad == &r);
    q.to_rts();
    REQUIRE(ibv_post_recv(q.qp, &r, &rbad) == 0);
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    ibv_send_wr* bad = nullptr;
    REQUIRE(ibv_post_send(q.qp, &wr, &bad) == 0);
    REQUIRE(q.modify(IBV_QPS_ERR, IBV_QP_STATE) == 0);
    REQUIRE(q.modify(IBV_QPS_RESET, IBV_QP_STATE) == 0);
    CHECK(drain(q.cq).empty()); // the flushes were purged with the move to RESET
    REQUIRE(q.modify(IBV_QPS_INIT, init_mask(IBV_QPT_RC)) == 0);
    REQUIRE(ibv_post_recv(q.qp, &r, &rbad) == 0);
    REQUIRE(q.modify(IBV_QPS_RESET, IBV_QP_STATE) == 0);
    q.to_rts();
    REQUIRE(q.modify(IBV_QPS_ERR, IBV_QP_STATE) == 0);
    CHECK(drain(q.cq).empty()); // nothing posted survived RESET
}

TEST_CASE("ibv_post_recv queues WQEs in order, zero-length SGEs left out", "[ib_qp][post]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    IbQp q(fx.pd, IBV_QPT_UD);
    REQUIRE(q.modify(IBV_QPS_INIT, init_mask(IBV_QPT_UD)) == 0); // the RQ opens at INIT
    ibv_sge two[2] = {buf.sge(100), buf.sge(0, 200)};
    ibv_recv_wr r{};
    r.wr_id = 42;
    r.sg_list = two;
    r.num_sge = 2;
    ibv_recv_wr* bad = nullptr;
    REQUIRE(ibv_post_recv(q.qp, &r, &bad) == 0);
    device::Device& dev = fx.device();
    std::lock_guard lock(dev.port.mutex());
    const datapath::RecvRing& ring = device::ib_qp(q.qp)->rq.ring;
    REQUIRE(ring.size() == 1);
    CHECK(ring.front().wr_id == 42);
    CHECK(ring.front().num_sge == 1); // the zero-length SGE was dropped
    CHECK(ring.front().total_len == 100);
}

TEST_CASE("A local protection error completes the WR with IBV_WC_LOC_PROT_ERR and moves the QP to ERR",
          "[ib_qp][post]") {
    SimFixture fx;
    Buffer buf(fx.pd);
    for (const ibv_qp_type t : {IBV_QPT_RC, IBV_QPT_UC}) {
        CAPTURE(t);
        IbQp q(fx.pd, t);
        q.to_rts();
        ibv_sge sge = buf.sge(64);
        sge.lkey ^= 0x5555; // names no MR
        ibv_send_wr wr{};
        wr.wr_id = 3;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_RDMA_WRITE;
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(q.qp, &wr, &bad) == 0);
        CHECK(q.qp->state == IBV_QPS_ERR);
        std::vector<ibv_wc> wcs = drain(q.cq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].wr_id == 3);
        CHECK(wcs[0].status == IBV_WC_LOC_PROT_ERR);
        // Posts in ERR flush at once.
        wr.wr_id = 4;
        REQUIRE(ibv_post_send(q.qp, &wr, &bad) == 0);
        wcs = drain(q.cq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].wr_id == 4);
        CHECK(wcs[0].status == IBV_WC_WR_FLUSH_ERR);
    }
}

TEST_CASE("RTS -> SQD with en_sqd_async_notify: IBV_EVENT_SQ_DRAINED once the send queue is empty",
          "[ib_qp][post]") {
    SimFixture fx;
    const int flags = fcntl(fx.ctx->async_fd, F_GETFL);
    REQUIRE(fcntl(fx.ctx->async_fd, F_SETFL, flags | O_NONBLOCK) == 0);
    IbQp q(fx.pd, IBV_QPT_RC);
    q.to_rts();
    ibv_qp_attr a = good_attr(IBV_QPS_SQD);
    a.en_sqd_async_notify = 1;
    REQUIRE(ibv_modify_qp(q.qp, &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY) == 0);
    ibv_async_event ev{};
    REQUIRE(ibv_get_async_event(fx.ctx, &ev) == 0);
    CHECK(ev.event_type == IBV_EVENT_SQ_DRAINED);
    CHECK(ev.element.qp == q.qp);
    ibv_ack_async_event(&ev);
    // Without the request, no event.
    REQUIRE(q.modify(IBV_QPS_RTS, IBV_QP_STATE) == 0);
    REQUIRE(q.modify(IBV_QPS_SQD, IBV_QP_STATE) == 0);
    CHECK(ibv_get_async_event(fx.ctx, &ev) == -1);
}
