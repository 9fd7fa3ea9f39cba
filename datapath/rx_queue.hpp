// One receive queue's pipeline (a WQ, or the receive side of a plain
// raw-packet QP): ring of posted WQEs, offloads, delay-drop holding, scatter,
// completions, counters. The engine side (receive / release / expire) runs
// under the port lock; post() runs under the queue's post lock.
#pragma once

#include <atomic>
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

struct RxQueueConfig {
    std::uint32_t ring_entries = 0; // rounded up to a power of two
    std::uint32_t max_sge = 1;
    std::uint32_t qp_num = 0;       // reported in completions
    WqSettings settings;
    std::uint32_t hold_frames = 256;      // delay-drop storage, used only with settings.delay_drop
    std::uint32_t hold_bytes = 1u << 20;
};

class RxQueue {
public:
    // Allocates. `port` counters are updated beside the queue's own.
    void init(const RxQueueConfig& config, CqRing* cq, const MrTable* mrs, const void* pd,
              RxCounters* port);

    [[nodiscard]] RecvRing& ring() noexcept { return ring_; }
    [[nodiscard]] const RxCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] const WqSettings& settings() const noexcept { return settings_; }
    [[nodiscard]] std::uint32_t held() const noexcept { return hold_.size(); }
    [[nodiscard]] std::uint32_t qp_num() const noexcept { return qp_num_; }

    // Control side, under the port lock.
    void set_ready(bool ready) noexcept { ready_ = ready; }
    [[nodiscard]] bool ready() const noexcept { return ready_; }
    void set_strip_cvlan(bool on) noexcept { settings_.strip_cvlan = on; }
    // Completes every posted WQE with IBV_WC_WR_FLUSH_ERR, in posting order.
    void flush() noexcept;
    // Forgets posted WQEs (RESET -> RDY).
    void reset_ring() noexcept { ring_.reset(); }
    // Drops every held frame as Drop::discarded (the queue is going away or to ERR).
    void discard_held() noexcept;

    // Engine side. `delay_drop_armed` is the device's delay-drop mode. A
    // non-primary frame is an extra copy (a sniffer flow's): it is counted by
    // the queue only, never held, and does not touch the port's balance.
    void receive(const net::Frame& frame, const net::ParsedFrame& parsed, std::uint64_t now_ns,
                 bool delay_drop_armed, bool primary = true) noexcept;
    // Delivers held frames while WQEs are posted. Returns how many it delivered.
    std::uint32_t release_held(std::uint64_t now_ns) noexcept;
    // Drops every held frame when the oldest has waited `timeout_ns`.
    // Returns true when a timeout fired.
    bool expire_held(std::uint64_t now_ns, std::uint64_t timeout_ns) noexcept;
    [[nodiscard]] bool has_held() const noexcept { return !hold_.empty(); }
    [[nodiscard]] std::uint64_t oldest_held_ns() const noexcept { return hold_.front_arrival_ns(); }

private:
    void deliver(const net::Frame& frame, const net::ParsedFrame& parsed, std::uint64_t now_ns,
                 RxCounters& port) noexcept;
    void drop(Drop d, RxCounters& port) noexcept {
        counters_.drop(d);
        port.drop(d);
    }

    RecvRing ring_;
    HoldQueue hold_;
    WqSettings settings_;
    CqRing* cq_ = nullptr;
    const MrTable* mrs_ = nullptr;
    const void* pd_ = nullptr;
    RxCounters* port_ = nullptr;
    RxCounters counters_;
    RxCounters uncounted_; // where non-primary copies' port updates go
    std::uint32_t qp_num_ = 0;
    bool ready_ = false;
    RxImage image_; // scratch for the frame in flight
};

} // namespace rdmasim::datapath
