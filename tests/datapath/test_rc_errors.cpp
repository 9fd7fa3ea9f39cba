// RC error paths on the virtual clock (datapath/README.md, "RoCE
// transport"): RNR NAK waits and rnr_retry, the local ACK timeout and
// retry_cnt, a message longer than the receive buffer, an opcode out of
// sequence, COMM_EST, and a QP on an SRQ entering error.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cstring>
#include <vector>

#include "datapath/roce/timers.hpp"
#include "support/roce_pair.hpp"

using namespace rdmasim;
using datapath::QpTransport;
using datapath::RoceRx;
using datapath::SendOp;
using datapath::SendWr;
using datapath::Sge;
using datapath::TransportEvent;
using datapath::TransportState;
using test::RocePair;
using test::send_wr;

TEST_CASE("rc errors: the ACK timeout is 4.096 us * 2^timeout and the requester gives up with "
          "RETRY_EXC_ERR after retry_cnt retries",
          "[datapath][roce][rc]") {
    const std::uint8_t retry = GENERATE(0, 3, 7);
    const std::uint8_t timeout = GENERATE(8, 14);
    RocePair pr(QpTransport::rc, {}, {}, [&](auto& a, auto&) {
        a.retry_cnt = retry;
        a.timeout = timeout;
    });
    pr.peer_gone = true;
    const std::uint64_t t_ns = 4096ull << timeout;
    CHECK(datapath::ack_timeout_ns(timeout) == t_ns);
    REQUIRE(pr.a.qp->post_send(send_wr(1), {}, pr.now) == 0);
    REQUIRE(pr.a.qp->post_send(send_wr(2), {}, pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.a.send_cqes.size() == 2);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_RETRY_EXC_ERR);
    CHECK(pr.a.send_cqes[0].wr_id == 1);
    CHECK(pr.a.send_cqes[1].status == IBV_WC_WR_FLUSH_ERR);
    // Given up at the end of the last retry's timeout: (retry_cnt + 1) timeouts after the send.
    CHECK(pr.a.send_cqes[0].timestamp_ns == (retry + 1ull) * t_ns);
    CHECK(pr.now == (retry + 1ull) * t_ns);
    // The first transmission of both messages, then each retry resends both.
    REQUIRE(pr.log_a_to_b.size() == 2u * (retry + 1));
    for (unsigned r = 0; r <= retry; ++r)
        CHECK(pr.log_a_to_b[2 * r].first == r * t_ns);
    CHECK(pr.a.qp->counters().timeouts.get() == retry + 1u);
    CHECK(pr.a.qp->counters().retransmitted.get() == 2u * retry);
    CHECK(pr.a.qp->state() == TransportState::error);
}

TEST_CASE("rc errors: timeout 0 waits for ever", "[datapath][roce][rc]") {
    RocePair pr(QpTransport::rc, {}, {}, [](auto& a, auto&) { a.timeout = 0; });
    pr.peer_gone = true;
    REQUIRE(pr.a.qp->post_send(send_wr(1), {}, pr.now) == 0);
    CHECK(pr.a.qp->next_deadline_ns() == datapath::kNoDeadline);
    pr.run_idle();
    CHECK(pr.a.send_cqes.empty());
}

TEST_CASE("rc errors: RNR NAK, the requester waits the NAK's timer, then succeeds once a "
          "receive is posted",
          "[datapath][roce][rc]") {
    RocePair pr; // B's min_rnr_timer is code 1: 10 us
    std::uint8_t rb[32];
    const std::uint32_t lk = pr.b.reg(rb, sizeof rb);
    REQUIRE(pr.a.qp->post_send(send_wr(1), {}, pr.now) == 0);
    pr.run_until([&] { return pr.a.qp->counters().rnr_naks_received.get() == 3; });
    CHECK(pr.b.qp->counters().get(RoceRx::rnr) == 3);
    // 0: sent; 1000: RNR NAK; 2000: it arrives, wait 10 us; 12000: sent again.
    REQUIRE(pr.log_a_to_b.size() == 3);
    CHECK(pr.log_a_to_b[1].first == 12000);
    CHECK(pr.log_a_to_b[2].first == 24000);
    pr.b.post_recv(5, rb, sizeof rb, lk);
    pr.run_idle();
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_SUCCESS);
    REQUIRE(pr.b.recv_cqes.size() == 1);
    CHECK(pr.b.recv_cqes[0].wr_id == 5);
    CHECK(datapath::rnr_timer_ns(0) == 655'360'000);
    CHECK(datapath::rnr_timer_ns(31) == 491'520'000);
}

TEST_CASE("rc errors: rnr_retry exhausted completes with RNR_RETRY_EXC_ERR",
          "[datapath][roce][rc]") {
    RocePair pr(QpTransport::rc, {}, {}, [](auto& a, auto&) { a.rnr_retry = 2; });
    REQUIRE(pr.a.qp->post_send(send_wr(1), {}, pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_RNR_RETRY_EXC_ERR);
    // Three sends (0, 12000, 24000); the third RNR NAK arrives at 26000.
    CHECK(pr.log_a_to_b.size() == 3);
    CHECK(pr.a.send_cqes[0].timestamp_ns == 26000);
    CHECK(pr.a.qp->state() == TransportState::error);
    CHECK(pr.b.qp->state() == TransportState::rts); // the responder is fine
}

TEST_CASE("rc errors: a message longer than the receive buffer: LOC_LEN_ERR at the responder, "
          "REM_INV_REQ_ERR at the requester",
          "[datapath][roce][rc]") {
    RocePair pr;
    std::vector<std::uint8_t> src(2000, 9), rb(1500, 0);
    Sge s{reinterpret_cast<std::uint64_t>(src.data()), 2000, pr.a.reg(src.data(), src.size())};
    pr.b.post_recv(1, rb.data(), 1500, pr.b.reg(rb.data(), rb.size()));
    REQUIRE(pr.a.qp->post_send(send_wr(1), test::one_sge(s), pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.b.recv_cqes.size() == 1);
    CHECK(pr.b.recv_cqes[0].status == IBV_WC_LOC_LEN_ERR);
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_REM_INV_REQ_ERR);
    CHECK(pr.b.qp->state() == TransportState::error);
    CHECK(pr.b.qp->counters().get(RoceRx::length_error) == 1);
    REQUIRE(!pr.b.events.empty());
    CHECK(pr.b.events[0] == TransportEvent::qp_req_err);
}

TEST_CASE("rc errors: a MIDDLE without a FIRST is an invalid request; a PSN ahead is NAKed "
          "once; an old PSN is a duplicate",
          "[datapath][roce][rc]") {
    RocePair pr;
    std::vector<std::uint8_t> frame(2048);
    auto packet = [&](net::RoceOpcode op, std::uint32_t psn, std::uint32_t len,
                      bool ack_req) -> net::RocePacket {
        net::RoceHeaders h;
        h.bth.opcode = static_cast<std::uint8_t>(op);
        h.bth.dest_qp = 0x22;
        h.bth.psn = psn;
        h.bth.ack_req = ack_req;
        std::vector<std::uint8_t> payload(len, 1);
        const auto r = net::build_roce_frame(pr.attrs_a.path, h, payload, frame);
        REQUIRE(r.error == net::RoceBuildError::none);
        net::RocePacket p;
        REQUIRE(net::parse_roce_frame({frame.data(), r.len}, p) == net::RoceDrop::none);
        return p;
    };
    std::uint8_t rb[64];
    pr.b.post_recv(1, rb, sizeof rb, pr.b.reg(rb, sizeof rb));
    // B expects PSN 100.
    CHECK(pr.b.qp->receive(packet(net::RoceOpcode::rc_send_only, 103, 8, true), 0) ==
          RoceRx::sequence_error);
    CHECK(pr.b.qp->receive(packet(net::RoceOpcode::rc_send_only, 104, 8, true), 0) ==
          RoceRx::sequence_error);
    CHECK(pr.b.qp->counters().naks_sent.get() == 1); // once per ePSN
    CHECK(pr.b.qp->receive(packet(net::RoceOpcode::rc_send_only, 100, 8, true), 0) ==
          RoceRx::consumed);
    CHECK(pr.b.qp->receive(packet(net::RoceOpcode::rc_send_only, 100, 8, true), 0) ==
          RoceRx::duplicate);
    CHECK(pr.b.qp->counters().acks_sent.get() == 2); // the duplicate was ACKed again
    CHECK(pr.b.recv_cqes.size() == 1);
    CHECK(pr.b.qp->receive(packet(net::RoceOpcode::rc_send_middle, 101, 1024, false), 0) ==
          RoceRx::invalid_request);
    CHECK(pr.b.qp->state() == TransportState::error);
    CHECK(pr.b.qp->receive(packet(net::RoceOpcode::rc_send_only, 102, 8, true), 0) ==
          RoceRx::not_ready);
    CHECK(pr.b.qp->receive(packet(net::RoceOpcode::uc_send_only, 102, 8, true), 0) ==
          RoceRx::wrong_transport);
    const auto& c = pr.b.qp->counters();
    std::uint64_t sum = 0;
    for (const auto& x : c.rx)
        sum += x.get();
    CHECK(sum == c.rx_frames.get());
    CHECK(c.rx_frames.get() == 7);
}

TEST_CASE("rc errors: COMM_EST when the first packet arrives in RTR; an SRQ QP entering error "
          "raises LAST_WQE_REACHED and does not flush the SRQ",
          "[datapath][roce][rc]") {
    RocePair pr;
    pr.attrs_b.srq = true;
    pr.b.qp->modify(pr.attrs_b, TransportState::reset, pr.now);
    pr.b.qp->modify(pr.attrs_b, TransportState::init, pr.now);
    pr.b.qp->modify(pr.attrs_b, TransportState::rtr, pr.now);
    std::uint8_t rb[64];
    const std::uint32_t lk = pr.b.reg(rb, sizeof rb);
    pr.b.post_recv(1, rb, sizeof rb, lk);
    pr.b.post_recv(2, rb, sizeof rb, lk);
    REQUIRE(pr.a.qp->post_send(send_wr(1), {}, pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.b.recv_cqes.size() == 1);
    REQUIRE(pr.b.events.size() == 1);
    CHECK(pr.b.events[0] == TransportEvent::comm_est);
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_SUCCESS); // a QP in RTR answers
    pr.b.qp->modify(pr.attrs_b, TransportState::error, pr.now);
    REQUIRE(pr.b.events.size() == 2);
    CHECK(pr.b.events[1] == TransportEvent::last_wqe_reached);
    CHECK(pr.b.recv_cqes.size() == 1); // the SRQ's WQE stays for the other QPs
    CHECK(!pr.b.rq.empty());
}

TEST_CASE("rc errors: SQD finishes what was started, raises SQ_DRAINED, and starts nothing new "
          "until RTS",
          "[datapath][roce][rc]") {
    test::Faults f;
    f.drop = 0.5; // the first message needs retransmissions while draining
    f.seed = 5;
    RocePair pr(QpTransport::rc, f);
    std::uint8_t rb[64];
    const std::uint32_t lk = pr.b.reg(rb, sizeof rb);
    pr.b.post_recv(1, rb, sizeof rb, lk);
    pr.b.post_recv(2, rb, sizeof rb, lk);
    REQUIRE(pr.a.qp->post_send(send_wr(1), {}, pr.now) == 0);
    pr.a.qp->modify(pr.attrs_a, TransportState::sqd, pr.now);
    REQUIRE(pr.a.qp->post_send(send_wr(2), {}, pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].wr_id == 1);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_SUCCESS);
    REQUIRE(pr.a.events.size() == 1);
    CHECK(pr.a.events[0] == TransportEvent::sq_drained);
    CHECK(pr.b.recv_cqes.size() == 1);
    pr.a.qp->modify(pr.attrs_a, TransportState::rts, pr.now);
    pr.run_idle();
    REQUIRE(pr.a.send_cqes.size() == 2);
    CHECK(pr.a.send_cqes[1].status == IBV_WC_SUCCESS);
    CHECK(pr.b.recv_cqes.size() == 2);
}

TEST_CASE("rc errors: a slow receiver RNR-NAKs a stream for many rounds; with rnr_retry 7 and "
          "retry_cnt 0 every message still arrives",
          "[datapath][roce][rc]") {
    RocePair pr(QpTransport::rc, {}, {}, [](auto& a, auto&) {
        a.retry_cnt = 0;
        a.rnr_retry = 7;
    });
    std::vector<std::uint8_t> rb(16 * 64);
    const std::uint32_t lk = pr.b.reg(rb.data(), rb.size());
    pr.b.post_recv(0, rb.data(), 64, lk);
    for (int i = 0; i < 16; ++i)
        REQUIRE(pr.a.qp->post_send(send_wr(i), {}, pr.now) == 0);
    pr.run_until([&] { return pr.a.qp->counters().rnr_naks_received.get() >= 20; });
    CHECK(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.qp->counters().seq_naks_received.get() > 0);
    for (int i = 1; i < 16; ++i)
        pr.b.post_recv(i, rb.data() + 64 * i, 64, lk);
    pr.run_idle();
    REQUIRE(pr.a.send_cqes.size() == 16);
    for (const auto& c : pr.a.send_cqes)
        CHECK(c.status == IBV_WC_SUCCESS);
    REQUIRE(pr.b.recv_cqes.size() == 16);
    for (int i = 0; i < 16; ++i)
        CHECK(pr.b.recv_cqes[i].wr_id == static_cast<std::uint64_t>(i));
    CHECK(pr.a.qp->state() == TransportState::rts);
}
