// Frame faults on the transmit side (sim/README.md, "Fault injection"): the
// FaultySink in front of a port's sinks, frame by frame. Every frame the
// port sends is accounted for: sent + duplicated = passed + fault_drops +
// fcs_drops + failed + held.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "net/memory_source.hpp"
#include "sim/faulty_sink.hpp"
#include "sim/burst.hpp"
#include "sim/fault_stage.hpp"
#include "support/golden_frames.hpp"

using namespace rdmasim;
namespace golden = rdmasim::test::golden;
using Buf = std::vector<std::uint8_t>;

namespace {

struct Sent {
    Buf bytes;
    std::uint64_t ts_ns;
};

class RecordingSink final : public net::FrameSink {
public:
    void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept override {
        got.push_back({Buf(frame.begin(), frame.end()), ts_ns});
    }
    std::vector<Sent> got;
};

// Frame `i`: a golden frame (the untagged UDP one unless told) with its last
// byte = i, so that order can be read back.
template <std::size_t N = golden::kUntagged.size()>
Buf numbered(unsigned i, const std::array<std::uint8_t, N>& base = golden::kUntagged) {
    Buf f(base.begin(), base.end());
    f[N - 1] = static_cast<std::uint8_t>(i);
    return f;
}

struct Rig {
    std::shared_ptr<RecordingSink> a = std::make_shared<RecordingSink>();
    std::shared_ptr<RecordingSink> b = std::make_shared<RecordingSink>();
    std::unique_ptr<sim::FaultySink> sink;

    explicit Rig(const std::string& plan_text, std::uint32_t device = 0) {
        auto plan = sim::FaultPlan::parse(plan_text);
        REQUIRE(plan);
        auto s = sim::FaultySink::wrap({a, b}, plan.value(), device);
        REQUIRE(s);
        sink = std::move(s.value());
    }
    // Sends frames 0..n-1 through the sink, then flushes (the port stops).
    std::vector<int> run(unsigned n, bool flush = true) {
        for (unsigned i = 0; i < n; ++i) {
            const Buf f = numbered(i);
            sink->send(f, i * 1000ull);
        }
        if (flush) sink->release_held();
        return order();
    }
    std::vector<int> order() const {
        std::vector<int> o;
        for (const Sent& s : a->got) o.push_back(s.bytes.back());
        return o;
    }
    std::uint64_t count(sim::FaultKind k) const {
        return sink->injected()[static_cast<std::size_t>(k)];
    }
    // Both sinks got the same frames, and every frame is accounted for.
    void check_balanced() const {
        CHECK(a->got.size() == b->got.size());
        for (std::size_t i = 0; i < std::min(a->got.size(), b->got.size()); ++i) {
            CHECK(a->got[i].bytes == b->got[i].bytes);
            CHECK(a->got[i].ts_ns == b->got[i].ts_ns);
        }
        const auto& c = sink->counters();
        CHECK(c.passed.load() == a->got.size());
        CHECK(c.sent.load() + c.duplicated.load() ==
              c.passed.load() + c.fault_drops.load() + c.fcs_drops.load() + c.failed.load() + c.held.load());
    }
};

} // namespace

TEST_CASE("FaultySink: only dir=tx and dir=both frame faults, on their device", "[sim][faults][tx]") {
    auto wanted = [](const char* text, std::uint32_t dev) {
        auto plan = sim::FaultPlan::parse(text);
        REQUIRE(plan);
        return sim::FaultySink::wanted(plan.value(), dev);
    };
    CHECK_FALSE(wanted("drop:p=0.5", 0)); // rx by default
    CHECK_FALSE(wanted("wq-fatal:wq=0,after=1", 0));
    CHECK(wanted("drop:p=0.5,dir=tx", 0));
    CHECK(wanted("drop:p=0.5,dir=both", 3));
    CHECK(wanted("drop:p=0.5,dir=tx,device=1", 1));
    CHECK_FALSE(wanted("drop:p=0.5,dir=tx,device=1", 0));
    // ... and the receive side takes dir=both but not dir=tx.
    auto plan = sim::FaultPlan::parse("drop:p=0.5,dir=tx");
    REQUIRE(plan);
    CHECK_FALSE(sim::FaultStage::wanted(plan.value(), 0));
    plan = sim::FaultPlan::parse("drop:p=0.5,dir=both");
    REQUIRE(plan);
    CHECK(sim::FaultStage::wanted(plan.value(), 0));
}

TEST_CASE("FaultySink: drop:every=3,dir=tx never sends every third frame, and counts it",
          "[sim][faults][tx]") {
    Rig r("drop:every=3,dir=tx");
    CHECK(r.run(9) == std::vector<int>{0, 1, 3, 4, 6, 7});
    CHECK(r.count(sim::FaultKind::drop) == 3);
    CHECK(r.sink->counters().fault_drops.load() == 3);
    CHECK(r.sink->counters().sent.load() == 9);
    r.check_balanced();
    // Untouched frames keep their bytes and time.
    CHECK(r.a->got[2].bytes == numbered(3));
    CHECK(r.a->got[2].ts_ns == 3000);
}

TEST_CASE("FaultySink: corrupt-fcs on the transmit side is a frame the receiving MAC discards",
          "[sim][faults][tx]") {
    Rig r("corrupt-fcs:every=2,dir=tx");
    CHECK(r.run(4) == std::vector<int>{0, 2});
    CHECK(r.count(sim::FaultKind::corrupt_fcs) == 2);
    CHECK(r.sink->counters().fcs_drops.load() == 2);
    CHECK(r.sink->counters().fault_drops.load() == 0);
    r.check_balanced();
}

TEST_CASE("FaultySink: flip and truncate change what goes out", "[sim][faults][tx]") {
    const Buf base = golden::concat(golden::kTcpGood);
    Rig flip("seed=3;flip:nth=1,bytes=2,dir=tx");
    flip.sink->send(base, 0);
    REQUIRE(flip.a->got.size() == 1);
    const Buf& out = flip.a->got[0].bytes;
    REQUIRE(out.size() == base.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < base.size(); ++i) differ += out[i] != base[i];
    CHECK(differ >= 1);
    CHECK(differ <= 2);
    flip.check_balanced();

    Rig cut("truncate:every=1,len=20,dir=tx");
    cut.sink->send(base, 0);
    REQUIRE(cut.a->got.size() == 1);
    CHECK(cut.a->got[0].bytes == Buf(base.begin(), base.begin() + 20));
    cut.check_balanced();
}

TEST_CASE("FaultySink: duplicate sends the frame twice, in place", "[sim][faults][tx]") {
    Rig r("duplicate:every=2,dir=tx");
    CHECK(r.run(4) == std::vector<int>{0, 1, 1, 2, 3, 3});
    CHECK(r.sink->counters().duplicated.load() == 2);
    r.check_balanced();
}

TEST_CASE("FaultySink: reorder holds a frame until later sends pass it; flush sends what is left",
          "[sim][faults][tx]") {
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
        INFO("seed " << seed);
        Rig r("seed=" + std::to_string(seed) + ";reorder:nth=2,window=4,dir=tx");
        const auto o = r.run(8, false); // no flush: later sends release it
        REQUIRE(o.size() == 8);
        const auto at = std::find(o.begin(), o.end(), 1) - o.begin();
        CHECK(at >= 2);
        CHECK(at <= 4);
        r.check_balanced();
    }
    // Held at the last send: only the flush sends it, nothing is lost.
    Rig r("reorder:nth=2,window=4,dir=tx");
    CHECK(r.run(2, false) == std::vector<int>{0});
    CHECK(r.sink->counters().held.load() == 1);
    r.check_balanced();
    r.sink->release_held();
    CHECK(r.order() == std::vector<int>{0, 1});
    CHECK(r.sink->counters().held.load() == 0);
    r.check_balanced();
}

TEST_CASE("FaultySink: delay sends a frame later, by time, on the sends after it", "[sim][faults][tx]") {
    Rig r("delay:nth=1,us=2,dir=tx"); // frame 0: 0 -> 2000 ns
    CHECK(r.run(5, false) == std::vector<int>{1, 2, 0, 3, 4});
    CHECK(r.a->got[2].ts_ns == 2000);
    r.check_balanced();
    // Nothing sent after it: it waits for the flush.
    Rig end("delay:nth=3,us=100,dir=tx");
    CHECK(end.run(3, false) == std::vector<int>{0, 1});
    CHECK(end.sink->counters().held.load() == 1);
    end.sink->release_held();
    CHECK(end.order() == std::vector<int>{0, 1, 2});
    CHECK(end.a->got[2].ts_ns == 2000 + 100000);
    end.check_balanced();
}

TEST_CASE("FaultySink: a filter narrows a transmit-side fault; a bad one is refused", "[sim][faults][tx]") {
    Rig r("drop:every=1,dir=tx,filter=tcp");
    for (unsigned i = 0; i < 3; ++i) {
        r.sink->send(numbered(2 * i), 0);
        r.sink->send(numbered(2 * i + 1, golden::kTcpGood), 0);
    }
    CHECK(r.order() == std::vector<int>{0, 2, 4});
    r.check_balanced();
    auto plan = sim::FaultPlan::parse("drop:every=1,dir=tx,filter=tcp port nope");
    REQUIRE(plan);
    auto bad = sim::FaultySink::wrap({}, plan.value(), 0);
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message, Catch::Contains("column 1") && Catch::Contains("tcp port nope"));
}

TEST_CASE("FaultySink: drop:p=0.1 is seeded: the same seed sends the same frames, another seed others",
          "[sim][faults][tx]") {
    auto kept = [](std::uint64_t seed) {
        Rig r("seed=" + std::to_string(seed) + ";drop:p=0.1,dir=tx");
        const auto o = r.run(10000);
        r.check_balanced();
        return o;
    };
    const auto a = kept(7), b = kept(7), c = kept(8);
    CHECK(a == b);
    CHECK(a != c);
    CHECK(a.size() > 8900);
    CHECK(a.size() < 9100);
}

TEST_CASE("dir=both: each side has its own stream; the receive side's is the dir=rx one",
          "[sim][faults][tx]") {
    // The receive side: which of n frames a plan loses there.
    auto rx_lost = [](const std::string& text, unsigned n) {
        auto plan = sim::FaultPlan::parse(text);
        REQUIRE(plan);
        auto src = std::make_unique<net::MemorySource>();
        for (unsigned i = 0; i < n; ++i) src->push(numbered(i % 256), i * 1000ull);
        src->close();
        auto s = sim::FaultStage::make(plan.value(), 0);
        REQUIRE(s);
        std::vector<bool> lost;
        net::Frame f;
        while (sim::pull_through(*src, *s.value(), f)) lost.push_back(f.lost);
        return lost;
    };
    // The transmit side: which of n frames it loses.
    auto tx_lost = [](const std::string& text, unsigned n) {
        Rig r(text);
        std::vector<bool> lost;
        for (unsigned i = 0; i < n; ++i) {
            const auto before = r.sink->counters().fault_drops.load();
            r.sink->send(numbered(i % 256), i * 1000ull);
            lost.push_back(r.sink->counters().fault_drops.load() != before);
        }
        return lost;
    };
    const unsigned n = 2000;
    const auto rx_both = rx_lost("seed=11;drop:p=0.5,dir=both", n);
    const auto tx_both = tx_lost("seed=11;drop:p=0.5,dir=both", n);
    // Adding the transmit side changes nothing on the receive side ...
    CHECK(rx_both == rx_lost("seed=11;drop:p=0.5", n));
    // ... the transmit side of a both item is the dir=tx one, whatever the
    // receive side sees (it never sees the receive side's frames) ...
    CHECK(tx_both == tx_lost("seed=11;drop:p=0.5,dir=tx", n));
    // ... and the two sides draw from different streams.
    CHECK(rx_both != tx_both);
    CHECK(sim::FrameFaults::stream_seed(11, 0, sim::Direction::rx) ==
          sim::fault_stream_seed(11, 0));
    CHECK(sim::FrameFaults::stream_seed(11, 0, sim::Direction::tx) !=
          sim::FrameFaults::stream_seed(11, 0, sim::Direction::rx));
}
