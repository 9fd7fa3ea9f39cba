// RC after a loss (datapath/README.md, "RoCE transport", "Slow restart"):
// the requester resends at most TransportLimits::restart_window PSNs, and
// each PSN acknowledged lets one more go, up to the window again.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cstring>
#include <vector>

#include "support/roce_pair.hpp"

using namespace rdmasim;
using datapath::QpTransport;
using datapath::SendOp;
using datapath::Sge;
using test::rdma_wr;
using test::RocePair;

namespace {

constexpr std::uint32_t kMtu = 1024;   // the pair's MTU
constexpr std::uint32_t kPackets = 64; // what a requester sends in one turn (RocePort)

} // namespace

TEST_CASE("rc slow restart: after a burst is lost, the timeout resends restart_window PSNs, "
          "ACKs open the window again, and the WRITE lands whole",
          "[datapath][roce][rc]") {
    datapath::TransportLimits lim; // window 512: the whole WRITE goes at once
    REQUIRE(lim.restart_window == 32);
    RocePair pr(QpTransport::rc, {}, lim,
                [](auto& a, auto& b) { a.mtu = b.mtu = net::PathMtu::mtu1024; });
    std::vector<std::uint8_t> src(kPackets * kMtu), dst(src.size(), 0);
    for (std::size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<std::uint8_t>(i * 7 + 3);
    Sge s{reinterpret_cast<std::uint64_t>(src.data()), static_cast<std::uint32_t>(src.size()),
          pr.a.reg(src.data(), src.size())};
    const std::uint32_t rkey = pr.b.reg(dst.data(), dst.size());

    pr.peer_gone = true; // a switch drops the whole first transmission
    REQUIRE(pr.a.qp->post_send(rdma_wr(1, SendOp::write, dst.data(), rkey), test::one_sge(s),
                               pr.now) == 0);
    REQUIRE(pr.log_a_to_b.size() == kPackets);
    pr.peer_gone = false;

    // The ACK timeout: one step, and what it sends before any ACK is back.
    REQUIRE(pr.run_until([&] { return pr.a.qp->counters().timeouts.get() == 1; }));
    CHECK(pr.log_a_to_b.size() - kPackets == lim.restart_window);
    CHECK(pr.a.qp->counters().slow_restarts.get() == 1);

    pr.run_idle();
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_SUCCESS);
    CHECK(std::memcmp(src.data(), dst.data(), src.size()) == 0);
    // Each lost packet went again exactly once: nothing more was lost.
    CHECK(pr.a.qp->counters().retransmitted.get() == kPackets);
    CHECK(pr.a.qp->counters().timeouts.get() == 1);
    CHECK(pr.a.qp->counters().slow_restarts.get() == 1);
    // The window opened again: fewer round trips than restart_window a trip.
    CHECK(pr.log_a_to_b.size() == 2 * kPackets);
    CHECK(pr.b.qp->counters().acks_sent.get() >= 2); // the restart's, and the rest's
}

TEST_CASE("rc slow restart: the packet that fills a cut window asks for an ACK, so a message "
          "longer than the window never waits for a timeout",
          "[datapath][roce][rc]") {
    datapath::TransportLimits lim;
    lim.restart_window = 4; // 4 PSNs in flight after the loss, no AckReq among them by position
    RocePair pr(QpTransport::rc, {}, lim,
                [](auto& a, auto& b) { a.mtu = b.mtu = net::PathMtu::mtu1024; });
    constexpr std::uint32_t kLong = 200;
    std::vector<std::uint8_t> src(kLong * kMtu, 0x5a), dst(src.size(), 0);
    Sge s{reinterpret_cast<std::uint64_t>(src.data()), static_cast<std::uint32_t>(src.size()),
          pr.a.reg(src.data(), src.size())};
    const std::uint32_t rkey = pr.b.reg(dst.data(), dst.size());
    pr.peer_gone = true; // the first turn's packets are lost; the next ones draw a sequence NAK
    REQUIRE(pr.a.qp->post_send(rdma_wr(1, SendOp::write, dst.data(), rkey), test::one_sge(s),
                               pr.now) == 0);
    REQUIRE(pr.log_a_to_b.size() == kPackets);
    pr.peer_gone = false;
    pr.run_idle();
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_SUCCESS);
    CHECK(dst == src);
    CHECK(pr.a.qp->counters().seq_naks_received.get() >= 1);
    CHECK(pr.a.qp->counters().slow_restarts.get() >= 1);
    CHECK(pr.a.qp->counters().timeouts.get() == 0);
}
