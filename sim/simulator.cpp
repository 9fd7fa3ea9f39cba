#include "sim/simulator.hpp"

#include <endian.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "device/device.hpp"
#include "device/registry.hpp"
#include "net/link_channel.hpp"
#include "net/memory_source.hpp"
#include "net/vde_wire.hpp"
#include "sim/addresses.hpp"
#include "sim/device_io.hpp"
#include "sim/device_stats.hpp"
#include "sim/faulty_sink.hpp"
#include "sim/faulty_source.hpp"
#include "sim/verb_faults.hpp"
#include "sim/logging.hpp"

namespace rdmasim::sim {

Result<std::unique_ptr<Simulator>> Simulator::create(const Config& config, const SourceWrap& wrap) {
    if (auto r = config.validate(); !r) return r.error();
    std::vector<std::unique_ptr<net::FrameSource>> sources(config.devices);
    std::vector<std::vector<std::shared_ptr<net::FrameSink>>> sinks(config.devices);
    for (std::uint32_t i = 0; i < config.devices; ++i) {
        auto io = open_device_io(config, i);
        if (!io) return io.error(); // what was opened for devices before i closes here
        sources[i] = std::move(io.value().source);
        if (wrap) sources[i] = wrap(i, std::move(sources[i]));
        sinks[i] = std::move(io.value().sinks);
    }
    // Links (sim/README.md, "Links"): each direction is a channel, the sink of
    // one device's port and the source of the other's (validate() made sure
    // a linked device has no other source).
    for (const auto& [a, b] : config.links) {
        for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
            auto ch = net::LinkChannel::open(fmt::format("link rdmasim{} -> rdmasim{}", from, to));
            if (!ch) return ch.error();
            sinks[from].push_back(borrowed_sink(*ch.value()));
            log().info("rdmasim{}: {}", to, ch.value()->describe());
            sources[to] = std::move(ch.value());
        }
    }
    auto sim = build(config, std::move(sources));
    if (!sim) return sim;
    Simulator& s = *sim.value();
    // Transmit-side faults (sim/README.md, "Fault injection"): one FaultySink
    // in front of all of a device's sinks, so every sink gets the same frames.
    for (std::uint32_t i = 0; i < config.devices; ++i) {
        if (sinks[i].empty() || !FaultySink::wanted(config.fault_plan, i)) continue;
        auto faulty = FaultySink::wrap(std::move(sinks[i]), config.fault_plan, i, s.trace_.get());
        if (!faulty) return faulty.error();
        s.faulty_sinks_[i] = faulty.value().get();
        sinks[i] = {std::shared_ptr<net::FrameSink>(std::move(faulty.value()))};
    }
    for (std::uint32_t i = 0; i < config.devices; ++i) {
        std::lock_guard lock(s.devices_[i]->port.mutex());
        for (auto& sink : sinks[i]) s.devices_[i]->port.attach_sink(*sink);
    }
    for (std::uint32_t i = 0; i < config.devices; ++i)
        for (auto& sink : sinks[i]) s.sinks_[i].push_back(std::move(sink));
    // Only now: with `start now` an engine may send (an ARP reply, a link's
    // frame) at once, and a sink attached later would miss it.
    s.start_engines();
    return sim;
}

Result<std::unique_ptr<Simulator>> Simulator::create(
    const Config& config, std::vector<std::unique_ptr<net::FrameSource>> sources) {
    auto sim = build(config, std::move(sources));
    if (sim) sim.value()->start_engines();
    return sim;
}

void Simulator::start_engines() {
    for (auto& engine : engines_) engine->start();
}

Result<std::unique_ptr<Simulator>> Simulator::build(
    const Config& config, std::vector<std::unique_ptr<net::FrameSource>> sources) {
    if (auto r = config.validate(); !r) return r.error();
    std::unique_ptr<Simulator> sim(new Simulator);
    sim->config_ = config;
    if (!config.trace.empty()) {
        auto trace = Trace::open(config.trace);
        if (!trace) return trace.error();
        sim->trace_ = std::move(trace.value());
    }
    // Addresses (sim/README.md, "Addresses"): derived ones avoid the
    // configured ones, but a configured MAC may equal another device's
    // derived one after it moved.
    std::vector<device::DeviceIdentity> ids;
    for (std::uint32_t i = 0; i < config.devices; ++i) {
        ids.push_back(device_identity(config, i));
        for (std::uint32_t j = 0; j < i; ++j) {
            if (ids[j].mac == ids[i].mac)
                return make_error(EINVAL, fmt::format("configuration: rdmasim{} and rdmasim{} would both have mac {}: "
                                                      "set mac.N for each", j, i, net::to_string(ids[i].mac)));
            if (ids[j].ipv4 == ids[i].ipv4)
                return make_error(EINVAL, fmt::format("configuration: rdmasim{} and rdmasim{} would both have ip {}: "
                                                      "set ip.N for each", j, i, net::to_string(ids[i].ipv4)));
        }
    }
    sources.resize(config.devices);
    for (std::uint32_t i = 0; i < config.devices; ++i) {
        auto dev = device::make_device(ids[i], config.caps);
        if (!sources[i]) {
            auto empty = std::make_unique<net::MemorySource>();
            empty->close();
            sources[i] = std::move(empty);
        }
        const FaultySource* faulty = nullptr;
        // Only a plan with faults for this device wraps its source (no plan, no cost).
        if (FaultySource::wanted(config.fault_plan, i)) {
            auto wrapped = FaultySource::wrap(std::move(sources[i]), config.fault_plan, i, dev.get(),
                                              sim->trace_.get());
            if (!wrapped) return wrapped.error();
            faulty = wrapped.value().get();
            sources[i] = std::move(wrapped.value());
        }
        sim->faulty_.push_back(faulty);
        sim->faulty_sinks_.push_back(nullptr);
        auto verb_faults = std::make_unique<VerbFaults>(config.fault_plan, i, sim->trace_.get());
        if (sim->trace_) dev->trace = sim->trace_->hook(i);
        if (verb_faults->empty()) verb_faults.reset();
        dev->verb_faults.store(verb_faults.get());
        sim->verb_faults_.push_back(std::move(verb_faults));
        auto engine = make_engine(*dev, std::move(sources[i]), config);
        engine->set_device_index(i);
        dev->hooks = engine.get();
        if (!config.report.empty()) {
            sim->timelines_.push_back(std::make_unique<Timeline>(dev->port));
            engine->set_timeline(sim->timelines_.back().get());
        }
        sim->devices_.push_back(std::move(dev));
        sim->engines_.push_back(std::move(engine));
    }
    sim->sinks_.resize(config.devices);
    if (!config.stats.empty()) // sim/README.md, "Statistics"
        for (auto& dev : sim->devices_) {
            auto& stats = sim->stats_.emplace_back(std::make_unique<DeviceStats>());
            dev->stats = stats.get();
            std::lock_guard lock(dev->port.mutex());
            dev->port.attach_sink(*stats);
        }
    for (auto& dev : sim->devices_) device::register_device(dev.get());
    return sim;
}

namespace {

// What a wire or a link lost, said once at the end: a send refused by the
// peer (its queue full, nobody plugged in) or a full link is counted, never
// logged per frame.
void report_losses(std::size_t index, const net::FrameSource& source) {
    if (const auto* wire = dynamic_cast<const net::VdeWire*>(&source)) {
        const auto& c = wire->wire_counters();
        const auto failed = c.tx_failures.load();
        if (failed != 0)
            log().warn("rdmasim{}: wire {}: {} frame(s) sent, {} not sent (last error: {})", index, wire->url(),
                       c.tx_frames.load(), failed, std::strerror(c.tx_last_errno.load()));
        else
            log().info("rdmasim{}: wire {}: {} frame(s) sent, {} received", index, wire->url(),
                       c.tx_frames.load(), wire->counters().frames);
    } else if (const auto* link = dynamic_cast<const net::LinkChannel*>(&source)) {
        if (link->overflow_drops() != 0)
            log().warn("rdmasim{}: {}: {} frame(s) dropped, its queue of {} full", index, link->describe(),
                       link->overflow_drops(), link->capacity());
    }
}

} // namespace

void Simulator::report_losses() const {
    for (std::size_t i = 0; i < engines_.size(); ++i) {
        sim::report_losses(i, engines_[i]->source());
        const datapath::Port& port = devices_[i]->port;
        if (const auto n = port.neighbours().counters().arp_address_conflicts.get(); n != 0)
            log().warn("rdmasim{}: {} ARP frame(s) from another MAC claimed this port's address {}: "
                       "give each host its own `ip` (and `mac`)",
                       i, n, net::to_string(port.neighbours().addresses().ipv4));
    }
}

Simulator::~Simulator() {
    for (auto& engine : engines_) engine->stop();
    for (std::size_t i = 0; i < sinks_.size(); ++i) {
        std::lock_guard lock(devices_[i]->port.mutex());
        if (faulty_sinks_[i]) faulty_sinks_[i]->flush(); // what it holds back still goes out
        for (auto& sink : sinks_[i]) devices_[i]->port.detach_sink(*sink);
        if (i < stats_.size()) devices_[i]->port.detach_sink(*stats_[i]);
    }
    for (auto& dev : devices_) {
        device::unregister_device(dev.get());
        dev->hooks = nullptr;
        dev->verb_faults.store(nullptr);
        dev->trace = nullptr;
        dev->stats = nullptr;
    }
}

const datapath::RxCounters& Simulator::port_counters(std::size_t i) const noexcept {
    return devices_[i]->port.counters();
}

const datapath::RxCounters* Simulator::queue_counters(std::size_t i,
                                                      std::uint32_t qpn) const noexcept {
    const datapath::Port& port = devices_[i]->port;
    std::lock_guard lock(port.mutex());
    const datapath::RxQueue* q = port.find_queue(qpn);
    return q ? &q->counters() : nullptr;
}

FaultCounts Simulator::faults_injected(std::size_t i) const {
    FaultCounts counts(static_cast<std::size_t>(FaultKind::verb_fail) + 1, 0);
    if (faulty_[i]) counts = faulty_[i]->injected();
    if (faulty_sinks_[i]) {
        std::lock_guard lock(devices_[i]->port.mutex()); // sends fire them under it
        const FaultCounts& tx = faulty_sinks_[i]->injected();
        for (std::size_t k = 0; k < counts.size(); ++k) counts[k] += tx[k];
    }
    if (verb_faults_[i]) counts[static_cast<std::size_t>(FaultKind::verb_fail)] = verb_faults_[i]->injected();
    return counts;
}

const TxFaultCounters* Simulator::tx_fault_counters(std::size_t i) const noexcept {
    return faulty_sinks_[i] ? &faulty_sinks_[i]->counters() : nullptr;
}

std::vector<std::uint64_t> Simulator::verb_fails(std::size_t i) const {
    if (verb_faults_[i]) return verb_faults_[i]->injected_by_verb();
    return std::vector<std::uint64_t>(device::kVerbNames.size(), 0);
}

bool Simulator::idle() const noexcept {
    for (const auto& e : engines_)
        if (!e->idle()) return false;
    return true;
}

bool Simulator::wait_idle(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (auto& e : engines_) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            until - std::chrono::steady_clock::now());
        if (!e->wait_idle(left.count() > 0 ? left : std::chrono::milliseconds(0))) return false;
    }
    return true;
}

} // namespace rdmasim::sim
