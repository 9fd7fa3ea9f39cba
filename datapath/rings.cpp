#include <bit>

#include "datapath/cq_ring.hpp"
#include "datapath/recv_ring.hpp"

namespace rdmasim::datapath {

void RecvRing::init(std::uint32_t min_entries, std::uint32_t max_sge) {
    const std::uint32_t cap = std::bit_ceil(min_entries < 1 ? 1u : min_entries);
    max_sge_ = max_sge < 1 ? 1 : max_sge;
    wqes_.assign(cap, Wqe{});
    sges_.assign(static_cast<std::size_t>(cap) * max_sge_, Sge{});
    mask_ = cap - 1;
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
}

void CqRing::init(std::uint32_t min_entries) {
    const std::uint32_t cap = std::bit_ceil(min_entries < 1 ? 1u : min_entries);
    entries_.assign(cap, Cqe{});
    mask_ = cap - 1;
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
    staged_ = 0;
    batching_ = false;
    resync();
}

bool CqRing::resize(std::uint32_t min_entries) {
    flush(); // nothing is moved unseen (a burst flushes before the port lock goes)
    const std::uint32_t cap = std::bit_ceil(min_entries < 1 ? 1u : min_entries);
    const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    const std::uint32_t n = head_.load(std::memory_order_relaxed) - tail;
    if (n > cap) return false;
    std::vector<Cqe> fresh(cap);
    for (std::uint32_t i = 0; i < n; ++i) fresh[i] = entries_[(tail + i) & mask_];
    entries_ = std::move(fresh);
    mask_ = cap - 1;
    tail_.store(0, std::memory_order_relaxed);
    head_.store(n, std::memory_order_release);
    resync();
    return true;
}

std::uint32_t CqRing::purge(std::uint32_t qp_num, std::uint32_t keep_front) noexcept {
    flush();
    const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    const std::uint32_t head = head_.load(std::memory_order_relaxed);
    if (head - tail <= keep_front) return 0;
    // Survivors move towards the consumer, over the entries that go; the
    // producer's end comes back by as many.
    std::uint32_t to = tail + keep_front;
    for (std::uint32_t from = to; from != head; ++from) {
        const Cqe& e = entries_[from & mask_];
        if (e.qp_num == qp_num) continue;
        if (to != from) entries_[to & mask_] = e;
        ++to;
    }
    head_.store(to, std::memory_order_release);
    resync();
    return head - to;
}

} // namespace rdmasim::datapath
