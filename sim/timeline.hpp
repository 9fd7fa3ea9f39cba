// Counters over time, for the HTML report (sim/README.md, "Reports"): a
// port's and each of its receive queues' counters, snapshotted at fixed
// intervals of the engine's clock (Port::now_ns: capture time for the inline
// engine, real time for the thread engine). The number of samples is
// bounded: when kMaxSamples are taken, every other one goes and the
// interval doubles, so a run of any length keeps at most kMaxSamples + 1.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "datapath/counters.hpp"
#include "datapath/port.hpp"

namespace rdmasim::sim {

// A plain copy of the RxCounters a report plots.
struct CountSnapshot {
    std::uint64_t frames = 0;
    std::uint64_t delivered = 0;
    std::uint64_t delay_drop_waits = 0; // frames held for a WQE (delay drop)
    std::uint64_t flushed_wqes = 0;     // completions with IBV_WC_WR_FLUSH_ERR
    std::array<std::uint64_t, datapath::kDropKinds> drops{};

    [[nodiscard]] static CountSnapshot of(const datapath::RxCounters& c) noexcept;
    [[nodiscard]] std::uint64_t drop(datapath::Drop d) const noexcept {
        return drops[static_cast<std::size_t>(d)];
    }
};

struct TimelineSample {
    std::uint64_t t_ns = 0; // since the first sample, on the engine's clock
    CountSnapshot port;
    // Frames that reached each queue attached at that time, by queue number.
    std::vector<std::pair<std::uint32_t, std::uint64_t>> queue_frames;
};

// What a Timeline holds, copied out for a report.
struct TimelineData {
    std::vector<TimelineSample> samples; // cumulative counts, oldest first
    // Each queue's latest counters (a queue destroyed keeps its last sample).
    std::map<std::uint32_t, CountSnapshot> queues;
};

class Timeline {
public:
    static constexpr std::size_t kMaxSamples = 256;
    static constexpr std::uint64_t kFirstIntervalNs = 10'000; // 10 us

    explicit Timeline(const datapath::Port& port) : port_(port) { data_.samples.reserve(kMaxSamples + 1); }

    // Takes a sample when the port's clock passed the next interval. Caller
    // holds the port lock (engines call it at the end of each burst). Costs
    // a comparison between samples; never throws (a sample that cannot be
    // stored is skipped).
    void tick() noexcept;
    // A last sample now, then a copy of everything. Takes the port lock:
    // call it holding no lock, from any thread.
    [[nodiscard]] TimelineData finish();

    [[nodiscard]] std::uint64_t interval_ns() const noexcept { return interval_ns_; }

private:
    void sample(std::uint64_t now_ns); // port lock held
    void halve();                      // keeps samples 0, 2, 4, ...; doubles the interval

    const datapath::Port& port_;
    TimelineData data_;
    bool started_ = false;
    std::uint64_t t0_ns_ = 0;
    std::uint64_t next_ns_ = 0;
    std::uint64_t interval_ns_ = kFirstIntervalNs;
};

} // namespace rdmasim::sim
