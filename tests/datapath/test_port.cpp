// The port driven directly (no device, no engine): steering order, sniffer
// copies, RSS dispatch, transmit with loopback and sinks, the delay-drop
// service and the queue-state sequences, with the port's balance checked
// after every step (datapath/README.md, "The port").
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include <infiniband/verbs.h>

#include "datapath/port.hpp"
#include "support/golden_frames.hpp"
#include "support/recording_sink.hpp"

using namespace rdmasim;
using test::RecordingSink;
using datapath::Drop;
using datapath::Fate;
using datapath::QueueState;
using datapath::RuleKind;
namespace golden = rdmasim::test::golden;

namespace {

const int kPd = 0;
constexpr std::uint64_t kTimeout = 1'000'000; // 1 ms delay-drop timeout
constexpr std::uint32_t kSlot = 2048;

std::uint64_t drops(const datapath::RxCounters& c, Drop d) {
    return c.drops[static_cast<std::size_t>(d)].get();
}

// A port with `n` queues over one memory region; each queue has its own CQ.
struct Bench {
    std::vector<std::uint8_t> mem;
    datapath::MrTable mrs{4};
    std::uint32_t lkey = 0;
    std::deque<datapath::CqRing> cqs;
    std::deque<datapath::RxQueue> queues;
    std::deque<datapath::SteeringEntry> entries;
    datapath::Port port;

    explicit Bench(std::size_t n, bool delay_drop = false, bool rearm = true)
        : mem(n * 8 * kSlot, 0) {
        datapath::MrEntry e;
        e.addr = 0x100000;
        e.length = mem.size();
        e.host = reinterpret_cast<std::uint64_t>(mem.data());
        e.pd = &kPd;
        e.local_write = true;
        lkey = mrs.add(e);
        port.configure({kTimeout, rearm});
        std::lock_guard lock(port.mutex());
        for (std::size_t i = 0; i < n; ++i) {
            cqs.emplace_back().init(64);
            datapath::RxQueueConfig c;
            c.ring_entries = 8;
            c.qp_num = 0x100 + static_cast<std::uint32_t>(i);
            c.settings.delay_drop = delay_drop;
            queues.emplace_back().init(c, &cqs.back(), &mrs, &kPd);
            port.attach_queue(queues.back());
            port.set_queue_state(queues.back(), QueueState::ready);
        }
    }
    // Posts one 2 KiB WQE on queue q (slot s of its eight).
    void post(std::size_t q, std::uint64_t wr_id, std::uint32_t s = 0) {
        auto& ring = queues[q].ring();
        ring.next_wqe() = datapath::Wqe{wr_id, 1, kSlot};
        ring.next_sges()[0] = datapath::Sge{0x100000 + (q * 8 + s) * kSlot, kSlot, lkey};
        ring.publish();
    }
    // A match-everything rule of `kind` and `priority` onto queue q.
    datapath::SteeringEntry& rule(std::size_t q, RuleKind kind, std::uint16_t priority = 0,
                                  const void* owner = nullptr) {
        auto& e = entries.emplace_back();
        e.rule.has_eth = true; // all-zero masks: every frame
        e.target.queue = &queues[q];
        e.kind = kind;
        e.priority = priority;
        e.owner = owner;
        std::lock_guard lock(port.mutex());
        port.add_rule(e);
        return e;
    }
    // A frame over `bytes` (which must outlive it), as a source hands it over.
    static net::Frame frame_of(const std::vector<std::uint8_t>& bytes) {
        net::Frame f;
        f.data = bytes.data();
        f.len = f.wire_len = static_cast<std::uint32_t>(bytes.size());
        return f;
    }
    void offer(const std::vector<std::uint8_t>& bytes, std::uint64_t now_ns = 0) {
        std::lock_guard lock(port.mutex());
        port.ingress(frame_of(bytes), now_ns);
    }
    [[nodiscard]] bool balanced() const {
        std::lock_guard lock(port.mutex());
        return port.balanced();
    }
    [[nodiscard]] const datapath::RxCounters& counters() const { return port.counters(); }
};

// IPv4/TCP 66.9.149.187:2794 -> 161.142.100.80:1766, the first row of the
// Microsoft RSS verification suite (IPv4-only hash 0x323e8fc2).
std::vector<std::uint8_t> ms_row0_frame() {
    std::vector<std::uint8_t> f = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x08, 0x00};
    const std::uint8_t ip[20] = {0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0,
                                 66, 9, 149, 187, 161, 142, 100, 80};
    f.insert(f.end(), ip, ip + 20);
    const std::uint8_t tcp[20] = {0x0a, 0xea, 0x06, 0xe6, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02};
    f.insert(f.end(), tcp, tcp + 20);
    f.resize(60, 0);
    return f;
}

} // namespace

TEST_CASE("port: normal rules before defaults, then priority, then creation order",
          "[datapath][port]") {
    Bench b(4);
    for (std::size_t q = 0; q < 4; ++q) b.post(q, 10 + q);
    // Inserted worst first: the all-default, the multicast default, a normal
    // rule of priority 2, then two normal rules of priority 1.
    b.rule(0, RuleKind::all_default);
    b.rule(1, RuleKind::mc_default);
    b.rule(2, RuleKind::normal, 2);
    auto& first = b.rule(3, RuleKind::normal, 1);
    b.rule(2, RuleKind::normal, 1); // same priority, created later: loses to `first`
    b.offer(golden::concat(golden::kUntagged));
    CHECK(b.cqs[3].size() == 1);
    CHECK(b.counters().delivered.get() == 1);
    {
        std::lock_guard lock(b.port.mutex());
        b.port.remove_rule(first);
    }
    b.offer(golden::concat(golden::kUntagged));
    CHECK(b.cqs[2].size() == 1); // the later priority-1 rule now
    CHECK(b.cqs[0].empty());
    CHECK(b.cqs[1].empty());
    CHECK(b.counters().frames.get() == 2);
    CHECK(b.balanced());
}

TEST_CASE("port: a frame no rule matches is a steering miss; runts and truncated captures are "
          "dropped before steering", "[datapath][port]") {
    Bench b(1);
    b.offer(golden::concat(golden::kUntagged));
    CHECK(drops(b.counters(), Drop::steering_miss) == 1);
    b.rule(0, RuleKind::normal);
    b.offer(std::vector<std::uint8_t>(10, 0xff));
    CHECK(drops(b.counters(), Drop::runt) == 1);
    const auto bytes = golden::concat(golden::kUntagged);
    net::Frame cut;
    cut.data = bytes.data();
    cut.len = 40;
    cut.wire_len = static_cast<std::uint32_t>(bytes.size());
    {
        std::lock_guard lock(b.port.mutex());
        b.port.ingress(cut, 0);
    }
    CHECK(drops(b.counters(), Drop::truncated_capture) == 1);
    CHECK(b.queues[0].counters().frames.get() == 0); // none of them reached the queue
    CHECK(b.counters().frames.get() == 3);
    CHECK(b.balanced());
}

TEST_CASE("port: a sniffer's copy is counted by its queue only", "[datapath][port]") {
    Bench b(2);
    b.post(0, 1);
    b.post(1, 2);
    b.rule(0, RuleKind::normal);
    b.rule(1, RuleKind::sniffer);
    b.offer(golden::concat(golden::kTcpGood));
    CHECK(b.cqs[0].size() == 1);
    CHECK(b.cqs[1].size() == 1);
    CHECK(b.counters().frames.get() == 1);
    CHECK(b.counters().delivered.get() == 1); // the primary delivery only
    CHECK(b.counters().sniffer_copies.get() == 1);
    CHECK(b.queues[1].counters().delivered.get() == 1);
    // A copy that finds no WQE is the queue's drop, not the port's.
    b.post(0, 3, 1);
    b.offer(golden::concat(golden::kTcpGood));
    CHECK(drops(b.queues[1].counters(), Drop::out_of_buffer) == 1);
    CHECK(drops(b.counters(), Drop::out_of_buffer) == 0);
    CHECK(b.balanced());
}

TEST_CASE("port: a burst's completions appear together at its end, in order; outside one at once",
          "[datapath][port]") {
    Bench b(2);
    for (std::uint32_t s = 0; s < 4; ++s) {
        b.post(0, 10 + s, s);
        b.post(1, 20 + s, s);
    }
    b.rule(0, RuleKind::normal);
    b.rule(1, RuleKind::sniffer);
    const auto frame = golden::concat(golden::kTcpGood);
    const net::Frame f = Bench::frame_of(frame);
    {
        std::lock_guard lock(b.port.mutex());
        b.port.begin_burst();
        for (int i = 0; i < 3; ++i) b.port.ingress(f, 100);
        // Written, counted, room taken; not visible yet.
        CHECK(b.counters().delivered.get() == 3);
        CHECK(b.cqs[0].empty());
        CHECK(b.cqs[1].empty());
        CHECK(b.cqs[0].written() == 0);
        b.port.end_burst();
        REQUIRE(b.cqs[0].size() == 3);
        REQUIRE(b.cqs[1].size() == 3);
        CHECK(b.cqs[0].written() == 3);
        for (std::uint64_t i = 0; i < 3; ++i) {
            CHECK(b.cqs[0].front().wr_id == 10 + i);
            CHECK(b.cqs[1].front().wr_id == 20 + i);
            b.cqs[0].pop();
            b.cqs[1].pop();
        }
        b.port.ingress(f, 200); // no burst: visible at once
        CHECK(b.cqs[0].size() == 1);
        CHECK(b.cqs[1].size() == 1);
    }
    CHECK(b.balanced());
}

TEST_CASE("port: a burst counts every frame's bytes and each delivery's, and ends at the deadline "
          "a frame held in it set",
          "[datapath][port]") {
    Bench b(1, true); // delay drop on
    b.post(0, 1, 0);
    b.post(0, 2, 1);
    b.rule(0, RuleKind::normal);
    const auto untagged = golden::concat(golden::kUntagged), tcp = golden::concat(golden::kTcpGood);
    const std::array<net::Frame, 4> frames = {Bench::frame_of(untagged), Bench::frame_of(tcp),
                                              Bench::frame_of(untagged), Bench::frame_of(tcp)};
    // The third finds no WQE and is held until 3000 + kTimeout; the fourth
    // arrives after that, so the burst must stop before it for the service.
    const std::array<std::uint64_t, 4> at = {1000, 2000, 3000, 3000 + kTimeout + 1};
    std::uint32_t entered = 0;
    {
        std::lock_guard lock(b.port.mutex());
        b.port.begin_burst();
        entered = b.port.ingress_burst(frames, at.data());
        b.port.end_burst();
        CHECK(b.port.next_deadline_ns() == 3000 + kTimeout);
    }
    CHECK(entered == 3);
    const auto& c = b.counters();
    CHECK(c.frames.get() == 3);
    CHECK(c.bytes.get() == 2 * untagged.size() + tcp.size());
    CHECK(c.delivered.get() == 2);
    CHECK(c.delivered_bytes.get() == untagged.size() + tcp.size()); // no offload changes a length here
    CHECK(c.delay_drop_waits.get() == 1);
    CHECK(b.balanced());
}

TEST_CASE("port: an RSS group sends a frame to table[hash & (size - 1)]", "[datapath][port]") {
    Bench b(8);
    datapath::RssGroup g;
    g.configure(datapath::kMicrosoftRssKey, datapath::kRssIpv4Fields, 3);
    for (auto& q : b.queues) g.table.push_back(&q);
    for (std::size_t q = 0; q < 8; ++q) b.post(q, q);
    auto& e = b.entries.emplace_back();
    e.rule.has_eth = true;
    e.target.rss = &g;
    {
        std::lock_guard lock(b.port.mutex());
        b.port.add_rule(e);
    }
    b.offer(ms_row0_frame());
    // 0x323e8fc2 & 7 == 2
    CHECK(b.cqs[2].size() == 1);
    CHECK(b.counters().delivered.get() == 1);
    // A frame without the hashed fields (IPv6 is not IPv4) hashes to 0: entry 0.
    std::vector<std::uint8_t> v6(60, 0);
    v6[12] = 0x86;
    v6[13] = 0xdd;
    v6[14] = 0x60;
    b.offer(v6);
    CHECK(b.cqs[0].size() == 1);
    CHECK(b.balanced());
}

TEST_CASE("port: transmit loops back to every owner but the sender, then to the sinks",
          "[datapath][port]") {
    RecordingSink wire, capture; // outlive the port that holds them
    Bench b(2);
    const int sender = 1, other = 2;
    b.post(0, 100);
    b.post(1, 200);
    b.rule(0, RuleKind::normal, 0, &sender); // ranks first, but it is the sender's
    b.rule(1, RuleKind::normal, 5, &other);
    {
        std::lock_guard lock(b.port.mutex());
        b.port.attach_sink(wire);
        b.port.attach_sink(capture);
        b.port.service(777);
        const auto bytes = golden::concat(golden::kUntagged);
        net::Frame f;
        f.data = bytes.data();
        f.len = f.wire_len = static_cast<std::uint32_t>(bytes.size());
        b.port.transmit(f, &sender);
        b.port.detach_sink(capture);
        b.port.transmit(f, &sender);
    }
    CHECK(b.cqs[0].empty());
    CHECK(b.cqs[1].size() == 1);
    CHECK(drops(b.counters(), Drop::out_of_buffer) == 1); // the second copy: no WQE left
    REQUIRE(wire.frames.size() == 2);
    CHECK(wire.frames[0] == golden::concat(golden::kUntagged));
    CHECK(wire.times[0] == 777); // stamped with the port's clock
    CHECK(capture.frames.size() == 1);
    CHECK(b.balanced());
}

TEST_CASE("port: delay drop holds, releases at the service and expires at the timeout",
          "[datapath][port]") {
    for (const bool rearm : {true, false}) {
        INFO("re-arm after a timeout: " << rearm);
        Bench b(1, true, rearm);
        b.rule(0, RuleKind::normal);
        b.offer(golden::concat(golden::kUntagged), 1000);
        b.offer(golden::concat(golden::kTcpGood), 2000);
        {
            std::lock_guard lock(b.port.mutex());
            CHECK(b.port.held_frames() == 2);
            CHECK(b.port.next_deadline_ns() == 1000 + kTimeout);
            CHECK(b.port.balanced());
        }
        CHECK(b.counters().delay_drop_waits.get() == 2);
        b.post(0, 1);
        {
            std::lock_guard lock(b.port.mutex());
            b.port.service(3000);
            CHECK(b.port.held_frames() == 1);
            CHECK(b.port.next_deadline_ns() == 2000 + kTimeout);
            b.port.service(2000 + kTimeout - 1); // not yet
            CHECK(b.port.held_frames() == 1);
            b.port.service(2000 + kTimeout);
            CHECK(b.port.held_frames() == 0);
            CHECK(b.port.next_deadline_ns() == UINT64_MAX);
            CHECK(b.port.delay_drop_armed() == rearm);
        }
        CHECK(b.counters().delivered.get() == 1);
        CHECK(b.cqs[0].front().wr_id == 1);
        CHECK(drops(b.counters(), Drop::delay_drop_timeout) == 1);
        // Disarmed, a frame that finds no WQE is dropped at once.
        b.offer(golden::concat(golden::kUntagged), 3 * kTimeout);
        CHECK(drops(b.counters(), rearm ? Drop::delay_drop_timeout : Drop::out_of_buffer) == 1);
        CHECK(b.counters().delay_drop_waits.get() == (rearm ? 3 : 2));
        CHECK(b.balanced());
    }
}

TEST_CASE("port: error flushes posted WQEs and discards held frames; reset forgets; detach "
          "discards", "[datapath][port]") {
    Bench b(2, true);
    b.rule(0, RuleKind::normal);
    b.offer(golden::concat(golden::kUntagged), 10); // held: nothing posted
    b.post(1, 7);
    b.post(1, 8, 1);
    {
        std::lock_guard lock(b.port.mutex());
        b.port.set_queue_state(b.queues[0], QueueState::error);
        b.port.set_queue_state(b.queues[1], QueueState::error);
        CHECK(b.port.held_frames() == 0);
    }
    CHECK(drops(b.counters(), Drop::discarded) == 1);
    CHECK(b.counters().flushed_wqes.get() == 2);
    CHECK(b.queues[1].counters().flushed_wqes.get() == 2);
    REQUIRE(b.cqs[1].size() == 2);
    CHECK(b.cqs[1].front().wr_id == 7); // in posting order
    CHECK(b.cqs[1].front().status == IBV_WC_WR_FLUSH_ERR);
    // A stopped queue drops what it is given.
    b.offer(golden::concat(golden::kUntagged), 20);
    CHECK(drops(b.counters(), Drop::wq_not_ready) == 1);
    b.post(0, 9); // posted in error, then forgotten by the reset
    {
        std::lock_guard lock(b.port.mutex());
        b.port.set_queue_state(b.queues[0], QueueState::reset);
        b.port.set_queue_state(b.queues[0], QueueState::ready);
    }
    b.offer(golden::concat(golden::kUntagged), 30); // held again: WQE 9 is gone
    CHECK(b.cqs[0].empty());
    {
        std::lock_guard lock(b.port.mutex());
        CHECK(b.port.held_frames() == 1);
        b.port.detach_queue(b.queues[0]);
        CHECK(b.port.held_frames() == 0);
        CHECK(b.port.find_queue(0x100) == nullptr);
        CHECK(b.port.find_queue(0x101) == &b.queues[1]);
    }
    CHECK(drops(b.counters(), Drop::discarded) == 2);
    CHECK(b.balanced());
}

TEST_CASE("port: a queue that stops on a protection error is flushed at once and recorded once, "
          "until its state is set",
          "[datapath][port]") {
    Bench b(2);
    b.rule(0, RuleKind::normal);
    auto& ring = b.queues[0].ring();
    ring.next_wqe() = datapath::Wqe{1, 1, kSlot};
    ring.next_sges()[0] = datapath::Sge{0x100000, kSlot, b.lkey + 1}; // no such MR
    ring.publish();
    b.post(0, 2, 1);
    b.post(0, 3, 2);
    b.offer(golden::concat(golden::kUntagged));
    b.offer(golden::concat(golden::kUntagged)); // the queue has stopped
    REQUIRE(b.cqs[0].size() == 3);
    CHECK(b.cqs[0].front().status == IBV_WC_LOC_PROT_ERR);
    b.cqs[0].pop();
    for (const std::uint64_t id : {2u, 3u}) {
        CHECK(b.cqs[0].front().wr_id == id); // flushed in posting order
        CHECK(b.cqs[0].front().status == IBV_WC_WR_FLUSH_ERR);
        b.cqs[0].pop();
    }
    CHECK(drops(b.counters(), Drop::protection_error) == 1);
    CHECK(drops(b.counters(), Drop::wq_not_ready) == 1);
    CHECK(b.counters().flushed_wqes.get() == 2);
    {
        std::lock_guard lock(b.port.mutex());
        CHECK(b.port.take_failed_queue() == &b.queues[0]);
        CHECK(b.port.take_failed_queue() == nullptr); // handed out once
    }
    // A second failure after the owner set the state again is recorded again;
    // setting the state before anyone took it withdraws it.
    {
        std::lock_guard lock(b.port.mutex());
        b.port.set_queue_state(b.queues[0], QueueState::reset);
        b.port.set_queue_state(b.queues[0], QueueState::ready);
    }
    ring.next_wqe() = datapath::Wqe{4, 1, kSlot};
    ring.next_sges()[0] = datapath::Sge{0x100000, kSlot, b.lkey + 1};
    ring.publish();
    b.offer(golden::concat(golden::kUntagged));
    {
        std::lock_guard lock(b.port.mutex());
        b.port.set_queue_state(b.queues[0], QueueState::error);
        CHECK(b.port.take_failed_queue() == nullptr);
    }
    CHECK(b.balanced());
}

TEST_CASE("port: DONT_TRAP entries hand the frame on; the trapping entry, else the last "
          "DONT_TRAP one, is its one outcome",
          "[datapath][port]") {
    Bench b(3);
    for (std::size_t q = 0; q < 3; ++q) {
        b.post(q, 10 + q);
        b.post(q, 20 + q, 1);
    }
    auto& trap = b.rule(0, RuleKind::normal, 1);
    // Entries are ranked when added, so the DONT_TRAP ones are built by hand.
    for (const std::size_t q : {1u, 2u}) {
        auto& e = b.entries.emplace_back();
        e.rule.has_eth = true;
        e.target.queue = &b.queues[q];
        e.priority = q == 1 ? 1 : 0;
        e.dont_trap = true;
        std::lock_guard lock(b.port.mutex());
        b.port.add_rule(e); // queue 1's: same priority as `trap`, created later, ranks first
    }
    b.offer(golden::concat(golden::kUntagged));
    CHECK(b.cqs[2].size() == 1);
    CHECK(b.cqs[1].size() == 1);
    CHECK(b.cqs[0].size() == 1);
    CHECK(b.counters().frames.get() == 1);
    CHECK(b.counters().delivered.get() == 1);
    CHECK(b.counters().sniffer_copies.get() == 0);
    {
        std::lock_guard lock(b.port.mutex());
        b.port.remove_rule(trap);
    }
    b.offer(golden::concat(golden::kUntagged));
    CHECK(b.cqs[2].size() == 2);
    CHECK(b.cqs[1].size() == 2);
    CHECK(b.cqs[0].size() == 1);
    CHECK(b.counters().delivered.get() == 2);
    CHECK(drops(b.counters(), Drop::steering_miss) == 0);
    // Out of WQEs: the copy's drop is its queue's only, the last one's is the frame's.
    b.offer(golden::concat(golden::kUntagged));
    CHECK(drops(b.counters(), Drop::out_of_buffer) == 1); // queue 1's: the outcome
    CHECK(drops(b.queues[2].counters(), Drop::out_of_buffer) == 1);
    CHECK(b.counters().frames.get() == 3);
    CHECK(b.balanced());
}

TEST_CASE("port: an entry sees only frames with the protocols it requires; the match order "
          "holds across protocols and after a removal",
          "[datapath][port]") {
    Bench b(4);
    for (std::size_t q = 0; q < 4; ++q)
        for (std::uint32_t s = 0; s < 8; ++s) b.post(q, q * 100 + s, s);
    // One entry per protocol combination, added worst first; `dst_port`, when
    // set, is a masked field (the bytes decide within the class).
    const auto add = [&b](std::size_t q, RuleKind kind, std::uint16_t priority, net::L3Kind l3,
                          net::L4Kind l4, bool dont_trap = false,
                          std::uint16_t dst_port = 0) -> datapath::SteeringEntry& {
        auto& e = b.entries.emplace_back();
        e.rule.has_eth = true;
        e.rule.l3 = l3;
        e.rule.l4 = l4;
        if (dst_port != 0) {
            e.rule.l4_mask.dst_port = 0xffff;
            e.rule.l4_value.dst_port = dst_port;
        }
        e.target.queue = &b.queues[q];
        e.kind = kind;
        e.priority = priority;
        e.dont_trap = dont_trap;
        std::lock_guard lock(b.port.mutex());
        b.port.add_rule(e);
        return e;
    };
    add(3, RuleKind::all_default, 0, net::L3Kind::none, net::L4Kind::none);
    auto& ipv6 = add(2, RuleKind::normal, 2, net::L3Kind::ipv6, net::L4Kind::none);
    add(1, RuleKind::normal, 1, net::L3Kind::ipv4, net::L4Kind::udp, true);
    add(0, RuleKind::normal, 0, net::L3Kind::ipv4, net::L4Kind::tcp, false, 1766);

    const auto row0 = ms_row0_frame(); // IPv4/TCP to port 1766
    auto other_port = row0;
    other_port[14 + 20 + 3] = 80;     // TCP destination port 1766 -> 1616
    auto fragment = row0;
    fragment[14 + 6] = 0x20;          // IPv4 MF: a first fragment, its ports unreadable
    std::vector<std::uint8_t> v6 = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0x86, 0xdd,
                                    0x60, 0, 0, 0, 0, 8, 17, 64};
    v6.resize(14 + 40, 0);
    v6.insert(v6.end(), {0x9c, 0x40, 0x12, 0xb7, 0, 8, 0, 0}); // UDP 40000 -> 4791
    v6.resize(64, 0);

    const auto sizes = [&b] {
        return std::array<std::size_t, 4>{b.cqs[0].size(), b.cqs[1].size(), b.cqs[2].size(),
                                          b.cqs[3].size()};
    };
    using Sizes = std::array<std::size_t, 4>;
    b.offer(row0);
    CHECK(sizes() == Sizes{1, 0, 0, 0});
    b.offer(other_port); // TCP, but the masked port differs: on to the default
    CHECK(sizes() == Sizes{1, 0, 0, 1});
    b.offer(fragment); // IPv4 without ports: no TCP entry sees it
    CHECK(sizes() == Sizes{1, 0, 0, 2});
    b.offer(golden::concat(golden::kUntagged)); // IPv4/UDP: the DONT_TRAP copy, then the default
    CHECK(sizes() == Sizes{1, 1, 0, 3});
    b.offer(v6);
    CHECK(sizes() == Sizes{1, 1, 1, 3});
    {
        std::lock_guard lock(b.port.mutex());
        b.port.remove_rule(ipv6);
    }
    b.offer(v6);
    CHECK(sizes() == Sizes{1, 1, 1, 4});
    CHECK(b.port.rule_count() == 3);
    CHECK(b.counters().frames.get() == 6);
    CHECK(b.counters().delivered.get() == 6);
    CHECK(b.balanced());
}

TEST_CASE("port: a bad carried FCS is dropped as fcs_errors before steering, unless "
          "deliver_bad_fcs",
          "[datapath][port]") {
    for (const bool deliver : {false, true}) {
        INFO("deliver_bad_fcs " << deliver);
        Bench b(1);
        b.port.configure({kTimeout, true, deliver});
        b.rule(0, RuleKind::normal);
        b.post(0, 1);
        const auto bytes = golden::concat(golden::kUntagged, std::array<std::uint8_t, 4>{1, 2, 3, 4});
        net::Frame f;
        f.data = bytes.data();
        f.len = f.wire_len = static_cast<std::uint32_t>(bytes.size());
        f.fcs_len = 4;
        {
            std::lock_guard lock(b.port.mutex());
            b.port.ingress(f, 0);
        }
        CHECK(drops(b.counters(), Drop::fcs_error) == (deliver ? 0u : 1u));
        CHECK(b.queues[0].counters().frames.get() == (deliver ? 1u : 0u));
        CHECK(b.counters().fcs_bad.get() == (deliver ? 1u : 0u));
        CHECK(b.counters().delivered.get() == (deliver ? 1u : 0u));
        CHECK(datapath::drop_name(Drop::fcs_error) == "fcs_errors");
        CHECK(b.balanced());
    }
}

TEST_CASE("port: injected faults: a delay-drop timeout now, an out-of-buffer burst, an error "
          "completion",
          "[datapath][port][faults]") {
    SECTION("expire_delay_drop: the named queue's timer expires now, after the release") {
        for (const bool rearm : {true, false}) {
            INFO("re-arm " << rearm);
            Bench b(1, true, rearm);
            b.rule(0, RuleKind::normal);
            {
                std::lock_guard lock(b.port.mutex());
                b.port.expire_delay_drop(&b.queues[0]); // holding nothing: no timer runs
                CHECK(b.port.delay_drop_armed());
            }
            b.offer(golden::concat(golden::kUntagged), 1000);
            b.offer(golden::concat(golden::kTcpGood), 2000);
            b.post(0, 1);
            {
                std::lock_guard lock(b.port.mutex());
                b.port.expire_delay_drop(&b.queues[0]); // long before kTimeout
                CHECK(b.port.held_frames() == 0);
                CHECK(b.port.next_deadline_ns() == UINT64_MAX);
                CHECK(b.port.delay_drop_armed() == rearm);
            }
            CHECK(b.counters().delivered.get() == 1); // the posted WQE took the oldest first
            CHECK(drops(b.counters(), Drop::delay_drop_timeout) == 1);
            CHECK(b.balanced());
        }
    }
    SECTION("starve_next: the next frames steered find the ring empty; the WQEs stay") {
        Bench b(1);
        b.rule(0, RuleKind::normal);
        for (std::uint64_t i = 0; i < 3; ++i) b.post(0, i, static_cast<std::uint32_t>(i));
        {
            std::lock_guard lock(b.port.mutex());
            b.port.starve_next(2);
        }
        for (int i = 0; i < 3; ++i) b.offer(golden::concat(golden::kUntagged), 1000);
        CHECK(drops(b.counters(), Drop::out_of_buffer) == 2);
        CHECK(drops(b.queues[0].counters(), Drop::out_of_buffer) == 2);
        CHECK(b.counters().delivered.get() == 1);
        CHECK(b.cqs[0].front().wr_id == 0);
        CHECK_FALSE(b.queues[0].ring().empty()); // two WQEs still posted
        CHECK(b.balanced());
    }
    SECTION("fail_next: the next completion carries the status and the queue stops, flushed") {
        Bench b(1);
        b.rule(0, RuleKind::normal);
        for (std::uint64_t i = 0; i < 3; ++i) b.post(0, i, static_cast<std::uint32_t>(i));
        {
            std::lock_guard lock(b.port.mutex());
            b.port.fail_next(IBV_WC_GENERAL_ERR);
        }
        b.offer(golden::concat(golden::kUntagged), 1000);
        b.offer(golden::concat(golden::kUntagged), 2000);
        REQUIRE(b.cqs[0].size() == 3);
        CHECK(b.cqs[0].front().wr_id == 0);
        CHECK(b.cqs[0].front().status == IBV_WC_GENERAL_ERR);
        CHECK(b.cqs[0].front().byte_len == 0);
        CHECK(drops(b.counters(), Drop::cqe_error) == 1);
        CHECK(drops(b.counters(), Drop::wq_not_ready) == 1);
        CHECK(b.counters().flushed_wqes.get() == 2);
        {
            std::lock_guard lock(b.port.mutex());
            CHECK(b.port.take_failed_queue() == &b.queues[0]);
        }
        CHECK(b.balanced());
    }
}

TEST_CASE("port: a sniffer's copy to a delay-drop queue without a WQE is dropped, never held",
          "[datapath][port][delay_drop]") {
    // Queue 0 traps every frame and has a WQE; queue 1 (delay drop armed)
    // sniffs and has none: its copy is out of buffer at once (a copy is
    // counted by its queue only, and a held copy would outlive its frame).
    Bench b(2, /*delay_drop=*/true);
    b.post(0, 1);
    b.rule(0, RuleKind::normal);
    b.rule(1, RuleKind::sniffer);
    b.offer(golden::concat(golden::kUntagged));
    std::lock_guard lock(b.port.mutex());
    CHECK(b.port.held_frames() == 0);
    CHECK(drops(b.queues[1].counters(), Drop::out_of_buffer) == 1);
    CHECK(b.queues[1].counters().delay_drop_waits.get() == 0);
    CHECK(b.counters().delivered.get() == 1);
    CHECK(b.port.balanced());
}
