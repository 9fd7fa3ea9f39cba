// A host's receive ring in a shm:// segment (net/README.md, "Shared-memory
// wire"): many producers (the other hosts' ports), one consumer (the host's
// engine), lock-free. A producer claims a position with a CAS on `reserve`,
// copies the frame into its slot and publishes it with ONE (release) store
// of the slot's stamp (position + 1): a producer that dies mid-copy leaves
// nothing visible. The reader keeps its own index; the shared `consumer`
// only tells producers which slots are free again. Every word the reader
// takes from the segment is read once and checked: the reader never reads
// outside its mapping, whatever a peer wrote.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <span>

#include "net/shm_segment.hpp"

namespace rdmasim::net::shm {

inline std::uint64_t& slot_stamp(std::uint8_t* slot) noexcept { return *reinterpret_cast<std::uint64_t*>(slot); }
inline std::uint32_t& slot_len(std::uint8_t* slot) noexcept { return *reinterpret_cast<std::uint32_t*>(slot + 8); }

// Producer, first half of a push: claims the next position of host `h`'s
// ring (`pos`) and returns its slot, or nullptr when the ring is full or
// other producers won the claim kClaimTries times in a row (the caller
// keeps the frame and tries again later). `seen` is this producer's last
// read of the ring's `consumer`, read again only when it says the ring is
// full: it only ever lags the true value, so a slot it calls free is free. The
// claim must be published at once (ring_publish): the reader waits at it,
// up to RingReader::kStallLimit.
inline std::uint8_t* ring_claim(const Segment& s, std::uint32_t h, std::uint64_t& pos,
                                std::uint64_t& seen) noexcept {
    constexpr int kClaimTries = 4;
    HostHeader& hh = s.host_header(h);
    for (int i = 0; i < kClaimTries; ++i) {
        std::uint64_t t = word(hh.reserve).load(std::memory_order_acquire);
        if (t - seen >= kRingSlots) { // full as last seen (or a wrap): look again
            seen = word(hh.consumer).load(std::memory_order_acquire);
            if (static_cast<std::int64_t>(t - seen) < 0) continue; // t read before c moved past it
            if (t - seen >= kRingSlots)
                return nullptr; // full (or a consumer index not to be trusted)
        }
        if (!word(hh.reserve).compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                                    std::memory_order_relaxed))
            continue;
        pos = t;
        return s.slot(h, t);
    }
    return nullptr;
}

// The frame's bytes start here in a claimed slot (at most kMaxFrame of them).
inline std::uint8_t* slot_frame(std::uint8_t* slot) noexcept { return slot + kSlotHeader; }

// Producer, second half: the `len` bytes (1..kMaxFrame) written at
// slot_frame(slot) become visible with ONE release store of the stamp. A
// reader that sleeps learns of it at the producer's next ring_needs_bell.
inline void ring_publish(std::uint8_t* slot, std::uint64_t pos, std::uint32_t len) noexcept {
    word(slot_len(slot)).store(len, std::memory_order_relaxed);
    word(slot_stamp(slot)).store(pos + 1, std::memory_order_release);
}

// Producer: copies `frame` (at most kMaxFrame bytes) into host `h`'s ring;
// false as ring_claim.
inline bool ring_push(const Segment& s, std::uint32_t h, std::span<const std::uint8_t> frame,
                      std::uint64_t& seen) noexcept {
    std::uint64_t pos = 0;
    std::uint8_t* slot = ring_claim(s, h, pos, seen);
    if (slot == nullptr) return false;
    std::memcpy(slot_frame(slot), frame.data(), frame.size());
    ring_publish(slot, pos, static_cast<std::uint32_t>(frame.size()));
    return true;
}

// Producer, after publishing one frame or a batch to host `h`: true when
// its reader sleeps and this producer took the job of waking it (cleared
// the flag): ring its doorbell. Both sides swap the flag (RingReader::arm's
// exchange(1)), so one swap reads the other's: this one reads 1 (the
// reader sleeps: wake it), or the reader's reads this one's 0 and, acquiring
// it, sees every stamp published before it.
inline bool ring_needs_bell(const Segment& s, std::uint32_t h) noexcept {
    return word(s.host_header(h).sleeping).exchange(0, std::memory_order_acq_rel) != 0;
}

// The consumer of this host's ring.
class RingReader {
public:
    // A claimed slot left unpublished this long: its producer died mid-copy
    // (or lies): skipped and counted as corrupt.
    static constexpr std::chrono::milliseconds kStallLimit{250};
    // Empty pulls in a row between two looks at the producers' `reserve`
    // (for a stalled claim or a lie): a few microseconds of polling.
    static constexpr std::uint32_t kPullsPerLook = 64;

    RingReader(const Segment& s, std::atomic<std::uint64_t>& corrupt) noexcept
        : s_(s), hh_(s.host_header(s.host())), corrupt_(corrupt),
          c_(word(hh_.consumer).load(std::memory_order_relaxed)) {}

    // Hands the slots read so far back to the producers (the engine is done with them).
    void release() noexcept { word(hh_.consumer).store(c_, std::memory_order_release); }

    // The next published frame: its bytes inside the slot and the length
    // read once (checked: 1..kMaxFrame). False when none is there now.
    bool pull(const std::uint8_t*& data, std::uint32_t& len) noexcept {
        for (std::uint32_t guard = 0; guard < kRingSlots; ++guard) {
            std::uint8_t* slot = s_.slot(s_.host(), c_);
            if (word(slot_stamp(slot)).load(std::memory_order_acquire) != c_ + 1) {
                // Most empty pulls look at the stamp alone: `reserve` is the
                // producers' line, and a reader polling it takes it from
                // them at every frame (a miss for their next claim).
                if (++empty_pulls_ < kPullsPerLook) return false;
                empty_pulls_ = 0;
                if (!unstick()) return false;
                continue;
            }
            empty_pulls_ = 0;
            const std::uint32_t n = word(slot_len(slot)).load(std::memory_order_relaxed);
            ++c_;
            if (n == 0 || n > kMaxFrame) [[unlikely]] {
                corrupt_.fetch_add(1, std::memory_order_relaxed);
                continue;
            }
            data = slot + kSlotHeader;
            len = n;
            return true;
        }
        return false; // the rest on the next call
    }

    // Before sleeping: raises the `sleeping` flag, then looks at the ring.
    // True (flag raised): nothing to read, sleep; false (flag lowered): a
    // frame was published, or a claim is in progress. See ring_needs_bell.
    [[nodiscard]] bool arm() noexcept {
        auto sleeping = word(hh_.sleeping);
        (void)sleeping.exchange(1, std::memory_order_acq_rel);
        if (word(slot_stamp(s_.slot(s_.host(), c_))).load(std::memory_order_acquire) != c_ + 1 &&
            word(hh_.reserve).load(std::memory_order_acquire) == c_)
            return true;
        sleeping.store(0, std::memory_order_relaxed);
        return false;
    }

private:
    // The slot at c_ is not published. True when c_ moved on (a stalled
    // claim skipped); false: nothing to read now.
    bool unstick() noexcept {
        const std::uint64_t r = word(hh_.reserve).load(std::memory_order_acquire); // read once
        if (r == c_) {
            stall_pos_ = ~std::uint64_t{0};
            return false; // empty
        }
        if (r - c_ > kRingSlots) [[unlikely]] {
            // More claimed than the ring holds, or behind us: a lie. Resync
            // the producers to where this reader is; what they claimed is lost.
            corrupt_.fetch_add(1, std::memory_order_relaxed);
            std::uint64_t seen = r;
            word(hh_.reserve).compare_exchange_strong(seen, c_, std::memory_order_acq_rel);
            stall_end_ = c_;
            return false;
        }
        if (static_cast<std::int64_t>(stall_end_ - c_) > 0) { // claimed before a stall ran out
            corrupt_.fetch_add(1, std::memory_order_relaxed);
            ++c_;
            return true;
        }
        const auto now = std::chrono::steady_clock::now();
        if (stall_pos_ != c_) { // a producer is copying: give it time
            stall_pos_ = c_;
            stall_since_ = now;
            stall_reserve_ = r;
            return false;
        }
        if (now - stall_since_ < kStallLimit) return false;
        // Skip it, and every claim as old that is still unpublished.
        corrupt_.fetch_add(1, std::memory_order_relaxed);
        stall_end_ = stall_reserve_;
        ++c_;
        stall_pos_ = ~std::uint64_t{0};
        return true;
    }

    const Segment& s_;
    HostHeader& hh_;
    std::atomic<std::uint64_t>& corrupt_;
    std::uint64_t c_; // private: the next position to read
    std::uint32_t empty_pulls_ = 0;               // in a row, since the last look at `reserve`
    std::uint64_t stall_pos_ = ~std::uint64_t{0}; // the unpublished position being timed
    std::uint64_t stall_reserve_ = 0;           // the producers' index when that began
    std::uint64_t stall_end_ = c_;              // unpublished positions below it: skipped at once
    std::chrono::steady_clock::time_point stall_since_{};
};

} // namespace rdmasim::net::shm
