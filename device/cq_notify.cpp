// CQ notification: ibv_req_notify_cq, the completion-channel event owed
// after completions, and the overrun event after a burst
// (device/README.md, "Completion queues and events").
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "device/async_events.hpp"
#include "device/cq.hpp"
#include "device/verb_faults.hpp"

namespace rdmasim::device {

namespace {

// The completion event `cq` owes, written to its channel once: armed (then
// disarmed), a completion written since the arm and still in the CQ, and for
// a solicited-only arm a solicited or error one since (device/README.md,
// "Completion queues and events"). Called by whoever completes, after its
// completions (the engine after a burst, a verb after its service; port
// lock held), and by ibv_req_notify_cq after arming. ibv_req_notify_cq(3):
// the event is for the next completion; one already waiting at the arm
// raises none (the program polls after arming, as the man page says).
// The completing thread writes the ring, then reads `armed`; the arming one
// writes `armed`, then reads the ring. Each passes an acq_rel RMW on this
// one atomic in between: the RMWs are totally ordered, so the second one
// acquires what the first released and at least one thread sees both writes,
// and a completion written as the CQ is armed never goes without its event.
// (An RMW rather than a seq_cst fence: ThreadSanitizer does not model fences.)
std::atomic<std::uint32_t> notify_order{0};

void notify_if_owed(Cq& cq) noexcept {
    notify_order.fetch_add(1, std::memory_order_acq_rel);
    if (!cq.armed.load(std::memory_order_acquire)) return;
    const bool due = !cq.solicited_only.load(std::memory_order_relaxed) ||
                     cq.ring.solicited_seen();
    if (cq.channel && due && cq.ring.written() != cq.armed_at.load(std::memory_order_relaxed) &&
        !cq.ring.empty() && cq.armed.exchange(false, std::memory_order_acq_rel)) {
        std::lock_guard lock(cq.channel->lock);
        try {
            cq.channel->fired.push_back(&cq);
            const std::uint64_t one = 1;
            if (::write(cq.channel->ibch.fd, &one, sizeof one) != sizeof one)
                cq.channel->fired.pop_back();
        } catch (...) {
        }
    }
}

} // namespace

int req_notify_cq(ibv_cq* c, int solicited_only) noexcept {
    if (c == nullptr) return EINVAL;
    Cq& cq = *from_verbs(c);
    if (int e = injected_failure(*cq.ctx->device, Verb::req_notify_cq)) return e;
    // Real providers (mlx5, rxe) arm any CQ; without a channel the arm is
    // simply never delivered (notify_if_owed checks the channel). Solicited
    // only: the event waits for a solicited or an error completion.
    // Completions written so far are not the next one: they raise no event.
    // Armed already: the arm stands (an event it owes stays owed); a plain
    // arm widens a solicited-only one.
    if (!cq.armed.load(std::memory_order_acquire)) {
        cq.ring.clear_solicited();
        cq.solicited_only.store(solicited_only != 0, std::memory_order_relaxed);
        cq.armed_at.store(cq.ring.written(), std::memory_order_relaxed);
        cq.armed.store(true, std::memory_order_release);
    } else if (solicited_only == 0) {
        cq.solicited_only.store(false, std::memory_order_relaxed);
    }
    // A completion written since armed_at was read, by a thread that found
    // the CQ not yet armed, is owed its event here.
    notify_if_owed(cq);
    if (cq.device->hooks) cq.device->hooks->on_arm(*cq.device); // an inline engine completes frames, and notifies
    return 0;
}

void cq_after_burst(Cq& cq) noexcept {
    notify_if_owed(cq);
    // An overrun (a completion, of a frame or a flush, that found the CQ
    // full) raises IBV_EVENT_CQ_ERR after the burst, unless the CQ was created
    // to ignore overruns; the frames are counted either way.
    if (cq.ring.take_overflow() && !cq.ignore_overrun) {
        ibv_async_event ev{};
        ev.element.cq = to_verbs_cq(&cq);
        ev.event_type = IBV_EVENT_CQ_ERR;
        raise_async_event(*cq.ctx, ev);
    }
}

} // namespace rdmasim::device
