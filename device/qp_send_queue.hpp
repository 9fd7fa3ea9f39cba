// The send queue of an RC, UC or UD QP: the WRs ibv_post_send accepted, as
// the transport will execute them (device/README.md, "RC, UC and UD queue
// pairs"). One producer (posts, serialised by Qp::send_lock), one consumer
// (the transport, a flush or a reset, under the port lock; flush and reset
// also hold send_lock). Indices run free; capacity is a power of two, and
// `max_post` WQEs may be outstanding.
#pragma once

#include <infiniband/verbs.h>

#include <atomic>
#include <cstdint>
#include <vector>

#include "datapath/recv_ring.hpp"

namespace rdmasim::device {

struct Ah;

// One posted send WR, copied at post time (the program may reuse its WR and,
// for inline sends, its data).
struct SendWqe {
    std::uint64_t wr_id = 0;
    ibv_wr_opcode opcode = IBV_WR_SEND;
    std::uint32_t send_flags = 0;   // IBV_SEND_*
    std::uint32_t imm_data = 0;     // network order, as posted (SEND/WRITE_WITH_IMM)
    std::uint64_t remote_addr = 0;  // RDMA and atomics
    std::uint32_t rkey = 0;
    std::uint64_t compare_add = 0;  // atomics
    std::uint64_t swap = 0;
    Ah* ah = nullptr;               // UD: destination
    std::uint32_t remote_qpn = 0;   // UD
    std::uint32_t remote_qkey = 0;  // UD (high bit set: the QP's own qkey)
    std::uint32_t num_sge = 0;      // SGEs in sges(); 0 for inline data
    std::uint64_t total_len = 0;    // bytes the WR moves
    bool inline_data = false;       // the bytes are in inline_bytes()
};

class SendQueue {
public:
    // Allocates (control path): `max_post` WQEs of up to `max_sge` SGEs or
    // `max_inline` inline bytes each.
    void init(std::uint32_t max_post, std::uint32_t max_sge, std::uint32_t max_inline) {
        std::uint32_t cap = 1;
        while (cap < max_post) cap <<= 1;
        mask_ = cap - 1;
        max_post_ = max_post;
        max_sge_ = max_sge;
        max_inline_ = max_inline;
        wqes_.assign(cap, SendWqe{});
        sges_.assign(std::size_t{cap} * max_sge, datapath::Sge{});
        inline_.assign(std::size_t{cap} * max_inline, 0);
    }
    [[nodiscard]] std::uint32_t max_post() const noexcept { return max_post_; }
    [[nodiscard]] std::uint32_t max_sge() const noexcept { return max_sge_; }
    [[nodiscard]] std::uint32_t max_inline() const noexcept { return max_inline_; }
    [[nodiscard]] std::uint32_t size() const noexcept {
        return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_acquire);
    }

    // Producer.
    [[nodiscard]] bool full() const noexcept { return size() >= max_post_; }
    [[nodiscard]] SendWqe& next_wqe() noexcept { return wqes_[slot(head_)]; }
    [[nodiscard]] datapath::Sge* next_sges() noexcept { return &sges_[std::size_t{slot(head_)} * max_sge_]; }
    [[nodiscard]] std::uint8_t* next_inline() noexcept {
        return inline_.data() + std::size_t{slot(head_)} * max_inline_;
    }
    void publish() noexcept { head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
    // Counts one post call that queued WRs: the transport's doorbell.
    void ring_doorbell() noexcept { doorbells_.fetch_add(1, std::memory_order_release); }
    [[nodiscard]] std::uint64_t doorbells() const noexcept { return doorbells_.load(std::memory_order_acquire); }

    // Consumer.
    [[nodiscard]] bool empty() const noexcept { return size() == 0; }
    [[nodiscard]] const SendWqe& front() const noexcept { return wqes_[slot(tail_)]; }
    [[nodiscard]] const datapath::Sge* front_sges() const noexcept {
        return &sges_[std::size_t{slot(tail_)} * max_sge_];
    }
    [[nodiscard]] const std::uint8_t* front_inline() const noexcept {
        return inline_.data() + std::size_t{slot(tail_)} * max_inline_;
    }
    void pop() noexcept { tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
    // Forgets every posted WQE (a move to RESET). Excludes both sides.
    void reset() noexcept { tail_.store(head_.load(std::memory_order_relaxed), std::memory_order_release); }

private:
    [[nodiscard]] std::uint32_t slot(const std::atomic<std::uint32_t>& i) const noexcept {
        return i.load(std::memory_order_relaxed) & mask_;
    }
    std::vector<SendWqe> wqes_;
    std::vector<datapath::Sge> sges_;
    std::vector<std::uint8_t> inline_;
    std::uint32_t mask_ = 0;
    std::uint32_t max_post_ = 0;
    std::uint32_t max_sge_ = 1;
    std::uint32_t max_inline_ = 0;
    std::atomic<std::uint32_t> head_{0};
    std::atomic<std::uint32_t> tail_{0};
    std::atomic<std::uint64_t> doorbells_{0};
};

} // namespace rdmasim::device
