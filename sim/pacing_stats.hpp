// How closely paced frames kept their schedule (sim/README.md, "Pacing"). Per
// frame, lateness = when it entered the port - when it was due, both on the
// engine's clock from the replay's start. A fixed log-scale histogram: exact
// below 32 ns, then 16 buckets per power of two, so a quantile is reported
// at most 1/16 above the true value and never below it. No allocation; one
// writer (the engine thread, once per paced frame); readers on any thread
// see each number whole (relaxed atomics), not all of them at one instant.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace rdmasim::sim {

class PacingStats {
public:
    static constexpr std::size_t kBuckets = 976; // up to 2^64 - 1 ns

    // A frame due at `due_ns` entered at `arrival_ns` (an early one counts as 0 late).
    void record(std::uint64_t due_ns, std::uint64_t arrival_ns) noexcept;

    [[nodiscard]] std::uint64_t frames() const noexcept { return get(frames_); }
    // The lateness that a fraction `q` (0..1] of the frames did not exceed,
    // rounded up to its bucket's upper bound and capped at max_ns(); 0 with no frames.
    [[nodiscard]] std::uint64_t quantile_ns(double q) const noexcept;
    [[nodiscard]] std::uint64_t max_ns() const noexcept { return get(max_ns_); }
    // The last recorded frame's due time: the span of the schedule so far.
    [[nodiscard]] std::uint64_t schedule_ns() const noexcept { return get(last_due_ns_); }
    // The last recorded frame's arrival: how long the replay has taken so far.
    [[nodiscard]] std::uint64_t elapsed_ns() const noexcept { return get(last_arrival_ns_); }

    // The bucket of a lateness, and the largest lateness a bucket holds.
    [[nodiscard]] static std::size_t bucket_of(std::uint64_t ns) noexcept;
    [[nodiscard]] static std::uint64_t bucket_upper(std::size_t bucket) noexcept;

private:
    using Cell = std::atomic<std::uint64_t>;
    static std::uint64_t get(const Cell& c) noexcept { return c.load(std::memory_order_relaxed); }
    static void set(Cell& c, std::uint64_t v) noexcept { c.store(v, std::memory_order_relaxed); }

    std::array<Cell, kBuckets> buckets_{};
    Cell frames_{0};
    Cell max_ns_{0};
    Cell last_due_ns_{0};
    Cell last_arrival_ns_{0};
};

} // namespace rdmasim::sim
