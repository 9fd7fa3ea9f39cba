// Faults on the way into a port (sim/README.md, "Fault injection"): a
// FrameSource that wraps a device's source and applies the plan's frame
// faults (sim/frame_faults.hpp) to what it hands over, and fires the device
// faults counted in its frames (wq-fatal, cq-overrun, out-of-buffer,
// cqe-error, delay-drop-timeout, port-down, device-fatal). Only built when
// the plan has such faults for the device: without a plan nothing is wrapped
// and nothing costs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "device/objects.hpp"
#include "net/frame_source.hpp"
#include "net/result.hpp"
#include "sim/fault_plan.hpp"
#include "sim/frame_faults.hpp"

namespace rdmasim::sim {
class Trace;
}

namespace rdmasim::sim {

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
    [[nodiscard]] const FaultCounts& injected() const noexcept { return faults_->injected(); }

private:
    explicit FaultySource(std::unique_ptr<net::FrameSource> inner) : inner_(std::move(inner)) {}
    // Fires a device fault on the frame being offered.
    FrameFaults::Effect fire(const FaultSpec& spec);
    // A dead device or a port down: the frame never arrives.
    bool gone();

    std::unique_ptr<net::FrameSource> inner_;
    std::unique_ptr<FrameFaults> faults_;
    device::Device* dev_ = nullptr;
    std::uint32_t down_left_ = 0; // port-down: frames still to miss
    bool dead_ = false;           // device-fatal fired: every frame is lost
};

} // namespace rdmasim::sim
