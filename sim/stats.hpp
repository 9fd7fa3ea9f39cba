// Counters as JSON and as a human table: per port and per receive queue.
#pragma once

#include <nlohmann/json.hpp>

#include "datapath/arp_wait.hpp"
#include "datapath/cm/agent.hpp"
#include "datapath/counters.hpp"
#include "datapath/neighbours.hpp"
#include "datapath/roce/port.hpp"
#include "datapath/rx_queue.hpp"
#include "device/caps.hpp"
#include "sim/frame_faults.hpp"
#include "sim/pacing_stats.hpp"

namespace rdmasim::sim {

// {"frames", "bytes", "delivered", "delivered_bytes", "drops": {reason: n}, ...}
[[nodiscard]] nlohmann::json counters_json(const datapath::RxCounters& c);
// The drops object alone: every reason, zero or not, so the schema is stable.
[[nodiscard]] nlohmann::json drops_json(const datapath::RxCounters& c);
// One receive queue: {"qp_num", "kind": "wq" or "qp", "index": a WQ's
// creation order on its device (what wq-fatal's wq= counts; null for a QP),
// "destroyed", "held": frames it holds for a WQE, then counters_json()'s
// fields}. Under the port lock.
[[nodiscard]] nlohmann::json queue_json(const datapath::RxQueue& q, bool destroyed);
// Faults injected, by kind in the plan's spelling: every kind, zero or not.
[[nodiscard]] nlohmann::json faults_json(const FaultCounts& c);
// The host's ARP handling on a port (datapath/neighbours.hpp), by counter name.
[[nodiscard]] nlohmann::json arp_json(const datapath::NeighbourCounters& c);
// The port's RoCE side (datapath/roce/port.hpp): frames offered, parse drops
// by reason, outcomes by RoceRx name (summed over the QPs), what was sent,
// looped back, and waited for ARP; QP1's datagrams and the port's CM
// (datapath/cm/agent.hpp: MADs sent, received, resent, refused, unmatched).
[[nodiscard]] nlohmann::json roce_json(const datapath::RocePortCounters& c,
                                       const datapath::ArpWaitCounters& w,
                                       const datapath::cm::AgentCounters& cm);
// A device's port addresses and MTU as text: mac, ipv4, ipv6, mtu.
[[nodiscard]] nlohmann::json addresses_json(const device::DeviceIdentity& id);
// {"frames", "p50_us", "p99_us", "max_us": lateness, "schedule_s": the last
// frame's due time, "elapsed_s": its arrival} (sim/README.md, "Waits and pacing").
[[nodiscard]] nlohmann::json pacing_json(const PacingStats& p);

} // namespace rdmasim::sim
