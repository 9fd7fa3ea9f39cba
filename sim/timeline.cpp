#include "sim/timeline.hpp"

#include <algorithm>
#include <mutex>
#include <new>

#include "datapath/rx_queue.hpp"

namespace rdmasim::sim {

CountSnapshot CountSnapshot::of(const datapath::RxCounters& c) noexcept {
    CountSnapshot s;
    s.frames = c.frames.get();
    s.delivered = c.delivered.get();
    s.delay_drop_waits = c.delay_drop_waits.get();
    s.flushed_wqes = c.flushed_wqes.get();
    for (std::size_t i = 0; i < datapath::kDropKinds; ++i) s.drops[i] = c.drops[i].get();
    return s;
}

void Timeline::tick() noexcept {
    const std::uint64_t now = port_.now_ns();
    if (started_ && now < next_ns_) return;
    try {
        sample(now);
    } catch (const std::bad_alloc&) {
        // The sample is skipped; the next interval tries again.
    }
}

void Timeline::sample(std::uint64_t now_ns) {
    if (!started_) {
        started_ = true;
        t0_ns_ = now_ns;
    }
    if (data_.samples.size() >= kMaxSamples) halve();
    TimelineSample s;
    s.t_ns = now_ns >= t0_ns_ ? now_ns - t0_ns_ : 0;
    s.port = CountSnapshot::of(port_.counters());
    s.queue_frames.reserve(port_.queue_count());
    (void)port_.find_queue_if([&](const datapath::RxQueue& q) {
        const CountSnapshot c = CountSnapshot::of(q.counters());
        s.queue_frames.emplace_back(q.qp_num(), c.frames);
        data_.queues[q.qp_num()] = c;
        return false; // visit every queue
    });
    data_.samples.push_back(std::move(s));
    next_ns_ = now_ns + interval_ns_;
}

void Timeline::halve() {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < data_.samples.size(); i += 2)
        data_.samples[kept++] = std::move(data_.samples[i]);
    data_.samples.resize(kept);
    interval_ns_ *= 2;
}

TimelineData Timeline::finish() {
    std::lock_guard lock(port_.mutex());
    const std::uint64_t now = port_.now_ns();
    // The last sample is replaced when it is less than half an interval
    // old: a rate over a sliver of time says nothing.
    const std::uint64_t t = now >= t0_ns_ ? now - t0_ns_ : 0;
    if (data_.samples.size() > 1 && t - std::min(t, data_.samples.back().t_ns) < interval_ns_ / 2)
        data_.samples.pop_back();
    sample(now);
    return data_;
}

} // namespace rdmasim::sim
