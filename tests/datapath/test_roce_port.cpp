// RocePort (datapath/README.md, "RoCE transport"): two QPs of one port
// talking through it (a device's loopback), frames demultiplexed by BTH
// DestQP, parse drops and unknown QPs counted, the port's counters the sum
// of its QPs', timers serviced through the port.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <vector>

#include "datapath/roce/port.hpp"
#include "support/roce_pair.hpp"

using namespace rdmasim;
using datapath::QpTransport;
using datapath::RoceRx;
using datapath::TransportState;

TEST_CASE("roce port: two QPs of one port exchange SENDs through ingress; every frame is "
          "counted once",
          "[datapath][roce]") {
    datapath::RocePort port;
    test::RoceEndpoint a({}, &port), b({}, &port);
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
    // The port's deadline is never later than the QP's (the first SEND's
    // timer, cancelled by its ACK, may leave it early); a service finds the
    // QP's own.
    const std::uint64_t dl = t + datapath::ack_timeout_ns(ta.timeout);
    CHECK(port.next_deadline_ns() <= dl);
    port.service(dl - 1);
    CHECK(wire.empty());
    CHECK(port.next_deadline_ns() == dl);
    port.service(dl);
    CHECK(wire.size() == 1); // retransmitted
    CHECK(c.qps.retransmitted.get() == 1);
    CHECK(port.ingress(wire.front(), dl + 1000) == std::nullopt);
    CHECK(c.unknown_qp.get() == 2);
}

namespace {
// Two QPs of one port whose frames go through the port's loopback queue.
struct LoopbackPair {
    datapath::RocePort port;
    test::RoceEndpoint a, b;
    datapath::TransportAttrs ta, tb;
    std::uint64_t now = 0;
    explicit LoopbackPair(std::size_t bytes, std::uint32_t frames = 16384)
        : port(bytes, frames), a({}, &port), b({}, &port) {
        a.out = b.out = [this](std::span<const std::uint8_t> f, std::uint64_t) {
            port.queue_loopback(f);
        };
        ta = test::RocePair::attrs(QpTransport::rc, 0x11, 0x22, 1, 2, a.pd());
        tb = test::RocePair::attrs(QpTransport::rc, 0x22, 0x11, 2, 1, b.pd());
        for (auto st : {TransportState::init, TransportState::rtr, TransportState::rts}) {
            a.qp->modify(ta, st, 0);
            b.qp->modify(tb, st, 0);
        }
        REQUIRE(port.attach(*a.qp));
        REQUIRE(port.attach(*b.qp));
    }
    // Time passes to the next deadline; the loopback drains after every call.
    bool idle_step() {
        port.new_turn(); // a burst: the requesters' next turn
        port.resume_waiting(now);
        port.drain_loopback(now);
        const std::uint64_t dl = port.next_deadline_ns();
        if (dl == datapath::kNoDeadline) return false;
        now = std::max(now, dl);
        port.service(now);
        port.drain_loopback(now);
        return true;
    }
};
} // namespace

TEST_CASE("roce port: loopback between two QPs of the port, 2,000 SENDs and a 1 MiB WRITE; "
          "a queue too small loses frames and RC recovers",
          "[datapath][roce]") {
    const std::size_t bytes = GENERATE(std::size_t{8} << 20, std::size_t{64} << 10);
    LoopbackPair lp(bytes);
    std::vector<std::uint8_t> src(1 << 20), dst(1 << 20, 0), rb(64 * 2048);
    for (std::size_t i = 0; i < src.size(); ++i)
        src[i] = static_cast<std::uint8_t>(i * 5 + 1);
    const std::uint32_t slk = lp.a.reg(src.data(), src.size());
    const std::uint32_t rkey = lp.b.reg(dst.data(), dst.size());
    const std::uint32_t rlk = lp.b.reg(rb.data(), rb.size());
    for (std::uint32_t i = 0; i < 64; ++i)
        lp.b.post_recv(i, rb.data() + i * 2048, 2048, rlk);
    std::uint32_t sent = 0;
    std::size_t seen = 0;
    while (seen < 2000) {
        const std::size_t before = seen;
        while (sent < 2000 && lp.a.qp->send_queue_size() < 32) {
            datapath::SendWr w;
            w.wr_id = sent;
            const datapath::Sge s{reinterpret_cast<std::uint64_t>(src.data() + sent), 2000, slk};
            REQUIRE(lp.a.qp->post_send(w, {&s, 1}, lp.now) == 0);
            ++sent;
        }
        lp.port.drain_loopback(lp.now);
        for (; seen < lp.b.recv_cqes.size(); ++seen) {
            const auto& c = lp.b.recv_cqes[seen];
            REQUIRE(c.status == IBV_WC_SUCCESS);
            REQUIRE(std::memcmp(rb.data() + c.wr_id * 2048, src.data() + seen, 2000) == 0);
            lp.b.post_recv(c.wr_id, rb.data() + c.wr_id * 2048, 2048, rlk);
        }
        if (seen == before && !lp.idle_step()) // no progress: time must pass
            FAIL("stalled: seen " << seen << " sent " << sent << " a sq "
                                  << lp.a.qp->send_queue_size() << " a psn "
                                  << lp.a.qp->next_send_psn() << " b epsn "
                                  << lp.b.qp->expected_psn() << " a state " << int(lp.a.qp->state())
                                  << " b state " << int(lp.b.qp->state()) << " overflow "
                                  << lp.port.counters().loopback_overflow.get() << " a cqes "
                                  << lp.a.send_cqes.size());
    }
    datapath::SendWr w;
    w.wr_id = 9999;
    w.op = datapath::SendOp::write;
    w.remote_addr = reinterpret_cast<std::uint64_t>(dst.data());
    w.rkey = rkey;
    const datapath::Sge s{reinterpret_cast<std::uint64_t>(src.data()), 1 << 20, slk};
    REQUIRE(lp.a.qp->post_send(w, {&s, 1}, lp.now) == 0);
    while (lp.idle_step()) {
    }
    CHECK(dst == src);
    REQUIRE(lp.a.send_cqes.size() == 2001);
    for (const auto& c : lp.a.send_cqes)
        CHECK(c.status == IBV_WC_SUCCESS);
    CHECK(lp.port.loopback_empty());
    const auto& c = lp.port.counters();
    CHECK(c.frames.get() == c.loopback_frames.get());
    if (bytes < (1u << 20)) {
        CHECK(c.loopback_overflow.get() > 0);
        CHECK(c.qps.retransmitted.get() > 0);
    } else {
        CHECK(c.loopback_overflow.get() == 0);
    }
}

TEST_CASE("roce port: a congested wire stops the requester before its next packet; "
          "resume_waiting sends the rest, in order, once there is room",
          "[datapath][roce][lossless]") {
    datapath::RocePort port;
    test::RoceEndpoint a({}, &port);
    std::vector<std::uint32_t> psns;
    a.out = [&](std::span<const std::uint8_t> f, std::uint64_t) {
        net::RocePacket p;
        REQUIRE(net::parse_roce_frame(f, p) == net::RoceDrop::none);
        psns.push_back(p.headers.bth.psn);
    };
    bool congested = false;
    struct Ctx {
        test::RoceEndpoint* ep;
        bool* congested;
    } ctx{&a, &congested};
    port.set_wire({.send = [](void* c, std::span<std::uint8_t> f, std::uint64_t now) noexcept {
                       static_cast<Ctx*>(c)->ep->out(f, now);
                   },
                   .context = &ctx,
                   .congested = [](void* c) noexcept { return *static_cast<Ctx*>(c)->congested; }});
    const auto ta = test::RocePair::attrs(QpTransport::uc, 0x11, 0x22, 100, 1, a.pd());
    for (auto st : {TransportState::init, TransportState::rtr, TransportState::rts}) a.qp->modify(ta, st, 0);
    REQUIRE(port.attach(*a.qp));
    std::vector<std::uint8_t> buf(4 * 1024, 7); // 4 packets at MTU 1024
    const datapath::Sge s{reinterpret_cast<std::uint64_t>(buf.data()), 4096, a.reg(buf.data(), buf.size())};
    datapath::SendWr w = test::send_wr(1);
    REQUIRE(a.qp->post_send(w, {&s, 1}, 0) == 0);
    CHECK(psns.size() == 4);
    // The wire is full: the next message's packets wait, none is lost.
    congested = true;
    w = test::send_wr(2);
    REQUIRE(a.qp->post_send(w, {&s, 1}, 0) == 0);
    CHECK(psns.size() == 4);
    CHECK(a.qp->waiting_for_room());
    CHECK(port.room_waiters());
    port.resume_waiting(10); // still congested: nothing moves
    CHECK(psns.size() == 4);
    congested = false;
    port.resume_waiting(20);
    CHECK_FALSE(a.qp->waiting_for_room());
    CHECK_FALSE(port.room_waiters());
    REQUIRE(psns.size() == 8);
    for (std::size_t i = 0; i < psns.size(); ++i) CHECK(psns[i] == 100 + i);
}

TEST_CASE("roce port: a requester sends at most kTurnPackets packets between two reads "
          "of the wire; the next turn sends the rest, in order",
          "[datapath][roce][lossless]") {
    datapath::RocePort port;
    test::RoceEndpoint a({}, &port);
    std::vector<std::uint32_t> psns;
    a.out = [&](std::span<const std::uint8_t> f, std::uint64_t) {
        net::RocePacket p;
        REQUIRE(net::parse_roce_frame(f, p) == net::RoceDrop::none);
        psns.push_back(p.headers.bth.psn);
    };
    const auto ta = test::RocePair::attrs(QpTransport::uc, 0x11, 0x22, 100, 1, a.pd());
    for (auto st : {TransportState::init, TransportState::rtr, TransportState::rts}) a.qp->modify(ta, st, 0);
    REQUIRE(port.attach(*a.qp));
    constexpr std::uint32_t kTurn = datapath::RocePort::kTurnPackets;
    std::vector<std::uint8_t> buf((2 * kTurn + 10) * 1024, 7); // 2.x turns at MTU 1024
    const datapath::Sge s{reinterpret_cast<std::uint64_t>(buf.data()), static_cast<std::uint32_t>(buf.size()),
                          a.reg(buf.data(), buf.size())};
    port.new_turn();
    REQUIRE(a.qp->post_send(test::send_wr(1), {&s, 1}, 0) == 0);
    // One turn's packets; the rest waits for the port to read its wire.
    CHECK(psns.size() == kTurn);
    CHECK(port.turn_waiters());
    port.resume_waiting(1); // the same turn: nothing more
    CHECK(psns.size() == kTurn);
    port.new_turn();
    port.resume_waiting(2);
    CHECK(psns.size() == 2 * kTurn);
    port.new_turn();
    port.resume_waiting(3);
    REQUIRE(psns.size() == 2 * kTurn + 10);
    CHECK_FALSE(port.turn_waiters());
    for (std::size_t i = 0; i < psns.size(); ++i) CHECK(psns[i] == 100 + i);
    REQUIRE(a.send_cqes.size() == 1);
}

TEST_CASE("roce port: a QP that waits for the turn goes before one that has not waited; "
          "the turn's last packet asks for an ACK; no ACK timer runs with nothing in flight",
          "[datapath][roce][lossless]") {
    datapath::RocePort port;
    test::RoceEndpoint a({}, &port), b({}, &port);
    std::vector<std::pair<std::uint32_t, bool>> sent; // (destination QPN, AckReq) in wire order
    a.out = b.out = [&](std::span<const std::uint8_t> f, std::uint64_t) { // the port's wire
        net::RocePacket p;
        REQUIRE(net::parse_roce_frame(f, p) == net::RoceDrop::none);
        sent.emplace_back(p.headers.bth.dest_qp, p.headers.bth.ack_req);
    };
    const auto ta = test::RocePair::attrs(QpTransport::rc, 0x11, 0x21, 100, 1, a.pd());
    const auto tb = test::RocePair::attrs(QpTransport::rc, 0x12, 0x22, 100, 1, b.pd());
    for (auto st : {TransportState::init, TransportState::rtr, TransportState::rts}) {
        a.qp->modify(ta, st, 0);
        b.qp->modify(tb, st, 0);
    }
    REQUIRE(port.attach(*a.qp));
    REQUIRE(port.attach(*b.qp));
    constexpr std::uint32_t kTurn = datapath::RocePort::kTurnPackets;
    static_assert(kTurn > 20 && (kTurn - 10) % 32 != 31);
    std::vector<std::uint8_t> buf(2 * kTurn * 1024, 7);
    const std::uint32_t lk_a = a.reg(buf.data(), buf.size()), lk_b = b.reg(buf.data(), buf.size());
    const auto sge = [&](std::uint32_t packets, std::uint32_t lkey) {
        return datapath::Sge{reinterpret_cast<std::uint64_t>(buf.data()), packets * 1024, lkey};
    };
    // A: 10 packets, then kTurn; its turn ends inside the second message,
    // at a packet that would not ask for an ACK by position.
    port.new_turn();
    const datapath::Sge a1 = sge(10, lk_a), a2 = sge(kTurn, lk_a), b1 = sge(kTurn + 20, lk_b);
    REQUIRE(a.qp->post_send(test::send_wr(1), {&a1, 1}, 0) == 0);
    REQUIRE(a.qp->post_send(test::send_wr(2), {&a2, 1}, 0) == 0);
    REQUIRE(sent.size() == kTurn);
    CHECK(sent.back().second); // the turn's last packet asks for an ACK
    // All A sent is acknowledged; the rest of its message waits for a turn,
    // not on the wire: no ACK timer runs.
    net::RocePacket ack;
    ack.headers.bth.opcode = static_cast<std::uint8_t>(net::RoceOpcode::rc_ack);
    ack.headers.bth.dest_qp = 0x11;
    ack.headers.bth.pkey = ta.pkey;
    ack.headers.bth.psn = 100 + kTurn - 1;
    ack.headers.aeth.syndrome = net::Aeth::make_syndrome(net::AckKind::ack, net::kCreditsInvalid);
    ack.headers.aeth.msn = 1;
    ack.info = net::opcode_info(ack.headers.bth.opcode);
    REQUIRE(a.qp->receive(ack, 1) == datapath::RoceRx::consumed);
    CHECK(a.qp->next_deadline_ns() == datapath::kNoDeadline);
    CHECK(sent.size() == kTurn);
    port.new_turn();           // a new turn, before the flush resumed A
    REQUIRE(b.qp->post_send(test::send_wr(3), {&b1, 1}, 0) == 0);
    CHECK(sent.size() == kTurn); // B queues behind A
    CHECK(b.qp->waiting_for_room());
    port.resume_waiting(1); // A's last 10, then B's first kTurn - 10
    REQUIRE(sent.size() == 2 * kTurn);
    for (std::uint32_t i = kTurn; i < kTurn + 10; ++i) CHECK(sent[i].first == 0x21);
    for (std::uint32_t i = kTurn + 10; i < 2 * kTurn; ++i) CHECK(sent[i].first == 0x22);
    port.new_turn();
    port.resume_waiting(2); // B's rest
    REQUIRE(sent.size() == 2 * kTurn + 30);
    for (std::uint32_t i = 2 * kTurn; i < sent.size(); ++i) CHECK(sent[i].first == 0x22);
    CHECK_FALSE(port.room_waiters());
}

namespace {

// An RC QP of `port` (timeout 8: 1.05 ms) in RTS and attached, the port on a
// live wire, and a 100-byte buffer registered for it (`sge`).
struct LiveRc {
    explicit LiveRc(datapath::RocePort& port) : a({}, &port) {
        ta = test::RocePair::attrs(QpTransport::rc, 0x11, 0x22, 100, 1, a.pd());
        for (auto st : {TransportState::init, TransportState::rtr, TransportState::rts})
            a.qp->modify(ta, st, 0);
        REQUIRE(port.attach(*a.qp));
        port.set_live_wire(true);
        sge = {reinterpret_cast<std::uint64_t>(buf.data()), 100, a.reg(buf.data(), buf.size())};
    }
    test::RoceEndpoint a;
    datapath::TransportAttrs ta;
    std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(100, 7);
    datapath::Sge sge{};
};

} // namespace

TEST_CASE("roce port: on a live wire an ACK timer expires only once the wire was found empty "
          "after its deadline, and never more than kMaxTimerDefer late",
          "[datapath][roce][lossless]") {
    const bool drained = GENERATE(true, false);
    datapath::RocePort port;
    LiveRc rc(port);
    test::RoceEndpoint& a = rc.a;
    std::uint32_t frames = 0;
    a.out = [&](std::span<const std::uint8_t>, std::uint64_t) { ++frames; };
    port.wire_drained(1000);
    REQUIRE(a.qp->post_send(test::send_wr(1), {&rc.sge, 1}, 1000) == 0);
    REQUIRE(frames == 1);
    const std::uint64_t due = a.qp->next_deadline_ns();
    REQUIRE(due == 1000 + datapath::ack_timeout_ns(rc.ta.timeout));
    // Due, but the wire was last found empty before the deadline: what it
    // holds unread may be the ACK.
    port.service(due + 500'000);
    CHECK(a.qp->counters().timeouts.get() == 0);
    CHECK(frames == 1);
    if (drained) { // read empty after the deadline: it expires
        port.wire_drained(due + 600'000);
        port.service(due + 700'000);
    } else { // never found empty: at most kMaxTimerDefer late
        port.service(due + datapath::RocePort::kMaxTimerDefer - 1);
        CHECK(a.qp->counters().timeouts.get() == 0);
        port.service(due + datapath::RocePort::kMaxTimerDefer);
    }
    CHECK(a.qp->counters().timeouts.get() == 1);
    CHECK(frames == 2); // resent
}

TEST_CASE("roce port: on a live wire a due ACK timeout restarts while the peer has not read "
          "the requests, for up to kMaxAckHold; then it fires",
          "[datapath][roce][lossless]") {
    datapath::RocePort port;
    LiveRc rc(port);
    test::RoceEndpoint& a = rc.a;
    std::uint32_t frames = 0;
    bool unread = true;
    struct Ctx {
        std::uint32_t* frames;
        bool* unread;
    } ctx{&frames, &unread};
    port.set_wire({.send = [](void* c, std::span<std::uint8_t>,
                              std::uint64_t) noexcept { ++*static_cast<Ctx*>(c)->frames; },
                   .context = &ctx,
                   .unread = [](void* c) noexcept { return *static_cast<Ctx*>(c)->unread; }});
    REQUIRE(a.qp->post_send(test::send_wr(1), {&rc.sge, 1}, 1000) == 0);
    REQUIRE(frames == 1);
    const std::uint64_t t = datapath::ack_timeout_ns(rc.ta.timeout);
    std::uint64_t now = 1000 + t;
    port.wire_drained(now); // only the peer holds it up
    port.service(now);      // due, the peer has not read the request: restarted
    CHECK(a.qp->counters().timeouts.get() == 0);
    CHECK(a.qp->counters().ack_timer_holds.get() == 1);
    CHECK(a.qp->next_deadline_ns() == now + t);
    CHECK(frames == 1);
    SECTION("the peer reads: the restarted timer fires a full timeout later, not at once") {
        unread = false;
        port.wire_drained(now + t - 1);
        port.service(now + t - 1);
        CHECK(a.qp->counters().timeouts.get() == 0);
        port.wire_drained(now + t);
        port.service(now + t);
        CHECK(a.qp->counters().timeouts.get() == 1);
        CHECK(frames == 2); // resent
    }
    SECTION("a peer that never reads: held for kMaxAckHold, then the timeout fires") {
        const std::uint64_t first = now;
        while (now - first < datapath::RoceQp::kMaxAckHold) {
            now = a.qp->next_deadline_ns();
            port.wire_drained(now);
            port.service(now);
        }
        CHECK(a.qp->counters().timeouts.get() == 1);
        CHECK(frames == 2);
    }
}

TEST_CASE("roce port: a READ request that finds the wire congested waits, and so do its QP's "
          "requests after it; once there is room they go on, in order, and nothing is resent",
          "[datapath][roce][lossless]") {
    test::RocePair pr(QpTransport::rc);
    pr.through_ports = true;
    bool congested = false;
    struct Ctx {
        test::RoceEndpoint* ep;
        bool* congested;
    } ctx{&pr.b, &congested};
    pr.b.port->set_wire(
        {.send = [](void* c, std::span<std::uint8_t> f,
                    std::uint64_t now) noexcept { static_cast<Ctx*>(c)->ep->out(f, now); },
         .context = &ctx,
         .congested = [](void* c) noexcept { return *static_cast<Ctx*>(c)->congested; }});
    std::vector<std::uint8_t> remote(5000), local(5000, 0), src(300, 0x5a);
    for (std::size_t i = 0; i < remote.size(); ++i)
        remote[i] = static_cast<std::uint8_t>(i * 7);
    const std::uint32_t rkey = pr.b.reg(remote.data(), remote.size());
    const std::uint32_t lkey = pr.a.reg(local.data(), local.size());
    const std::uint32_t skey = pr.a.reg(src.data(), src.size());
    datapath::Sge rd{reinterpret_cast<std::uint64_t>(local.data()), 5000, lkey};
    datapath::Sge wr{reinterpret_cast<std::uint64_t>(src.data()), 300, skey};
    congested = true; // B's wire: the READ's 5 responses would only pile up
    REQUIRE(pr.a.qp->post_send(test::rdma_wr(1, datapath::SendOp::read, remote.data(), rkey),
                               test::one_sge(rd), pr.now) == 0);
    // The WRITE lands where the READ reads: it must not pass it.
    REQUIRE(pr.a.qp->post_send(test::rdma_wr(2, datapath::SendOp::write, remote.data(), rkey),
                               test::one_sge(wr), pr.now) == 0);
    const std::uint64_t sent_by_a = pr.log_a_to_b.size();
    REQUIRE(sent_by_a == 2);
    pr.run_until([&] { return pr.b.port->held_now() == 2; }, pr.now + 100'000);
    CHECK(pr.b.port->held_now() == 2);
    CHECK(pr.b.port->counters().requests_held.get() == 2);
    CHECK(pr.frames == sent_by_a); // B answered nothing
    CHECK(remote[0] == 0);         // nor wrote
    congested = false;
    pr.b.port->release_held(pr.now);
    CHECK(pr.b.port->held_now() == 0);
    pr.run_idle(pr.now + 100'000);
    REQUIRE(pr.a.send_cqes.size() == 2);
    CHECK(pr.a.send_cqes[0].wr_id == 1);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_SUCCESS);
    CHECK(pr.a.send_cqes[1].wr_id == 2);
    CHECK(pr.a.send_cqes[1].status == IBV_WC_SUCCESS);
    for (std::size_t i = 0; i < local.size(); ++i) // what was there before the WRITE
        if (local[i] != static_cast<std::uint8_t>(i * 7)) FAIL("READ data differs at byte " << i);
    CHECK(remote[0] == 0x5a);
    CHECK(pr.a.qp->counters().retransmitted.get() == 0);
    CHECK(pr.a.qp->counters().timeouts.get() == 0);
    CHECK(pr.b.port->counters().requests_held_overflow.get() == 0);
}

TEST_CASE("roce port: on a live wire whose timers' clock is held back, a deadline that went "
          "away is found gone once real time passes it",
          "[datapath][roce][lossless]") {
    test::RocePair pr(QpTransport::rc);
    datapath::RocePort& port = *pr.a.port;
    port.set_live_wire(true); // and never read empty: the timers' clock stays at 0
    std::vector<std::uint8_t> remote(100), src(100, 3);
    const std::uint32_t rkey = pr.b.reg(remote.data(), remote.size());
    datapath::Sge s{reinterpret_cast<std::uint64_t>(src.data()), 100,
                    pr.a.reg(src.data(), src.size())};
    REQUIRE(pr.a.qp->post_send(test::rdma_wr(1, datapath::SendOp::write, remote.data(), rkey),
                               test::one_sge(s), pr.now) == 0);
    const std::uint64_t armed = port.next_deadline_ns();
    REQUIRE(armed != datapath::kNoDeadline);
    pr.run_until([&] { return pr.a.send_cqes.size() == 1; }); // ACKed: no timer left
    REQUIRE(pr.a.qp->next_deadline_ns() == datapath::kNoDeadline);
    CHECK(port.next_deadline_ns() == armed); // cached, early: allowed
    port.service(armed + 1);
    CHECK(port.next_deadline_ns() == datapath::kNoDeadline);
    CHECK(pr.a.qp->counters().timeouts.get() == 0);
}

TEST_CASE("roce port: a QP the waiting list cannot hold (not attached) is not marked waiting",
          "[datapath][roce][lossless]") {
    datapath::RocePort port;
    test::RoceEndpoint a({}, &port);
    a.out = [](std::span<const std::uint8_t>, std::uint64_t) {};
    const auto ta = test::RocePair::attrs(QpTransport::uc, 0x11, 0x22, 100, 1, a.pd());
    for (auto st : {TransportState::init, TransportState::rtr, TransportState::rts}) a.qp->modify(ta, st, 0);
    std::vector<std::uint8_t> buf((datapath::RocePort::kTurnPackets + 1) * 1024, 7);
    const datapath::Sge s{reinterpret_cast<std::uint64_t>(buf.data()), static_cast<std::uint32_t>(buf.size()),
                          a.reg(buf.data(), buf.size())};
    port.new_turn();
    REQUIRE(a.qp->post_send(test::send_wr(1), {&s, 1}, 0) == 0); // stops after the turn
    CHECK_FALSE(a.qp->waiting_for_room()); // the flag means "listed": never set in vain
    CHECK_FALSE(port.room_waiters());
}
