// The port's delay-drop service (datapath/README.md, "The port" and its
// delay-drop service): the receive queues it services, their held frames
// (release, expiry, disarm or re-arm), the record of queues that stopped on
// an error, and the next deadline. Counts into the port's RxCounters, which
// each call is handed.
//
// The device layer attaches and detaches queues as verbs create and destroy
// WQs and QPs, and sets their state; the service never owns a queue.
// Locking: the port's mutex.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "datapath/counters.hpp"
#include "datapath/rx_queue.hpp"

namespace rdmasim::datapath {

// What a queue's verbs state means to the datapath (device/README.md, "Work
// queues" and "Raw-packet QPs" map verbs states onto these).
enum class QueueState : std::uint8_t {
    reset,   // stopped; held frames discarded; posted WQEs forgotten
    stopped, // stopped; posted WQEs kept (a QP in INIT)
    ready,   // receiving; posted WQEs kept
    error,   // stopped; held frames discarded; posted WQEs flushed (IBV_WC_WR_FLUSH_ERR)
};

struct DelayDropConfig {
    std::uint64_t timeout_ns = 100'000'000;
    bool rearm = true; // the driver re-arms delay drop after a timeout
};

// Whose delay-drop timer a service finds expired now, besides those that
// reached the timeout (an injected fault: Port::expire_delay_drop).
struct ExpireNow {
    const RxQueue* queue = nullptr; // this queue's
    bool all = false;               // every queue's
};

class DelayDrop {
public:
    void configure(const DelayDropConfig& config) noexcept { config_ = config; }

    // --- control side (set-up paths: may allocate) ---
    // Also reserves the queue's place in the failed-queue record, so that
    // recording a failure never allocates.
    void attach_queue(RxQueue& queue);
    // The queue stops being serviced; its held frames are discarded.
    void detach_queue(RxQueue& queue, RxCounters& counters) noexcept;
    // Also ends a failure the queue latched and drops it from the record.
    void set_queue_state(RxQueue& queue, QueueState state, RxCounters& counters) noexcept;
    [[nodiscard]] std::size_t queue_count() const noexcept { return queues_.size(); }
    // Whether the queues' completions become visible together at the end
    // of a burst (CqRing::set_batching).
    void batch_completions(bool on) noexcept {
        for (RxQueue* q : queues_) q->batch_completions(on);
    }
    // A queue that stopped itself on a protection error, already flushed and
    // stopped, whose owner has not been told yet; oldest first. nullptr: none.
    [[nodiscard]] RxQueue* take_failed_queue() noexcept;

    // --- frame side ---
    [[nodiscard]] bool armed() const noexcept { return armed_; }
    // A frame started to wait at `now_ns`: the deadline comes no later than its timeout.
    void note_held(std::uint64_t now_ns) noexcept {
        next_deadline_ns_ = std::min(next_deadline_ns_, now_ns + config_.timeout_ns);
    }
    // After `queue` took frames: when it stopped on an error, its held frames
    // are discarded, its posted WQEs flushed, and it is recorded. Inline: the
    // test is on the per-frame path, the rest (fail_queue) is not.
    void check_failed(RxQueue& queue, RxCounters& counters) noexcept {
        if (queue.take_failure()) [[unlikely]]
            fail_queue(queue, counters);
    }
    // Release, expire, disarm or re-arm, next deadline (the README's steps 1-4).
    void service(std::uint64_t now_ns, ExpireNow expire, RxCounters& counters) noexcept;

    // The earliest held frame's timeout (cached: never later than the truth), or UINT64_MAX.
    [[nodiscard]] std::uint64_t next_deadline_ns() const noexcept { return next_deadline_ns_; }
    [[nodiscard]] std::uint64_t held_frames() const noexcept;
    // The attached queue completing as `qp_num`, or nullptr.
    [[nodiscard]] const RxQueue* find_queue(std::uint32_t qp_num) const noexcept;
    // The first attached queue for which pred(queue) holds, or nullptr.
    template <class Pred> [[nodiscard]] const RxQueue* find_queue_if(Pred pred) const {
        for (const RxQueue* q : queues_)
            if (pred(*q)) return q;
        return nullptr;
    }
    template <class Pred> [[nodiscard]] RxQueue* find_queue_if(Pred pred) {
        for (RxQueue* q : queues_)
            if (pred(*q)) return q;
        return nullptr;
    }

private:
    void fail_queue(RxQueue& queue, RxCounters& counters) noexcept;

    DelayDropConfig config_;
    std::vector<RxQueue*> queues_; // serviced for delay drop
    std::vector<RxQueue*> failed_; // capacity: one per attached queue
    std::uint64_t next_deadline_ns_ = UINT64_MAX;
    bool armed_ = true;
};

} // namespace rdmasim::datapath
