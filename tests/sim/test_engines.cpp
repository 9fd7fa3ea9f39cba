// The engines that move frames from a source into a device port: the inline
// engine (pulled by pump(), virtual time) and the thread engine (its own
// thread, real time). Programs see them only through verbs.
#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "datapath/counters.hpp"
#include "device/device.hpp"
#include "net/memory_source.hpp"
#include "sim/config.hpp"
#include "sim/inline_engine.hpp"
#include "sim/simulator.hpp"
#include "support/golden_frames.hpp"
#include "support/receive_rig.hpp"

using namespace rdmasim;
namespace golden = rdmasim::test::golden;

namespace {

// A simulator with one device fed by a memory source holding `frames`
// (closed: the source is exhausted once they are consumed).
std::unique_ptr<sim::Simulator> make_sim(sim::Config config, std::size_t frames) {
    auto src = std::make_unique<net::MemorySource>();
    const std::array<std::vector<std::uint8_t>, 3> shapes = {golden::concat(golden::kUntagged),
                                                             golden::concat(golden::kTagged),
                                                             golden::concat(golden::kTcpGood)};
    for (std::size_t i = 0; i < frames; ++i)
        src->push(shapes[i % shapes.size()], 1'000'000'000ull + i * 1000);
    src->close();
    std::vector<std::unique_ptr<net::FrameSource>> sources;
    sources.push_back(std::move(src));
    auto s = sim::Simulator::create(config, std::move(sources));
    REQUIRE(s);
    return std::move(s.value());
}

bool balanced(device::Device& dev) {
    std::lock_guard lock(dev.port.mutex());
    return dev.port.balanced();
}

// A program's receive set-up on the simulator's device: CQ-ex, WQ in RDY, a
// one-entry indirection table, an RSS QP and a catch-all flow (attached by the
// test), a buffer of `max_wr` slots. The test posts the WQEs.
class Program {
public:
    explicit Program(std::uint32_t max_wr, std::uint32_t wq_flags = 0)
        : rig_(dev_.ctx, dev_.pd,
               {.depth = max_wr,
                .wq_flags = {wq_flags},
                .cqe = 2 * max_wr,
                .fill = false,
                .flow = false}) {}

    void attach_flow() { rig_.attach_flow(); }
    // Posts a WQE on slot `slot` with wr_id = slot.
    int post(std::uint64_t slot) { return rig_.post(slot); }
    // Polls once; reposts every completed slot. Returns the successes seen.
    std::uint64_t poll_and_repost(std::uint64_t& failures) {
        std::uint64_t ok = 0;
        const auto done = rig_.poll();
        for (const auto& c : done) {
            if (c.status == IBV_WC_SUCCESS)
                ++ok;
            else
                ++failures;
        }
        for (const auto& c : done)
            rig_.repost(c.wr_id);
        return ok;
    }

private:
    test::VerbsDevice dev_;
    test::ReceiveRig rig_;
};

sim::Config inline_config() {
    sim::Config c;
    c.engine = sim::EngineKind::inline_;
    return c;
}

} // namespace

TEST_CASE("inline engine: each pump pulls at most `burst` frames; idle after exhaustion",
          "[sim][engine]") {
    sim::Config config = inline_config();
    REQUIRE(config.set("burst", "4"));
    REQUIRE(config.set("start", "now"));
    auto s = make_sim(config, 10);
    auto& engine = static_cast<sim::InlineEngine&>(s->engine(0));
    auto& dev = s->device(0);
    REQUIRE(engine.started());
    CHECK_FALSE(engine.idle());
    engine.pump();
    CHECK(dev.port.counters().frames.get() == 4);
    CHECK_FALSE(engine.idle());
    engine.pump();
    CHECK(dev.port.counters().frames.get() == 8);
    CHECK_FALSE(engine.idle());
    engine.pump();
    CHECK(dev.port.counters().frames.get() == 10);
    CHECK(engine.idle());
    CHECK(s->idle());
    engine.pump();
    CHECK(dev.port.counters().frames.get() == 10);
    // No flow: every frame is a steering miss, and the balance holds.
    CHECK(dev.port.counters().drops[static_cast<std::size_t>(datapath::Drop::steering_miss)].get() ==
          10);
    CHECK(balanced(dev));
}

TEST_CASE("inline engine: by default no frame enters before a flow is attached", "[sim][engine]") {
    sim::Config config = inline_config();
    REQUIRE(config.start == sim::StartTrigger::first_flow); // the default
    REQUIRE(config.set("burst", "8"));
    auto s = make_sim(config, 12);
    auto& engine = static_cast<sim::InlineEngine&>(s->engine(0));
    auto& dev = s->device(0);
    {
        Program p(16);
        CHECK_FALSE(engine.started());
        for (int i = 0; i < 5; ++i)
            engine.pump();
        std::uint64_t failures = 0;
        CHECK(p.poll_and_repost(failures) == 0); // polling pumps too
        CHECK(dev.port.counters().frames.get() == 0);
        for (std::uint64_t i = 0; i < 16; ++i)
            REQUIRE(p.post(i) == 0);
        CHECK(dev.port.counters().frames.get() == 0); // posting does not start it either

        p.attach_flow();
        CHECK(engine.started());
        engine.pump();
        CHECK(dev.port.counters().frames.get() == 8);
        std::uint64_t delivered = p.poll_and_repost(failures); // pumps the last 4
        delivered += p.poll_and_repost(failures);
        CHECK(delivered == 12);
        CHECK(failures == 0);
        CHECK(dev.port.counters().delivered.get() == 12);
        CHECK(engine.idle());
        CHECK(balanced(dev));
    }
}

TEST_CASE("inline engine: held frames keep it busy; wait_idle pumps them to their outcome",
          "[sim][engine]") {
    sim::Config config = inline_config();
    REQUIRE(config.set("start", "now"));
    REQUIRE(config.set("caps.delay_drop_timeout_us", "500"));
    auto s = make_sim(config, 3);
    auto& engine = static_cast<sim::InlineEngine&>(s->engine(0));
    auto& dev = s->device(0);
    {
        Program p(4, IBV_WQ_FLAGS_DELAY_DROP);
        p.attach_flow();
        engine.pump();
        CHECK(dev.port.counters().frames.get() == 3);
        CHECK(dev.port.counters().delay_drop_waits.get() == 3);
        CHECK_FALSE(engine.idle()); // the source is done, but frames are held
        CHECK(engine.wait_idle(std::chrono::milliseconds(0)));
        CHECK(engine.idle());
        CHECK(dev.port.counters().drops[static_cast<std::size_t>(datapath::Drop::delay_drop_timeout)]
                  .get() == 3);
        CHECK(balanced(dev));
    }
}

TEST_CASE("thread engine: thousands of frames to a polling program, and the balance holds",
          "[sim][engine]") {
    constexpr std::size_t kFrames = 4000;
    sim::Config config; // engine=thread, start=first-flow, topspeed
    REQUIRE(config.engine == sim::EngineKind::thread);
    auto s = make_sim(config, kFrames);
    auto& engine = s->engine(0);
    auto& dev = s->device(0);
    {
        Program p(256);
        for (std::uint64_t i = 0; i < 256; ++i)
            REQUIRE(p.post(i) == 0);
        // Not started: nothing moves, and waiting for idle times out.
        CHECK_FALSE(engine.wait_idle(std::chrono::milliseconds(50)));
        CHECK(dev.port.counters().frames.get() == 0);

        p.attach_flow();
        std::uint64_t delivered = 0, failures = 0;
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!engine.idle() && std::chrono::steady_clock::now() < until)
            delivered += p.poll_and_repost(failures);
        REQUIRE(engine.idle());
        // Whatever completed before idle is in the CQ by now.
        delivered += p.poll_and_repost(failures);
        delivered += p.poll_and_repost(failures);
        CHECK(engine.wait_idle(std::chrono::milliseconds(1000)));
        CHECK(s->wait_idle(std::chrono::milliseconds(1000)));

        const auto& c = dev.port.counters();
        CHECK(c.frames.get() == kFrames);
        CHECK(c.delivered.get() == delivered);
        CHECK(failures == 0);
        CHECK(c.frames.get() == c.delivered.get() + c.drops_total());
        // At topspeed the only acceptable loss is running out of posted WQEs.
        CHECK(c.drops_total() ==
              c.drops[static_cast<std::size_t>(datapath::Drop::out_of_buffer)].get());
        CHECK(delivered > 0);
        CHECK(balanced(dev));
    }
}
