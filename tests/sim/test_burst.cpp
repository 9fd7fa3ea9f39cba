// run_burst's contract with its Pacing (sim/burst.hpp): arrival times are
// asked once per batch, never for more frames than enter in this burst; the
// frames that are not due stay pending and are timed afresh by a later burst;
// each frame enters the port at the time it was given.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "net/memory_source.hpp"
#include "sim/burst.hpp"
#include "sim/config.hpp"
#include "sim/simulator.hpp"
#include "support/golden_frames.hpp"

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
        for (std::uint32_t i = 0; i < due; ++i) out[i] = frames[i].ts_ns + 5000;
        return due;
    }
    std::uint64_t service_time(std::uint32_t) noexcept override { return 0; }
    void burst_done(const sim::BurstResult&) noexcept override {}
    [[nodiscard]] std::uint32_t pull_limit() const noexcept override { return sim::FrameBatch::kCapacity; }
};

// Ten frames, timestamps 1000, 1001, ...: handed over as many at once as asked.
class BatchSource final : public net::FrameSource {
public:
    bool next(net::Frame& out) noexcept override { return next_burst({&out, 1}) == 1; }
    std::uint32_t next_burst(std::span<net::Frame> out) noexcept override {
        std::uint32_t n = 0;
        for (; n < out.size() && next_ < 10; ++n, ++next_) {
            out[n] = {};
            out[n].data = bytes_.data();
            out[n].len = out[n].wire_len = static_cast<std::uint32_t>(bytes_.size());
            out[n].ts_ns = 1000 + next_;
        }
        counters_.frames += n;
        return n;
    }
    [[nodiscard]] bool exhausted() const noexcept override { return next_ == 10; }
    [[nodiscard]] std::string describe() const override { return "ten frames"; }
    [[nodiscard]] const net::SourceCounters& counters() const noexcept override { return counters_; }

private:
    std::array<std::uint8_t, golden::kUntagged.size()> bytes_ = golden::kUntagged;
    std::uint32_t next_ = 0;
    net::SourceCounters counters_;
};

std::uint64_t port_frames(device::Device& dev) { return dev.port.counters().frames.get(); }

std::uint64_t port_now(device::Device& dev) {
    std::lock_guard lock(dev.port.mutex());
    return dev.port.now_ns();
}

} // namespace

TEST_CASE("run_burst: arrival times once per batch, only for frames entering now; frames not due "
          "wait and are timed again",
          "[sim][burst]") {
    // A device whose own engine never runs (inline, never pumped); the test
    // drives run_burst with its own source and pacing.
    std::vector<std::unique_ptr<net::FrameSource>> none;
    auto idle = std::make_unique<net::MemorySource>();
    idle->close();
    none.push_back(std::move(idle));
    auto s = sim::Simulator::create(sim::Config{}, std::move(none));
    REQUIRE(s);
    device::Device& dev = s.value()->device(0);

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
