// run_burst's contract with its Pacing (sim/burst.hpp): arrival times are
// asked once per batch, never for more frames than enter in this burst; the
// frames that are not due stay pending and are timed afresh by a later burst;
// each frame enters the port at the time it was given; a port deadline (a
// delay-drop timeout, an ARP retry, a RoCE retransmit) that falls between
// two frames of a batch is serviced between them.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <infiniband/verbs.h>

#include "datapath/counters.hpp"
#include "device/device.hpp"
#include "net/arp.hpp"
#include "net/roce_frame.hpp"
#include "net/roce_opcodes.hpp"
#include "sim/burst.hpp"
#include "tests/device/ib_qp_helpers.hpp"
#include "support/golden_frames.hpp"
#include "support/recording_sink.hpp"
#include "support/receive_rig.hpp"
#include "support/sim_fixture.hpp"

using namespace rdmasim;
namespace golden = rdmasim::test::golden;

namespace {

// Answers each arrivals() call with the next scripted count of due frames
// (capped to the frames asked about), timing frame i at its timestamp + 5000.
class ScriptedPacing final : public sim::Pacing {
public:
    std::deque<std::uint32_t> script;
    std::vector<std::size_t> asked;          // frames per call
    std::vector<std::uint64_t> first_ts;     // the first frame's timestamp, per call

    std::uint32_t arrivals(std::span<const net::Frame> frames, std::uint64_t* out) noexcept override {
        asked.push_back(frames.size());
        first_ts.push_back(frames.empty() ? 0 : frames[0].ts_ns);
        std::uint32_t due = 0;
        if (!script.empty()) {
            due = std::min<std::uint32_t>(script.front(), static_cast<std::uint32_t>(frames.size()));
            script.pop_front();
        }
        for (std::uint32_t i = 0; i < due; ++i) last = out[i] = frames[i].ts_ns + 5000;
        return due;
    }
    std::uint64_t last = 0; // the latest arrival given: the service after a burst
    std::uint64_t service_time(std::uint32_t) noexcept override { return last; }
    void burst_done(const sim::BurstResult&) noexcept override {}
    [[nodiscard]] std::uint32_t pull_limit() const noexcept override { return sim::FrameBatch::kCapacity; }
};

// Frames with the given timestamps (default: ten, 1000, 1001, ...), handed
// over as many at once as asked.
class BatchSource final : public net::FrameSource {
public:
    explicit BatchSource(std::vector<std::uint64_t> ts = {1000, 1001, 1002, 1003, 1004, 1005, 1006,
                                                          1007, 1008, 1009},
                         std::vector<std::uint8_t> bytes = {golden::kUntagged.begin(), golden::kUntagged.end()})
        : bytes_(std::move(bytes)), ts_(std::move(ts)) {}
    bool next(net::Frame& out) noexcept override { return next_burst({&out, 1}) == 1; }
    std::uint32_t next_burst(std::span<net::Frame> out) noexcept override {
        std::uint32_t n = 0;
        for (; n < out.size() && next_ < ts_.size(); ++n, ++next_) {
            out[n] = {};
            out[n].data = bytes_.data();
            out[n].len = out[n].wire_len = static_cast<std::uint32_t>(bytes_.size());
            out[n].ts_ns = ts_[next_];
        }
        counters_.frames += n;
        return n;
    }
    [[nodiscard]] bool exhausted() const noexcept override { return next_ == ts_.size(); }
    [[nodiscard]] std::string describe() const override { return "scripted frames"; }
    [[nodiscard]] const net::SourceCounters& counters() const noexcept override { return counters_; }

private:
    std::vector<std::uint8_t> bytes_; // every frame's
    std::vector<std::uint64_t> ts_;
    std::size_t next_ = 0;
    net::SourceCounters counters_;
};

// Frames stamped `ts`, all due, through one burst on `dev`: they must be
// timed in one batch and all enter.
void one_batch(device::Device& dev, std::vector<std::uint64_t> ts) {
    const auto n = static_cast<std::uint32_t>(ts.size());
    BatchSource src(std::move(ts));
    ScriptedPacing pacing;
    pacing.script = {n};
    sim::FrameBatch pending;
    const auto r = sim::run_burst(dev, src, pending, sim::FrameBatch::kCapacity, pacing);
    CHECK(r.frames == n);
    CHECK(pacing.asked == std::vector<std::size_t>{n});
}

// An RC QP whose peer never answers, with the shortest ACK timeout, sends
// one SEND: it goes out at once (after the ARP request the port makes), the
// retransmit when the timer expires.
void send_to_silent_peer(test::SimFixture& fx, test::IbQp& qp, test::RecordingSink& sink) {
    device::Device& dev = fx.device();
    // The peer is on the port's own subnet (GID 0 is IPv4-mapped): into RTR
    // the port asks for its MAC, and the test answers.
    ibv_gid own{};
    REQUIRE(ibv_query_gid(fx.ctx, 1, 0, &own) == 0);
    const ibv_qp_type t = IBV_QPT_RC;
    REQUIRE(qp.modify(IBV_QPS_INIT, test::init_mask(t)) == 0);
    ibv_qp_attr at = test::good_attr(IBV_QPS_RTR);
    at.ah_attr.grh.dgid = own;
    at.ah_attr.grh.dgid.raw[15] = static_cast<std::uint8_t>(own.raw[15] + 99);
    REQUIRE(ibv_modify_qp(qp.qp, &at, test::rtr_mask(t)) == 0);
    REQUIRE(sink.frames.size() == 1);
    const auto request = net::parse_arp(sink.frames[0]);
    REQUIRE(request.has_value());
    {
        const net::MacAddress peer_mac{0x02, 0x52, 0x44, 0x4d, 0, 0x99};
        std::array<std::uint8_t, net::kMinFrameLen> reply{};
        net::build_arp(reply, request->sender_mac, net::arp_reply(*request, peer_mac));
        net::Frame f;
        f.data = reply.data();
        f.len = f.wire_len = static_cast<std::uint32_t>(reply.size());
        std::lock_guard lock(dev.port.mutex());
        dev.port.ingress(f, dev.port.now_ns());
    }
    at = test::good_attr(IBV_QPS_RTS);
    at.timeout = 1;
    REQUIRE(ibv_modify_qp(qp.qp, &at, test::rts_mask(t)) == 0);
    char payload[8] = "ping";
    ibv_sge sge{reinterpret_cast<std::uint64_t>(payload), sizeof payload, 0};
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_send_wr* bad = nullptr;
    REQUIRE(ibv_post_send(qp.qp, &wr, &bad) == 0);
}

std::uint64_t port_frames(device::Device& dev) { return dev.port.counters().frames.get(); }

std::uint64_t port_now(device::Device& dev) {
    std::lock_guard lock(dev.port.mutex());
    return dev.port.now_ns();
}

} // namespace

TEST_CASE("run_burst: arrival times once per batch, only for frames entering now; frames not due "
          "wait and are timed again",
          "[sim][burst]") {
    // The fixture's own engine is never pumped: the test drives run_burst
    // with its own source and pacing.
    test::SimFixture fx;
    device::Device& dev = fx.device();
    BatchSource src;
    ScriptedPacing pacing;
    sim::FrameBatch pending;

    // 1. A limit of 4: four frames pulled, timed in one call, all entered.
    pacing.script = {4};
    auto r = sim::run_burst(dev, src, pending, 4, pacing);
    CHECK(r.frames == 4);
    CHECK_FALSE(r.pending);
    CHECK(pacing.asked == std::vector<std::size_t>{4});
    CHECK(port_frames(dev) == 4);
    CHECK(port_now(dev) == 1003 + 5000); // the last frame entered at its given time

    // 2. Two of the six left are due; the next call finds none due: the burst ends.
    pacing.script = {2, 0};
    r = sim::run_burst(dev, src, pending, 10, pacing);
    CHECK(r.frames == 2);
    CHECK(r.pending);
    CHECK(pacing.asked == std::vector<std::size_t>{4, 6, 4});
    CHECK(pacing.first_ts.back() == 1006);
    CHECK(port_frames(dev) == 6);
    CHECK(port_now(dev) == 1005 + 5000);

    // 3. The four pending frames are timed again, but only the two a limit of 2 lets in.
    pacing.script = {2};
    r = sim::run_burst(dev, src, pending, 2, pacing);
    CHECK(r.frames == 2);
    CHECK(r.pending);
    CHECK(pacing.asked.back() == 2);
    CHECK(pacing.first_ts.back() == 1006);
    CHECK(port_frames(dev) == 8);

    // 4. The last two enter; the source is then empty.
    pacing.script = {2};
    r = sim::run_burst(dev, src, pending, 10, pacing);
    CHECK(r.frames == 2);
    CHECK_FALSE(r.pending);
    CHECK(r.exhausted);
    CHECK(pacing.asked.back() == 2);
    CHECK(pacing.first_ts.back() == 1008);
    CHECK(port_frames(dev) == 10);
    CHECK(port_now(dev) == 1009 + 5000);
    CHECK(pacing.asked.size() == 5);
}

TEST_CASE("run_burst: a delay-drop timeout that falls due before a frame of the batch arrives "
          "fires first",
          "[sim][burst]") {
    test::SimFixture fx(std::vector<std::pair<std::string, std::string>>{{"caps.delay_drop_timeout_us", "500"}});
    device::Device& dev = fx.device();
    // A delay-drop WQ with no WQE posted: every frame waits.
    test::ReceiveRig rig(fx.ctx, fx.pd,
                         {.depth = 4, .wq_flags = {IBV_WQ_FLAGS_DELAY_DROP}, .fill = false});
    // Arrivals 5 us, 605 us, 605.001 us: the first frame's wait ends at 505
    // us, before the second; the deadline splits the batch's entry.
    one_batch(dev, {0, 600'000, 600'001});
    const auto& c = dev.port.counters();
    // The first frame timed out alone; the two after it came later and wait.
    CHECK(c.drops[static_cast<std::size_t>(datapath::Drop::delay_drop_timeout)].get() == 1);
    CHECK(c.delay_drop_waits.get() == 3);
    std::lock_guard lock(dev.port.mutex());
    CHECK(dev.port.held_frames() == 2);
    CHECK(dev.port.balanced());
}

TEST_CASE("run_burst: an ARP retry that falls due between two frames of a batch is sent between "
          "them, at the later frame's arrival",
          "[sim][burst]") {
    test::RecordingSink sink; // outlives the fixture, whose port holds it
    test::SimFixture fx;
    device::Device& dev = fx.device();
    datapath::NeighbourConfig nc;
    nc.retry_interval_ns = 6000;
    {
        std::lock_guard lock(dev.port.mutex());
        dev.port.configure_addresses({{0x02, 0, 0, 0, 0, 0x01}, {10, 0, 0, 1}, {}}, nc);
        dev.port.attach_sink(sink);
        // The first request now (the port's clock: 0), the retry due at 6 us.
        CHECK(dev.port.resolve({10, 0, 0, 99}).state == datapath::ResolveState::pending);
    }
    REQUIRE(sink.times == std::vector<std::uint64_t>{0});
    one_batch(dev, {0, 2000, 2001}); // arrivals 5, 7 and 7.001 us
    // The retry went out when the second frame arrived, before it entered:
    // not at the burst's end (7.001 us).
    CHECK(sink.times == std::vector<std::uint64_t>{0, 7000});
}

TEST_CASE("run_burst: a RoCE retransmit that falls due between two frames of a batch is sent "
          "between them, at the later frame's arrival",
          "[sim][burst][roce]") {
    test::RecordingSink sink; // outlives the fixture, whose port holds it
    test::SimFixture fx;
    device::Device& dev = fx.device();
    {
        std::lock_guard lock(dev.port.mutex());
        dev.port.attach_sink(sink);
    }
    test::IbQp qp(fx.pd, IBV_QPT_RC);
    send_to_silent_peer(fx, qp, sink);
    REQUIRE(sink.times.size() == 2); // the ARP request, the SEND
    const std::uint64_t sent = sink.times[1];
    std::uint64_t due = 0;
    {
        std::lock_guard lock(dev.port.mutex());
        due = dev.port.next_deadline_ns();
    }
    REQUIRE(due > sent);
    REQUIRE(due - sent < 1'000'000); // the ACK timer, not something later
    REQUIRE(due > 5100);
    // Arrivals (timestamp + 5 us): 100 ns before the timer, 50 and 51 ns after.
    one_batch(dev, {due - 5100, due - 4950, due - 4949});
    // The retransmit went out when the second frame arrived, before it
    // entered: not at the burst's end.
    REQUIRE(sink.frames.size() == 3);
    CHECK(sink.times[2] == due + 50);
    CHECK(sink.frames[2] == sink.frames[1]); // the same packet, PSN and all
    CHECK(dev.port.roce().counters().qps.retransmitted.get() == 1);
}

TEST_CASE("run_burst: on a live wire, an ACK that a pull brings in after the timer fell due "
          "enters before the timer runs: nothing is retransmitted",
          "[sim][burst][roce][lossless]") {
    test::RecordingSink sink;
    test::SimFixture fx;
    device::Device& dev = fx.device();
    {
        std::lock_guard lock(dev.port.mutex());
        dev.port.attach_sink(sink);
        dev.port.roce().set_live_wire(true);
    }
    test::IbQp qp(fx.pd, IBV_QPT_RC);
    send_to_silent_peer(fx, qp, sink);
    REQUIRE(sink.frames.size() == 2); // the ARP request, the SEND
    net::RocePacket send;
    REQUIRE(net::parse_roce_frame(sink.frames[1], send) == net::RoceDrop::none);
    // The peer's ACK of it, back along the same path.
    net::RocePath back;
    std::copy_n(send.src_mac, 6, back.dst_mac.begin());
    std::copy_n(send.dst_mac, 6, back.src_mac.begin());
    back.sgid = send.dgid;
    back.dgid = send.sgid;
    net::RoceHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(net::RoceOpcode::rc_ack);
    h.bth.dest_qp = qp.qp->qp_num;
    h.bth.psn = send.headers.bth.psn;
    h.aeth.syndrome = net::Aeth::make_syndrome(net::AckKind::ack, 31);
    std::vector<std::uint8_t> ack(256);
    const auto built = net::build_roce_frame(back, h, std::span<const std::uint8_t>{}, ack);
    REQUIRE(built.error == net::RoceBuildError::none);
    ack.resize(built.len);
    std::uint64_t due = 0;
    {
        std::lock_guard lock(dev.port.mutex());
        due = dev.port.next_deadline_ns();
    }
    REQUIRE(due > 5100);
    // The pull starts 40 ns after the deadline and finds the ACK (arrival
    // due + 50) and nothing else: the wire was empty at due + 40.
    BatchSource src({due - 4950}, ack);
    ScriptedPacing pacing;
    pacing.script = {1};
    pacing.last = due + 40;
    sim::FrameBatch pending;
    const auto r = sim::run_burst(dev, src, pending, sim::FrameBatch::kCapacity, pacing);
    CHECK(r.frames == 1);
    CHECK(dev.port.roce().counters().qps.timeouts.get() == 0);
    CHECK(dev.port.roce().counters().qps.retransmitted.get() == 0);
    CHECK(sink.frames.size() == 2);
    ibv_wc wc{};
    REQUIRE(ibv_poll_cq(qp.cq, 1, &wc) == 1);
    CHECK(wc.status == IBV_WC_SUCCESS);
}
