// RC SEND between two transport endpoints (datapath/README.md, "RoCE
// transport"): segmentation at the path MTU, completions on both sides,
// immediate data, unsignalled sends, and 10,000 messages delivered exactly
// once and in order through a channel that drops, duplicates and reorders.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <vector>

#include "support/roce_pair.hpp"

using namespace rdmasim;
using datapath::QpTransport;
using datapath::RoceRx;
using datapath::SendOp;
using datapath::SendWr;
using datapath::Sge;
using test::RocePair;
using test::send_wr;

namespace {

std::uint8_t pattern(std::uint32_t msg, std::uint32_t j) {
    return static_cast<std::uint8_t>(msg * 31 + j * 7 + 3);
}

} // namespace

TEST_CASE("rc send: a 3000-byte SEND goes as FIRST, MIDDLE, LAST and completes on both sides",
          "[datapath][roce][rc]") {
    RocePair pr;
    std::vector<std::uint8_t> src(3000), dst(4096, 0xee);
    for (std::uint32_t j = 0; j < src.size(); ++j)
        src[j] = pattern(1, j);
    Sge s{reinterpret_cast<std::uint64_t>(src.data()), 3000, pr.a.reg(src.data(), src.size())};
    pr.b.post_recv(77, dst.data(), 4096, pr.b.reg(dst.data(), dst.size()));
    REQUIRE(pr.a.qp->post_send(send_wr(5), test::one_sge(s), pr.now) == 0);
    pr.run_idle();

    REQUIRE(pr.log_a_to_b.size() == 3);
    CHECK(pr.log_a_to_b[0].second == 0x00); // SEND_FIRST
    CHECK(pr.log_a_to_b[1].second == 0x01); // SEND_MIDDLE
    CHECK(pr.log_a_to_b[2].second == 0x02); // SEND_LAST
    REQUIRE(pr.b.recv_cqes.size() == 1);
    const auto& r = pr.b.recv_cqes[0];
    CHECK(r.wr_id == 77);
    CHECK(r.status == IBV_WC_SUCCESS);
    CHECK(r.opcode == IBV_WC_RECV);
    CHECK(r.byte_len == 3000);
    CHECK(r.qp_num == 0x22);
    CHECK(r.wc_flags == 0);
    CHECK(std::memcmp(dst.data(), src.data(), 3000) == 0);
    CHECK(dst[3000] == 0xee); // nothing past the message
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].wr_id == 5);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_SUCCESS);
    CHECK(pr.a.send_cqes[0].opcode == IBV_WC_SEND);
    CHECK(pr.a.send_cqes[0].qp_num == 0x11);
    // PSNs: A's sq_psn is 100 and B expects 100; one ACK for the message.
    CHECK(pr.a.qp->next_send_psn() == 103);
    CHECK(pr.b.qp->expected_psn() == 103);
    CHECK(pr.b.qp->counters().get(RoceRx::consumed) == 3);
    CHECK(pr.b.qp->counters().acks_sent.get() == 1);
    CHECK(pr.a.qp->counters().get(RoceRx::consumed) == 1);
    CHECK(pr.a.qp->counters().rx_frames.get() == 1);
    CHECK(pr.a.qp->send_queue_size() == 0);
    // COMM_EST is raised only in RTR: both QPs were in RTS already.
    CHECK(pr.b.events.empty());
}

TEST_CASE("rc send: SEND with immediate, unsignalled sends, zero-length and inline sends",
          "[datapath][roce][rc]") {
    RocePair pr;
    std::vector<std::uint8_t> dst(4 * 256, 0);
    const std::uint32_t lk = pr.b.reg(dst.data(), dst.size());
    for (int i = 0; i < 4; ++i)
        pr.b.post_recv(100 + i, dst.data() + 256 * i, 256, lk);

    char text[] = "inline payload";
    SendWr w = send_wr(1, SendOp::send_imm);
    w.imm = 0x01020304;
    w.inline_data = true;
    Sge s{reinterpret_cast<std::uint64_t>(text), sizeof text, 0};
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == 0);
    std::memset(text, 'x', sizeof text - 1); // inline data was copied at post
    SendWr u = send_wr(2);
    u.signaled = false;
    u.solicited = true;
    REQUIRE(pr.a.qp->post_send(u, {}, pr.now) == 0); // zero-length, unsignalled
    REQUIRE(pr.a.qp->post_send(send_wr(3), {}, pr.now) == 0);
    pr.run_idle();

    REQUIRE(pr.b.recv_cqes.size() == 3);
    CHECK(pr.b.recv_cqes[0].wc_flags == IBV_WC_WITH_IMM);
    const std::uint8_t be[4] = {1, 2, 3, 4};
    std::uint32_t imm_be;
    std::memcpy(&imm_be, be, 4);
    CHECK(pr.b.recv_cqes[0].imm_data == imm_be); // ibv_wc.imm_data: network order
    CHECK(pr.b.recv_cqes[0].byte_len == sizeof text);
    CHECK(std::memcmp(dst.data(), "inline payload", sizeof text) == 0);
    CHECK(pr.b.recv_cqes[1].byte_len == 0);
    CHECK(pr.b.recv_cqes[1].solicited); // the SE bit, for solicited-only notification
    CHECK_FALSE(pr.b.recv_cqes[0].solicited);
    CHECK(pr.b.recv_cqes[2].wr_id == 102);
    REQUIRE(pr.a.send_cqes.size() == 2); // the unsignalled one completes silently
    CHECK(pr.a.send_cqes[0].wr_id == 1);
    CHECK(pr.a.send_cqes[1].wr_id == 3);
    CHECK(pr.log_a_to_b[0].second == 0x05); // SEND_ONLY_WITH_IMMEDIATE
}

TEST_CASE("rc send: a SEND is scattered over the receive WQE's SGEs; a receive SGE failing the MR "
          "check is LOC_PROT_ERR there and REM_OP_ERR at the requester",
          "[datapath][roce][rc]") {
    RocePair pr;
    std::vector<std::uint8_t> src(2500), dst(4096, 0xee);
    for (std::uint32_t j = 0; j < src.size(); ++j)
        src[j] = pattern(2, j);
    Sge s{reinterpret_cast<std::uint64_t>(src.data()), 2500, pr.a.reg(src.data(), src.size())};
    const std::uint32_t lk = pr.b.reg(dst.data(), dst.size());
    datapath::Wqe& w = pr.b.rq.next_wqe();
    w.wr_id = 1;
    w.num_sge = 3;
    w.total_len = 100 + 1000 + 2000;
    Sge* g = pr.b.rq.next_sges();
    g[0] = {reinterpret_cast<std::uint64_t>(dst.data() + 3000), 100, lk};
    g[1] = {reinterpret_cast<std::uint64_t>(dst.data()), 1000, lk};
    g[2] = {reinterpret_cast<std::uint64_t>(dst.data() + 1100), 2000, lk};
    pr.b.rq.publish();
    REQUIRE(pr.a.qp->post_send(send_wr(1), test::one_sge(s), pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.b.recv_cqes.size() == 1);
    CHECK(pr.b.recv_cqes[0].byte_len == 2500);
    CHECK(std::memcmp(dst.data() + 3000, src.data(), 100) == 0);
    CHECK(std::memcmp(dst.data(), src.data() + 100, 1000) == 0);
    CHECK(dst[1000] == 0xee);
    CHECK(std::memcmp(dst.data() + 1100, src.data() + 1100, 1400) == 0);
    CHECK(dst[2500] == 0xee);

    // A receive WQE whose SGE names a key that is not the MR's.
    pr.b.post_recv(2, dst.data(), 4096, lk + 1);
    REQUIRE(pr.a.qp->post_send(send_wr(2), test::one_sge(s), pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.b.recv_cqes.size() == 2);
    CHECK(pr.b.recv_cqes[1].status == IBV_WC_LOC_PROT_ERR);
    REQUIRE(pr.a.send_cqes.size() == 2);
    CHECK(pr.a.send_cqes[1].status == IBV_WC_REM_OP_ERR);
    CHECK(pr.b.qp->state() == datapath::TransportState::error);
    REQUIRE(!pr.b.events.empty());
    CHECK(pr.b.events[0] == datapath::TransportEvent::qp_fatal);
}

TEST_CASE("rc send: post_send refuses what the QP cannot take", "[datapath][roce][rc]") {
    datapath::TransportLimits lim;
    lim.max_send_wr = 2;
    lim.max_send_sge = 1;
    lim.max_inline = 8;
    RocePair pr(QpTransport::rc, {}, lim);
    pr.peer_gone = true;
    Sge two[2] = {{0, 0, 0}, {0, 0, 0}};
    CHECK(pr.a.qp->post_send(send_wr(1), two, pr.now) == EINVAL);
    char big[16] = {};
    Sge s{reinterpret_cast<std::uint64_t>(big), 16, 0};
    SendWr w = send_wr(1);
    w.inline_data = true;
    CHECK(pr.a.qp->post_send(w, test::one_sge(s), pr.now) == EINVAL);
    Sge huge{0x1000, (1u << 30) + 1, 1}; // over mlx5's max_msg_sz
    CHECK(pr.a.qp->post_send(send_wr(1), test::one_sge(huge), pr.now) == EINVAL);
    CHECK(pr.a.qp->post_send(send_wr(1), {}, pr.now) == 0);
    CHECK(pr.a.qp->post_send(send_wr(2), {}, pr.now) == 0);
    CHECK(pr.a.qp->post_send(send_wr(3), {}, pr.now) == ENOMEM);
}

TEST_CASE("rc send: 10,000 SENDs arrive exactly once and in order through drop, duplicate and "
          "reorder",
          "[datapath][roce][rc][faults]") {
    test::Faults f;
    f.drop = 0.03;
    f.dup = 0.03;
    f.reorder = 0.05;
    f.seed = GENERATE(1, 2, 3);
    datapath::TransportLimits lim;
    lim.max_send_wr = 64;
    RocePair pr(QpTransport::rc, f, lim);
    constexpr std::uint32_t kMsgs = 10000, kSlot = 4096, kRecv = 96;
    std::vector<std::uint8_t> sbuf(64 * kSlot), rbuf(kRecv * kSlot);
    const std::uint32_t slk = pr.a.reg(sbuf.data(), sbuf.size());
    const std::uint32_t rlk = pr.b.reg(rbuf.data(), rbuf.size());
    for (std::uint32_t i = 0; i < kRecv; ++i)
        pr.b.post_recv(i, rbuf.data() + i * kSlot, kSlot, rlk);
    auto size_of = [](std::uint32_t m) { return 4 + (m * 997) % 3000; };

    std::uint32_t posted = 0, received = 0;
    std::size_t seen_recv = 0;
    bool ok = true;
    while (received < kMsgs && ok) {
        while (posted < kMsgs && pr.a.qp->send_queue_size() < 64) { // its slot is free again
            const std::uint32_t len = size_of(posted);
            std::uint8_t* p = sbuf.data() + (posted % 64) * kSlot;
            std::memcpy(p, &posted, 4);
            for (std::uint32_t j = 4; j < len; ++j)
                p[j] = pattern(posted, j);
            Sge s{reinterpret_cast<std::uint64_t>(p), len, slk};
            REQUIRE(pr.a.qp->post_send(send_wr(posted), test::one_sge(s), pr.now) == 0);
            ++posted;
        }
        if (!pr.step()) break;
        for (; seen_recv < pr.b.recv_cqes.size(); ++seen_recv) {
            const auto& c = pr.b.recv_cqes[seen_recv];
            const std::uint8_t* p = rbuf.data() + c.wr_id * kSlot;
            std::uint32_t msg;
            std::memcpy(&msg, p, 4);
            bool good =
                c.status == IBV_WC_SUCCESS && msg == received && c.byte_len == size_of(received);
            for (std::uint32_t j = 4; good && j < c.byte_len; ++j)
                good = p[j] == pattern(msg, j);
            if (!good) {
                std::fprintf(stderr, "%s\n",
                             (std::ostringstream{} << "message " << received << " wr_id " << c.wr_id
                                                   << " status " << int(c.status) << " carried "
                                                   << msg << " len " << c.byte_len)
                                 .str()
                                 .c_str());
                ok = false;
                break;
            }
            ++received;
            pr.b.post_recv(c.wr_id, rbuf.data() + c.wr_id * kSlot, kSlot, rlk);
        }
    }
    pr.run_idle();
    REQUIRE(ok);
    CHECK(received == kMsgs);
    CHECK(pr.b.recv_cqes.size() == kMsgs);
    REQUIRE(pr.a.send_cqes.size() == kMsgs);
    for (std::uint32_t i = 0; i < kMsgs; ++i) {
        if (pr.a.send_cqes[i].wr_id != i || pr.a.send_cqes[i].status != IBV_WC_SUCCESS) {
            FAIL("send completion " << i << ": wr_id " << pr.a.send_cqes[i].wr_id << " status "
                                    << int(pr.a.send_cqes[i].status));
        }
    }
    // The faults did happen and were repaired.
    const auto& ca = pr.a.qp->counters();
    const auto& cb = pr.b.qp->counters();
    CHECK(ca.retransmitted.get() > 0);
    CHECK(cb.get(RoceRx::duplicate) > 0);
    CHECK(cb.get(RoceRx::sequence_error) > 0);
    // Every frame handed to a transport ended in exactly one outcome.
    std::uint64_t sum = 0;
    for (const auto& c : cb.rx)
        sum += c.get();
    CHECK(sum == cb.rx_frames.get());
    CHECK(pr.a.qp->state() == datapath::TransportState::rts);
    CHECK(pr.b.qp->state() == datapath::TransportState::rts);
}
