#include "datapath/port.hpp"

#include <algorithm>

#include "datapath/offloads.hpp"

namespace rdmasim::datapath {

namespace {

// Match order (datapath/README.md, "The port"): NORMAL before MC_DEFAULT
// before ALL_DEFAULT; within a kind, lower priority value first; within a
// priority, DONT_TRAP entries first (mlx5 puts a DONT_TRAP rule of priority p
// at core priority 2p, a trapping one at 2p + 1: ib_prio_to_core_prio in the
// kernel's drivers/infiniband/hw/mlx5/fs.c); then creation order.
bool before(const SteeringEntry* a, const SteeringEntry* b) noexcept {
    if (a->kind != b->kind) return a->kind < b->kind;
    if (a->priority != b->priority) return a->priority < b->priority;
    if (a->dont_trap != b->dont_trap) return a->dont_trap;
    return a->seq < b->seq;
}

} // namespace

Port::~Port() { delete host_out_; }

void Port::attach_queue(RxQueue& queue) {
    queues_.push_back(&queue);
    failed_.reserve(queues_.size());
}

void Port::detach_queue(RxQueue& queue) noexcept {
    counters_.count(queue.discard_held());
    std::erase(queues_, &queue);
    std::erase(failed_, &queue);
}

void Port::set_queue_state(RxQueue& queue, QueueState state) noexcept {
    std::erase(failed_, &queue); // whoever sets the state now decides it
    switch (state) {
    case QueueState::reset:
        queue.set_ready(false);
        counters_.count(queue.discard_held());
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
        counters_.count(queue.discard_held());
        counters_.count(queue.flush());
        break;
    }
}

void Port::add_rule(SteeringEntry& entry) {
    entry.seq = next_seq_++;
    entry.compiled = compile(entry.rule);
    auto& list = entry.kind == RuleKind::sniffer ? sniffers_ : rules_;
    list.insert(std::upper_bound(list.begin(), list.end(), &entry, before), &entry);
}

void Port::remove_rule(SteeringEntry& entry) noexcept {
    std::erase(rules_, &entry);
    std::erase(sniffers_, &entry);
}

void Port::attach_sink(net::FrameSink& sink) { sinks_.push_back(&sink); }

void Port::detach_sink(net::FrameSink& sink) noexcept { std::erase(sinks_, &sink); }

RxQueue* Port::take_failed_queue() noexcept {
    if (failed_.empty()) return nullptr;
    RxQueue* q = failed_.front();
    failed_.erase(failed_.begin());
    return q;
}

void Port::check_failed(RxQueue& queue) noexcept {
    if (!queue.take_failure()) [[likely]]
        return;
    // Flush in error (datapath/README.md, "Per-frame order", step 14): what
    // the queue still holds or has posted ends now, as QueueState::error.
    counters_.count(queue.discard_held());
    counters_.count(queue.flush());
    if (std::find(failed_.begin(), failed_.end(), &queue) == failed_.end())
        failed_.push_back(&queue); // within the capacity attach_queue reserved
}

RxOutcome Port::deliver(const Target& target, const net::Frame& frame,
                        const net::ParsedFrame& parsed, bool primary) noexcept {
    RxQueue& q = target.queue ? *target.queue : target.rss->pick(frame.payload(), parsed);
    if (pending_faults_ && primary) [[unlikely]]
        arm(q);
    // Only a queue holding frames can release some (RxQueue::receive leaves
    // the tally untouched otherwise): the common case skips counting an empty one.
    const bool held_before = q.has_held();
    RxTally released;
    const RxOutcome out = q.receive(frame, parsed, now_ns_, delay_drop_armed_, primary, released);
    if (held_before) [[unlikely]]
        counters_.count(released);
    check_failed(q);
    return out;
}

void Port::ingress(const net::Frame& frame, std::uint64_t now_ns, const void* exclude) noexcept {
    now_ns_ = now_ns;
    counters_.frames.add();
    counters_.bytes.add(frame.len);
    if (frame.lost) [[unlikely]] {
        counters_.drop(Drop::fault_injected);
        return;
    }
    if (frame.truncated() || frame.len < frame.fcs_len) [[unlikely]] {
        counters_.drop(Drop::truncated_capture);
        return;
    }
    const auto bytes = frame.payload();
    if (bytes.size() < net::kEthHeaderLen) [[unlikely]] {
        counters_.drop(Drop::runt);
        return;
    }
    // The MAC checks the CRC before anything else sees the frame; only a
    // source whose frames carry their FCS lets it (the others pay nothing).
    if (frame.fcs_len != 0 && !config_.deliver_bad_fcs && !carried_fcs_ok(frame)) [[unlikely]] {
        counters_.drop(Drop::fcs_error);
        return;
    }
    const auto parsed = net::parse_frame(bytes);
    // ARP from the wire: the host learns and answers (datapath/README.md,
    // "Neighbours"); the frame still goes on to the steering, as on hardware
    // where the kernel and a sniffer both see it.
    if (parsed.ether_type == net::kEtherTypeArp && !parsed.has_vlan && exclude == nullptr) [[unlikely]]
        neighbours_.receive(bytes, now_ns, *host_out_);
    // The sender's own entries never see its frame (exclude is null for
    // frames from a source: nothing is excluded).
    const auto eligible = [exclude](const SteeringEntry* e) {
        return exclude == nullptr || e->owner != exclude;
    };
    for (const SteeringEntry* e : sniffers_) {
        if (eligible(e) && compiled_matches(e->compiled, e->rule, bytes, parsed)) {
            (void)deliver(e->target, frame, parsed, false); // the queue counts the copy
            counters_.sniffer_copies.add();
        }
    }
    // The frame's one outcome, counted by the port.
    const auto deliver_primary = [&](const SteeringEntry* e) {
        const RxOutcome out = deliver(e->target, frame, parsed, true);
        counters_.count(out);
        if (out.fate == Fate::held) [[unlikely]]
            next_deadline_ns_ = std::min(next_deadline_ns_, now_ns + config_.delay_drop_timeout_ns);
    };
    // A DONT_TRAP entry's target gets the frame and the walk goes on. The
    // frame's outcome is the trapping entry's, or with none the last DONT_TRAP
    // entry's; the other DONT_TRAP deliveries are copies, counted by their
    // queues only, as a sniffer's. So each match is delivered when the next
    // one is found (in walk order), knowing by then whether it was the last.
    const SteeringEntry* pending = nullptr; // a DONT_TRAP match not delivered yet
    for (const SteeringEntry* e : rules_) {
        if (!eligible(e) || !compiled_matches(e->compiled, e->rule, bytes, parsed)) continue;
        if (pending != nullptr) [[unlikely]]
            (void)deliver(pending->target, frame, parsed, false);
        pending = nullptr;
        if (e->dont_trap) [[unlikely]] {
            pending = e;
            continue;
        }
        deliver_primary(e);
        return;
    }
    if (pending != nullptr) [[unlikely]] {
        deliver_primary(pending);
        return;
    }
    counters_.drop(Drop::steering_miss);
}

void Port::transmit(const net::Frame& frame, const void* sender) noexcept {
    ingress(frame, now_ns_, sender);
    for (net::FrameSink* s : sinks_) s->send(frame.payload(), now_ns_);
}

void Port::starve_next(std::uint32_t frames) noexcept {
    starve_next_ = frames > UINT32_MAX - starve_next_ ? UINT32_MAX : starve_next_ + frames;
    pending_faults_ = true;
}

void Port::fail_next(std::uint8_t status) noexcept {
    fail_next_ = status;
    pending_faults_ = true;
}

void Port::arm(RxQueue& queue) noexcept {
    if (starve_next_ != 0) {
        queue.starve(1);
        --starve_next_;
    }
    if (fail_next_ != 0) {
        queue.fail_next(fail_next_);
        fail_next_ = 0;
    }
    pending_faults_ = starve_next_ != 0 || fail_next_ != 0;
}

void Port::service(std::uint64_t now_ns, const RxQueue* expire, bool expire_all) noexcept {
    if (now_ns > now_ns_) now_ns_ = now_ns;
    neighbours_.service(now_ns_, *host_out_); // ARP retries and failures; O(1) when none is due
    std::uint64_t next = UINT64_MAX;
    for (RxQueue* q : queues_) {
        if (!q->has_held()) continue;
        counters_.count(q->release_held(now_ns_));
        check_failed(*q);
        bool timed_out = false;
        // An injected timeout (expire_delay_drop) is the natural one with the wait already over.
        const bool expired = expire_all || q == expire;
        counters_.count(q->expire_held(now_ns_, expired ? 0 : config_.delay_drop_timeout_ns, timed_out));
        // Hardware leaves delay-drop mode on a timeout; the driver re-arms it at once.
        if (timed_out && !config_.delay_drop_rearm) delay_drop_armed_ = false;
        if (q->has_held()) next = std::min(next, q->oldest_held_ns() + config_.delay_drop_timeout_ns);
    }
    next_deadline_ns_ = next;
}

std::uint64_t Port::held_frames() const noexcept {
    std::uint64_t n = 0;
    for (const RxQueue* q : queues_) n += q->held();
    return n;
}

const RxQueue* Port::find_queue(std::uint32_t qp_num) const noexcept {
    for (const RxQueue* q : queues_)
        if (q->qp_num() == qp_num) return q;
    return nullptr;
}

} // namespace rdmasim::datapath
