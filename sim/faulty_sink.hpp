// Faults on the way out of a port (sim/README.md, "Fault injection"): a
// FrameSink that stands for all of a device's sinks (a wire, a link, a live
// interface, --tx-capture) and applies the plan's dir=tx and dir=both frame
// faults (sim/frame_faults.hpp) to what the port sends, once per frame,
// before the frame reaches any of them. The port's loopback to its own flows
// happens before its sinks, so it never sees these faults (a ConnectX loops
// back inside the NIC; only the wire copy can be lost).
//
// send() runs under the port lock and never blocks: a reordered or delayed
// frame is held and goes out on a later send (by time for delay, behind the
// frames it waits for for reorder) or at release_held(). Every frame is counted.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "net/frame_sink.hpp"
#include "net/result.hpp"
#include "sim/fault_plan.hpp"
#include "sim/frame_faults.hpp"

namespace rdmasim::sim {
class Trace;
}

namespace rdmasim::sim {

// What the transmit-side faults did with the frames a port sent; written
// under the port lock, readable from any thread. They balance:
// sent + duplicated = passed + fault_drops + fcs_drops + failed + held.
struct TxFaultCounters {
    std::atomic<std::uint64_t> sent{0};        // frames the port handed over
    std::atomic<std::uint64_t> duplicated{0};  // extra copies (duplicate)
    std::atomic<std::uint64_t> passed{0};      // handed on to the sinks, each once
    std::atomic<std::uint64_t> fault_drops{0}; // lost on the wire (drop)
    // corrupt-fcs: a sink carries no FCS, and the receiving MAC discards a
    // frame whose FCS is wrong, so the frame goes nowhere.
    std::atomic<std::uint64_t> fcs_drops{0};
    std::atomic<std::uint64_t> failed{0}; // a copy could not be made (out of memory)
    std::atomic<std::uint64_t> held{0};   // reordered or delayed, not yet passed
};

class FaultySink final : public net::FrameSink {
public:
    // Whether the plan has transmit-side frame faults for device `index`.
    [[nodiscard]] static bool wanted(const FaultPlan& plan, std::uint32_t index);
    // The plan's dir=tx and dir=both frame faults for device `index`, in
    // front of `inner` (handed each frame in order); an error for a filter
    // libpcap cannot compile. `trace`, when not null, hears of every fault.
    static Result<std::unique_ptr<FaultySink>> wrap(std::vector<std::shared_ptr<net::FrameSink>> inner,
                                                    const FaultPlan& plan, std::uint32_t index,
                                                    Trace* trace = nullptr);

    void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept override;
    // Hands every held frame on (the port stops or the sink is detached).
    // Under the port lock, as send().
    void release_held() noexcept;
    // Lossless links: the inner sinks' backlogs (net/frame_sink.hpp).
    std::size_t flush() noexcept override;
    [[nodiscard]] bool congested() const noexcept override;
    // The inner sinks' (frames the faults hold are not on the wire yet: not counted).
    [[nodiscard]] bool unread() const noexcept override;
    [[nodiscard]] const net::TxBacklogCounters* backlog_counters() const noexcept override;
    void abandon_after_fork() noexcept override {
        for (auto& sink : inner_)
            sink->abandon_after_fork();
    }

    [[nodiscard]] const TxFaultCounters& counters() const noexcept { return counters_; }
    // Faults injected so far, by kind: under the port lock, or once no
    // program sends any more.
    [[nodiscard]] const FaultCounts& injected() const noexcept { return faults_->injected(); }

private:
    FaultySink() = default;
    // Hands what the faults queued on, counting each frame.
    void drain() noexcept;

    std::vector<std::shared_ptr<net::FrameSink>> inner_;
    std::unique_ptr<FrameFaults> faults_;
    TxFaultCounters counters_;
};

} // namespace rdmasim::sim
