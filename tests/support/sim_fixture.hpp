// A test fixture: one emulated device on the inline (deterministic) engine,
// fed from memory, opened through the verbs API like a program would.
// Frames pushed with offer() enter the port at the next pump() (or at any
// ibv_poll_cq / ibv_start_poll, which pump too).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "device/device.hpp"
#include "net/memory_source.hpp"
#include "sim/config.hpp"
#include "sim/inline_engine.hpp"
#include "sim/simulator.hpp"

namespace rdmasim::test {

class SimFixture {
public:
    // `settings`: extra configuration as key/value pairs, e.g. {"caps.delay_drop", "off"}.
    explicit SimFixture(std::vector<std::pair<std::string, std::string>> settings = {}) {
        sim::Config config;
        config.engine = sim::EngineKind::inline_;
        config.start = sim::StartTrigger::now;
        for (const auto& [k, v] : settings)
            if (auto r = config.set(k, v); !r) throw std::runtime_error(r.error().message);
        auto src = std::make_unique<net::MemorySource>();
        source_ = src.get();
        std::vector<std::unique_ptr<net::FrameSource>> sources;
        sources.push_back(std::move(src));
        auto s = sim::Simulator::create(config, std::move(sources));
        if (!s) throw std::runtime_error(s.error().message);
        sim_ = std::move(s.value());
        int n = 0;
        ibv_device** list = ibv_get_device_list(&n);
        if (list == nullptr || n < 1) throw std::runtime_error("no device");
        ctx = ibv_open_device(list[0]);
        ibv_free_device_list(list);
        if (ctx == nullptr) throw std::runtime_error("ibv_open_device failed");
        pd = ibv_alloc_pd(ctx);
    }
    ~SimFixture() {
        // Tests destroy what they create; whatever is left is their bug, not ours to hide.
        if (pd) ibv_dealloc_pd(pd);
        if (ctx) ibv_close_device(ctx);
    }
    SimFixture(const SimFixture&) = delete;
    SimFixture& operator=(const SimFixture&) = delete;

    // Queues a frame; ts_ns is its capture time (the inline engine's clock).
    void offer(const std::vector<std::uint8_t>& frame, std::uint64_t ts_ns = 0,
               std::uint8_t fcs_len = 0) {
        source_->push(frame, ts_ns, fcs_len);
    }
    // One engine step: up to `burst` queued frames in, then delay-drop service.
    void pump() { engine().pump(); }
    void pump_all() {
        while (source_->pending() != 0) pump();
        pump();
    }

    [[nodiscard]] device::Device& device() { return sim_->device(0); }
    [[nodiscard]] sim::Simulator& simulator() { return *sim_; }
    [[nodiscard]] const datapath::RxCounters& port() { return device().port.counters(); }
    [[nodiscard]] sim::InlineEngine& engine() {
        return static_cast<sim::InlineEngine&>(sim_->engine(0));
    }
    // The port balance every test that offers frames must keep.
    [[nodiscard]] bool balanced() {
        std::lock_guard lock(device().port.mutex());
        return device().port.balanced();
    }

    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;

private:
    std::unique_ptr<sim::Simulator> sim_;
    net::MemorySource* source_ = nullptr;
};

} // namespace rdmasim::test
