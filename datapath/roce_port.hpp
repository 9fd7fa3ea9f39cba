// A port's RoCE side (datapath/README.md, "RoCE transport"): the QPs by
// number, the frame -> QP demultiplexing, their timers, and the port's
// RoCE counters. A RoCE frame the port hands over ends here in exactly one
// outcome: a parse drop (net::RoceDrop), `unknown_qp`, or the QP's RoceRx.
// Same threading as RoceQp: every call under the port lock.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>

#include "datapath/roce_qp.hpp"
#include "net/roce_frame.hpp"

namespace rdmasim::datapath {

struct RocePortCounters {
    RoceCounters qps; // the sum of every attached QP's counters (each QP adds as it counts)
    Counter frames;   // RoCE frames offered: = parse drops + unknown_qp + qps.rx_frames
    std::array<Counter, net::kRoceDropCount> parse_drops; // by net::RoceDrop (index 0 unused)
    Counter unknown_qp; // BTH DestQP names no attached QP (the port answers nothing)
};

class RocePort {
public:
    // The counters a QP of this port must be constructed with (RoceQp's port_counters).
    [[nodiscard]] RoceCounters* qp_counters() noexcept { return &counters_.qps; }

    // Attaching allocates (set-up only); false when the QPN is taken.
    bool attach(RoceQp& qp);
    void detach(std::uint32_t qpn) noexcept;

    // One frame (no FCS) the port classified as RoCE v2 (UDP 4791): parsed,
    // handed to the QP its BTH names. Returns the QP's outcome, or nullopt
    // for a parse drop or an unknown QP (counted here).
    std::optional<RoceRx> ingress(std::span<const std::uint8_t> frame,
                                  std::uint64_t now_ns) noexcept;

    // Fires every attached QP's timers due at `now_ns`.
    void service(std::uint64_t now_ns) noexcept;
    // The earliest deadline over the attached QPs (a scan), or kNoDeadline.
    [[nodiscard]] std::uint64_t next_deadline_ns() const noexcept;

    [[nodiscard]] const RocePortCounters& counters() const noexcept { return counters_; }
    [[nodiscard]] RoceQp* find(std::uint32_t qpn) const noexcept;

private:
    std::unordered_map<std::uint32_t, RoceQp*> qps_;
    RocePortCounters counters_;
};

} // namespace rdmasim::datapath
