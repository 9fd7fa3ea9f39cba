// Frame accounting (datapath/README.md, "Counters and outcomes"). Every frame
// offered to a port ends in exactly one outcome: delivered, or one of the
// named drops (or it is still held). Each stage returns its outcome and each
// place (a port, a queue) counts it once, in its own RxCounters. Counters
// have a single writer at a time (whoever holds the port lock) and may be
// read from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

namespace rdmasim::datapath {

class Counter {
public:
    void add(std::uint64_t n = 1) noexcept {
        v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    [[nodiscard]] std::uint64_t get() const noexcept { return v_.load(std::memory_order_relaxed); }
    void reset() noexcept { v_.store(0, std::memory_order_relaxed); }

private:
    std::atomic<std::uint64_t> v_{0};
};

// Counted kinds: an enumeration ending in count_, one counter per value
// (KindCounters) and the name each is reported under (KindNames; the JSON
// and stats keys), kept beside the enumeration and checked whole by
// all_named. Drop here and RoceRx (roce/counters.hpp) are two.
template <class E> inline constexpr std::size_t kKinds = static_cast<std::size_t>(E::count_);
template <class E> using KindNames = std::array<std::string_view, kKinds<E>>;
template <class E> using KindCounters = std::array<Counter, kKinds<E>>;

template <std::size_t N>
[[nodiscard]] constexpr bool all_named(const std::array<std::string_view, N>& names) noexcept {
    for (std::string_view n : names)
        if (n.empty()) return false;
    return true;
}
template <class E>
[[nodiscard]] constexpr std::string_view kind_name(const KindNames<E>& names, E kind) noexcept {
    return names[static_cast<std::size_t>(kind)];
}
template <class E> [[nodiscard]] std::uint64_t kind_count(const KindCounters<E>& c, E kind) noexcept {
    return c[static_cast<std::size_t>(kind)].get();
}

// Why a frame was not delivered. Names are the JSON / stats keys.
enum class Drop : std::uint8_t {
    steering_miss,       // no flow rule matched
    truncated_capture,   // the source lost bytes (caplen < len)
    runt,                // shorter than an Ethernet header: no MAC would pass it
    fcs_error,           // its carried FCS does not match: the MAC drops it (CRC error)
    wq_not_ready,        // steered to a WQ that is not in RDY
    out_of_buffer,       // no WQE posted and no delay drop (rx_out_of_buffer)
    delay_drop_timeout,  // held for a WQE that did not come in time
    delay_drop_overflow, // held-frame storage full
    length_error,        // frame longer than the WQE (IBV_WC_LOC_LEN_ERR)
    protection_error,    // an SGE failed the MR check (IBV_WC_LOC_PROT_ERR)
    cq_overflow,         // the CQ had no room; the WQE stays posted
    fault_injected,      // dropped by the fault plan
    cqe_error,           // completed with an error status the fault plan injected (cqe-error)
    discarded,           // held or queued when its WQ, QP or device went away
    roce_undeliverable,  // RoCE to the port that no QP took (malformed, unknown QP)
    count_
};
inline constexpr std::size_t kDropKinds = kKinds<Drop>;
inline constexpr KindNames<Drop> kDropNames{
    "steering_miss",       "truncated_capture",   "runt_frames",   "fcs_errors",
    "wq_not_ready",        "rx_out_of_buffer",    "delay_drop_timeouts", "delay_drop_overflow",
    "length_errors",       "protection_errors",   "cq_overflow",   "fault_drops",
    "cqe_errors",          "discarded",           "roce_undeliverable"};
static_assert(all_named(kDropNames));

[[nodiscard]] constexpr std::string_view drop_name(Drop d) noexcept { return kind_name(kDropNames, d); }

// What one stage did with one frame.
enum class Fate : std::uint8_t { delivered, held, dropped };

// How a frame is handed to a queue: as the frame's one delivery, whose
// outcome is the frame's, or as a copy (a sniffer's, a DONT_TRAP match's),
// counted by the queue only and never held.
enum class Delivery : bool { copy, primary };
// Whether a frame that finds no WQE may wait for one (delay drop).
enum class MayWait : bool { no, yes };

// Eight bytes, returned in one register: built there, not from narrow
// stores to the stack that a wide reload cannot forward from.
struct RxOutcome {
    std::uint32_t byte_len = 0;      // when delivered: the completion's byte_len
    Fate fate = Fate::dropped;
    Drop drop = Drop::steering_miss; // meaningful when fate == dropped
    bool fcs_bad = false;            // the frame carried a bad FCS (an observation)

    [[nodiscard]] static constexpr RxOutcome dropped(Drop d) noexcept { return {0, Fate::dropped, d}; }
    [[nodiscard]] static constexpr RxOutcome held() noexcept { return {0, Fate::held}; }
};
static_assert(sizeof(RxOutcome) == 8);

// What a batch did (a release of held frames, a timeout, a flush): the sum
// of its outcomes, for the port to count in one go.
struct RxTally {
    std::uint32_t delivered = 0;
    std::uint64_t delivered_bytes = 0;
    std::uint32_t fcs_bad = 0;
    std::uint32_t flushed_wqes = 0;
    std::uint32_t flush_cq_overflow = 0; // of those, completions the full CQ did not take
    std::array<std::uint32_t, kDropKinds> drops{};

    void add(const RxOutcome& o) noexcept {
        if (o.fcs_bad) ++fcs_bad;
        if (o.fate == Fate::delivered) {
            ++delivered;
            delivered_bytes += o.byte_len;
        } else if (o.fate == Fate::dropped) {
            ++drops[static_cast<std::size_t>(o.drop)];
        }
    }
};

struct RxCounters {
    Counter frames;          // frames that reached this point (port: offered)
    Counter bytes;           // their wire bytes
    Counter delivered;       // successful completions
    Counter delivered_bytes; // byte_len summed over them
    KindCounters<Drop> drops;
    // Observations, not outcomes:
    Counter delay_drop_waits; // frames that had to wait for a WQE
    Counter fcs_bad;          // frames whose carried FCS does not match their bytes
    Counter flushed_wqes;     // WQEs completed with IBV_WC_WR_FLUSH_ERR
    Counter flush_cq_overflow; // of those, completions lost to a full CQ (an overrun)
    Counter sniffer_copies;   // extra copies delivered to sniffer flows

    void drop(Drop d) noexcept { drops[static_cast<std::size_t>(d)].add(); }
    // Counts one outcome (not the frame itself: `frames` is counted on arrival).
    void count(const RxOutcome& o) noexcept {
        if (o.fcs_bad) [[unlikely]]
            fcs_bad.add();
        switch (o.fate) {
        case Fate::delivered:
            delivered.add();
            delivered_bytes.add(o.byte_len);
            break;
        case Fate::held:
            delay_drop_waits.add();
            break;
        case Fate::dropped:
            drop(o.drop);
            break;
        }
    }
    void count(const RxTally& t) noexcept {
        if (t.delivered) {
            delivered.add(t.delivered);
            delivered_bytes.add(t.delivered_bytes);
        }
        if (t.fcs_bad) fcs_bad.add(t.fcs_bad);
        if (t.flushed_wqes) flushed_wqes.add(t.flushed_wqes);
        if (t.flush_cq_overflow) [[unlikely]]
            flush_cq_overflow.add(t.flush_cq_overflow);
        for (std::size_t i = 0; i < kDropKinds; ++i)
            if (t.drops[i]) drops[i].add(t.drops[i]);
    }
    [[nodiscard]] std::uint64_t drops_total() const noexcept {
        std::uint64_t n = 0;
        for (const auto& c : drops) n += c.get();
        return n;
    }
};

} // namespace rdmasim::datapath
