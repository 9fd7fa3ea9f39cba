// Faults on the way into a port (sim/README.md, "Fault injection"): a
// FrameSource that wraps a device's source and applies the plan's frame
// faults (drop, corrupt-fcs, flip, truncate, duplicate, reorder, delay) to
// what it hands over, and fires the device faults counted in its frames
// (wq-fatal, port-down). Only built when the plan has such faults for the
// device: without a plan nothing is wrapped and nothing costs.
//
// Every decision comes from one generator per fault, seeded from the plan's
// seed and the fault's position, and from counts of the frames seen: the same
// source and plan give the same frames, in the same order, every run.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "device/objects.hpp"
#include "net/frame_source.hpp"
#include "net/result.hpp"
#include "sim/fault_plan.hpp"

struct bpf_program;

namespace rdmasim::sim {
class Trace;
}

namespace rdmasim::sim {

// splitmix64: small, fast, and the same numbers on every platform (the
// standard library's distributions are not).
class FaultRng {
public:
    explicit FaultRng(std::uint64_t seed) noexcept : state_(seed) {}
    std::uint64_t next() noexcept;
    // Uniform in [0, 1).
    double unit() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    // Uniform in [0, n), n > 0.
    std::uint64_t below(std::uint64_t n) noexcept { return next() % n; }

private:
    std::uint64_t state_;
};

// A fault's own stream: the plan's seed mixed with the fault's position in
// the plan, so that adding a fault leaves the others' decisions as they were.
[[nodiscard]] std::uint64_t fault_stream_seed(std::uint64_t seed, std::size_t index) noexcept;

// How many times each kind fired, indexed by FaultKind.
using FaultCounts = std::vector<std::uint64_t>;

class FaultySource final : public net::FrameSource {
public:
    // Whether the plan has faults this wrapper injects on device `index`.
    [[nodiscard]] static bool wanted(const FaultPlan& plan, std::uint32_t index);
    // The plan's faults for device `index`'s receive side; an error for a
    // filter libpcap cannot compile. `dev` receives the device faults: null
    // only for plans without them (tests of frame faults alone). next() is
    // then called under dev's port lock, as the engines' bursts do.
    // `trace`, when not null, hears of every fault that fires.
    static Result<std::unique_ptr<FaultySource>> wrap(std::unique_ptr<net::FrameSource> inner,
                                                      const FaultPlan& plan, std::uint32_t index,
                                                      device::Device* dev = nullptr,
                                                      Trace* trace = nullptr);
    ~FaultySource() override;
    FaultySource(const FaultySource&) = delete;
    FaultySource& operator=(const FaultySource&) = delete;

    bool next(net::Frame& out) noexcept override;
    [[nodiscard]] bool exhausted() const noexcept override;
    [[nodiscard]] std::string describe() const override;
    [[nodiscard]] const net::SourceCounters& counters() const noexcept override;
    [[nodiscard]] std::string_view failure() const noexcept override { return inner_->failure(); }
    [[nodiscard]] double progress() const noexcept override { return inner_->progress(); }
    [[nodiscard]] int wait_fd() const noexcept override { return inner_->wait_fd(); }

    // Faults injected so far, by kind (read on the engine's thread or after it stopped).
    [[nodiscard]] const FaultCounts& injected() const noexcept { return injected_; }

private:
    struct Active {
        FaultSpec spec;
        FaultRng rng;
        std::uint64_t candidates = 0; // frames it was asked about (after its filter)
        std::unique_ptr<bpf_program> filter;
    };
    // A frame the faults changed, duplicated or held back: its own bytes.
    struct Owned {
        std::vector<std::uint8_t> bytes;
        net::Frame frame; // data points into bytes once handed over
        std::uint64_t release_after = 0; // reorder: inner frames to pass first
        bool by_time = false;            // delay: released by timestamp instead
    };

    FaultySource(std::unique_ptr<net::FrameSource> inner, std::uint64_t seed);
    bool fires(Active& a, const net::Frame& f) noexcept;
    // Applies every fault to one frame from the inner source and queues the
    // results; false when none fired (nothing queued, nothing copied).
    bool apply(const net::Frame& f);
    enum class Release { delayed, reordered, all };
    // Moves held frames that are due into ready_: delayed ones whose time
    // has come, reordered ones whose frames have passed, or all (the end).
    void release(Release which);
    static Owned copy(const net::Frame& f);

    std::unique_ptr<net::FrameSource> inner_;
    std::vector<Active> faults_;
    std::deque<Owned> ready_; // handed over before the next inner frame
    std::vector<Owned> held_; // reordered or delayed, waiting
    Owned current_;           // the frame last handed over, when it is ours
    std::uint64_t inner_frames_ = 0;
    std::uint64_t last_ts_ = 0; // of the last inner frame
    device::Device* dev_ = nullptr;
    Trace* trace_ = nullptr;
    std::uint32_t index_ = 0;
    std::uint32_t down_left_ = 0; // port-down: frames still to miss
    bool dead_ = false;           // device-fatal fired: every frame is lost
    FaultCounts injected_;
    net::SourceCounters counters_;
};

} // namespace rdmasim::sim
