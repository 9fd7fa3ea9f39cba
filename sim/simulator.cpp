#include "sim/simulator.hpp"

#include <endian.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "device/device.hpp"
#include "device/registry.hpp"
#include "net/link_channel.hpp"
#include "net/memory_source.hpp"
#include "net/shm_wire.hpp"
#include "net/vde_wire.hpp"
#include "sim/addresses.hpp"
#include "sim/device_io.hpp"
#include "sim/device_stats.hpp"
#include "sim/family_bus.hpp"
#include "sim/fault_stage.hpp"
#include "sim/faulty_sink.hpp"
#include "sim/logging.hpp"
#include "sim/verb_faults.hpp"

namespace rdmasim::sim {

DeviceSlot::DeviceSlot() = default;
DeviceSlot::DeviceSlot(DeviceSlot&&) noexcept = default;
DeviceSlot& DeviceSlot::operator=(DeviceSlot&&) noexcept = default;
DeviceSlot::~DeviceSlot() = default;

namespace {

// Each device's source (through `wrap` when given) and sinks, as the
// configuration opens them.
Result<void> open_io(const Config& config, const Simulator::SourceWrap& wrap,
                     std::vector<std::unique_ptr<net::FrameSource>>& sources,
                     std::vector<std::vector<std::shared_ptr<net::FrameSink>>>& sinks) {
    for (std::uint32_t i = 0; i < config.devices; ++i) {
        auto io = open_device_io(config, i);
        if (!io) return io.error(); // what was opened for devices before i closes with the caller's lists
        sources[i] = std::move(io.value().source);
        if (wrap) sources[i] = wrap(i, std::move(sources[i]));
        sinks[i] = std::move(io.value().sinks);
    }
    return {};
}

// Links (sim/README.md, "Links"): each direction is a channel, the sink of
// one device's port and the source of the other's (validate() made sure
// a linked device has no other source).
Result<void> open_links(const Config& config, std::vector<std::unique_ptr<net::FrameSource>>& sources,
                        std::vector<std::vector<std::shared_ptr<net::FrameSink>>>& sinks) {
    for (const auto& [a, b] : config.links) {
        for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
            auto ch = net::LinkChannel::open(fmt::format("link rdmasim{} -> rdmasim{}", from, to));
            if (!ch) return ch.error();
            sinks[from].push_back(borrowed_sink(*ch.value()));
            log().info("rdmasim{}: {}", to, ch.value()->describe());
            sources[to] = std::move(ch.value());
        }
    }
    return {};
}

// Addresses (sim/README.md, "Addresses"): derived ones avoid the configured
// ones, but a configured MAC may equal another device's derived one after it
// moved.
Result<std::vector<device::DeviceIdentity>> device_identities(const Config& config) {
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
    return ids;
}

} // namespace

std::unique_ptr<net::FrameSource> Simulator::empty_source() {
    auto empty = std::make_unique<net::MemorySource>();
    empty->close();
    return empty;
}

Result<std::unique_ptr<Simulator>> Simulator::create(const Config& config, const SourceWrap& wrap) {
    if (auto r = config.validate(); !r) return r.error();
    std::vector<std::unique_ptr<net::FrameSource>> sources(config.devices);
    SinkLists sinks(config.devices);
    if (auto r = open_io(config, wrap, sources, sinks); !r) return r.error();
    if (auto r = open_links(config, sources, sinks); !r) return r.error();
    auto sim = build(config, std::move(sources));
    if (!sim) return sim;
    if (auto r = sim.value()->attach_sinks(std::move(sinks)); !r) return r.error();
    // Only now: with `start now` an engine may send (an ARP reply, a link's
    // frame) at once, and a sink attached later would miss it.
    sim.value()->start_engines();
    return sim;
}

Result<std::unique_ptr<Simulator>> Simulator::create(
    const Config& config, std::vector<std::unique_ptr<net::FrameSource>> sources) {
    if (auto r = config.validate(); !r) return r.error();
    auto sim = build(config, std::move(sources));
    if (sim) sim.value()->start_engines();
    return sim;
}

void Simulator::start_engines() {
    for (auto& slot : slots_) slot.engine->start();
}

Result<void> Simulator::attach_sinks(SinkLists sinks) {
    // Transmit-side faults (sim/README.md, "Fault injection"): one FaultySink
    // in front of all of a device's sinks, so every sink gets the same frames.
    std::vector<FaultySink*> faulty(sinks.size(), nullptr);
    for (std::uint32_t i = 0; i < sinks.size(); ++i) {
        if (sinks[i].empty() || !FaultySink::wanted(config_.fault_plan, i)) continue;
        auto wrapped = FaultySink::wrap(std::move(sinks[i]), config_.fault_plan, i, trace_.get());
        if (!wrapped) return wrapped.error();
        faulty[i] = wrapped.value().get();
        sinks[i] = {std::shared_ptr<net::FrameSink>(std::move(wrapped.value()))};
    }
    for (std::uint32_t i = 0; i < sinks.size(); ++i) {
        DeviceSlot& slot = slots_[i];
        slot.faulty_sink = faulty[i];
        std::lock_guard lock(slot.device->port.mutex());
        for (auto& sink : sinks[i]) slot.device->port.attach_sink(*sink);
    }
    for (std::uint32_t i = 0; i < sinks.size(); ++i)
        for (auto& sink : sinks[i]) slots_[i].sinks.push_back(std::move(sink));
    return {};
}

Result<DeviceSlot> Simulator::make_slot(std::uint32_t i, const device::DeviceIdentity& identity,
                                        std::unique_ptr<net::FrameSource> source) {
    DeviceSlot slot;
    slot.device = device::make_device(identity, config_.caps);
    device::Device& dev = *slot.device;
    if (!source) source = empty_source();
    // Only a plan with faults for this device gets a stage (no plan, no cost).
    if (FaultStage::wanted(config_.fault_plan, i)) {
        auto stage = FaultStage::make(config_.fault_plan, i, &dev, trace_.get());
        if (!stage) return stage.error();
        slot.faults = std::move(stage.value());
    }
    slot.verb_faults = std::make_unique<VerbFaults>(config_.fault_plan, i, trace_.get());
    if (trace_) dev.trace = trace_->hook(i);
    if (slot.verb_faults->empty()) slot.verb_faults.reset();
    dev.verb_faults.store(slot.verb_faults.get());
    slot.engine = make_engine(dev, std::move(source), config_);
    slot.engine->set_device_index(i);
    slot.engine->set_fault_stage(slot.faults.get());
    dev.hooks = slot.engine.get();
    if (!config_.report.empty()) {
        slot.timeline = std::make_unique<Timeline>(dev.port);
        slot.engine->set_timeline(slot.timeline.get());
    }
    return slot;
}

Result<std::unique_ptr<Simulator>> Simulator::build(
    const Config& config, std::vector<std::unique_ptr<net::FrameSource>> sources) {
    std::unique_ptr<Simulator> sim(new Simulator);
    sim->config_ = config;
    if (!config.trace.empty()) {
        auto trace = Trace::open(config.trace);
        if (!trace) return trace.error();
        sim->trace_ = std::move(trace.value());
    }
    auto ids = device_identities(config);
    if (!ids) return ids.error();
    sources.resize(config.devices);
    sim->slots_.reserve(config.devices);
    for (std::uint32_t i = 0; i < config.devices; ++i) {
        auto slot = sim->make_slot(i, ids.value()[i], std::move(sources[i]));
        if (!slot) return slot.error();
        sim->slots_.push_back(std::move(slot.value()));
    }
    if (!config.stats.empty()) // sim/README.md, "Statistics"
        for (DeviceSlot& slot : sim->slots_) {
            slot.stats = std::make_unique<DeviceStats>();
            slot.device->stats = slot.stats.get();
            std::lock_guard lock(slot.device->port.mutex());
            slot.device->port.attach_sink(*slot.stats);
        }
    for (DeviceSlot& slot : sim->slots_) device::register_device(slot.device.get());
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
    } else if (const auto* shm = dynamic_cast<const net::ShmWire*>(&source)) {
        const auto& c = shm->wire_counters();
        const auto lost = c.tx_no_peer.load() + c.tx_dropped.load();
        if (lost != 0 || c.rx_corrupt.load() != 0)
            log().warn("rdmasim{}: wire {}: {} frame(s) sent, {} lost (no peer {}, dropped {}), "
                       "{} corrupt ring entries", index, shm->url(), c.tx_frames.load(), lost,
                       c.tx_no_peer.load(), c.tx_dropped.load(), c.rx_corrupt.load());
        else
            log().info("rdmasim{}: wire {}: {} frame(s) sent, {} received", index, shm->url(),
                       c.tx_frames.load(), shm->counters().frames);
    } else if (const auto* link = dynamic_cast<const net::LinkChannel*>(&source)) {
        if (link->overflow_drops() != 0)
            log().warn("rdmasim{}: {}: {} frame(s) dropped, its queue of {} full", index, link->describe(),
                       link->overflow_drops(), link->capacity());
    }
}

} // namespace

void Simulator::report_losses() const {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        sim::report_losses(i, slots_[i].engine->source());
        const datapath::Port& port = slots_[i].device->port;
        if (const auto n = port.neighbours().counters().arp_address_conflicts.get(); n != 0)
            log().warn("rdmasim{}: {} ARP frame(s) from another MAC claimed this port's address {}: "
                       "give each host its own `ip` (and `mac`)",
                       i, n, net::to_string(port.neighbours().addresses().ipv4));
    }
}

std::size_t Simulator::drain_wires(std::chrono::milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    for (;;) {
        std::size_t waiting = 0;
        for (DeviceSlot& slot : slots_) {
            datapath::Port& port = slot.device->port;
            std::lock_guard lock(port.mutex());
            waiting += port.flush_wire();
        }
        if (waiting == 0 || std::chrono::steady_clock::now() >= until) return waiting;
        std::this_thread::sleep_for(std::chrono::microseconds(100)); // the peer reads meanwhile
    }
}

Simulator::~Simulator() {
    for (DeviceSlot& slot : slots_) slot.engine->stop();
    for (DeviceSlot& slot : slots_) {
        datapath::Port& port = slot.device->port;
        std::lock_guard lock(port.mutex());
        if (slot.faulty_sink) slot.faulty_sink->release_held(); // what it holds back still goes out
        for (auto& sink : slot.sinks) port.detach_sink(*sink);
        if (slot.stats) port.detach_sink(*slot.stats);
    }
    for (DeviceSlot& slot : slots_) {
        device::Device& dev = *slot.device;
        device::unregister_device(&dev);
        dev.hooks = nullptr;
        dev.verb_faults.store(nullptr);
        dev.trace = nullptr;
        dev.stats = nullptr;
    }
    // Every device's sinks before any engine: a link's sink on one device
    // is the channel another device's engine owns.
    for (DeviceSlot& slot : slots_) {
        slot.faulty_sink = nullptr;
        slot.sinks.clear();
    }
}

const datapath::RxCounters& Simulator::port_counters(std::size_t i) const noexcept {
    return slots_[i].device->port.counters();
}

const datapath::RxCounters* Simulator::queue_counters(std::size_t i,
                                                      std::uint32_t qpn) const noexcept {
    const datapath::Port& port = slots_[i].device->port;
    std::lock_guard lock(port.mutex());
    const datapath::RxQueue* q = port.find_queue(qpn);
    return q ? &q->counters() : nullptr;
}

FaultCounts Simulator::faults_injected(std::size_t i) const {
    const DeviceSlot& slot = slots_[i];
    FaultCounts counts(static_cast<std::size_t>(FaultKind::verb_fail) + 1, 0);
    if (slot.faults) counts = slot.faults->injected();
    if (slot.faulty_sink) {
        std::lock_guard lock(slot.device->port.mutex()); // sends fire them under it
        const FaultCounts& tx = slot.faulty_sink->injected();
        for (std::size_t k = 0; k < counts.size(); ++k) counts[k] += tx[k];
    }
    if (slot.verb_faults) counts[static_cast<std::size_t>(FaultKind::verb_fail)] = slot.verb_faults->injected();
    return counts;
}

const TxFaultCounters* Simulator::tx_fault_counters(std::size_t i) const noexcept {
    return slots_[i].faulty_sink ? &slots_[i].faulty_sink->counters() : nullptr;
}

std::vector<std::uint64_t> Simulator::verb_fails(std::size_t i) const {
    if (slots_[i].verb_faults) return slots_[i].verb_faults->injected_by_verb();
    return std::vector<std::uint64_t>(device::kVerbNames.size(), 0);
}

bool Simulator::idle() const noexcept {
    for (const DeviceSlot& slot : slots_)
        if (!slot.engine->idle()) return false;
    return true;
}

bool Simulator::wait_idle(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    for (DeviceSlot& slot : slots_) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            until - std::chrono::steady_clock::now());
        if (!slot.engine->wait_idle(left.count() > 0 ? left : std::chrono::milliseconds(0))) return false;
    }
    return true;
}

} // namespace rdmasim::sim
