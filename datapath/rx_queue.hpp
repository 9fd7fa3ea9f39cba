// One receive queue's pipeline (a WQ, or the receive side of a plain
// raw-packet QP): ring of posted WQEs, offloads, delay-drop holding, scatter,
// completions and the queue's own counters (datapath/README.md, "Per-frame
// order"). Every engine-side call returns what became of the frame(s); the
// port counts that in its own counters. Engine-side calls and state changes
// run under the port lock; posting (ring()) under the queue's post lock.
#pragma once

#include <cstdint>

#include "datapath/counters.hpp"
#include "datapath/cq_ring.hpp"
#include "datapath/hold_queue.hpp"
#include "datapath/mr_table.hpp"
#include "datapath/offloads.hpp"
#include "datapath/recv_ring.hpp"
#include "net/frame.hpp"
#include "net/headers.hpp"

namespace rdmasim::datapath {

// Whose receive queue it is: a WQ (reached through an RSS QP's indirection
// table), or a plain raw-packet QP's own receive queue. mlx5 tells the two
// apart when it completes (handle_responder, providers/mlx5/cq.c).
enum class QueueKind : std::uint8_t { wq, qp };

struct RxQueueConfig {
    std::uint32_t ring_entries = 0; // rounded up to a power of two
    std::uint32_t max_sge = 1;
    std::uint32_t qp_num = 0;       // reported in completions
    WqSettings settings;
    std::uint32_t hold_frames = 256;      // delay-drop storage, used only with settings.delay_drop
    std::uint32_t hold_bytes = 1u << 20;
    // Who set the queue up (a device object of `kind`): handed back with the
    // queue when it stops on an error (Port::take_failed_queue), never
    // dereferenced here.
    QueueKind kind = QueueKind::wq;
    void* owner = nullptr;
};

class RxQueue {
public:
    // Allocates: set-up only. Completions go to `cq`; SGEs are checked
    // against `mrs` for protection domain `pd`.
    void init(const RxQueueConfig& config, CqRing* cq, const MrTable* mrs, const void* pd);

    [[nodiscard]] RecvRing& ring() noexcept { return ring_; }
    // Its CQ batches completions (CqRing::set_batching); off flushes them.
    void batch_completions(bool on) noexcept { cq_->set_batching(on); }
    [[nodiscard]] const RxCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] const WqSettings& settings() const noexcept { return settings_; }
    [[nodiscard]] std::uint32_t held() const noexcept { return hold_.size(); }
    [[nodiscard]] std::uint32_t qp_num() const noexcept { return qp_num_; }
    [[nodiscard]] QueueKind kind() const noexcept { return kind_; }
    [[nodiscard]] void* owner() const noexcept { return owner_; }

    // Control side, under the port lock (Port::set_queue_state drives these).
    // Any state set from outside ends a latched error.
    void set_ready(bool ready) noexcept {
        ready_ = ready;
        failed_ = false;
    }
    [[nodiscard]] bool ready() const noexcept { return ready_; }
    // True once after the queue stopped itself on a local protection error:
    // it completed that WQE with IBV_WC_LOC_PROT_ERR and receives nothing
    // more until its state is set again (mlx5 creates RQs with
    // flush_in_error_en). The port takes it, flushes the rest and records
    // the queue for the device.
    [[nodiscard]] bool take_failure() noexcept {
        const bool failed = failed_;
        failed_ = false;
        return failed;
    }
    void set_strip_cvlan(bool on) noexcept { settings_.strip_cvlan = on; }
    // Completes every posted WQE with IBV_WC_WR_FLUSH_ERR, in posting order.
    [[nodiscard]] RxTally flush() noexcept;
    // Forgets posted WQEs.
    void reset_ring() noexcept { ring_.reset(); }
    // Drops every held frame as Drop::discarded (the queue is going away or stops).
    [[nodiscard]] RxTally discard_held() noexcept;

    // Engine side: what became of `frame`. `delay_drop_armed` is the
    // device's delay-drop mode. A non-primary frame is an extra copy (a
    // sniffer flow's): never held, and the port does not count its outcome.
    // Held frames go first: those the call releases to WQEs posted since they
    // came are summed in `*released` (left untouched when there are none),
    // which may be nullptr only when has_held() is false. Defined in
    // rx_queue_receive.hpp (inline, always: the port's per-frame path).
    // `wait`: whether a frame that finds no WQE may be held (the port's
    // delay drop is armed and this is the frame's own delivery, not a copy).
    [[nodiscard, gnu::always_inline]] inline RxOutcome receive(const net::Frame& frame,
                                                               const net::ParsedFrame& parsed,
                                                               std::uint64_t now_ns, MayWait wait,
                                                               RxTally* released) noexcept;
    // Delivers held frames while WQEs are posted and the CQ has room.
    [[nodiscard]] RxTally release_held(std::uint64_t now_ns) noexcept;
    // Drops every held frame when the oldest has waited `timeout_ns`;
    // `timed_out` tells whether that happened.
    [[nodiscard]] RxTally expire_held(std::uint64_t now_ns, std::uint64_t timeout_ns,
                                      bool& timed_out) noexcept;
    [[nodiscard]] bool has_held() const noexcept { return !hold_.empty(); }
    [[nodiscard]] std::uint64_t oldest_held_ns() const noexcept { return hold_.front_arrival_ns(); }

    // Injected faults (sim/README.md, "Fault injection"), under the port lock.
    // The next `frames` frames the queue receives while ready find its ring
    // as if it were empty: each is dropped as out_of_buffer, no WQE taken,
    // whatever delay drop says (never held).
    void starve(std::uint32_t frames) noexcept;
    // The next frame the queue completes (a WQE taken) completes with
    // `status` (an ibv_wc_status), byte_len 0, dropped as cqe_error, and the
    // queue stops as on a protection error (take_failure). A second call
    // before that frame replaces the status.
    void fail_next(std::uint8_t status) noexcept { fail_status_ = status; }

private:
    // Takes the front WQE (or not, on a CQ overflow) and completes it.
    // Defined in rx_queue_receive.hpp.
    [[gnu::always_inline]] inline RxOutcome deliver(const net::Frame& frame, const net::ParsedFrame& parsed,
                                                    std::uint64_t now_ns) noexcept;
    // Completes the front WQE with the injected status (fail_next).
    RxOutcome deliver_injected_error(std::uint64_t now_ns) noexcept;
    RxOutcome counted(RxOutcome o) noexcept {
        counters_.count(o);
        return o;
    }

    RecvRing ring_;
    HoldQueue hold_;
    WqSettings settings_;
    CqRing* cq_ = nullptr;
    const MrTable* mrs_ = nullptr;
    const void* pd_ = nullptr;
    RxCounters counters_;
    std::uint32_t qp_num_ = 0;
    QueueKind kind_ = QueueKind::wq;
    void* owner_ = nullptr;
    std::uint32_t starved_ = 0;   // frames still to find the ring empty (starve)
    std::uint8_t fail_status_ = 0; // the next completion's injected status, or 0
    bool ready_ = false;
    bool failed_ = false;
    RxImage image_; // scratch for the frame in flight
};

} // namespace rdmasim::datapath
