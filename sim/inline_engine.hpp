// The deterministic engine: see engine.hpp.
#pragma once


#include "sim/burst.hpp"
#include "sim/engine.hpp"

namespace rdmasim::sim {

class InlineEngine final : public Engine, private Pacing {
public:
    using Engine::Engine;

    void start() override;
    void stop() override {}
    void begin() noexcept override { started_.store(true); }
    bool wait_idle(std::chrono::milliseconds timeout) override;

    // One step: up to `burst` frames in, then delay-drop release and timeouts.
    void pump() noexcept;

    void on_poll(device::Device&) noexcept override { pump(); }
    void on_post(device::Device&) noexcept override;
    void on_receiver_ready(device::Device&) noexcept override;
    std::uint64_t clock_ns() const noexcept override { return now_ns_; } // under the port lock

private:
    // Virtual time: a frame arrives at its capture timestamp (never earlier
    // than the clock); an idle step advances the clock by idle_tick.
    std::uint32_t arrivals(std::span<const net::Frame> frames, std::uint64_t* out) noexcept override;
    std::uint64_t service_time(std::uint32_t frames) noexcept override;
    void burst_done(const BurstResult& result) noexcept override;
    std::uint32_t pull_limit() const noexcept override { return FrameBatch::kCapacity; }

    std::uint64_t now_ns_ = 0; // virtual: the latest capture timestamp seen, plus idle ticks
    FrameBatch pending_; // empty after every step: every frame is due at once
    std::atomic<bool> held_{false}; // frames wait for WQEs (delay drop) after the last step
};

} // namespace rdmasim::sim
