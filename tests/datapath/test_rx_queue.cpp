// RxQueue: one queue's pipeline driven directly (no device, no engine), for
// the orderings the engines can only reach by timing: held frames must never
// be overtaken by a newer frame.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cstdint>
#include <vector>

#include "datapath/rx_queue.hpp"
#include "datapath/rx_queue_receive.hpp"
#include "support/golden_frames.hpp"

using namespace rdmasim;
using datapath::Drop;
namespace golden = rdmasim::test::golden;

namespace {

const int kPd = 0;

struct Queue {
    std::vector<std::uint8_t> mem = std::vector<std::uint8_t>(8192, 0xa5);
    datapath::MrTable mrs{4};
    datapath::CqRing cq;
    datapath::RxCounters port;
    datapath::RxQueue q;
    std::uint32_t lkey = 0;

    explicit Queue(bool delay_drop) {
        datapath::MrEntry e;
        e.addr = 0x10000;
        e.length = mem.size();
        e.host = reinterpret_cast<std::uint64_t>(mem.data());
        e.pd = &kPd;
        e.local_write = true;
        lkey = mrs.add(e);
        cq.init(16);
        datapath::RxQueueConfig c;
        c.ring_entries = 8;
        c.qp_num = 0x123;
        c.settings.delay_drop = delay_drop;
        q.init(c, &cq, &mrs, &kPd);
        q.set_ready(true);
    }
    void post(std::uint64_t wr_id, std::uint32_t slot) {
        auto& ring = q.ring();
        ring.next_wqe() = datapath::Wqe{wr_id, 1, 1024};
        ring.next_sges()[0] = datapath::Sge{0x10000 + slot * 1024ull, 1024, lkey};
        ring.publish();
    }
    // Counts into `port` as the port does: the frame's outcome and what it released.
    datapath::RxOutcome receive(const std::vector<std::uint8_t>& bytes, std::uint64_t now,
                                bool armed) {
        net::Frame f;
        f.data = bytes.data();
        f.len = f.wire_len = static_cast<std::uint32_t>(bytes.size());
        f.ts_ns = now;
        port.frames.add();
        datapath::RxTally released;
        const auto out = q.receive(f, net::parse_frame(f.payload()), now,
                                   armed ? datapath::MayWait::yes : datapath::MayWait::no, &released);
        port.count(released);
        port.count(out);
        return out;
    }
    [[nodiscard]] std::vector<std::uint8_t> slot(std::uint32_t i, std::size_t n) const {
        return {mem.begin() + i * 1024, mem.begin() + i * 1024 + static_cast<std::ptrdiff_t>(n)};
    }
    // Both places balance: the queue's own counters and the port's, kept from outcomes.
    [[nodiscard]] bool balanced() const {
        const auto& c = q.counters();
        return c.frames.get() == c.delivered.get() + c.drops_total() + q.held() &&
               port.frames.get() == port.delivered.get() + port.drops_total() + q.held();
    }
};

} // namespace

TEST_CASE("rx queue: a held frame takes a WQE before a newer frame, armed or not",
          "[datapath][rxqueue]") {
    const auto a = golden::concat(golden::kUntagged);
    const auto b = golden::concat(golden::kTcpGood);
    for (bool armed_later : {true, false}) {
        INFO("delay drop armed for the second frame: " << armed_later);
        Queue t(true);
        t.receive(a, 1000, true);
        REQUIRE(t.q.held() == 1);
        t.post(1, 0); // posted, not yet released (the engine has not run)
        t.receive(b, 2000, armed_later);
        REQUIRE(t.cq.size() == 1);
        CHECK(t.cq.front().wr_id == 1);
        CHECK(t.cq.front().byte_len == 58);
        CHECK(t.slot(0, 58) == a);
        if (armed_later) {
            CHECK(t.q.held() == 1); // b waits for the next WQE
            CHECK(t.q.counters().delay_drop_waits.get() == 2);
        } else {
            CHECK(t.q.held() == 0); // b finds no WQE and no delay drop
            CHECK(t.q.counters().drops[static_cast<std::size_t>(Drop::out_of_buffer)].get() == 1);
        }
        CHECK(t.balanced());
    }
}

TEST_CASE("rx queue: completions carry wr_id, byte_len and the queue number",
          "[datapath][rxqueue]") {
    Queue t(false);
    t.post(41, 0);
    t.post(42, 1);
    const auto first = t.receive(golden::concat(golden::kUntagged), 1, true);
    CHECK(first.fate == datapath::Fate::delivered);
    CHECK(first.byte_len == 58);
    CHECK(t.receive(golden::concat(golden::kTcpGood), 2, true).fate == datapath::Fate::delivered);
    const auto last = t.receive(golden::concat(golden::kTcpGood), 3, true); // no WQE left
    CHECK(last.fate == datapath::Fate::dropped);
    CHECK(last.drop == Drop::out_of_buffer);
    REQUIRE(t.cq.size() == 2);
    CHECK(t.cq.front().wr_id == 41);
    CHECK(t.cq.front().qp_num == 0x123);
    CHECK(t.cq.front().byte_len == 58);
    t.cq.pop();
    CHECK(t.cq.front().wr_id == 42);
    CHECK(t.cq.front().byte_len == 72);
    CHECK(t.slot(0, 58) == golden::concat(golden::kUntagged));
    CHECK(t.slot(1, 72) == golden::concat(golden::kTcpGood));
    CHECK(t.q.counters().drops[static_cast<std::size_t>(Drop::out_of_buffer)].get() == 1);
    CHECK(t.port.drops[static_cast<std::size_t>(Drop::out_of_buffer)].get() == 1);
    CHECK(t.port.delivered.get() == 2);
    CHECK(t.balanced());
}

TEST_CASE("rx queue: a protection error completes the WQE and stops the queue; a length error "
          "does not",
          "[datapath][rxqueue]") {
    const auto a = golden::concat(golden::kUntagged);
    Queue w(false);
    // A length error: completed, and the queue goes on.
    auto& ring = w.q.ring();
    ring.next_wqe() = datapath::Wqe{1, 1, 16};
    ring.next_sges()[0] = datapath::Sge{0x10000, 16, w.lkey};
    ring.publish();
    CHECK(w.receive(a, 0, true).drop == Drop::length_error);
    CHECK(w.q.ready());
    CHECK_FALSE(w.q.take_failure());
    // A protection error (an lkey of no MR): completed, then the queue stops.
    ring.next_wqe() = datapath::Wqe{2, 1, 1024};
    ring.next_sges()[0] = datapath::Sge{0x10000, 1024, w.lkey + 1};
    ring.publish();
    w.post(3, 1);
    CHECK(w.receive(a, 0, true).drop == Drop::protection_error);
    CHECK_FALSE(w.q.ready());
    CHECK(w.q.take_failure());
    CHECK_FALSE(w.q.take_failure()); // told once
    REQUIRE(w.cq.size() == 2);
    CHECK(w.cq.front().status == IBV_WC_LOC_LEN_ERR);
    w.cq.pop();
    CHECK(w.cq.front().wr_id == 2);
    CHECK(w.cq.front().status == IBV_WC_LOC_PROT_ERR);
    w.cq.pop();
    // Nothing more is received: WQE 3 stays for whoever flushes it.
    CHECK(w.receive(a, 0, true).drop == Drop::wq_not_ready);
    CHECK(w.cq.size() == 0);
    CHECK_FALSE(w.q.ring().empty());
    CHECK(w.balanced());
    // Setting a state again ends the error.
    w.q.set_ready(true);
    CHECK(w.receive(a, 0, true).fate == datapath::Fate::delivered);
    CHECK(w.cq.front().wr_id == 3);
    CHECK(w.balanced());
}
