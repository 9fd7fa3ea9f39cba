// The fork handlers' work (sim/README.md, "Fork"): a forked child's devices
// get engines that run and loop back only; the parent's wires, links and
// output files stay the parent's, and nothing of theirs is destroyed here.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "sim/device_io.hpp"
#include "sim/family_bus.hpp"
#include "sim/logging.hpp"
#include "sim/simulator.hpp"

namespace rdmasim::sim {

namespace {

// A child that cannot leave the parent's objects alone (no memory right after
// fork) would go on with the parent's wire: it stops instead.
[[noreturn]] void fail_in_child(const char* what) noexcept {
    static constexpr char kPrefix[] = "rdmasim: forked child: ";
    (void)!::write(STDERR_FILENO, kPrefix, sizeof kPrefix - 1);
    (void)!::write(STDERR_FILENO, what, std::strlen(what));
    (void)!::write(STDERR_FILENO, "\n", 1);
    std::abort();
}

// What a forked child inherited and must never destroy: the parent's
// engines (their thread and io_context), sources and sinks (a ShmWire's
// destructor forgets the parent's MACs in the segment's switch). Kept here
// for ever, reachable (a leak checker at the child's exit sees no leak).
struct Inherited {
    std::vector<std::unique_ptr<Engine>> engines;
    std::vector<std::unique_ptr<net::FrameSource>> sources;
    std::vector<std::shared_ptr<net::FrameSink>> sinks;
};
Inherited& inherited() {
    static auto* kept = new Inherited; // never destroyed
    return *kept;
}

// Where the first fork makes its family buses: tmpfs where there is one.
std::string bus_directory() {
    if (std::filesystem::is_directory("/dev/shm") && ::access("/dev/shm", W_OK) == 0)
        return "/dev/shm";
    const char* tmp = std::getenv("TMPDIR");
    return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

} // namespace

void Simulator::prepare_fork() noexcept {
    for (DeviceSlot& slot : slots_) {
        if (slot.family || forked_child_) continue; // a child forking: its family has a bus
        try {
            auto bus = FamilyBus::create(bus_directory());
            if (bus)
                slot.family = std::move(bus.value());
            else
                log().warn("rdmasim: no family bus, a forked child's device loops back only: {}",
                           bus.error().message);
        } catch (const std::exception& e) {
            log().warn("rdmasim: no family bus: {}", e.what());
        }
    }
    for (DeviceSlot& slot : slots_)
        slot.device->port.mutex().lock();
    if (trace_) trace_->prepare_fork();
    hold_log_for_fork(); // last: nothing is taken under it
}

void Simulator::parent_after_fork() noexcept {
    release_log_after_fork();
    if (trace_) trace_->parent_after_fork();
    for (auto it = slots_.rbegin(); it != slots_.rend(); ++it)
        it->device->port.mutex().unlock();
}

std::string Simulator::fork_slot(DeviceSlot& slot) noexcept {
    device::Device& dev = *slot.device;
    std::string note;
    Inherited& kept = inherited();
    try {
        for (auto& sink : slot.sinks) {
            dev.port.detach_sink(*sink);
            sink->abandon_after_fork();
            kept.sinks.push_back(std::move(sink));
        }
        slot.sinks.clear();
        slot.faulty_sink = nullptr;
        std::unique_ptr<net::ShmWire> bus;
        if (slot.family) note = join_family(slot, bus);
        if (bus) // the family's bus is the child's wire; what it inherited stays the parent's
            kept.sources.push_back(slot.engine->exchange_source(std::move(bus)));
        else if (slot.engine->source().shared_across_fork())
            kept.sources.push_back(slot.engine->exchange_source(empty_source()));
        if (auto next = slot.engine->successor_after_fork()) {
            dev.hooks = next.get();
            kept.engines.push_back(std::move(slot.engine));
            slot.engine = std::move(next);
        }
    } catch (const std::exception& e) { // no memory: a sink or source left would be the parent's
        fail_in_child(e.what());
    } catch (...) {
        fail_in_child("cannot set the device up");
    }
    return note;
}

std::string Simulator::join_family(DeviceSlot& slot, std::unique_ptr<net::ShmWire>& bus) {
    device::Device& dev = *slot.device;
    auto wire = slot.family->join();
    if (!wire) return wire.error().message; // logged once the logger is released

    bus = std::move(wire.value());
    dev.port.attach_sink(*bus); // may throw (no memory): fork_slot aborts the child
    slot.sinks.push_back(borrowed_sink(*bus));
    dev.port.roce().set_family(slot.family.get());
    dev.port.cm().join_family(false);
    dev.next_qpn.store(datapath::first_qpn(slot.family->member()));
    return {};
}

void Simulator::child_after_fork() noexcept {
    forked_child_ = true;
    std::vector<std::string> notes(slots_.size());
    for (std::size_t i = 0; i < slots_.size(); ++i)
        notes[i] = fork_slot(slots_[i]);
    if (trace_) trace_->child_after_fork();
    release_log_after_fork();
    for (std::size_t i = 0; i < notes.size(); ++i)
        if (!notes[i].empty())
            log().error("rdmasim{}: forked child: {}: loopback only", i, notes[i]);
    for (auto it = slots_.rbegin(); it != slots_.rend(); ++it)
        it->device->port.mutex().unlock();
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        try {
            slots_[i].engine->start();
        } catch (const std::exception& e) { // no thread: the device makes progress only in verbs
            log().error("rdmasim{}: no engine in the forked child: {}", i, e.what());
        }
    }
}

} // namespace rdmasim::sim
