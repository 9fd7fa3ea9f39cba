// When `rdmasim replay` stops taking frames (tools/README.md, "Stopping a
// replay"): at the end of a capture, after `--count` frames, after
// `--duration`, or at SIGINT/SIGTERM. The source stops; frames already taken
// get their outcome, and the replay ends as at the end of a capture, with
// its report.
#pragma once

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

#include "net/frame_source.hpp"

namespace rdmasim::tools {

enum class StopReason : std::uint8_t { none, count, duration, signal };

[[nodiscard]] std::string_view stop_reason_name(StopReason r) noexcept; // "count", ...

// Hands over the frames of `inner` until `limit` frames (0: no limit) or
// stop(); then reports exhausted. Pulled by the engine thread; stop() and the
// readers may run on any thread.
class StopSource final : public net::FrameSource {
public:
    StopSource(std::unique_ptr<net::FrameSource> inner, std::uint64_t limit)
        : inner_(std::move(inner)), limit_(limit) {}
    bool next(net::Frame& out) noexcept override;
    // The inner source's burst, cut to what the limit leaves.
    std::uint32_t next_burst(std::span<net::Frame> out) noexcept override;
    [[nodiscard]] bool exhausted() const noexcept override {
        return reason_.load(std::memory_order_acquire) != StopReason::none || inner_->exhausted();
    }
    [[nodiscard]] std::string describe() const override { return inner_->describe(); }
    [[nodiscard]] const net::SourceCounters& counters() const noexcept override {
        return inner_->counters();
    }
    [[nodiscard]] std::string_view failure() const noexcept override { return inner_->failure(); }
    // The inner source's progress, else frames over the limit, else unknown.
    [[nodiscard]] double progress() const noexcept override;
    [[nodiscard]] int wait_fd() const noexcept override { return inner_->wait_fd(); }
    [[nodiscard]] bool shared_across_fork() const noexcept override {
        return inner_->shared_across_fork();
    }

    // Stops taking frames (the first reason sticks).
    void stop(StopReason why) noexcept;
    [[nodiscard]] StopReason reason() const noexcept {
        return reason_.load(std::memory_order_acquire);
    }

private:
    std::unique_ptr<net::FrameSource> inner_;
    std::uint64_t limit_;
    std::atomic<std::uint64_t> taken_{0};
    std::atomic<StopReason> reason_{StopReason::none};
};

// SIGINT and SIGTERM, while this lives, only note the signal (a second one
// kills as usual: SA_RESETHAND); the old handlers come back at destruction.
class StopSignals {
public:
    StopSignals();
    ~StopSignals();
    StopSignals(const StopSignals&) = delete;
    StopSignals& operator=(const StopSignals&) = delete;
    // The signal caught, or 0.
    [[nodiscard]] static int caught() noexcept;

private:
    struct sigaction old_int_{};
    struct sigaction old_term_{};
};

// The replay loop's stop check: a signal, or the duration run out since start().
// The signals are caught from construction on: build it before the source opens
// (a live socket is visible to others the moment it is bound).
class ReplayStop {
public:
    explicit ReplayStop(std::optional<std::chrono::nanoseconds> duration) : duration_(duration) {}
    // The source to stop; until it is set, a signal is only noted.
    void watch(StopSource* source) noexcept { source_ = source; }
    void start() noexcept { t0_ = std::chrono::steady_clock::now(); }
    // Stops the source when a signal came or the time is up; cheap enough for every poll.
    void check() noexcept;

private:
    StopSource* source_ = nullptr; // owned by the device's engine
    std::optional<std::chrono::nanoseconds> duration_;
    std::chrono::steady_clock::time_point t0_{};
    StopSignals signals_;
};

} // namespace rdmasim::tools
