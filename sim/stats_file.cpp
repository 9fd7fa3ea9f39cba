#include "sim/stats_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fmt/format.h>
#include <mutex>

#include "device/device.hpp"
#include "device/verb_faults.hpp"
#include "net/link_channel.hpp"
#include "net/shm_wire.hpp"
#include "net/vde_wire.hpp"
#include "sim/device_stats.hpp"
#include "sim/live_io.hpp"
#include "sim/output_file.hpp"
#include "sim/stats.hpp"

namespace rdmasim::sim {

namespace {

nlohmann::json config_json(const Config& c) {
    nlohmann::json io = nlohmann::json::array();
    for (std::uint32_t i = 0; i < c.devices; ++i)
        for (const auto& [key, member] : Config::device_keys()) {
            const auto& values = c.*member;
            if (i < values.size() && !values[i].empty())
                io.push_back({{"device", i}, {"key", key}, {"value", values[i]}});
        }
    nlohmann::json links = nlohmann::json::array();
    for (const auto& [a, b] : c.links) links.push_back(fmt::format("rdmasim{}:rdmasim{}", a, b));
    return {
        {"devices", c.devices},
        {"io", io},
        {"links", links},
        {"engine", c.engine == EngineKind::inline_ ? "inline" : "thread"},
        {"progress", c.progress == Progress::auto_ ? "auto" : c.progress == Progress::thread ? "thread" : "inline"},
        {"speed", c.speed},
        {"burst", c.burst},
        {"faults", c.faults},
        {"seed", c.fault_plan.seed},
        {"trace", c.trace},
    };
}

nlohmann::json source_json(const Engine& engine) {
    const net::FrameSource& s = engine.source();
    const net::SourceCounters& c = s.counters();
    return {
        {"description", engine.describe_source()},
        {"frames", c.frames},
        {"bytes", c.bytes},
        {"truncated_records", c.truncated_records},
        {"synthesized_headers", c.synthesized_headers},
        {"skipped_records", c.skipped_records},
        {"kernel_drops", c.kernel_drops},
        {"failure", std::string(s.failure())},
    };
}

// Frames the port's sinks could not pass on: a wire's peer refused them, a
// link's queue was full, the kernel refused them on a live interface, a
// transmit backlog overflowed or still held them when the run ended.
std::uint64_t not_sent(const std::vector<std::shared_ptr<net::FrameSink>>& sinks) {
    std::uint64_t n = 0;
    for (const auto& sink : sinks) {
        if (const auto* wire = dynamic_cast<const net::VdeWire*>(sink.get()))
            n += wire->wire_counters().tx_failures.load();
        else if (const auto* shm = dynamic_cast<const net::ShmWire*>(sink.get()))
            n += shm->wire_counters().tx_no_peer.load() + shm->wire_counters().tx_dropped.load();
        else if (const auto* link = dynamic_cast<const net::LinkChannel*>(sink.get()))
            n += link->overflow_drops();
        else if (const net::SendCounters* live = live_send_counters(*sink))
            n += live->failures();
        if (const net::TxBacklogCounters* b = sink->backlog_counters())
            n += b->overflow.load() + b->waiting.load(); // dropped, or never sent
    }
    return n;
}

// The wire's transmit backlog, if the device's sinks have one: how often
// and how long the port was paused (net/README.md, "Lossless links").
nlohmann::json backlog_json(const std::vector<std::shared_ptr<net::FrameSink>>& sinks) {
    for (const auto& sink : sinks)
        if (const net::TxBacklogCounters* b = sink->backlog_counters())
            return {{"queued", b->queued.load()},       {"overflow", b->overflow.load()},
                    {"pauses", b->pauses.load()},       {"paused_ns", b->paused_ns.load()},
                    {"max_frames", b->max_frames.load()}, {"max_bytes", b->max_bytes.load()},
                    {"waiting", b->waiting.load()}};
    return nullptr;
}

// The device's wire, if it has one: what it ignored or dropped before the
// port saw anything (net/README.md, "Virtual wires").
nlohmann::json wire_json(const std::vector<std::shared_ptr<net::FrameSink>>& sinks) {
    for (const auto& sink : sinks)
        if (const auto* wire = dynamic_cast<const net::VdeWire*>(sink.get())) {
            const net::WireCounters& c = wire->wire_counters();
            return {{"rx_empty", c.rx_empty.load()},
                    {"rx_strangers", c.rx_strangers.load()},
                    {"rx_errors", c.rx_errors.load()},
                    {"tx_frames", c.tx_frames.load()},
                    {"tx_failures", c.tx_failures.load()}};
        } else if (const auto* shm = dynamic_cast<const net::ShmWire*>(sink.get())) {
            const net::ShmWireCounters& c = shm->wire_counters();
            return {{"host_slot", shm->host()},     {"tx_frames", c.tx_frames.load()},
                    {"tx_floods", c.tx_floods.load()}, {"tx_no_peer", c.tx_no_peer.load()},
                    {"tx_dropped", c.tx_dropped.load()}, {"doorbells", c.doorbells.load()},
                    {"rx_frames", shm->counters().frames}, {"rx_corrupt", c.rx_corrupt.load()},
                    {"peers_seen", c.peers_seen.load()}, {"peers_gone", c.peers_gone.load()}};
        }
    return nullptr;
}

nlohmann::json verb_fails_json(const std::vector<std::uint64_t>& fails) {
    nlohmann::json out = nlohmann::json::object();
    for (std::size_t v = 0; v < device::kVerbNames.size(); ++v)
        out[std::string(device::kVerbNames[v])] = v < fails.size() ? fails[v] : 0;
    return out;
}

nlohmann::json device_json(Simulator& sim, std::size_t i) {
    device::Device& dev = sim.device(i);
    const DeviceStats* stats = sim.device_stats(i);
    nlohmann::json out = {{"index", i}, {"name", dev.identity.name}};
    // Read before the port lock below: faults_injected takes it itself.
    const FaultCounts faults = sim.faults_injected(i);
    // The engines and the program's verbs count under the port lock: one
    // consistent picture per device.
    std::lock_guard lock(dev.port.mutex());
    out["source"] = source_json(sim.engine(i));
    out["port"] = counters_json(dev.port.counters());
    out["port"]["held"] = dev.port.held_frames();
    out["port"]["arp"] = arp_json(dev.port.neighbours().counters());
    out["port"]["roce"] = roce_json(dev.port.roce().counters(), dev.port.arp_wait_counters(),
                                     dev.port.cm().counters());
    out["addresses"] = addresses_json(dev.identity);
    nlohmann::json queues = nlohmann::json::array();
    if (stats)
        for (const nlohmann::json& q : stats->destroyed()) queues.push_back(q);
    (void)dev.port.find_queue_if([&](const datapath::RxQueue& q) {
        queues.push_back(queue_json(q, false));
        return false; // visit them all
    });
    std::stable_sort(queues.begin(), queues.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
        return a["qp_num"].get<std::uint32_t>() < b["qp_num"].get<std::uint32_t>();
    });
    out["queues"] = std::move(queues);
    out["queues_unrecorded"] = stats ? stats->unrecorded() : 0;
    out["send"] = {{"frames", stats ? stats->sent_frames() : 0},
                   {"bytes", stats ? stats->sent_bytes() : 0},
                   {"not_sent", not_sent(sim.sinks(i))}};
    if (nlohmann::json wire = wire_json(sim.sinks(i)); !wire.is_null()) out["wire"] = std::move(wire);
    if (nlohmann::json b = backlog_json(sim.sinks(i)); !b.is_null()) out["tx_backlog"] = std::move(b);
    out["faults"] = faults_json(faults);
    if (const TxFaultCounters* tx = sim.tx_fault_counters(i))
        out["tx_faults"] = {{"sent", tx->sent.load()},           {"duplicated", tx->duplicated.load()},
                            {"passed", tx->passed.load()},       {"fault_drops", tx->fault_drops.load()},
                            {"fcs_drops", tx->fcs_drops.load()}, {"failed", tx->failed.load()},
                            {"held", tx->held.load()}};
    out["verb_fails"] = verb_fails_json(sim.verb_fails(i));
    if (sim.config().speed > 0) out["pacing"] = pacing_json(sim.engine(i).pacing_stats());
    return out;
}

} // namespace

nlohmann::json stats_document(Simulator& sim, std::string_view writer) {
    nlohmann::json devices = nlohmann::json::array();
    for (std::size_t i = 0; i < sim.device_count(); ++i) devices.push_back(device_json(sim, i));
    return {
        {"schema", kStatsSchema},
        {"writer", writer},
        {"program", program_invocation_name ? program_invocation_name : ""},
        {"config", config_json(sim.config())},
        {"devices", std::move(devices)},
    };
}

Result<void> write_stats_file(const std::string& path, const nlohmann::json& doc) {
    // Strings that are not UTF-8 (a path in another encoding) are written with
    // U+FFFD rather than refused.
    return write_output_file("stats", path, doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

Result<void> write_stats(Simulator& sim, std::string_view writer) noexcept {
    const std::string& path = sim.config().stats;
    if (path.empty()) return {};
    try {
        return write_stats_file(path, stats_document(sim, writer));
    } catch (const std::exception& e) { // std::bad_alloc, a JSON error
        return make_error(EIO, fmt::format("stats {}: {}", path, e.what()));
    }
}

} // namespace rdmasim::sim
