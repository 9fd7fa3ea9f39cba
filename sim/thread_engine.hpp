// The real-time engine: see engine.hpp, and sim/README.md ("Engines",
// "Waits and pacing").
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <optional>
#include <thread>

#include "sim/burst.hpp"
#include "sim/engine.hpp"

namespace rdmasim::sim {

class ThreadEngine final : public Engine, private Pacing {
public:
    using Clock = std::chrono::steady_clock;
    ThreadEngine(device::Device& dev, std::unique_ptr<net::FrameSource> source, const Config& config);
    ~ThreadEngine() override;

    void start() override;
    void stop() override;
    void begin() noexcept override;
    bool wait_idle(std::chrono::milliseconds timeout) override;
    // A new ThreadEngine: this one's thread did not survive the fork, and
    // its io_context may be locked or waited on by that thread for ever.
    std::unique_ptr<Engine> successor_after_fork() override;

    // A program polls a CQ it found empty: with progress auto or inline it
    // moves the wire's frames itself when it can take the port lock
    // (sim/README.md, "Progress").
    void on_poll(device::Device& dev) noexcept override;
    // A program armed a CQ: a poll, then the engine sleeps on the source's
    // descriptor at once instead of after kPollQuiet (the program may sleep
    // in ibv_get_cq_event and poll no more).
    void on_arm(device::Device& dev) noexcept override;
    void on_post(device::Device&) noexcept override;
    void on_receiver_ready(device::Device&) noexcept override;
    std::uint64_t clock_ns() const noexcept override { return now_ns(); }

    // A paced frame due sooner than this is waited for by spinning, not by a
    // timer; a timer for a later one fires this much early (the wake-up
    // latency it covers).
    static constexpr std::chrono::microseconds kSpinAhead{50};
    // How often a live source without a wait_fd is polled.
    static constexpr std::chrono::microseconds kPollInterval{100};
    // How soon a wire's backlog is offered again while frames wait for room
    // and no descriptor says when (datapath/README.md, "Lossless links").
    static constexpr std::chrono::microseconds kRoomRetry{20};
    // progress=auto: the engine sleeps on the source's descriptor only after
    // no program polled for this long; while polls come, they move frames.
    static constexpr std::chrono::microseconds kPollQuiet{1000};
    // While polls come, a look that found nothing left for it (the polls
    // took every frame) doubles the time to the next, up to this; one that
    // found frames waiting brings it back to kPollQuiet. Each look preempts
    // a polling thread where CPUs are few: at one per millisecond, they
    // were the p99 of `ib_send_lat` over shm://.
    static constexpr std::chrono::microseconds kLookMax{16000};
    // progress=inline: how often the engine looks at the source itself, for
    // traffic that came while the program was not polling.
    static constexpr std::chrono::microseconds kInlineLook{1000};
    // Bursts one step runs back to back at most: full ones, and paced frames
    // due within kSpinAhead (ThreadEngine::step).
    static constexpr std::uint32_t kBurstsPerStep = 16;

private:
    // On the engine's thread, first: its name, and its CPU (engine_cpus).
    void place_thread() noexcept;
    void step();            // on the engine thread, as is all below but post_step
    void wait_for_source(); // arms one wait for the source's descriptor to be readable
    // When the source is live and nothing is pending: when to look at it
    // next (a program's polls may be moving its frames), or max() to sleep
    // on its descriptor.
    Clock::time_point next_look() noexcept;
    // After a step's first burst: backs the looks off or resets them (kLookMax).
    void note_look(const BurstResult& first) noexcept;
    // A poll's burst, under the port lock the poll took; then wakes the
    // engine if a timer or the wire's backlog needs it sooner.
    void poll_burst(device::Device& dev) noexcept;
    // Real time; with a speed set, a frame is due at its capture offset
    // divided by the speed, from the first frame on. Unpaced, every frame of
    // a burst arrives at the burst's start (burst_start_): a clock read per
    // frame cost a quarter of the engine thread (25 ns a read here).
    std::uint32_t arrivals(std::span<const net::Frame> frames, std::uint64_t* out) noexcept override;
    // One frame's time (paced), or kNotDue.
    static constexpr std::uint64_t kNotDue = UINT64_MAX;
    std::uint64_t paced_arrival(const net::Frame& frame) noexcept;
    std::uint64_t service_time(std::uint32_t frames) noexcept override;
    void burst_done(const BurstResult& result) noexcept override;
    // Paced: one frame at a time (each waits for its own due time).
    std::uint32_t pull_limit() const noexcept override {
        return config_.speed <= 0 ? FrameBatch::kCapacity : 1;
    }
    void schedule(std::chrono::steady_clock::time_point when);
    void post_step() noexcept;  // from any thread
    std::uint64_t now_ns() const noexcept;

    boost::asio::io_context io_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    boost::asio::steady_timer timer_;
    // The source's wait_fd, registered with io_ but owned by the source:
    // released (never closed) in stop(). Empty: the source has none, or it
    // could not be waited on (then the engine polls).
    std::optional<boost::asio::posix::stream_descriptor> source_fd_;
    bool source_wait_armed_ = false;            // engine thread only
    std::thread thread_;
    std::chrono::steady_clock::time_point t0_;  // engine start (real)
    std::chrono::steady_clock::time_point replay_t0_{};
    std::uint64_t capture_t0_ns_ = 0;           // first frame's timestamp
    bool have_t0_ = false;
    std::chrono::steady_clock::time_point burst_start_{}; // unpaced: the running burst's time
    FrameBatch pending_;                        // pulled but not yet due
    std::chrono::steady_clock::time_point next_due_{}; // when pending_ is due
    std::atomic<bool> step_queued_{false};
    // Progress in the program's polls (sim/README.md, "Progress").
    bool poll_progress_ = false;                 // set by start(): auto or inline, live, unpaced
    std::atomic<std::int64_t> last_poll_ns_{INT64_MIN / 2}; // steady clock, of the latest poll
    std::atomic<std::uint64_t> wake_at_ns_{UINT64_MAX};     // the engine's next timer, engine clock
    Clock::duration look_after_ =
        kPollQuiet; // engine thread: the next look's distance while polls come
    class PollPacing;                            // the poll's clock: now, unpaced
    FrameBatch poll_pending_;                    // empty between polls (unpaced)
    std::mutex idle_mu_;
    std::condition_variable idle_cv_;
};

} // namespace rdmasim::sim
