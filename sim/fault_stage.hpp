// Faults on the way into a port (sim/README.md, "Fault injection"): a stage
// of run_burst (sim/burst.hpp) between a device's source and its port. The
// burst pulls each frame from the plain source and offers it here; the stage
// applies the plan's frame faults (sim/frame_faults.hpp), fires the device
// faults counted in frames (wq-fatal, cq-overrun, out-of-buffer, cqe-error,
// delay-drop-timeout, port-down, device-fatal) on the device, and hands out
// what enters the port. Only built when the plan has such faults for the
// device: without a plan a burst has no stage and nothing costs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "device/objects.hpp"
#include "net/frame.hpp"
#include "net/result.hpp"
#include "sim/fault_plan.hpp"
#include "sim/frame_faults.hpp"

namespace rdmasim::sim {
class Trace;
}

namespace rdmasim::sim {

class FaultStage {
public:
    // Whether the plan has faults this stage injects on device `index`.
    [[nodiscard]] static bool wanted(const FaultPlan& plan, std::uint32_t index);
    // The plan's faults for device `index`'s receive side; an error for a
    // filter libpcap cannot compile. `dev` receives the device faults: null
    // only for plans without them (tests of frame faults alone); the stage
    // then runs under dev's port lock, as the bursts do. `trace`, when not
    // null, hears of every fault that fires.
    static Result<std::unique_ptr<FaultStage>> make(const FaultPlan& plan, std::uint32_t index,
                                                    device::Device* dev = nullptr, Trace* trace = nullptr);
    ~FaultStage();
    FaultStage(const FaultStage&) = delete;
    FaultStage& operator=(const FaultStage&) = delete;

    // One frame the source handed over, the device faults due on it fired
    // first. False: no fault touched it and nothing waits, so it enters as
    // it came (its bytes the source's). True: what it became, if anything,
    // waits for pop(). Throws bad_alloc (copies could not be made).
    bool offer(const net::Frame& f);
    // The next frame to enter the port, valid until the next pop(); false: none.
    bool pop(net::Frame& out) noexcept { return faults_.pop(out); }
    // The source had no frame. Once it has ended (`source_exhausted`),
    // frames held back become due (true: pop() has them) and a port that a
    // port-down took down comes back up: there is nothing more to miss.
    bool source_dry(bool source_exhausted);
    // Nothing waits in the stage: pop() is false until the next offer().
    [[nodiscard]] bool empty() const noexcept { return faults_.empty(); }
    // " with N frame fault(s)": what the description of the device's source gains.
    [[nodiscard]] std::string describe_suffix() const;
    // Faults injected so far, by kind (read on the engine's thread or after it stopped).
    [[nodiscard]] const FaultCounts& injected() const noexcept { return faults_.injected(); }

private:
    FaultStage(std::uint32_t index, device::Device* dev, Trace* trace);
    // Fires a device fault on the frame being offered.
    FrameFaults::Effect fire(const FaultSpec& spec);
    // A dead device or a port down: the frame never arrives.
    bool gone();

    device::Device* dev_;
    FrameFaults faults_;
    std::uint32_t down_left_ = 0; // port-down: frames still to miss
    bool dead_ = false;           // device-fatal fired: every frame is lost
};

} // namespace rdmasim::sim
