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
}

} // namespace rdmasim::datapath
