#include "tools/replay_stop.hpp"

#include <algorithm>

namespace rdmasim::tools {

namespace {

volatile std::sig_atomic_t g_caught = 0;

extern "C" void note_signal(int sig) {
    g_caught = sig;
}

} // namespace

std::string_view stop_reason_name(StopReason r) noexcept {
    switch (r) {
    case StopReason::count: return "count";
    case StopReason::duration: return "duration";
    case StopReason::signal: return "signal";
    case StopReason::none: break;
    }
    return "end";
}

bool StopSource::next(net::Frame& out) noexcept {
    return next_burst({&out, 1}) == 1;
}

std::uint32_t StopSource::next_burst(std::span<net::Frame> out) noexcept {
    if (reason_.load(std::memory_order_acquire) != StopReason::none) return 0;
    const std::uint64_t taken = taken_.load(std::memory_order_relaxed); // one writer: the engine
    if (limit_ != 0) out = out.first(std::min<std::uint64_t>(out.size(), limit_ - taken));
    const std::uint32_t n = inner_->next_burst(out);
    taken_.store(taken + n, std::memory_order_relaxed);
    if (limit_ != 0 && taken + n >= limit_) stop(StopReason::count);
    return n;
}

double StopSource::progress() const noexcept {
    if (const double p = inner_->progress(); p >= 0) return p;
    if (limit_ == 0) return -1;
    return static_cast<double>(taken_.load(std::memory_order_relaxed)) / static_cast<double>(limit_);
}

void StopSource::stop(StopReason why) noexcept {
    StopReason none = StopReason::none;
    reason_.compare_exchange_strong(none, why, std::memory_order_acq_rel);
}

StopSignals::StopSignals() {
    g_caught = 0;
    struct sigaction sa {};
    sa.sa_handler = note_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
}

StopSignals::~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
}

int StopSignals::caught() noexcept {
    return g_caught;
}

void ReplayStop::check() noexcept {
    if (source_ == nullptr || source_->reason() != StopReason::none) return;
    if (StopSignals::caught() != 0)
        source_->stop(StopReason::signal);
    else if (duration_ && std::chrono::steady_clock::now() - t0_ >= *duration_)
        source_->stop(StopReason::duration);
}

} // namespace rdmasim::tools
