#include "sim/inline_engine.hpp"

#include <mutex>

#include "device/device.hpp"

namespace rdmasim::sim {

void InlineEngine::start() {
    // No real time here: a delay starts at once.
    if (config_.start == StartTrigger::now || config_.start == StartTrigger::delay)
        started_.store(true);
}

void InlineEngine::on_flow_attached(device::Device&) noexcept {
    if (config_.start == StartTrigger::first_flow) started_.store(true);
}

void InlineEngine::on_post(device::Device& dev) noexcept {
    // Held frames may go to the WQEs just posted; no new frames enter. With
    // nothing held there is nothing to do (the common case: no lock taken).
    if (!held_.load(std::memory_order_acquire)) return;
    std::lock_guard lock(dev.port.lock);
    device::port_service(dev, now_ns_);
    held_.store(device::port_held_frames(dev) != 0, std::memory_order_release);
}

void InlineEngine::pump() noexcept {
    std::lock_guard lock(dev_.port.lock);
    if (!started_.load(std::memory_order_relaxed)) return;
    std::uint32_t n = 0;
    net::Frame frame;
    while (n < config_.burst && source_->next(frame)) {
        if (frame.ts_ns > now_ns_) now_ns_ = frame.ts_ns;
        // A delay-drop timeout that falls due before this frame arrives fires
        // first (SPEC 4.3): the frame must not join, and die with, frames that
        // timed out before it came, and a device left disarmed by the timeout
        // must see it disarmed.
        if (device::port_next_deadline(dev_) <= now_ns_) device::port_service(dev_, now_ns_);
        device::port_ingress(dev_, frame, now_ns_);
        ++n;
    }
    if (n == 0) now_ns_ += config_.idle_tick_ns; // time passes while the program waits
    device::port_service(dev_, now_ns_);
    const bool held = device::port_held_frames(dev_) != 0;
    held_.store(held, std::memory_order_release);
    idle_.store(source_->exhausted() && !held, std::memory_order_release);
}

bool InlineEngine::wait_idle(std::chrono::milliseconds) {
    // Virtual time: pumping is the only way forward, so a bounded number of steps.
    for (int i = 0; i < 1'000'000 && !idle(); ++i) pump();
    return idle();
}

} // namespace rdmasim::sim
