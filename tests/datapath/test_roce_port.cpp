// RocePort (datapath/README.md, "RoCE transport"): two QPs of one port
// talking through it (a device's loopback), frames demultiplexed by BTH
// DestQP, parse drops and unknown QPs counted, the port's counters the sum
// of its QPs', timers serviced through the port.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <deque>
#include <vector>

#include "datapath/roce_port.hpp"
#include "support/roce_pair.hpp"

using namespace rdmasim;
using datapath::QpTransport;
using datapath::RoceRx;
using datapath::TransportState;

TEST_CASE("roce port: two QPs of one port exchange SENDs through ingress; every frame is "
          "counted once",
          "[datapath][roce]") {
    datapath::RocePort port;
    test::RoceEndpoint a({}, port.qp_counters()), b({}, port.qp_counters());
    std::deque<std::vector<std::uint8_t>> wire;
    a.out = b.out = [&](std::span<const std::uint8_t> f, std::uint64_t) {
        wire.emplace_back(f.begin(), f.end());
    };
    auto ta = test::RocePair::attrs(QpTransport::rc, 0x11, 0x22, 1, 2, a.pd());
    auto tb = test::RocePair::attrs(QpTransport::rc, 0x22, 0x11, 2, 1, b.pd());
    for (auto st : {TransportState::init, TransportState::rtr, TransportState::rts}) {
        a.qp->modify(ta, st, 0);
        b.qp->modify(tb, st, 0);
    }
    REQUIRE(port.attach(*a.qp));
    REQUIRE(port.attach(*b.qp));
    CHECK_FALSE(port.attach(*a.qp));
    std::uint8_t rb[64];
    b.post_recv(1, rb, sizeof rb, b.reg(rb, sizeof rb));
    datapath::SendWr w;
    REQUIRE(a.qp->post_send(w, {}, 0) == 0);
    REQUIRE(wire.size() == 1);
    // A copy with a damaged ICRC, and one for a QP nobody has.
    std::vector<std::uint8_t> bad = wire.front();
    bad[14 + 20 + 8 + 11] ^= 1; // the PSN (the frame ends in Ethernet padding)
    CHECK_FALSE(port.ingress(bad, 10).has_value());
    std::vector<std::uint8_t> stray = wire.front();
    net::RocePacket p;
    REQUIRE(net::parse_roce_frame(stray, p) == net::RoceDrop::none);
    p.headers.bth.dest_qp = 0x99;
    std::vector<std::uint8_t> out(256);
    const auto r = net::build_roce_frame(ta.path, p.headers, p.payload, out);
    CHECK_FALSE(port.ingress({out.data(), r.len}, 10).has_value());
    std::uint64_t t = 10;
    while (!wire.empty()) {
        auto f = std::move(wire.front());
        wire.pop_front();
        CHECK(port.ingress(f, t += 1000) == RoceRx::consumed);
    }
    REQUIRE(b.recv_cqes.size() == 1);
    REQUIRE(a.send_cqes.size() == 1);
    const auto& c = port.counters();
    CHECK(c.frames.get() == 4);
    CHECK(c.parse_drops[static_cast<std::size_t>(net::RoceDrop::icrc)].get() == 1);
    CHECK(c.unknown_qp.get() == 1);
    CHECK(c.qps.rx_frames.get() == 2);
    CHECK(c.qps.get(RoceRx::consumed) == 2);
    CHECK(c.qps.tx_packets.get() == 2); // the SEND and its ACK
    CHECK(c.qps.acks_sent.get() == 1);

    // Timers through the port: B goes away, A's SEND times out.
    port.detach(0x22);
    REQUIRE(a.qp->post_send(w, {}, t) == 0);
    wire.clear();
    const std::uint64_t dl = port.next_deadline_ns();
    CHECK(dl == t + datapath::ack_timeout_ns(ta.timeout));
    port.service(dl - 1);
    CHECK(wire.empty());
    port.service(dl);
    CHECK(wire.size() == 1); // retransmitted
    CHECK(c.qps.retransmitted.get() == 1);
    CHECK(port.ingress(wire.front(), dl + 1000) == std::nullopt);
    CHECK(c.unknown_qp.get() == 2);
}
