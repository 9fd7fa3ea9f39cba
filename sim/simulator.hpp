// The runtime: devices built from a Config, each wired to a frame source
// through an engine, and registered so that ibv_get_device_list sees them.
// The same object serves the CLI, tests (in-process) and the drop-in library.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/objects.hpp"
#include "net/frame_sink.hpp"
#include "net/frame_source.hpp"
#include "net/result.hpp"
#include "sim/config.hpp"
#include "sim/engine.hpp"
#include "sim/fault_stage.hpp"
#include "sim/faulty_sink.hpp"
#include "sim/timeline.hpp"
#include "sim/trace.hpp"
#include "sim/verb_faults.hpp"

namespace rdmasim::net {
class ShmWire;
}

namespace rdmasim::sim {

class DeviceStats; // sim/device_stats.hpp
class FamilyBus;   // sim/family_bus.hpp

// Everything the Simulator keeps for one device. Members go in reverse
// order: the engine before the stages, statistics and timeline it uses, the
// device last.
struct DeviceSlot {
    DeviceSlot();
    DeviceSlot(DeviceSlot&&) noexcept;
    DeviceSlot& operator=(DeviceSlot&&) noexcept;
    ~DeviceSlot();

    // Made by the first fork (sim/family_bus.hpp); first: it outlives the port that points to it.
    std::unique_ptr<FamilyBus> family;
    std::unique_ptr<device::Device> device;
    std::unique_ptr<Timeline> timeline;      // with a report
    std::unique_ptr<FaultStage> faults;      // receive-side faults of the plan, else null
    std::unique_ptr<VerbFaults> verb_faults; // with verb-fail items, else null
    std::unique_ptr<DeviceStats> stats;      // with --stats: the port's first sink
    std::unique_ptr<Engine> engine;
    // What the port sends to, attached to it; detached before the device goes.
    std::vector<std::shared_ptr<net::FrameSink>> sinks;
    FaultySink* faulty_sink = nullptr; // with transmit-side faults: sinks' only one, else null
};

class Simulator {
public:
    // Device `index`'s source as opened (null: none) -> the source its engine
    // pulls (a tool's stop condition wraps it).
    using SourceWrap = std::function<std::unique_ptr<net::FrameSource>(
        std::uint32_t index, std::unique_ptr<net::FrameSource> source)>;
    // Sources and sinks from the configuration (sim/device_io.hpp), each
    // source through `wrap` when given; devices without a source get an
    // empty one (loopback of sends still works).
    static Result<std::unique_ptr<Simulator>> create(const Config& config,
                                                     const SourceWrap& wrap = {});
    // Explicit sources, one per device (nullptr = empty), for tests and tools.
    static Result<std::unique_ptr<Simulator>> create(
        const Config& config, std::vector<std::unique_ptr<net::FrameSource>> sources);
    ~Simulator();
    Simulator(const Simulator&) = delete;
    Simulator& operator=(const Simulator&) = delete;

    [[nodiscard]] std::size_t device_count() const noexcept { return slots_.size(); }
    [[nodiscard]] device::Device& device(std::size_t i) noexcept { return *slots_[i].device; }
    [[nodiscard]] Engine& engine(std::size_t i) noexcept { return *slots_[i].engine; }
    [[nodiscard]] const Config& config() const noexcept { return config_; }

    // Counters of device i's port: frames offered, delivered, drops by reason.
    // Readable from any thread while the engine runs (relaxed counters).
    [[nodiscard]] const datapath::RxCounters& port_counters(std::size_t i) const noexcept;
    // Counters of the receive queue numbered `qpn` on device i (a WQ's
    // wq_num, a raw-packet QP's qp_num), or nullptr when there is none. The
    // pointer is valid until that WQ or QP is destroyed.
    [[nodiscard]] const datapath::RxCounters* queue_counters(std::size_t i,
                                                             std::uint32_t qpn) const noexcept;

    // Faults the plan injected on device i so far, by FaultKind. Read it
    // when the engine is idle or stopped (the engine thread writes it).
    [[nodiscard]] FaultCounts faults_injected(std::size_t i) const;
    // What device i's transmit-side faults did with the frames its port
    // sent (readable from any thread), or nullptr when the plan has none
    // for it or the device has no sink (nothing leaves for a wire).
    [[nodiscard]] const TxFaultCounters* tx_fault_counters(std::size_t i) const noexcept;
    // Failed calls of each verb on device i, by device::Verb (all 0 without verb-fail items).
    [[nodiscard]] std::vector<std::uint64_t> verb_fails(std::size_t i) const;
    // Device i's destroyed queues and sent frames (sim/device_stats.hpp), or
    // nullptr without the `stats` key.
    [[nodiscard]] const DeviceStats* device_stats(std::size_t i) const noexcept {
        return i < slots_.size() ? slots_[i].stats.get() : nullptr;
    }
    // What device i's port sends to, besides the DeviceStats (empty for the
    // explicit-sources create()).
    [[nodiscard]] const std::vector<std::shared_ptr<net::FrameSink>>& sinks(std::size_t i) const noexcept {
        return slots_[i].sinks;
    }
    // Logs what wires and links lost (frames a peer refused, a full link
    // queue) as warnings, or their counts at info level. Call it while the
    // logger lives (the drop-in library does at exit).
    void report_losses() const;
    // At the end of a run, with the engines still running: offers the ports'
    // transmit backlogs to their wires until they are empty or `limit` has
    // passed, as a NIC sends its queue before it goes down (a UC or UD send
    // completed once its frame was queued). Returns the frames left: they
    // count as not sent (TxBacklogCounters::waiting).
    std::size_t drain_wires(std::chrono::milliseconds limit);

    // Device i's counters over time, sampled when the configuration has a
    // `report` (sim/timeline.hpp), else nullptr.
    [[nodiscard]] Timeline* timeline(std::size_t i) noexcept {
        return i < slots_.size() ? slots_[i].timeline.get() : nullptr;
    }

    // fork() (sim/README.md, "Fork"; the drop-in's pthread_atfork handlers).
    // prepare takes every device's port lock in device order (the only
    // order there is: no engine is then inside a burst, nor holds a lock it
    // takes under one), then the trace's and the log's; the parent releases
    // them. The child gives each device a successor engine (the thread engine's
    // thread died in the fork), keeps a source only when it is its own
    // (FrameSource::shared_across_fork), detaches and leaks every sink (wires,
    // links, captures: loopback only, no output), drops the trace file, and
    // releases the locks. No destructor of the parent's wires runs in it.
    void prepare_fork() noexcept;
    void parent_after_fork() noexcept;
    void child_after_fork() noexcept;
    // True in a forked child's copy: it writes no --stats nor --report.
    [[nodiscard]] bool forked_child() const noexcept { return forked_child_; }

    // Every engine idle: all sources exhausted, nothing held.
    [[nodiscard]] bool idle() const noexcept;
    bool wait_idle(std::chrono::milliseconds timeout);

private:
    using SinkLists = std::vector<std::vector<std::shared_ptr<net::FrameSink>>>; // per device
    // create()'s work but for starting the engines (the caller attaches
    // its sinks first, then start_engines()), on a validated configuration.
    static Result<std::unique_ptr<Simulator>> build(
        const Config& config, std::vector<std::unique_ptr<net::FrameSource>> sources);
    // Device `index`'s slot: its device, fault stages, engine and timeline.
    Result<DeviceSlot> make_slot(std::uint32_t index, const device::DeviceIdentity& identity,
                                 std::unique_ptr<net::FrameSource> source);
    // Each device's sinks, behind a FaultySink where the plan has transmit
    // faults, attached to its port and kept in its slot.
    Result<void> attach_sinks(SinkLists sinks);
    void start_engines();
    // A source that never has a frame: a device without one still loops its sends back.
    static std::unique_ptr<net::FrameSource> empty_source();
    // child_after_fork's work on one slot, under its port lock; what to
    // log once the logger is free (empty: nothing).
    std::string fork_slot(DeviceSlot& slot) noexcept;
    // A forked child's slot joins its family's bus: `bus` is its new source
    // and sink. An error's text, or empty.
    std::string join_family(DeviceSlot& slot, std::unique_ptr<net::ShmWire>& bus);

    Simulator() = default;
    Config config_;
    std::unique_ptr<Trace> trace_; // with --trace; outlives the slots
    std::vector<DeviceSlot> slots_;
    bool forked_child_ = false;
};

} // namespace rdmasim::sim
