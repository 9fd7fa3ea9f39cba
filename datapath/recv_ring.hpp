// A work queue's receive ring: posted WQEs with their SGE lists.
// Single producer (the program, serialised by the WQ's post lock), single
// consumer (the engine). Indices are free-running; capacity is a power of two.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace rdmasim::datapath {

struct Sge {
    std::uint64_t addr;
    std::uint32_t length;
    std::uint32_t lkey;
};

struct Wqe {
    std::uint64_t wr_id = 0;
    std::uint32_t num_sge = 0;   // zero-length SGEs were dropped at post time
    std::uint32_t total_len = 0; // sum of the SGE lengths
};

class RecvRing {
public:
    // Rounds `min_entries` up to a power of two. Allocates; call at set-up only.
    void init(std::uint32_t min_entries, std::uint32_t max_sge);

    [[nodiscard]] std::uint32_t capacity() const noexcept { return mask_ + 1; }
    [[nodiscard]] std::uint32_t max_sge() const noexcept { return max_sge_; }
    [[nodiscard]] std::uint32_t size() const noexcept {
        return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_acquire);
    }

    // Producer side.
    [[nodiscard]] bool full() const noexcept {
        return head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_acquire) >
               mask_;
    }
    [[nodiscard]] Wqe& next_wqe() noexcept { return wqes_[head_.load(std::memory_order_relaxed) & mask_]; }
    [[nodiscard]] Sge* next_sges() noexcept {
        return &sges_[(head_.load(std::memory_order_relaxed) & mask_) * max_sge_];
    }
    void publish() noexcept { publish(1); }
    // A list of WQEs, the i-th filled at slot i after the head, published
    // together (a post rings one doorbell, as mlx5's ibv_post_recv does).
    [[nodiscard]] std::uint32_t room() const noexcept {
        return capacity() -
               (head_.load(std::memory_order_relaxed) - tail_.load(std::memory_order_acquire));
    }
    [[nodiscard]] Wqe& wqe_at(std::uint32_t i) noexcept {
        return wqes_[(head_.load(std::memory_order_relaxed) + i) & mask_];
    }
    [[nodiscard]] Sge* sges_at(std::uint32_t i) noexcept {
        return &sges_[((head_.load(std::memory_order_relaxed) + i) & mask_) * max_sge_];
    }
    void publish(std::uint32_t n) noexcept {
        head_.store(head_.load(std::memory_order_relaxed) + n, std::memory_order_release);
    }

    // Consumer side.
    [[nodiscard]] bool empty() const noexcept {
        return tail_.load(std::memory_order_relaxed) == head_.load(std::memory_order_acquire);
    }
    [[nodiscard]] const Wqe& front() const noexcept {
        return wqes_[tail_.load(std::memory_order_relaxed) & mask_];
    }
    [[nodiscard]] const Sge* front_sges() const noexcept {
        return &sges_[(tail_.load(std::memory_order_relaxed) & mask_) * max_sge_];
    }
    void pop() noexcept {
        tail_.store(tail_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }

    // Forgets every posted WQE. Caller excludes both producer and consumer.
    void reset() noexcept { tail_.store(head_.load(std::memory_order_relaxed), std::memory_order_release); }

private:
    std::vector<Wqe> wqes_;
    std::vector<Sge> sges_;
    std::uint32_t mask_ = 0;
    std::uint32_t max_sge_ = 1;
    alignas(64) std::atomic<std::uint32_t> head_{0};
    alignas(64) std::atomic<std::uint32_t> tail_{0};
};

} // namespace rdmasim::datapath
