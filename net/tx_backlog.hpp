// A lossless wire's transmit queue (net/README.md, "Lossless links"): the
// frames a wire could not take at once wait here, in order, as a NIC's
// transmit queue waits under Ethernet pause, until the wire takes them
// (flush). Bounded: above `high_bytes` the sink reports itself congested
// and the port's requesters stop taking WQEs; a frame that would pass
// `capacity_bytes` is dropped and counted (the only loss a backlog causes).
// Not thread-safe: a sink calls it under the port lock; the counters may be
// read from any thread.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

namespace rdmasim::net {

struct TxBacklogCounters {
    std::atomic<std::uint64_t> queued{0};     // frames that waited (the wire could not take them at once)
    std::atomic<std::uint64_t> overflow{0};   // frames dropped because the backlog was full
    std::atomic<std::uint64_t> pauses{0};     // times the backlog went from empty to non-empty
    std::atomic<std::uint64_t> paused_ns{0};  // time spent with frames waiting (completed pauses)
    std::atomic<std::uint64_t> max_frames{0}; // the deepest the backlog was
    std::atomic<std::uint64_t> max_bytes{0};
    std::atomic<std::uint64_t> waiting{0}; // frames waiting now; at the end of a run, never sent
};

class TxBacklog {
public:
    static constexpr std::size_t kDefaultHighBytes = 128u << 10;    // congested above this
    static constexpr std::size_t kDefaultCapacityBytes = 64u << 20; // dropped beyond this

    explicit TxBacklog(std::size_t high_bytes = kDefaultHighBytes,
                       std::size_t capacity_bytes = kDefaultCapacityBytes) noexcept
        : high_(high_bytes), capacity_(capacity_bytes) {}

    [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
    [[nodiscard]] std::size_t frames() const noexcept { return entries_.size(); }
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
    [[nodiscard]] bool congested() const noexcept { return bytes_ > high_; }
    [[nodiscard]] const TxBacklogCounters& counters() const noexcept { return counters_; }

    // Queues a copy of `frame`; false (counted in overflow) when it does not fit.
    bool push(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept;

    // Offers the waiting frames, oldest first, to `write` (bool(span, ts):
    // true when the wire took the frame) until it refuses one or none is
    // left. Returns the frames still waiting.
    template <class Write> std::size_t flush(Write&& write) noexcept {
        while (!empty()) {
            const Entry& e = entries_.front();
            if (!write(std::span<const std::uint8_t>(e.bytes.data(), e.bytes.size()), e.ts_ns)) break;
            pop();
        }
        return frames();
    }

    // As flush(), up to kBatch frames at a time: `write` (size_t(span of
    // frames)) returns how many of those it took, oldest first; fewer than
    // offered ends the flush.
    static constexpr std::size_t kBatch = 32;
    template <class WriteSome> std::size_t flush_batches(WriteSome&& write) noexcept {
        std::array<std::span<const std::uint8_t>, kBatch> views;
        while (!empty()) {
            const std::size_t n = std::min(kBatch, entries_.size());
            for (std::size_t i = 0; i < n; ++i)
                views[i] = {entries_[i].bytes.data(), entries_[i].bytes.size()};
            const std::size_t took =
                write(std::span<const std::span<const std::uint8_t>>(views.data(), n));
            for (std::size_t i = 0; i < took; ++i)
                pop();
            if (took < n) break;
        }
        return frames();
    }

private:
    struct Entry {
        std::vector<std::uint8_t> bytes; // keeps its capacity when the slot is reused
        std::uint64_t ts_ns = 0;
    };
    void pop() noexcept;
    static constexpr std::size_t kSpares = 1024; // buffers kept warm at most

    std::size_t high_, capacity_;
    std::deque<Entry> entries_; // waiting, oldest first
    std::vector<Entry> spare_;  // sent entries, their buffers kept for reuse
    std::size_t bytes_ = 0;
    std::chrono::steady_clock::time_point paused_since_{};
    TxBacklogCounters counters_;
};

} // namespace rdmasim::net
