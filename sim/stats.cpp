#include "sim/stats.hpp"

#include <string>

#include "device/objects.hpp"

namespace rdmasim::sim {

nlohmann::json drops_json(const datapath::RxCounters& c) {
    nlohmann::json drops = nlohmann::json::object();
    for (std::size_t i = 0; i < datapath::kDropKinds; ++i)
        drops[std::string(datapath::drop_name(static_cast<datapath::Drop>(i)))] = c.drops[i].get();
    return drops;
}

nlohmann::json pacing_json(const PacingStats& p) {
    const auto us = [](std::uint64_t ns) { return static_cast<double>(ns) / 1e3; };
    const auto s = [](std::uint64_t ns) { return static_cast<double>(ns) / 1e9; };
    return {
        {"frames", p.frames()},
        {"p50_us", us(p.quantile_ns(0.50))},
        {"p99_us", us(p.quantile_ns(0.99))},
        {"max_us", us(p.max_ns())},
        {"schedule_s", s(p.schedule_ns())},
        {"elapsed_s", s(p.elapsed_ns())},
    };
}

nlohmann::json counters_json(const datapath::RxCounters& c) {
    return {
        {"frames", c.frames.get()},
        {"bytes", c.bytes.get()},
        {"delivered", c.delivered.get()},
        {"delivered_bytes", c.delivered_bytes.get()},
        {"drops", drops_json(c)},
        {"delay_drop_waits", c.delay_drop_waits.get()},
        {"fcs_bad", c.fcs_bad.get()},
        {"flushed_wqes", c.flushed_wqes.get()},
        {"flush_cq_overflow", c.flush_cq_overflow.get()},
        {"sniffer_copies", c.sniffer_copies.get()},
    };
}

nlohmann::json queue_json(const datapath::RxQueue& q, bool destroyed) {
    const bool wq = q.kind() == datapath::QueueKind::wq;
    nlohmann::json out = {
        {"qp_num", q.qp_num()},
        {"kind", wq ? "wq" : "qp"},
        {"index", wq ? nlohmann::json(static_cast<const device::Wq*>(q.owner())->index) : nlohmann::json()},
        {"destroyed", destroyed},
        {"held", q.held()},
    };
    out.update(counters_json(q.counters()));
    return out;
}

nlohmann::json arp_json(const datapath::NeighbourCounters& c) {
    return {
        {"arp_frames", c.arp_frames.get()},
        {"arp_malformed", c.arp_malformed.get()},
        {"arp_requests_answered", c.arp_requests_answered.get()},
        {"arp_requests_learned", c.arp_requests_learned.get()},
        {"arp_replies_learned", c.arp_replies_learned.get()},
        {"arp_entries_updated", c.arp_entries_updated.get()},
        {"arp_requests_sent", c.arp_requests_sent.get()},
        {"arp_resolved", c.arp_resolved.get()},
        {"arp_resolve_failures", c.arp_resolve_failures.get()},
        {"arp_cache_evictions", c.arp_cache_evictions.get()},
        {"arp_address_conflicts", c.arp_address_conflicts.get()},
    };
}

nlohmann::json roce_json(const datapath::RocePortCounters& c, const datapath::ArpWaitCounters& w,
                         const datapath::cm::AgentCounters& cm) {
    nlohmann::json rx = nlohmann::json::object();
    for (std::size_t i = 0; i < datapath::kRoceRxKinds; ++i)
        rx[std::string(datapath::roce_rx_name(static_cast<datapath::RoceRx>(i)))] = c.qps.rx[i].get();
    nlohmann::json parse = nlohmann::json::object();
    for (std::size_t i = 1; i < net::kRoceDropCount; ++i)
        parse[net::roce_drop_name(static_cast<net::RoceDrop>(i))] = c.parse_drops[i].get();
    const datapath::RoceCounters& q = c.qps;
    return {
        {"frames", c.frames.get()},
        {"parse_drops", parse},
        {"unknown_qp", c.unknown_qp.get()},
        {"gsi_mads", c.gsi_mads.get()},
        {"family_out", c.family_out.get()},
        {"mcast_frames", c.mcast_frames.get()},
        {"mcast_copies", c.mcast_copies.get()},
        {"mcast_loopback", c.mcast_loopback.get()},
        {"cm",
         {{"mads_sent", cm.mads_sent.get()},
          {"mads_received", cm.mads_received.get()},
          {"mads_resent", cm.mads_resent.get()},
          {"mads_refused", cm.mads_refused.get()},
          {"mads_unmatched", cm.mads_unmatched.get()},
          {"rej_no_listener", cm.rej_no_listener.get()}}},
        {"rx_frames", q.rx_frames.get()},
        {"rx", rx},
        {"tx_packets", q.tx_packets.get()},
        {"tx_bytes", q.tx_bytes.get()},
        {"retransmitted", q.retransmitted.get()},
        {"timeouts", q.timeouts.get()},
        {"ack_timer_holds", q.ack_timer_holds.get()},
        {"seq_naks_received", q.seq_naks_received.get()},
        {"slow_restarts", q.slow_restarts.get()},
        {"rnr_naks_received", q.rnr_naks_received.get()},
        {"acks_sent", q.acks_sent.get()},
        {"naks_sent", q.naks_sent.get()},
        {"read_responses_sent", q.read_responses_sent.get()},
        {"loopback_frames", c.loopback_frames.get()},
        {"loopback_overflow", c.loopback_overflow.get()},
        {"requests_held", c.requests_held.get()},
        {"requests_held_overflow", c.requests_held_overflow.get()},
        {"tx_wire", c.tx_wire.get()},
        {"tx_unroutable", c.tx_unroutable.get()},
        {"arp_wait",
         {{"queued", w.queued.get()},
          {"sent", w.sent.get()},
          {"unresolved", w.unresolved.get()},
          {"overflow", w.overflow.get()}}},
    };
}

nlohmann::json addresses_json(const device::DeviceIdentity& id) {
    return {{"mac", net::to_string(id.mac)},
            {"ipv4", net::to_string(id.ipv4)},
            {"ipv6", net::to_string(id.ipv6)},
            {"mtu", id.mtu}};
}

nlohmann::json faults_json(const FaultCounts& c) {
    nlohmann::json out = nlohmann::json::object();
    for (std::size_t k = 0; k < c.size(); ++k)
        out[std::string(fault_kind_name(static_cast<FaultKind>(k)))] = c[k];
    return out;
}

} // namespace rdmasim::sim
