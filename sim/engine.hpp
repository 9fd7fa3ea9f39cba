// Engines move frames from a source into a device port. Two kinds:
//   InlineEngine  no thread; frames are pulled when the program polls, time
//                 is virtual (capture timestamps): bit-identical reruns.
//   ThreadEngine  one Boost.Asio io_context on its own thread, real time,
//                 optional pacing to the capture's timestamps.
// Both implement the device's EngineHooks and run the same burst
// (sim/burst.hpp); each keeps only its clock and its pacing.
#pragma once

#include <atomic>
#include <condition_variable>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "device/objects.hpp"
#include "net/frame_source.hpp"
#include "sim/config.hpp"
#include "sim/pacing_stats.hpp"
#include "sim/timeline.hpp"

namespace rdmasim::sim {

class FaultStage; // sim/fault_stage.hpp

class Engine : public device::EngineHooks {
public:
    Engine(device::Device& dev, std::unique_ptr<net::FrameSource> source, const Config& config);
    ~Engine() override = default;

    virtual void start() = 0; // begins work (the thread engine spawns its thread)
    virtual void stop() = 0;  // ends work; the engine can be destroyed afterwards
    // Starts the replay now, whatever the start trigger (a program that owns
    // the Simulator calls it once its receive set-up is complete).
    virtual void begin() noexcept = 0;

    // True once the source is exhausted and no frame is held: every frame
    // offered has its outcome.
    [[nodiscard]] bool idle() const noexcept { return idle_.load(std::memory_order_acquire); }
    // Waits until idle() or the timeout; the inline engine pumps instead of waiting.
    virtual bool wait_idle(std::chrono::milliseconds timeout) = 0;
    [[nodiscard]] bool started() const noexcept { return started_.load(std::memory_order_acquire); }
    // The source as opened (a tool's wrapper around it included), without the fault stage.
    [[nodiscard]] const net::FrameSource& source() const noexcept { return *source_; }
    // The source's description, and the fault stage's when there is one
    // ("pcap file F (EN10MB, fcs 0 bytes) with 2 frame faults").
    [[nodiscard]] std::string describe_source() const;
    // The stage each burst runs the source's frames through (sim/burst.hpp),
    // or nullptr. Set it before start(); it must outlive the engine's work.
    void set_fault_stage(FaultStage* faults) noexcept { faults_ = faults; }
    // How late paced frames entered the port: the thread engine with a speed
    // set records every frame; otherwise it stays empty.
    [[nodiscard]] const PacingStats& pacing_stats() const noexcept { return pacing_stats_; }
    // Bursts run so far, from any thread: what waiting costs (the thread
    // engine spends none on a quiet live source that has a wait_fd).
    [[nodiscard]] std::uint64_t steps() const noexcept {
        return steps_.load(std::memory_order_relaxed);
    }
    // Ticked at the end of every burst, under the port lock (a report's
    // samples). Set it before start(); it must outlive the engine's work.
    void set_timeline(Timeline* timeline) noexcept { timeline_ = timeline; }
    // The index of the device this engine feeds (rdmasimN): the thread
    // engine names its thread after it and runs it on engine_cpus[N]. Set
    // it before start().
    void set_device_index(std::uint32_t index) noexcept { device_index_ = index; }

    // --- fork (sim/README.md, "Fork"): in the child, under the device's
    // port lock, with no other thread left. ---
    // Puts `source` in place of this engine's and returns the old one, which
    // the caller leaks: destroying it could close or unlink the parent's wire.
    [[nodiscard]] std::unique_ptr<net::FrameSource>
    exchange_source(std::unique_ptr<net::FrameSource> source) noexcept {
        source_.swap(source);
        return source;
    }
    // The engine that serves the device from now on, not started, with this
    // one's source, settings and start state; or nullptr when this one still
    // works (it has no thread). When it returns one, the caller leaks this
    // engine, never stops nor destroys it: its thread, its io_context and its
    // descriptors are the parent's. Frames pulled and not yet due stay here.
    virtual std::unique_ptr<Engine> successor_after_fork() { return nullptr; }

protected:
    // A successor's settings and start state, from the engine it replaces.
    void inherit(Engine& from) noexcept;
    device::Device& dev_;
    std::unique_ptr<net::FrameSource> source_;
    FaultStage* faults_ = nullptr;
    Config config_;
    std::uint32_t device_index_ = 0;
    std::atomic<bool> started_{false};
    std::atomic<bool> idle_{false};
    PacingStats pacing_stats_;
    std::atomic<std::uint64_t> steps_{0};
    Timeline* timeline_ = nullptr;
    void count_step() noexcept { steps_.fetch_add(1, std::memory_order_relaxed); } // per burst
};

std::unique_ptr<Engine> make_engine(device::Device& dev, std::unique_ptr<net::FrameSource> source,
                                    const Config& config);

} // namespace rdmasim::sim
