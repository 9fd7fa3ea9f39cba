#include "net/tx_backlog.hpp"

#include <new>

namespace rdmasim::net {

namespace {

void raise_max(std::atomic<std::uint64_t>& max, std::uint64_t v) noexcept {
    if (v > max.load(std::memory_order_relaxed)) max.store(v, std::memory_order_relaxed);
}

} // namespace

bool TxBacklog::push(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept {
    if (bytes_ + frame.size() > capacity_) {
        counters_.overflow.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    try {
        Entry e;
        if (!spare_.empty()) {
            e = std::move(spare_.back());
            spare_.pop_back();
        }
        e.bytes.assign(frame.begin(), frame.end());
        e.ts_ns = ts_ns;
        if (empty()) { // a pause begins
            paused_since_ = std::chrono::steady_clock::now();
            counters_.pauses.fetch_add(1, std::memory_order_relaxed);
        }
        entries_.push_back(std::move(e));
    } catch (const std::bad_alloc&) {
        counters_.overflow.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    bytes_ += frame.size();
    counters_.queued.fetch_add(1, std::memory_order_relaxed);
    counters_.waiting.store(frames(), std::memory_order_relaxed);
    raise_max(counters_.max_frames, frames());
    raise_max(counters_.max_bytes, bytes_);
    return true;
}

void TxBacklog::pop() noexcept {
    Entry& e = entries_.front();
    bytes_ -= e.bytes.size();
    if (spare_.size() < kSpares) {
        try {
            spare_.push_back(std::move(e));
        } catch (const std::bad_alloc&) {
        }
    }
    entries_.pop_front();
    counters_.waiting.store(frames(), std::memory_order_relaxed);
    if (!empty()) return;
    const auto d = std::chrono::steady_clock::now() - paused_since_;
    counters_.paused_ns.fetch_add(
        static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count()),
        std::memory_order_relaxed);
}

} // namespace rdmasim::net
