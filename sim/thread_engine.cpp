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

#include <poll.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "sim/logging.hpp"

namespace rdmasim::sim {

using Clock = std::chrono::steady_clock;

namespace {

// Busy-waits until `t`: for the last stretch before a paced frame is due,
// shorter than a timer's wake-up latency.
void spin_until(Clock::time_point t) noexcept {
    while (Clock::now() < t) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
    }
}

std::uint64_t to_ns(Clock::duration d) noexcept {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

} // namespace

ThreadEngine::ThreadEngine(device::Device& dev, std::unique_ptr<net::FrameSource> source,
                           const Config& config)
    : Engine(dev, std::move(source), config), work_(io_.get_executor()), timer_(io_),
      t0_(Clock::now()) {}

ThreadEngine::~ThreadEngine() { stop(); }

std::uint64_t ThreadEngine::now_ns() const noexcept { return to_ns(Clock::now() - t0_); }

// A poll's burst runs at the engine's clock, unpaced: every frame is due now.
class ThreadEngine::PollPacing final : public Pacing {
public:
    explicit PollPacing(ThreadEngine& engine) noexcept : engine_(engine), now_(engine.now_ns()) {}
    std::uint32_t arrivals(std::span<const net::Frame> frames, std::uint64_t* out) noexcept override {
        std::fill_n(out, frames.size(), now_);
        return static_cast<std::uint32_t>(frames.size());
    }
    std::uint64_t service_time(std::uint32_t) noexcept override { return engine_.now_ns(); }
    void burst_done(const BurstResult&) noexcept override {
        if (engine_.timeline_) engine_.timeline_->tick();
    }
    std::uint32_t pull_limit() const noexcept override { return FrameBatch::kCapacity; }

private:
    ThreadEngine& engine_;
    std::uint64_t now_;
};

void ThreadEngine::start() {
    if (thread_.joinable()) return;
    // Polls move frames only from a live source (a wire, a link, an
    // interface), unpaced: a capture replay stays the engine's alone.
    poll_progress_ = config_.progress != Progress::thread && source_->wait_fd() >= 0 && config_.speed <= 0;
    // Before the thread: its bursts read it under the port lock.
    dev_.port.roce().set_live_wire(source_->wait_fd() >= 0 && config_.speed <= 0);
    if (const int fd = source_->wait_fd(); fd >= 0 && !source_fd_) {
        boost::system::error_code ec;
        source_fd_.emplace(io_);
        source_fd_->assign(fd, ec);
        if (ec) {
            log().warn("{}: cannot wait on its descriptor {} ({}): polling it every {} us",
                       describe_source(), fd, ec.message(), kPollInterval.count());
            source_fd_.reset();
        } else {
            (void)source_fd_->release(); // in the reactor only while waited on (wait_for_source)
        }
    }
    thread_ = std::thread([this] {
        place_thread();
        io_.run();
    });
    if (started_.load()) { // a successor after fork: its predecessor had begun
        post_step();
    } else if (config_.start == StartTrigger::now) {
        started_.store(true);
        post_step();
    } else if (config_.start == StartTrigger::delay) {
        boost::asio::post(io_, [this] {
            started_.store(true);
            schedule(Clock::now() + std::chrono::nanoseconds(config_.start_delay_ns));
        });
    }
}

std::unique_ptr<Engine> ThreadEngine::successor_after_fork() {
    // The source moves over; the placeholder left here is never pulled.
    auto next = std::make_unique<ThreadEngine>(dev_, nullptr, config_);
    next->inherit(*this);
    // The same clock: the port's timers and deadlines are on it.
    next->t0_ = t0_;
    next->replay_t0_ = replay_t0_;
    next->capture_t0_ns_ = capture_t0_ns_;
    next->have_t0_ = have_t0_;
    return next;
}

void ThreadEngine::place_thread() noexcept {
    // Named for top, perf and gdb (15 characters at most: rdmasim-eng15).
    char name[16];
    std::snprintf(name, sizeof name, "rdmasim-eng%u", static_cast<unsigned>(device_index_));
    (void)pthread_setname_np(pthread_self(), name);
    if (device_index_ >= config_.engine_cpus.size()) return;
    // Config::validate checked the CPU against the process's own set; a set
    // changed since (taskset, a cgroup) leaves the thread where it was.
    const int cpu = config_.engine_cpus[device_index_];
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (const int err = pthread_setaffinity_np(pthread_self(), sizeof set, &set); err != 0)
        log().warn("rdmasim{}: the engine thread cannot run on CPU {} only ({}): left unpinned",
                   device_index_, cpu, std::strerror(err));
}

void ThreadEngine::stop() {
    if (thread_.joinable()) {
        work_.reset();
        io_.stop(); // the handler running finishes; the others are dropped with io_
        thread_.join();
    }
    // Nothing runs on io_ any more: hand the descriptor back to the source
    // that owns it (release() deregisters it and never closes it).
    if (source_fd_) {
        if (source_fd_->is_open()) (void)source_fd_->release();
        source_fd_.reset();
    }
}

void ThreadEngine::post_step() noexcept {
    // An exchange, never a plain load first: the poster's WQE store and this
    // read must not pass each other (a load may, on x86), or the engine,
    // clearing the flag and then finding the ring empty, and the poster,
    // seeing the flag still set, would both go idle over a posted WQE.
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

void ThreadEngine::on_receiver_ready(device::Device&) noexcept {
    if (config_.start == StartTrigger::first_flow && !started_.exchange(true)) post_step();
}

void ThreadEngine::on_poll(device::Device& dev) noexcept {
    if (!poll_progress_ || !started_.load(std::memory_order_relaxed)) return;
    last_poll_ns_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
    std::unique_lock lock(dev.port.mutex(), std::try_to_lock);
    if (lock.owns_lock()) poll_burst(dev); // else the engine or another poll is at it now
}

void ThreadEngine::on_arm(device::Device& dev) noexcept {
    on_poll(dev);
    if (!poll_progress_) return;
    last_poll_ns_.store(INT64_MIN / 2, std::memory_order_relaxed); // no poll to wait for
    post_step();
}

void ThreadEngine::poll_burst(device::Device& dev) noexcept {
    count_step();
    PollPacing pacing(*this);
    const BurstResult r = run_burst_locked(dev, *source_, poll_pending_, config_.burst, pacing, faults_);
    // The engine's timer must not fire later than what this burst armed.
    const std::uint64_t wake = wake_at_ns_.load(std::memory_order_relaxed);
    const auto retry = static_cast<std::uint64_t>(std::chrono::nanoseconds(kRoomRetry).count());
    if (r.next_deadline_ns < wake || (r.tx_waiting && wake > now_ns() + retry)) post_step();
}

Clock::time_point ThreadEngine::next_look() noexcept {
    if (!poll_progress_) return Clock::time_point::max();
    const auto now = Clock::now();
    if (config_.progress == Progress::inline_) return now + kInlineLook;
    const Clock::time_point quiet_at =
        Clock::time_point(Clock::duration(last_poll_ns_.load(std::memory_order_relaxed))) + kPollQuiet;
    if (quiet_at <= now) { // polls stopped: sleep on the descriptor
        look_after_ = kPollQuiet;
        return Clock::time_point::max();
    }
    return quiet_at + (look_after_ - kPollQuiet);
}

void ThreadEngine::note_look(const BurstResult& first) noexcept {
    if (config_.progress != Progress::auto_) return;
    if (first.frames > 0 || first.tx_waiting) // the polls left it work: look often
        look_after_ = kPollQuiet;
    else
        look_after_ = std::min<Clock::duration>(look_after_ * 2, kLookMax);
}

void ThreadEngine::schedule(Clock::time_point when) {
    wake_at_ns_.store(to_ns(when - t0_), std::memory_order_relaxed);
    timer_.expires_at(when);
    timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) post_step();
    });
}

void ThreadEngine::wait_for_source() {
    if (source_wait_armed_) return;
    // The descriptor joins the reactor for this wait only: registered, a
    // socket's every datagram is an edge that wakes the reactor's
    // epoll_wait, waited on or not (ib_read_bw's client over ptp://:
    // 37,000-80,000 wake-ups a second while its polls took the frames).
    auto give_up =
        [this](const boost::system::error_code& ec) { // e.g. a descriptor epoll cannot watch
            log().warn("{}: waiting on its descriptor failed ({}): polling it every {} us",
                       describe_source(), ec.message(), kPollInterval.count());
            source_fd_.reset();
            post_step();
        };
    boost::system::error_code ec;
    source_fd_->assign(source_->wait_fd(), ec);
    if (ec) return give_up(ec);
    source_wait_armed_ = true;
    source_fd_->async_wait(
        boost::asio::posix::stream_descriptor::wait_read,
        [this, give_up](const boost::system::error_code& ec) {
            source_wait_armed_ = false;
            if (ec == boost::asio::error::operation_aborted) return;
            (void)source_fd_->release(); // out of the reactor until the next wait
            if (ec) return give_up(ec);
            post_step();
        });
    // Asio's epoll reactor is edge-triggered and starts a wait without a
    // speculative look: a frame (or a doorbell byte) that came after the
    // step's last read but before this wait was queued spent its edge on
    // no one, and the wait would sleep until the next frame or a timer (an
    // ACK timeout: 67 ms of a stalled RC). Look once now.
    pollfd p{source_fd_->native_handle(), POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) post_step();
}

std::uint32_t ThreadEngine::arrivals(std::span<const net::Frame> frames, std::uint64_t* out) noexcept {
    if (config_.speed <= 0) { // unpaced: the whole batch enters at the burst's start
        std::fill_n(out, frames.size(), to_ns(burst_start_ - t0_));
        return static_cast<std::uint32_t>(frames.size());
    }
    std::uint32_t n = 0;
    for (; n < frames.size(); ++n)
        if ((out[n] = paced_arrival(frames[n])) == kNotDue) break;
    return n;
}

std::uint64_t ThreadEngine::paced_arrival(const net::Frame& frame) noexcept {
    // An absolute schedule from the first frame: each frame's due time
    // comes from its own timestamp, so waking late never accumulates.
    const auto now = Clock::now();
    if (!have_t0_) {
        have_t0_ = true;
        capture_t0_ns_ = frame.ts_ns;
        replay_t0_ = now;
    }
    const auto offset = frame.ts_ns > capture_t0_ns_ ? frame.ts_ns - capture_t0_ns_ : 0;
    const auto due_in = std::chrono::nanoseconds(
        static_cast<std::int64_t>(static_cast<double>(offset) / config_.speed));
    if (replay_t0_ + due_in > now) {
        next_due_ = replay_t0_ + due_in;
        return kNotDue;
    }
    pacing_stats_.record(to_ns(due_in), to_ns(now - replay_t0_));
    return to_ns(now - t0_);
}

std::uint64_t ThreadEngine::service_time(std::uint32_t) noexcept { return now_ns(); }

void ThreadEngine::burst_done(const BurstResult& r) noexcept {
    if (timeline_) timeline_->tick();
    // r.exhausted, never a second read: a live source may end in between,
    // and step() must decide on the answer idle_ got (or it neither waits
    // nor ever goes idle).
    const bool idle = !r.pending && r.exhausted && !r.held && !r.tx_ready;
    if (idle != idle_.load()) {
        std::lock_guard l(idle_mu_);
        idle_.store(idle, std::memory_order_release);
    }
}

void ThreadEngine::step() {
    step_queued_.store(false);
    if (!started_.load()) return;
    // Full bursts, and paced frames due within kSpinAhead, run back to back,
    // up to kBurstsPerStep, before the io_context gets its turn: each turn
    // costs its reactor an epoll_wait (a system call: a microsecond here, as
    // long as a burst of 32 frames; taken between a spin and its frame, it
    // made every paced frame that much late).
    BurstResult r;
    bool due_soon = false; // r.pending and its frame due within kSpinAhead
    for (std::uint32_t i = 0;; ++i) {
        count_step();
        next_due_ = Clock::time_point::max();
        if (config_.speed <= 0) burst_start_ = Clock::now();
        r = run_burst(dev_, *source_, pending_, config_.burst, *this, faults_);
        idle_cv_.notify_all();
        if (i == 0 && poll_progress_) note_look(r);
        due_soon = r.pending && next_due_ - Clock::now() <= kSpinAhead;
        if (i + 1 == kBurstsPerStep) break;
        if (r.frames == config_.burst) continue;
        if (!due_soon) break;
        spin_until(next_due_); // no lock held
    }

    // More to do now or soon: yield to the other handlers, then continue. A
    // frame due soon is spun for in the next step, so that the reactor's
    // turn falls in the wait, not between the wait and the frame.
    if (r.frames == config_.burst || due_soon) {
        post_step();
        return;
    }
    Clock::time_point when = r.pending ? next_due_ - kSpinAhead : Clock::time_point::max();
    if (r.next_deadline_ns != UINT64_MAX) // a delay-drop timeout or an ARP retry
        when = std::min(when, t0_ + std::chrono::nanoseconds(r.next_deadline_ns));
    if (r.tx_waiting) // frames wait for room on the wire
        when = std::min(when, Clock::now() + kRoomRetry);
    if (r.tx_ready) { // requesters wait for the next burst only
        const auto look = next_look();
        if (look == Clock::time_point::max()) { // nobody polls: the engine sends
            post_step();
            return;
        }
        when = std::min(when, look); // the program's polls send meanwhile
    }
    if (!r.pending && !r.exhausted) { // a live source with nothing now
        if (const auto look = next_look(); look != Clock::time_point::max()) {
            when = std::min(when, look); // the program's polls move its frames meanwhile
        } else if (!source_fd_) {
            when = std::min(when, Clock::now() + kPollInterval);
        } else if (source_->prepare_wait()) {
            wait_for_source();
        } else { // a frame came as the source armed its doorbell
            post_step();
            return;
        }
    }
    if (when != Clock::time_point::max()) schedule(when);
    else wake_at_ns_.store(UINT64_MAX, std::memory_order_relaxed);
}

bool ThreadEngine::wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(idle_mu_);
    return idle_cv_.wait_for(lock, timeout, [this] { return idle(); });
}

} // namespace rdmasim::sim
