#include "datapath/delay_drop.hpp"

namespace rdmasim::datapath {

void DelayDrop::attach_queue(RxQueue& queue) {
    queues_.push_back(&queue);
    failed_.reserve(queues_.size());
}

void DelayDrop::detach_queue(RxQueue& queue, RxCounters& counters) noexcept {
    counters.count(queue.discard_held());
    std::erase(queues_, &queue);
    std::erase(failed_, &queue);
}

void DelayDrop::set_queue_state(RxQueue& queue, QueueState state, RxCounters& counters) noexcept {
    std::erase(failed_, &queue); // whoever sets the state now decides it
    switch (state) {
    case QueueState::reset:
        queue.set_ready(false);
        counters.count(queue.discard_held());
        queue.reset_ring();
        break;
    case QueueState::stopped:
        queue.set_ready(false);
        break;
    case QueueState::ready:
        queue.set_ready(true);
        break;
    case QueueState::error:
        queue.set_ready(false);
        counters.count(queue.discard_held());
        counters.count(queue.flush());
        break;
    }
}

RxQueue* DelayDrop::take_failed_queue() noexcept {
    if (failed_.empty()) return nullptr;
    RxQueue* q = failed_.front();
    failed_.erase(failed_.begin());
    return q;
}

void DelayDrop::fail_queue(RxQueue& queue, RxCounters& counters) noexcept {
    // Flush in error (datapath/README.md, "Per-frame order", step 14): what
    // the queue still holds or has posted ends now, as QueueState::error.
    counters.count(queue.discard_held());
    counters.count(queue.flush());
    if (std::find(failed_.begin(), failed_.end(), &queue) == failed_.end())
        failed_.push_back(&queue); // within the capacity attach_queue reserved
}

void DelayDrop::service(std::uint64_t now_ns, ExpireNow expire, RxCounters& counters) noexcept {
    std::uint64_t next = UINT64_MAX;
    for (RxQueue* q : queues_) {
        if (!q->has_held()) continue;
        counters.count(q->release_held(now_ns));
        check_failed(*q, counters);
        bool timed_out = false;
        // An injected timeout (expire_delay_drop) is the natural one with the wait already over.
        const bool expired = expire.all || q == expire.queue;
        counters.count(q->expire_held(now_ns, expired ? 0 : config_.timeout_ns, timed_out));
        // Hardware leaves delay-drop mode on a timeout; the driver re-arms it at once.
        if (timed_out && !config_.rearm) armed_ = false;
        if (q->has_held()) next = std::min(next, q->oldest_held_ns() + config_.timeout_ns);
    }
    next_deadline_ns_ = next;
}

std::uint64_t DelayDrop::held_frames() const noexcept {
    std::uint64_t n = 0;
    for (const RxQueue* q : queues_) n += q->held();
    return n;
}

const RxQueue* DelayDrop::find_queue(std::uint32_t qp_num) const noexcept {
    for (const RxQueue* q : queues_)
        if (q->qp_num() == qp_num) return q;
    return nullptr;
}

} // namespace rdmasim::datapath
