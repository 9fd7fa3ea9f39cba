// GCC (12+) cannot instrument std::atomic_thread_fence under ThreadSanitizer
// and warns (-Wtsan, an error here) where Boost.Asio's std_fenced_block uses
// it. Asio hands handlers between threads through its scheduler's mutex,
// which TSan does see, so the fences carry no ordering TSan needs to model.
// Before the includes: the warning is located in <atomic>.
#if defined(__SANITIZE_THREAD__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wtsan"
#endif

#include "sim/thread_engine.hpp"

#include <boost/asio/post.hpp>

#include <mutex>

namespace rdmasim::sim {

using Clock = std::chrono::steady_clock;

ThreadEngine::ThreadEngine(device::Device& dev, std::unique_ptr<net::FrameSource> source,
                           const Config& config)
    : Engine(dev, std::move(source), config), work_(io_.get_executor()), timer_(io_),
      t0_(Clock::now()) {}

ThreadEngine::~ThreadEngine() { stop(); }

std::uint64_t ThreadEngine::now_ns() const noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0_).count());
}

void ThreadEngine::start() {
    if (thread_.joinable()) return;
    thread_ = std::thread([this] { io_.run(); });
    if (config_.start == StartTrigger::now) {
        started_.store(true);
        post_step();
    } else if (config_.start == StartTrigger::delay) {
        boost::asio::post(io_, [this] {
            started_.store(true);
            schedule(Clock::now() + std::chrono::nanoseconds(config_.start_delay_ns));
        });
    }
}

void ThreadEngine::stop() {
    if (!thread_.joinable()) return;
    work_.reset();
    io_.stop();
    thread_.join();
}

void ThreadEngine::post_step() noexcept {
    if (step_queued_.exchange(true)) return;
    try {
        boost::asio::post(io_, [this] { step(); });
    } catch (...) {
        step_queued_.store(false);
    }
}

void ThreadEngine::on_post(device::Device&) noexcept { post_step(); }

void ThreadEngine::begin() noexcept {
    if (!started_.exchange(true)) post_step();
}

void ThreadEngine::on_flow_attached(device::Device&) noexcept {
    if (config_.start == StartTrigger::first_flow && !started_.exchange(true)) post_step();
}

void ThreadEngine::schedule(Clock::time_point when) {
    timer_.expires_at(when);
    timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) post_step();
    });
}

std::optional<std::uint64_t> ThreadEngine::arrival(const net::Frame& frame) noexcept {
    if (config_.speed > 0) {
        if (!have_t0_) {
            have_t0_ = true;
            capture_t0_ns_ = frame.ts_ns;
            replay_t0_ = Clock::now();
        }
        const auto offset = frame.ts_ns > capture_t0_ns_ ? frame.ts_ns - capture_t0_ns_ : 0;
        const auto due = replay_t0_ + std::chrono::nanoseconds(static_cast<std::int64_t>(
                                          static_cast<double>(offset) / config_.speed));
        if (due > Clock::now()) {
            next_due_ = due;
            return std::nullopt;
        }
    }
    return now_ns();
}

std::uint64_t ThreadEngine::service_time(std::uint32_t) noexcept { return now_ns(); }

void ThreadEngine::burst_done(const BurstResult& r) noexcept {
    const bool idle = !r.pending && source_->exhausted() && !r.held;
    if (idle != idle_.load()) {
        std::lock_guard l(idle_mu_);
        idle_.store(idle, std::memory_order_release);
    }
}

void ThreadEngine::step() {
    step_queued_.store(false);
    if (!started_.load()) return;
    next_due_ = Clock::time_point::max();
    const BurstResult r = run_burst(dev_, *source_, pending_, config_.burst, *this);
    idle_cv_.notify_all();

    if (r.frames == config_.burst) {
        post_step(); // more to do: yield to other handlers, then continue
        return;
    }
    Clock::time_point when = r.pending ? next_due_ : Clock::time_point::max();
    if (r.held && r.next_deadline_ns != UINT64_MAX)
        when = std::min(when, t0_ + std::chrono::nanoseconds(r.next_deadline_ns));
    if (!r.pending && !source_->exhausted()) // a live source with nothing now
        when = std::min(when, Clock::now() + std::chrono::microseconds(100));
    if (when != Clock::time_point::max()) schedule(when);
}

bool ThreadEngine::wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(idle_mu_);
    return idle_cv_.wait_for(lock, timeout, [this] { return idle(); });
}

} // namespace rdmasim::sim
