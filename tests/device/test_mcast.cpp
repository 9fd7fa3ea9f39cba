// Multicast on UD QPs (device/README.md, "Multicast"; datapath/README.md,
// "Multicast"): ibv_attach_mcast / ibv_detach_mcast's checks and limits, a
// datagram to a group reaching every attached QP of the port with its GRH,
// and the group's MAC accepted from the wire only while a QP is attached.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cstring>
#include <mutex>
#include <vector>

#include "net/addresses.hpp"
#include "net/roce_frame.hpp"
#include "net/roce_opcodes.hpp"
#include "tests/device/ib_qp_helpers.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

constexpr std::uint32_t kGroupQpn = 0xffffff;
constexpr std::uint8_t kGroupIp[4] = {239, 1, 2, 3};

ibv_gid group_gid(const std::uint8_t ip[4] = kGroupIp) {
    ibv_gid g{};
    g.raw[10] = 0xff;
    g.raw[11] = 0xff;
    std::memcpy(g.raw + 12, ip, 4);
    return g;
}

struct Buffer {
    Buffer(ibv_pd* pd, std::size_t n) : bytes(n, 0) {
        mr = ibv_reg_mr(pd, bytes.data(), n, IBV_ACCESS_LOCAL_WRITE);
        REQUIRE(mr != nullptr);
    }
    ~Buffer() { CHECK(ibv_dereg_mr(mr) == 0); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ibv_sge sge(std::uint32_t len) {
        return {reinterpret_cast<std::uint64_t>(bytes.data()), len, mr->lkey};
    }
    std::vector<std::uint8_t> bytes;
    ibv_mr* mr = nullptr;
};

void post_recv(ibv_qp* qp, Buffer& b, std::uint64_t id) {
    ibv_sge s = b.sge(static_cast<std::uint32_t>(b.bytes.size()));
    ibv_recv_wr r{};
    r.wr_id = id;
    r.sg_list = &s;
    r.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    REQUIRE(ibv_post_recv(qp, &r, &bad) == 0);
}

// A signalled UD SEND of `len` bytes of `src` to the group through `ah`.
int send_to_group(ibv_qp* qp, ibv_ah* ah, Buffer& src, std::uint32_t len, std::uint32_t qkey) {
    ibv_sge s = src.sge(len);
    ibv_send_wr wr{};
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = kGroupQpn;
    wr.wr.ud.remote_qkey = qkey;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
}

const datapath::RocePortCounters& roce(SimFixture& fx) {
    return fx.device().port.roce().counters();
}

} // namespace

TEST_CASE("multicast attach: limits as a ConnectX reports them, and the kernel's checks",
          "[device][mcast]") {
    SimFixture fx;
    ibv_device_attr da{};
    REQUIRE(ibv_query_device(fx.ctx, &da) == 0);
    CHECK(da.max_mcast_grp == 1 << 21);
    CHECK(da.max_mcast_qp_attach == 240);
    CHECK(da.max_total_mcast_qp_attach == da.max_mcast_grp * da.max_mcast_qp_attach);

    IbQp ud(fx.pd, IBV_QPT_UD), rc(fx.pd, IBV_QPT_RC);
    const ibv_gid g = group_gid();
    ibv_gid own{};
    REQUIRE(ibv_query_gid(fx.ctx, 1, 0, &own) == 0);
    CHECK(ibv_attach_mcast(ud.qp, &own, 0) == EINVAL); // not a group
    CHECK(ibv_attach_mcast(ud.qp, nullptr, 0) == EINVAL);
    CHECK(ibv_attach_mcast(nullptr, &g, 0) == EINVAL);
    CHECK(ibv_attach_mcast(rc.qp, &g, 0) == EINVAL); // UD only
    CHECK(ibv_detach_mcast(ud.qp, &g, 0) == EINVAL); // not attached

    CHECK(ibv_attach_mcast(ud.qp, &g, 0) == 0);      // any state, LID ignored
    CHECK(ibv_attach_mcast(ud.qp, &g, 0x1234) == 0); // again: nothing changes
    ibv_gid v6{};
    v6.raw[0] = 0xff;
    v6.raw[1] = 0x0e;
    v6.raw[15] = 7;
    CHECK(ibv_attach_mcast(ud.qp, &v6, 0) == 0);
    {
        std::lock_guard lock(fx.device().port.mutex());
        net::Gid k;
        std::memcpy(k.data(), g.raw, 16);
        CHECK(fx.device().port.roce().mcast().members(k).size() == 1);
        CHECK(fx.device().port.roce().mcast().size() == 2);
    }
    CHECK(ibv_detach_mcast(ud.qp, &g, 0) == 0);
    CHECK(ibv_detach_mcast(ud.qp, &g, 0) == EINVAL);
    CHECK(ibv_detach_mcast(ud.qp, &v6, 0) == 0);

    SECTION("at most max_mcast_qp_attach QPs in a group: the next is ENOMEM") {
        ibv_cq* cq = ibv_create_cq(fx.ctx, 4, nullptr, nullptr, 0);
        REQUIRE(cq != nullptr);
        std::vector<ibv_qp*> qps;
        for (int i = 0; i <= da.max_mcast_qp_attach; ++i) {
            ibv_qp_init_attr a{};
            a.qp_type = IBV_QPT_UD;
            a.send_cq = a.recv_cq = cq;
            a.cap.max_send_wr = a.cap.max_recv_wr = 1;
            a.cap.max_send_sge = a.cap.max_recv_sge = 1;
            qps.push_back(ibv_create_qp(fx.pd, &a));
            REQUIRE(qps.back() != nullptr);
        }
        for (int i = 0; i < da.max_mcast_qp_attach; ++i)
            CHECK(ibv_attach_mcast(qps[i], &g, 0) == 0);
        CHECK(ibv_attach_mcast(qps.back(), &g, 0) == ENOMEM);
        CHECK(ibv_detach_mcast(qps.front(), &g, 0) == 0);
        CHECK(ibv_attach_mcast(qps.back(), &g, 0) == 0); // room again
        for (ibv_qp* q : qps)
            CHECK(ibv_destroy_qp(q) == 0); // attached: detached by destroy
        CHECK(ibv_destroy_cq(cq) == 0);
        std::lock_guard lock(fx.device().port.mutex());
        CHECK(fx.device().port.roce().mcast().empty());
    }
}

TEST_CASE("multicast: a datagram to a group reaches each attached UD QP of the port with "
          "its GRH; a detached QP and a wrong Q_Key get nothing",
          "[device][mcast]") {
    SimFixture fx;
    IbQp a(fx.pd, IBV_QPT_UD, 16), b(fx.pd, IBV_QPT_UD, 16), c(fx.pd, IBV_QPT_UD, 16);
    a.to_rts();
    b.to_rts();
    c.to_rts();
    const ibv_gid g = group_gid();
    REQUIRE(ibv_attach_mcast(b.qp, &g, 0) == 0);
    REQUIRE(ibv_attach_mcast(c.qp, &g, 0) == 0);
    ibv_ah_attr aa{};
    aa.is_global = 1;
    aa.port_num = 1;
    aa.grh.dgid = g;
    aa.grh.sgid_index = 0;
    aa.grh.hop_limit = 64;
    ibv_ah* ah = ibv_create_ah(fx.pd, &aa);
    REQUIRE(ah != nullptr);
    Buffer src(fx.pd, 512), rb(fx.pd, 40 + 512), rc(fx.pd, 40 + 512);
    for (std::size_t i = 0; i < src.bytes.size(); ++i)
        src.bytes[i] = static_cast<std::uint8_t>(i * 3 + 1);
    const std::uint32_t qkey = good_attr(IBV_QPS_RTS).qkey;

    post_recv(b.qp, rb, 1);
    post_recv(c.qp, rc, 2);
    REQUIRE(send_to_group(a.qp, ah, src, 300, qkey) == 0);
    for (auto* q : {&b, &c}) {
        const auto rx = wait_for(q->cq, 1);
        REQUIRE(rx.size() == 1);
        CHECK(rx[0].status == IBV_WC_SUCCESS);
        CHECK(rx[0].byte_len == 40 + 300);
        CHECK((rx[0].wc_flags & IBV_WC_GRH) != 0);
        CHECK(rx[0].src_qp == a.qp->qp_num);
        CHECK(rx[0].qp_num == q->qp->qp_num);
    }
    for (Buffer* r : {&rb, &rc}) {
        CHECK(std::equal(src.bytes.begin(), src.bytes.begin() + 300, r->bytes.begin() + 40));
        CHECK(std::equal(kGroupIp, kGroupIp + 4,
                         r->bytes.begin() + 36)); // IPv4 destination: the group
    }
    CHECK(wait_for(a.cq, 1).size() == 1); // the send only: `a` is not in the group
    {
        std::lock_guard lock(fx.device().port.mutex());
        CHECK(roce(fx).mcast_frames.get() == 1);
        CHECK(roce(fx).mcast_copies.get() == 1);
        CHECK(roce(fx).mcast_loopback.get() == 1);
        CHECK(roce(fx).tx_wire.get() == 1); // and to the wire, with the group's MAC
    }

    // c leaves: only b receives.
    REQUIRE(ibv_detach_mcast(c.qp, &g, 0) == 0);
    post_recv(b.qp, rb, 3);
    post_recv(c.qp, rc, 4);
    REQUIRE(send_to_group(a.qp, ah, src, 100, qkey) == 0);
    CHECK(wait_for(b.cq, 1).size() == 1);
    CHECK(wait_for(c.cq, 1, 50).empty());

    // A wrong Q_Key: dropped by the QP, counted as qkey_mismatch.
    const auto mismatches = [&] {
        std::lock_guard lock(fx.device().port.mutex());
        return roce(fx).qps.rx[static_cast<std::size_t>(datapath::RoceRx::qkey_mismatch)].get();
    };
    const std::uint64_t before = mismatches();
    post_recv(b.qp, rb, 5);
    REQUIRE(send_to_group(a.qp, ah, src, 100, qkey ^ 1) == 0);
    CHECK(wait_for(b.cq, 1, 50).empty());
    CHECK(mismatches() == before + 1);
    CHECK(wait_for(a.cq, 2).size() == 2);
    CHECK(ibv_destroy_ah(ah) == 0);
}

TEST_CASE("multicast from the wire: the group's MAC is the port's while a QP is attached, "
          "else a steering miss",
          "[device][mcast]") {
    SimFixture fx;
    IbQp b(fx.pd, IBV_QPT_UD, 16);
    b.to_rts();
    const ibv_gid g = group_gid();
    net::RocePath path;
    std::memcpy(path.dgid.data(), g.raw, 16);
    path.dst_mac = net::multicast_mac(path.dgid);
    path.src_mac = {0x02, 0x99, 0, 0, 0, 1};
    const std::uint8_t peer_ip[4] = {10, 9, 9, 9};
    path.sgid = net::ipv4_mapped_gid(peer_ip);
    const auto frame = [&](const net::MacAddress& mac) {
        net::RocePath p = path;
        p.dst_mac = mac;
        net::RoceHeaders h;
        h.bth.opcode = static_cast<std::uint8_t>(net::RoceOpcode::ud_send_only);
        h.bth.dest_qp = kGroupQpn;
        h.deth = {good_attr(IBV_QPS_RTS).qkey, 0x42};
        const std::vector<std::uint8_t> payload(64, 0x5a);
        std::vector<std::uint8_t> out(256);
        const auto r = net::build_roce_frame(p, h, payload, out);
        REQUIRE(r.error == net::RoceBuildError::none);
        out.resize(r.len);
        return out;
    };
    Buffer rb(fx.pd, 40 + 64);
    post_recv(b.qp, rb, 1);
    const auto misses = [&] { return drops(fx, datapath::Drop::steering_miss); };

    fx.offer(frame(path.dst_mac));
    fx.pump_all();
    CHECK(misses() == 1); // no QP attached: not for this port
    CHECK(wait_for(b.cq, 1, 20).empty());

    REQUIRE(ibv_attach_mcast(b.qp, &g, 0) == 0);
    fx.offer(frame({0x01, 0x00, 0x5e, 0x01, 0x02, 0x04})); // another group's MAC
    fx.pump_all();
    CHECK(misses() == 2);
    fx.offer(frame(path.dst_mac));
    fx.pump_all();
    const auto rx = wait_for(b.cq, 1);
    REQUIRE(rx.size() == 1);
    CHECK(rx[0].status == IBV_WC_SUCCESS);
    CHECK(rx[0].src_qp == 0x42);
    CHECK(rx[0].byte_len == 40 + 64);
    CHECK(misses() == 2);
    CHECK(fx.balanced());
}

TEST_CASE("multicast loopback: a sender attached to its group gets its own datagram, unless "
          "created with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB",
          "[device][mcast]") {
    SimFixture fx;
    const bool block = GENERATE(false, true);
    CAPTURE(block);
    ibv_cq* cq = ibv_create_cq(fx.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    ibv_qp_init_attr_ex qa{};
    qa.qp_type = IBV_QPT_UD;
    qa.send_cq = qa.recv_cq = cq;
    qa.cap.max_send_wr = qa.cap.max_recv_wr = 4;
    qa.cap.max_send_sge = qa.cap.max_recv_sge = 1;
    qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
    qa.pd = fx.pd;
    qa.create_flags = block ? IBV_QP_CREATE_BLOCK_SELF_MCAST_LB : 0;
    ibv_qp* qp = ibv_create_qp_ex(fx.ctx, &qa);
    REQUIRE(qp != nullptr);
    for (const ibv_qp_state s : {IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS}) {
        ibv_qp_attr at = good_attr(s);
        const int mask = s == IBV_QPS_INIT  ? init_mask(IBV_QPT_UD)
                         : s == IBV_QPS_RTR ? rtr_mask(IBV_QPT_UD)
                                            : rts_mask(IBV_QPT_UD);
        REQUIRE(ibv_modify_qp(qp, &at, mask) == 0);
    }
    const ibv_gid g = group_gid();
    REQUIRE(ibv_attach_mcast(qp, &g, 0) == 0);
    ibv_ah_attr aa{};
    aa.is_global = 1;
    aa.port_num = 1;
    aa.grh.dgid = g;
    ibv_ah* ah = ibv_create_ah(fx.pd, &aa);
    REQUIRE(ah != nullptr);
    Buffer src(fx.pd, 64), rb(fx.pd, 40 + 64);
    post_recv(qp, rb, 7);
    REQUIRE(send_to_group(qp, ah, src, 64, good_attr(IBV_QPS_RTS).qkey) == 0);
    const auto wc = wait_for(cq, 2, 200);
    std::size_t recvs = 0;
    for (const ibv_wc& w : wc)
        recvs += w.opcode == IBV_WC_RECV && w.src_qp == qp->qp_num ? 1 : 0;
    CHECK(recvs == (block ? 0u : 1u));
    CHECK(wc.size() == (block ? 1u : 2u)); // the send's completion either way
    CHECK(ibv_destroy_ah(ah) == 0);
    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}
