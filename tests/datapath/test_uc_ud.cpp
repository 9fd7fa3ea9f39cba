// UC and UD between two transport endpoints (datapath/README.md, "RoCE
// transport"): UC drops the rest of a message after a PSN gap and starts
// afresh at the next FIRST or ONLY, never ACKs; UD checks the Q_Key, puts
// the GRH in the first 40 bytes and reports the source QP.
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
using datapath::TransportState;
using test::RocePair;

TEST_CASE("uc: SEND and WRITE complete on send, no ACKs; a lost packet drops the rest of its "
          "message and the next message arrives in the same receive WQE",
          "[datapath][roce][uc]") {
    RocePair pr(QpTransport::uc);
    std::vector<std::uint8_t> src(3000), rb(4096, 0), dst(4096, 0);
    for (std::size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<std::uint8_t>(i * 7);
    Sge s{reinterpret_cast<std::uint64_t>(src.data()), 3000, pr.a.reg(src.data(), src.size())};
    pr.b.post_recv(1, rb.data(), 4096, pr.b.reg(rb.data(), rb.size()));
    const std::uint32_t rkey = pr.b.reg(dst.data(), dst.size());

    // Message 1 (3 packets): its MIDDLE is lost on the wire.
    SendWr w;
    w.wr_id = 1;
    pr.a.out = [&, n = 0](std::span<const std::uint8_t> f, std::uint64_t t) mutable {
        if (n++ == 1) return; // the MIDDLE
        net::RocePacket p;
        REQUIRE(net::parse_roce_frame(f, p) == net::RoceDrop::none);
        pr.b.qp->receive(p, t);
    };
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
    REQUIRE(pr.a.send_cqes.size() == 1); // completed once sent
    CHECK(pr.a.send_cqes[0].status == IBV_WC_SUCCESS);
    CHECK(pr.b.recv_cqes.empty());
    CHECK(pr.b.qp->counters().get(RoceRx::message_dropped) == 1); // the LAST
    // Message 2 arrives whole, in the WQE message 1 had taken.
    w.wr_id = 2;
    s.length = 2500;
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
    REQUIRE(pr.b.recv_cqes.size() == 1);
    CHECK(pr.b.recv_cqes[0].wr_id == 1);
    CHECK(pr.b.recv_cqes[0].status == IBV_WC_SUCCESS);
    CHECK(pr.b.recv_cqes[0].byte_len == 2500);
    CHECK(std::memcmp(rb.data(), src.data(), 2500) == 0);

    // RDMA WRITE over UC.
    SendWr wr;
    wr.wr_id = 3;
    wr.op = SendOp::write;
    wr.remote_addr = reinterpret_cast<std::uint64_t>(dst.data());
    wr.rkey = rkey;
    s.length = 3000;
    REQUIRE(pr.a.qp->post_send(wr, test::one_sge(s), pr.now) == 0);
    CHECK(std::memcmp(dst.data(), src.data(), 3000) == 0);
    CHECK(pr.b.qp->counters().tx_packets.get() == 0); // a UC responder never answers
    // UC has no READ or atomics.
    wr.op = SendOp::read;
    CHECK(pr.a.qp->post_send(wr, test::one_sge(s), pr.now) == EINVAL);
    // No receive WQE: the message is dropped, nothing completes, the QP stays.
    s.length = 10;
    w.wr_id = 4;
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
    CHECK(pr.b.qp->counters().get(RoceRx::no_receive_wqe) == 1);
    CHECK(pr.b.qp->state() == TransportState::rts);
}

TEST_CASE("uc: under loss every message is delivered whole or not at all", "[datapath][roce][uc]") {
    test::Faults f;
    f.drop = 0.05;
    f.seed = 11;
    RocePair pr(QpTransport::uc, f);
    constexpr std::uint32_t kMsgs = 200;
    std::vector<std::uint8_t> src(2500), rb(kMsgs * 4096, 0);
    const std::uint32_t slk = pr.a.reg(src.data(), src.size());
    const std::uint32_t rlk = pr.b.reg(rb.data(), rb.size());
    for (std::uint32_t i = 0; i < kMsgs; ++i)
        pr.b.post_recv(i, rb.data() + i * 4096, 4096, rlk);
    for (std::uint32_t m = 0; m < kMsgs; ++m) {
        std::memset(src.data(), static_cast<int>(m & 0xff), src.size());
        Sge s{reinterpret_cast<std::uint64_t>(src.data()), 2500, slk};
        SendWr w;
        w.wr_id = m;
        REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
        pr.run_idle();
    }
    std::uint32_t whole = 0;
    for (const auto& c : pr.b.recv_cqes) {
        REQUIRE(c.status == IBV_WC_SUCCESS);
        REQUIRE(c.byte_len == 2500);
        const std::uint8_t* p = rb.data() + c.wr_id * 4096;
        for (int j = 1; j < 2500; ++j)
            REQUIRE(p[j] == p[0]);
        ++whole;
    }
    CHECK(whole > kMsgs * 8 / 10);
    CHECK(whole < kMsgs);
    CHECK(pr.b.qp->counters().get(RoceRx::message_dropped) > 0);
}

TEST_CASE("ud: SEND with the GRH in the first 40 bytes, src_qp, immediate; a wrong Q_Key is "
          "dropped and counted; the WR's high-bit Q_Key means the QP's",
          "[datapath][roce][ud]") {
    RocePair pr(QpTransport::ud);
    std::vector<std::uint8_t> rb(2 * 1024, 0);
    const std::uint32_t lk = pr.b.reg(rb.data(), rb.size());
    pr.b.post_recv(1, rb.data(), 1024, lk);
    pr.b.post_recv(2, rb.data() + 1024, 1024, lk);
    char msg[] = "datagram";
    Sge s{reinterpret_cast<std::uint64_t>(msg), sizeof msg, pr.a.reg(msg, sizeof msg)};
    SendWr w;
    w.wr_id = 7;
    w.op = SendOp::send_imm;
    w.imm = 0x0a0b0c0d;
    w.ud_path = pr.attrs_a.path;
    w.remote_qpn = 0x22;
    w.remote_qkey = 0x11111111;
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
    w.remote_qkey = 0x2222; // not B's
    w.wr_id = 8;
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
    w.remote_qkey = 0x80000000; // A's own Q_Key, which is B's too
    w.wr_id = 9;
    w.op = SendOp::send;
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.a.send_cqes.size() == 3);
    for (const auto& c : pr.a.send_cqes)
        CHECK(c.status == IBV_WC_SUCCESS);
    CHECK(pr.log_a_to_b[0].second == 0x65); // UD SEND_ONLY_WITH_IMMEDIATE
    REQUIRE(pr.b.recv_cqes.size() == 2);
    const auto& c = pr.b.recv_cqes[0];
    CHECK(c.status == IBV_WC_SUCCESS);
    CHECK(c.byte_len == 40 + sizeof msg);
    CHECK(c.wc_flags == (IBV_WC_GRH | IBV_WC_WITH_IMM));
    CHECK(c.src_qp == 0x11);
    // IPv4: 20 zero bytes, then the IPv4 header (version 4, IHL 5; source 192.0.2.17).
    for (int i = 0; i < 20; ++i)
        CHECK(rb[i] == 0);
    CHECK(rb[20] == 0x45);
    CHECK(rb[32] == 192);
    CHECK(rb[35] == 0x11);
    CHECK(std::memcmp(rb.data() + 40, msg, sizeof msg) == 0);
    CHECK(pr.b.recv_cqes[1].wc_flags == IBV_WC_GRH);
    CHECK(pr.b.qp->counters().get(RoceRx::qkey_mismatch) == 1);
    CHECK(pr.b.qp->counters().tx_packets.get() == 0);
}

TEST_CASE("ud: a receive buffer without room for GRH + payload is LOC_LEN_ERR; no WQE is a drop; "
          "a datagram over the MTU fails at the sender",
          "[datapath][roce][ud]") {
    RocePair pr(QpTransport::ud);
    std::vector<std::uint8_t> src(2000, 1), rb(64);
    Sge s{reinterpret_cast<std::uint64_t>(src.data()), 30, pr.a.reg(src.data(), src.size())};
    SendWr w;
    w.ud_path = pr.attrs_a.path;
    w.remote_qpn = 0x22;
    w.remote_qkey = 0x11111111;
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
    pr.run_idle();
    CHECK(pr.b.qp->counters().get(RoceRx::no_receive_wqe) == 1);
    pr.b.post_recv(1, rb.data(), 64, pr.b.reg(rb.data(), rb.size()));
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0); // 40 + 30 > 64
    pr.run_idle();
    REQUIRE(pr.b.recv_cqes.size() == 1);
    CHECK(pr.b.recv_cqes[0].status == IBV_WC_LOC_LEN_ERR);
    s.length = 2000; // over the 1024-byte path MTU
    w.wr_id = 3;
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
    REQUIRE(pr.a.send_cqes.size() == 3);
    CHECK(pr.a.send_cqes[2].status == IBV_WC_LOC_LEN_ERR);
    CHECK(pr.a.qp->state() == TransportState::error);
}

TEST_CASE("ud: over IPv6 the GRH is the IPv6 header", "[datapath][roce][ud]") {
    RocePair pr(QpTransport::ud, {}, {}, [](auto& a, auto& b) {
        for (auto* t : {&a, &b}) {
            t->path.sgid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0,
                            0,    0,    0, 0, 0, 0, 0, static_cast<std::uint8_t>(t->qpn)};
            t->path.dgid = t->path.sgid;
            t->path.dgid[15] = static_cast<std::uint8_t>(t->dest_qpn);
            t->path.flow_label = 0x12345;
        }
    });
    std::vector<std::uint8_t> rb(256, 0);
    pr.b.post_recv(1, rb.data(), 256, pr.b.reg(rb.data(), rb.size()));
    SendWr w;
    w.ud_path = pr.attrs_a.path;
    w.remote_qpn = 0x22;
    w.remote_qkey = 0x80000000;
    REQUIRE(pr.a.qp->post_send(w, {}, pr.now) == 0);
    // The harness logs the opcode at the IPv4 offset; parse the GRH instead.
    pr.run_idle();
    REQUIRE(pr.b.recv_cqes.size() == 1);
    CHECK(pr.b.recv_cqes[0].byte_len == 40);
    CHECK(pr.b.recv_cqes[0].wc_flags == IBV_WC_GRH);
    CHECK(rb[0] >> 4 == 6);                                        // version 6
    CHECK(((rb[1] & 0x0f) << 16 | rb[2] << 8 | rb[3]) == 0x12345); // flow label
    CHECK(rb[6] == 17);                                            // next header UDP
    CHECK(rb[8] == 0xfe);                                          // source fe80::11
    CHECK(rb[23] == 0x11);
    CHECK(rb[39] == 0x22); // destination fe80::22
}
