// A completion queue's ring. Single producer (the engine, or a flush, always
// under the port lock), single consumer (the program, serialised by the CQ's
// poll lock). Full means full: the producer checks room() before it consumes
// a WQE, so a completion is never overwritten or lost. purge() and resize()
// are neither: they exclude both.
//
// Each side keeps the other's index as it last read it, on its own cache
// line, and reads the other's line again only when that copy says full (the
// producer) or empty (the consumer, poll_empty()): with the engine and the
// program on two cores, reading the other's index on every completion moved
// its cache line across for every completion, both ways.
//
// A producer may batch (set_batching): completions it writes then become
// visible together, when batching ends or a flush() says so, rather than one
// by one. The port batches for the length of an engine burst
// (Port::begin_burst): a consumer polling an empty CQ on another core reads
// the producer's index line, so publishing every completion moved that line
// for every completion.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace rdmasim::datapath {

struct Cqe {
    std::uint64_t wr_id = 0;
    std::uint64_t timestamp_ns = 0;
    std::uint32_t byte_len = 0;
    std::uint32_t qp_num = 0; // WQ number for WQ completions
    std::uint32_t wc_flags = 0;
    std::uint32_t vendor_err = 0;
    std::uint32_t imm_data = 0; // as ibv_wc.imm_data: network byte order (IBV_WC_WITH_IMM)
    std::uint32_t src_qp = 0;   // UD receives: the sender's QPN (from the DETH)
    std::uint32_t tm_priv = 0;  // tag-matched receive: the TMH's app_ctx (ibv_wc_tm_info.priv)
    std::uint64_t tm_tag = 0;   // tag-matched receive: the TMH's tag (ibv_wc_tm_info.tag)
    std::uint16_t cvlan = 0;  // stripped TCI, host order; 0 when nothing was stripped
    std::uint8_t status = 0;  // enum ibv_wc_status
    std::uint8_t opcode = 0;  // enum ibv_wc_opcode
    bool solicited = false;   // RoCE receive: its last packet had the SE bit (solicited notify)
    std::uint8_t sl = 0;      // RoCE receive: the packet type as a ConnectX reports it in sl
};

class CqRing {
public:
    void init(std::uint32_t min_entries); // allocates; set-up only
    // ibv_resize_cq: room for at least `min_entries`, the entries kept in
    // order; false (nothing changed) when more are waiting than that. The
    // caller excludes producer and consumer (port lock and poll lock).
    // Allocates.
    bool resize(std::uint32_t min_entries);

    [[nodiscard]] std::uint32_t capacity() const noexcept { return mask_ + 1; }
    // Producer: an entry is free (a stale copy of the consumer's index only
    // ever undercounts the room; it is read again before saying no).
    [[nodiscard]] bool room() noexcept {
        const auto h = head_.load(std::memory_order_relaxed) + staged_;
        if (h - tail_seen_ <= mask_) [[likely]]
            return true;
        tail_seen_ = tail_.load(std::memory_order_acquire);
        return h - tail_seen_ <= mask_;
    }
    // Producer: returns false (and marks the overflow) when full.
    bool push(const Cqe& cqe) noexcept {
        if (!room()) [[unlikely]] {
            overflowed_.store(true, std::memory_order_release);
            return false;
        }
        next_entry() = cqe;
        publish();
        return true;
    }
    // Producer, in two steps: the next entry to fill (room() checked by the
    // caller), written in place, then made visible (batching: at the flush).
    // Filling the entry where it lives saves building a Cqe on the stack and
    // copying it, whose narrow stores the wide loads of the copy cannot
    // forward from.
    [[nodiscard]] Cqe& next_entry() noexcept {
        return entries_[(head_.load(std::memory_order_relaxed) + staged_) & mask_];
    }
    void publish() noexcept {
        ++staged_;
        if (!batching_) flush();
    }
    // Producer: while on, completions wait for flush(); turning it off flushes.
    void set_batching(bool on) noexcept {
        batching_ = on;
        if (!on) flush();
    }
    // Producer: the completions written so far become visible, in order.
    void flush() noexcept {
        if (staged_ == 0) return;
        head_.store(head_.load(std::memory_order_relaxed) + staged_, std::memory_order_release);
        written_.store(written_.load(std::memory_order_relaxed) + staged_, std::memory_order_release);
        staged_ = 0;
    }
    // Completions ever made visible, modulo 2^32: purge() and resize() move
    // entries but leave it. A CQ's arm compares it with its value at the arm
    // (device/cq.cpp: an event is for a completion written after the arm).
    [[nodiscard]] std::uint32_t written() const noexcept {
        return written_.load(std::memory_order_acquire);
    }
    // A solicited or an error completion was pushed: what ibv_req_notify_cq(cq,
    // 1) waits for (device/cq_notify.cpp reads it when the CQ is armed and
    // clears it when it re-arms).
    void note_solicited() noexcept { solicited_.store(true, std::memory_order_release); }
    [[nodiscard]] bool solicited_seen() const noexcept {
        return solicited_.load(std::memory_order_acquire);
    }
    void clear_solicited() noexcept { solicited_.store(false, std::memory_order_relaxed); }
    // Marks an overflow the producer avoided by not consuming (see room()).
    void mark_overflow() noexcept { overflowed_.store(true, std::memory_order_release); }
    // True once after an overflow: whoever reports IBV_EVENT_CQ_ERR takes it.
    [[nodiscard]] bool take_overflow() noexcept {
        return overflowed_.exchange(false, std::memory_order_acq_rel);
    }

    // Consumer (or anyone: reads the producer's index).
    [[nodiscard]] bool empty() const noexcept {
        return tail_.load(std::memory_order_relaxed) == head_.load(std::memory_order_acquire);
    }
    // The consumer, holding the poll lock: empty(), reading the producer's
    // index only when the entries seen there last are used up. The distance
    // is signed: a copy left behind by pops after empty() reads again.
    [[nodiscard]] bool poll_empty() noexcept {
        const auto t = tail_.load(std::memory_order_relaxed);
        if (static_cast<std::int32_t>(head_seen_ - t) > 0) [[likely]]
            return false;
        head_seen_ = head_.load(std::memory_order_acquire);
        return head_seen_ == t;
    }
    [[nodiscard]] const Cqe& front() const noexcept {
        return entries_[tail_.load(std::memory_order_relaxed) & mask_];
    }
    void pop() noexcept {
        tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }
    [[nodiscard]] std::uint32_t size() const noexcept {
        return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_acquire);
    }

    // Removes every entry completing `qp_num` but the first `keep_front`
    // (entries the consumer has exposed already), compacting the rest in
    // place in their order; returns how many went (mlx5's __mlx5_cq_clean).
    // The caller excludes producer and consumer: it holds the port lock and
    // the CQ's poll lock (or is the consumer itself). No allocation.
    std::uint32_t purge(std::uint32_t qp_num, std::uint32_t keep_front = 0) noexcept;

private:
    std::vector<Cqe> entries_;
    std::uint32_t mask_ = 0;
    std::atomic<bool> overflowed_{false};
    std::atomic<bool> solicited_{false};

    // Both sides reset the copies when they move the indices (init, resize, purge).
    void resync() noexcept {
        tail_seen_ = tail_.load(std::memory_order_relaxed);
        head_seen_ = head_.load(std::memory_order_relaxed);
    }

    alignas(64) std::atomic<std::uint32_t> head_{0};
    std::atomic<std::uint32_t> written_{0}; // the producer's, beside head_
    std::uint32_t tail_seen_ = 0;            // the producer's copy of tail_
    std::uint32_t staged_ = 0;               // written past head_, not yet visible
    bool batching_ = false;
    alignas(64) std::atomic<std::uint32_t> tail_{0};
    std::uint32_t head_seen_ = 0;            // the consumer's copy of head_
};

} // namespace rdmasim::datapath
