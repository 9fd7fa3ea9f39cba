#include "sim/inline_engine.hpp"

#include <algorithm>
#include <mutex>

#include "device/device.hpp"

namespace rdmasim::sim {

void InlineEngine::start() {
    // No real time here: a delay starts at once.
    if (config_.start == StartTrigger::now || config_.start == StartTrigger::delay)
        started_.store(true);
}

void InlineEngine::on_receiver_ready(device::Device&) noexcept {
    if (config_.start == StartTrigger::first_flow) started_.store(true);
}

void InlineEngine::on_post(device::Device& dev) noexcept {
    // Held frames may go to the WQEs just posted; no new frames enter. With
    // nothing held there is nothing to do (the common case: no lock taken).
    if (!held_.load(std::memory_order_acquire)) return;
    std::lock_guard lock(dev.port.mutex());
    device::service(dev, now_ns_);
    held_.store(dev.port.held_frames() != 0, std::memory_order_release);
}

std::uint32_t InlineEngine::arrivals(std::span<const net::Frame> frames, std::uint64_t* out) noexcept {
    std::uint64_t now = now_ns_; // every frame is due: at its timestamp, never before the last
    for (const net::Frame& f : frames) *out++ = now = std::max(now, f.ts_ns);
    now_ns_ = now;
    return static_cast<std::uint32_t>(frames.size());
}

std::uint64_t InlineEngine::service_time(std::uint32_t frames) noexcept {
    if (frames == 0) now_ns_ += config_.idle_tick_ns; // time passes while the program waits
    return now_ns_;
}

void InlineEngine::burst_done(const BurstResult& r) noexcept {
    if (timeline_) timeline_->tick();
    held_.store(r.held, std::memory_order_release);
    idle_.store(!r.pending && r.exhausted && !r.held && !r.tx_ready, std::memory_order_release);
}

void InlineEngine::pump() noexcept {
    if (!started_.load(std::memory_order_acquire)) return;
    count_step();
    (void)run_burst(dev_, *source_, pending_, config_.burst, *this, faults_);
}

bool InlineEngine::wait_idle(std::chrono::milliseconds) {
    // Virtual time: pumping is the only way forward, so a bounded number of steps.
    for (int i = 0; i < 1'000'000 && !idle(); ++i) pump();
    return idle();
}

} // namespace rdmasim::sim
