// The engines that move frames from a source into a device port: the inline
// engine (pulled by pump(), virtual time) and the thread engine (its own
// thread, real time). Programs see them only through verbs.
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "datapath/counters.hpp"
#include "device/device.hpp"
#include "net/memory_source.hpp"
#include "sim/config.hpp"
#include "sim/inline_engine.hpp"
#include "sim/simulator.hpp"
#include "support/golden_frames.hpp"
#include "support/receive_rig.hpp"
#include "support/wait_until.hpp"

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

// A live source the test feeds from its own thread. Its wait_fd is a
// descriptor the test owns (so it outlives the engine): an eventfd signalled
// on every push, anything else (never readable), or -1 (none: polled).
class LiveSource final : public net::FrameSource {
public:
    explicit LiveSource(int fd) : fd_(fd) {}
    void push(std::span<const std::uint8_t> bytes) {
        {
            std::lock_guard lock(mu_);
            frames_.push(bytes);
        }
        signal();
    }
    void close() {
        {
            std::lock_guard lock(mu_);
            closed_ = true;
        }
        signal();
    }
    bool next(net::Frame& out) noexcept override {
        // Consume the signal before looking: a push after the look signals again.
        std::uint64_t n;
        if (fd_ >= 0) (void)!::read(fd_, &n, sizeof n);
        std::lock_guard lock(mu_);
        return frames_.next(out);
    }
    [[nodiscard]] bool exhausted() const noexcept override {
        std::lock_guard lock(mu_);
        return closed_ && frames_.pending() == 0;
    }
    [[nodiscard]] std::string describe() const override { return "live test source"; }
    [[nodiscard]] const net::SourceCounters& counters() const noexcept override {
        return frames_.counters();
    }
    [[nodiscard]] int wait_fd() const noexcept override { return fd_; }

private:
    void signal() {
        const std::uint64_t one = 1;
        if (fd_ >= 0) (void)!::write(fd_, &one, sizeof one);
    }
    int fd_;
    mutable std::mutex mu_;
    net::MemorySource frames_;
    bool closed_ = false;
};

// A thread-engine simulator (start=now) over `source`.
std::unique_ptr<sim::Simulator> make_live_sim(std::unique_ptr<net::FrameSource> source) {
    sim::Config config;
    REQUIRE(config.set("start", "now"));
    std::vector<std::unique_ptr<net::FrameSource>> sources;
    sources.push_back(std::move(source));
    auto s = sim::Simulator::create(config, std::move(sources));
    REQUIRE(s);
    return std::move(s.value());
}

// Until `dev` was offered `n` frames (test::wait_until's bound).
bool offered(device::Device& dev, std::uint64_t n) {
    return test::wait_until([&] { return dev.port.counters().frames.get() >= n; });
}

// Until `engine` ran `n` steps more than `from`: steps are waited for, never
// counted over a fixed time.
bool steps_since(const sim::Engine& engine, std::uint64_t from, std::uint64_t n) {
    return test::wait_until([&] { return engine.steps() - from >= n; });
}

// Pushes three frames one by one, each picked up before the next, then ends
// the source: the engine goes idle.
void feed_three_then_close(sim::Simulator& s, LiveSource& live) {
    const auto frame = golden::concat(golden::kUntagged);
    for (std::uint64_t i = 1; i <= 3; ++i) {
        live.push(frame);
        REQUIRE(offered(s.device(0), i));
    }
    live.close();
    CHECK(s.wait_idle(std::chrono::seconds(10)));
    CHECK(s.port_counters(0).frames.get() == 3);
    CHECK(balanced(s.device(0)));
}

// A file-like source that hands over bursts: its frames all stay in memory,
// so every frame of a burst stays valid, as a mapped capture's do. It notes
// the largest burst an engine asked for.
class BurstSource final : public net::FrameSource {
public:
    BurstSource(std::size_t frames, std::uint64_t gap_ns) : gap_ns_(gap_ns) {
        const std::array<std::vector<std::uint8_t>, 3> shapes = {
            golden::concat(golden::kUntagged), golden::concat(golden::kTagged),
            golden::concat(golden::kTcpGood)};
        for (std::size_t i = 0; i < frames; ++i) frames_.push_back(shapes[i % shapes.size()]);
    }
    bool next(net::Frame& out) noexcept override { return next_burst({&out, 1}) == 1; }
    std::uint32_t next_burst(std::span<net::Frame> out) noexcept override {
        largest_ask = std::max(largest_ask.load(), out.size());
        std::uint32_t n = 0;
        for (; n < out.size() && i_ < frames_.size(); ++n, ++i_) {
            out[n] = net::Frame{};
            out[n].data = frames_[i_].data();
            out[n].len = out[n].wire_len = static_cast<std::uint32_t>(frames_[i_].size());
            out[n].ts_ns = 1'000'000'000ull + i_ * gap_ns_;
            ++counters_.frames;
            counters_.bytes += out[n].len;
        }
        return n;
    }
    [[nodiscard]] bool exhausted() const noexcept override { return i_ == frames_.size(); }
    [[nodiscard]] std::string describe() const override { return "bursts"; }
    [[nodiscard]] const net::SourceCounters& counters() const noexcept override { return counters_; }

    std::atomic<std::size_t> largest_ask{0};

private:
    std::vector<std::vector<std::uint8_t>> frames_;
    std::uint64_t gap_ns_;
    std::size_t i_ = 0;
    net::SourceCounters counters_;
};

std::unique_ptr<sim::Simulator> make_burst_sim(sim::Config config, std::unique_ptr<BurstSource> src) {
    std::vector<std::unique_ptr<net::FrameSource>> sources;
    sources.push_back(std::move(src));
    auto s = sim::Simulator::create(config, std::move(sources));
    REQUIRE(s);
    return std::move(s.value());
}

sim::Config config_with_start_now() {
    sim::Config c;
    REQUIRE(c.set("start", "now"));
    return c;
}

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

// A thread-engine simulator over a LiveSource whose wait_fd is an eventfd
// the test owns: closed only after the simulator is gone.
struct EventfdSim {
    EventfdSim() : efd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
        REQUIRE(efd >= 0);
        auto owned = std::make_unique<LiveSource>(efd);
        live = owned.get();
        sim = make_live_sim(std::move(owned));
    }
    ~EventfdSim() {
        sim.reset();
        ::close(efd);
    }
    int efd;
    LiveSource* live = nullptr;
    std::unique_ptr<sim::Simulator> sim;
};

TEST_CASE("thread engine: a quiet live source with a wait_fd costs no steps; frames pushed "
          "later enter when it turns readable",
          "[sim][engine][wait]") {
    EventfdSim f;
    auto& engine = f.sim->engine(0);
    // The first step finds nothing and waits on the descriptor; then
    // nothing may run at all (a 100 us poll would take ~2000 steps here).
    REQUIRE(steps_since(engine, 0, 1));
    const std::uint64_t before = engine.steps();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(engine.steps() - before <= 2);

    feed_three_then_close(*f.sim, *f.live);
    // A wake-up per push (and one for the close), give or take one each.
    CHECK(engine.steps() - before <= 2 + 4 * 2);
    // The engine released the descriptor, never closed it: it is the source's.
    f.sim.reset();
    CHECK(::fcntl(f.efd, F_GETFD) != -1);
}

// The times the engine thread (rdmasim-eng0) of this process went to sleep
// (/proc/self/task/*/status, voluntary_ctxt_switches); -1 if not found.
long engine_sleeps() {
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string name;
        if (!std::getline(comm, name) || name != "rdmasim-eng0") continue;
        std::ifstream status(task.path() / "status");
        for (std::string line; std::getline(status, line);)
            if (line.starts_with("voluntary_ctxt_switches:"))
                return std::stol(line.substr(line.find(':') + 1));
    }
    return -1;
}

TEST_CASE("thread engine, progress auto: while polls take every frame, the engine looks less and "
          "less often",
          "[sim][engine][wait]") {
    EventfdSim f;
    REQUIRE(steps_since(f.sim->engine(0), 0, 1));
    const long before = engine_sleeps();
    REQUIRE(before >= 0);
    // A program polling for 300 ms while a frame comes every 20 ms. The
    // first wakes the engine from its descriptor; from then on it looks
    // on a timer. At one look per millisecond it would sleep ~300 times;
    // backing off to kLookMax (16 ms), about 25.
    const auto frame = golden::concat(golden::kUntagged);
    const auto start = std::chrono::steady_clock::now();
    for (int pushed = 0;
         std::chrono::steady_clock::now() - start < std::chrono::milliseconds(300);) {
        if (std::chrono::steady_clock::now() - start >= pushed * std::chrono::milliseconds(20)) {
            f.live->push(frame);
            ++pushed;
        }
        f.sim->engine(0).on_poll(f.sim->device(0));
    }
    const long sleeps = engine_sleeps() - before;
    INFO("the engine slept " << sleeps << " times");
    CHECK(sleeps > 0);
    CHECK(sleeps < 100);
}

TEST_CASE("thread engine: a live source without a wait_fd is polled", "[sim][engine][wait]") {
    auto owned = std::make_unique<LiveSource>(-1);
    LiveSource& live = *owned;
    auto s = make_live_sim(std::move(owned));
    // Every 100 us while it has the CPU: 10 steps with nothing to read
    // (an engine waiting for a wake-up would make one).
    CHECK(steps_since(s->engine(0), s->engine(0).steps(), 10));
    feed_three_then_close(*s, live);
}

TEST_CASE("thread engine: a wait_fd epoll cannot watch falls back to polling",
          "[sim][engine][wait]") {
    // A regular file: epoll refuses it (EPERM); the engine warns and polls.
    std::FILE* file = std::tmpfile();
    REQUIRE(file != nullptr);
    {
        auto owned = std::make_unique<LiveSource>(::fileno(file));
        LiveSource& live = *owned;
        auto s = make_live_sim(std::move(owned));
        CHECK(steps_since(s->engine(0), s->engine(0).steps(), 10));
        feed_three_then_close(*s, live);
    }
    CHECK(::fcntl(::fileno(file), F_GETFD) != -1); // still the test's to close
    std::fclose(file);
}

TEST_CASE("thread engine at a speed: no frame enters before it is due, each one is in the "
          "pacing stats",
          "[sim][engine][pacing]") {
    // 21 frames 10 ms apart in capture time, replayed at 2x: due every 5 ms.
    constexpr std::uint64_t kFrames = 21;
    sim::Config config;
    REQUIRE(config.set("start", "now"));
    REQUIRE(config.set("speed", "2x"));
    auto src = std::make_unique<net::MemorySource>();
    const auto frame = golden::concat(golden::kUntagged);
    for (std::uint64_t i = 0; i < kFrames; ++i)
        src->push(frame, 5'000'000'000ull + i * 10'000'000ull);
    src->close();
    std::vector<std::unique_ptr<net::FrameSource>> sources;
    sources.push_back(std::move(src));
    const auto t0 = std::chrono::steady_clock::now();
    auto created = sim::Simulator::create(config, std::move(sources));
    REQUIRE(created);
    auto& s = *created.value();
    REQUIRE(s.wait_idle(std::chrono::seconds(30)));
    const auto took = std::chrono::steady_clock::now() - t0;

    const sim::PacingStats& p = s.engine(0).pacing_stats();
    CHECK(s.port_counters(0).frames.get() == kFrames);
    CHECK(p.frames() == kFrames);
    CHECK(p.schedule_ns() == 100'000'000); // the last frame: 200 ms of capture at 2x
    CHECK(p.elapsed_ns() >= p.schedule_ns());
    CHECK(took >= std::chrono::milliseconds(100)); // never ahead of the schedule
    CHECK(p.quantile_ns(0.5) <= p.quantile_ns(0.99));
    CHECK(p.quantile_ns(0.99) <= p.max_ns());
    CHECK(balanced(s.device(0)));

    // At top speed nothing is paced, so nothing is recorded.
    auto fast = make_sim(config_with_start_now(), 50);
    REQUIRE(fast->wait_idle(std::chrono::seconds(30)));
    CHECK(fast->port_counters(0).frames.get() == 50);
    CHECK(fast->engine(0).pacing_stats().frames() == 0);
}

TEST_CASE("engines pull bursts the port takes at once: the source never counts ahead of the port",
          "[sim][engine][burst]") {
    SECTION("inline engine, a step of 70 frames: bursts of at most 32, all entered by the step") {
        sim::Config config = inline_config();
        REQUIRE(config.set("burst", "70"));
        REQUIRE(config.set("start", "now"));
        auto owned = std::make_unique<BurstSource>(200, 1000);
        BurstSource& src = *owned;
        auto s = make_burst_sim(config, std::move(owned));
        auto& engine = static_cast<sim::InlineEngine&>(s->engine(0));
        for (std::uint64_t want : {70u, 140u, 200u, 200u}) {
            engine.pump();
            CHECK(s->port_counters(0).frames.get() == want);
            CHECK(src.counters().frames == want);
        }
        CHECK(src.largest_ask == sim::FrameBatch::kCapacity);
        CHECK(engine.idle());
        CHECK(balanced(s->device(0)));
    }
    SECTION("thread engine, unpaced: bursts; the balance holds at the end") {
        auto owned = std::make_unique<BurstSource>(500, 1000);
        BurstSource& src = *owned;
        auto s = make_burst_sim(config_with_start_now(), std::move(owned));
        REQUIRE(s->wait_idle(std::chrono::seconds(30)));
        CHECK(s->port_counters(0).frames.get() == 500);
        CHECK(src.counters().frames == 500);
        CHECK(src.largest_ask > 1);
        CHECK(balanced(s->device(0)));
    }
    SECTION("thread engine, paced: one frame at a time (a frame not yet due is not yet counted)") {
        sim::Config config = config_with_start_now();
        REQUIRE(config.set("speed", "10x"));
        auto owned = std::make_unique<BurstSource>(40, 1'000'000); // 1 ms apart: 0.1 ms at 10x
        BurstSource& src = *owned;
        auto s = make_burst_sim(config, std::move(owned));
        REQUIRE(s->wait_idle(std::chrono::seconds(30)));
        CHECK(s->port_counters(0).frames.get() == 40);
        CHECK(src.counters().frames == 40);
        CHECK(src.largest_ask == 1);
        CHECK(balanced(s->device(0)));
    }
}

namespace {

// The "Cpus_allowed_list" of a /proc status file (like "0-1"), or "".
std::string cpus_allowed(const std::filesystem::path& status_file) {
    std::ifstream status(status_file);
    const std::string key = "Cpus_allowed_list:";
    for (std::string line; std::getline(status, line);)
        if (line.rfind(key, 0) == 0) return line.substr(line.find_first_not_of(" \t", key.size()));
    return {};
}

// This process's threads named `name`: the CPUs each may run on.
std::vector<std::string> cpus_of_threads_named(const std::string& name) {
    std::vector<std::string> out;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm");
        std::string n;
        if (!std::getline(comm, n) || n != name) continue;
        out.push_back(cpus_allowed(task.path() / "status"));
    }
    return out;
}

} // namespace

TEST_CASE("thread engine: its thread is named rdmasim-engN and runs on engine_cpus[N]",
          "[sim][engine][cpus]") {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    int last = -1; // the highest CPU this process may use
    for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &allowed)) last = c;
    REQUIRE(last >= 0);
    sim::Config config;
    REQUIRE(config.set("devices", "2"));
    REQUIRE(config.set("engine_cpus", std::to_string(last)));
    REQUIRE(config.validate());
    std::vector<std::unique_ptr<net::FrameSource>> sources;
    auto s = sim::Simulator::create(config, std::move(sources));
    REQUIRE(s);
    // Device 0's thread on that CPU alone; device 1's (past the list) where the process may run.
    // (Each thread names and places itself as it starts: waited for.)
    CHECK(test::wait_until([&] {
        const auto pinned = cpus_of_threads_named("rdmasim-eng0");
        return pinned.size() == 1 && pinned[0] == std::to_string(last);
    }));
    REQUIRE(test::wait_until([&] { return cpus_of_threads_named("rdmasim-eng1").size() == 1; }));
    const auto unpinned = cpus_of_threads_named("rdmasim-eng1");
    CHECK(unpinned[0] == cpus_allowed("/proc/self/status"));
}

TEST_CASE("engine_cpus: parsed as a list, refused where it cannot hold", "[sim][engine][cpus]") {
    sim::Config config;
    REQUIRE(config.set("engine_cpus", "0,0"));
    CHECK(config.engine_cpus == std::vector<int>{0, 0});
    for (const char* bad : {"x", "1,", ",1", "-1", "1;2", "99999"}) {
        INFO(bad);
        CHECK_FALSE(config.set("engine_cpus", bad));
    }
    CHECK(config.engine_cpus == std::vector<int>{0, 0}); // a refused value changes nothing
    REQUIRE(config.set("engine_cpus", "none"));
    CHECK(config.engine_cpus.empty());

    const auto error_of = [](sim::Config c) {
        auto r = c.validate();
        return r ? std::string() : r.error().message;
    };
    sim::Config one_device;
    REQUIRE(one_device.set("engine_cpus", "0,0"));
    CHECK(error_of(one_device).find("2 CPUs for 1 device") != std::string::npos);
    sim::Config inline_engine;
    REQUIRE(inline_engine.set("engine_cpus", "0"));
    REQUIRE(inline_engine.set("deterministic", "on"));
    CHECK(error_of(inline_engine).find("engine = inline") != std::string::npos);
    // A CPU the process may not run on (the highest number there can be, unless allowed).
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    if (!CPU_ISSET(CPU_SETSIZE - 1, &allowed)) {
        sim::Config far;
        REQUIRE(far.set("engine_cpus", std::to_string(CPU_SETSIZE - 1)));
        CHECK(error_of(far).find("may not run on CPU " + std::to_string(CPU_SETSIZE - 1)) != std::string::npos);
    }
}
