// Two devices of one process wired back to back (--link) find each other by
// ARP (datapath/README.md, "Neighbours"): device 0's resolve() sends a request
// over the link, device 1's port answers, device 0 learns and its listener is
// told; on the thread engine (real time) and the inline engine (pumped). An
// address nobody has fails after its retries, on the inline engine's virtual
// clock.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "sim/inline_engine.hpp"
#include "sim/simulator.hpp"

using namespace rdmasim;

namespace {

const net::Ipv4Address kIp0{192, 0, 2, 1};
const net::Ipv4Address kIp1{192, 0, 2, 2};

std::unique_ptr<sim::Simulator> linked(sim::EngineKind engine, const char* idle_tick_us = "10") {
    sim::Config c;
    REQUIRE(c.set("devices", "2"));
    REQUIRE(c.set("link", "rdmasim0:rdmasim1"));
    REQUIRE(c.set("start", "now"));
    REQUIRE(c.set("ip", "192.0.2.1"));
    REQUIRE(c.set("ip.1", "192.0.2.2"));
    REQUIRE(c.set("idle_tick_us", idle_tick_us));
    c.engine = engine;
    auto s = sim::Simulator::create(c);
    REQUIRE(s);
    return std::move(s.value());
}

struct Listener final : datapath::NeighbourListener {
    std::vector<std::pair<net::Ipv4Address, net::MacAddress>> resolved_;
    std::vector<std::pair<net::Ipv4Address, std::uint64_t>> unreachable_; // with the port's clock
    datapath::Port* port = nullptr;
    std::uint64_t learned_when_told = 0; // the port's arp_replies_learned as resolved() is called
    void resolved(const net::Ipv4Address& ip, const net::MacAddress& mac) noexcept override {
        resolved_.emplace_back(ip, mac);
        learned_when_told = port->neighbours().counters().arp_replies_learned.get();
    }
    void unreachable(const net::Ipv4Address& ip) noexcept override { unreachable_.emplace_back(ip, port->now_ns()); }
};

datapath::Resolution resolve(datapath::Port& port, const net::Ipv4Address& ip) {
    std::lock_guard lock(port.mutex());
    return port.resolve(ip);
}

std::size_t resolved_count(datapath::Port& port, const Listener& l) {
    std::lock_guard lock(port.mutex());
    return l.resolved_.size();
}

} // namespace

TEST_CASE("linked devices resolve each other by ARP", "[sim][arp]") {
    for (const auto engine : {sim::EngineKind::inline_, sim::EngineKind::thread}) {
        const bool inline_engine = engine == sim::EngineKind::inline_;
        INFO((inline_engine ? "inline" : "thread") << " engine");
        auto s = linked(engine);
        datapath::Port& p0 = s->device(0).port;
        datapath::Port& p1 = s->device(1).port;
        Listener listener;
        listener.port = &p0;
        {
            std::lock_guard lock(p0.mutex());
            p0.set_neighbour_listener(&listener);
        }
        REQUIRE(resolve(p0, kIp1).state == datapath::ResolveState::pending);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (resolved_count(p0, listener) == 0 && std::chrono::steady_clock::now() < deadline) {
            if (inline_engine) {
                static_cast<sim::InlineEngine&>(s->engine(1)).pump(); // the request arrives, the answer leaves
                static_cast<sim::InlineEngine&>(s->engine(0)).pump(); // the answer arrives
            } else {
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            }
        }
        {
            std::lock_guard lock(p0.mutex());
            p0.set_neighbour_listener(nullptr);
        }
        REQUIRE(listener.resolved_.size() == 1);
        CHECK(listener.resolved_[0].first == kIp1);
        CHECK(listener.resolved_[0].second == s->device(1).identity.mac);
        const auto again = resolve(p0, kIp1);
        CHECK(again.state == datapath::ResolveState::resolved);
        CHECK(again.mac == s->device(1).identity.mac);
        CHECK(p0.neighbours().counters().arp_requests_sent.get() == 1);
        CHECK(p0.neighbours().counters().arp_replies_learned.get() == 1);
        // Counted before the listener is told: whoever it wakes finds the count.
        CHECK(listener.learned_when_told == 1);
        CHECK(p1.neighbours().counters().arp_requests_answered.get() == 1);
        // Device 1 learned device 0 from its request: no request of its own.
        const auto back = resolve(p1, kIp0);
        CHECK(back.state == datapath::ResolveState::resolved);
        CHECK(back.mac == s->device(0).identity.mac);
    }
}

TEST_CASE("an address nobody has fails after 3 requests 1 s apart, in virtual time", "[sim][arp]") {
    auto s = linked(sim::EngineKind::inline_, "100000"); // 100 ms of virtual time per idle pump
    datapath::Port& p0 = s->device(0).port;
    Listener listener;
    listener.port = &p0;
    {
        std::lock_guard lock(p0.mutex());
        p0.set_neighbour_listener(&listener);
    }
    auto& e0 = static_cast<sim::InlineEngine&>(s->engine(0));
    auto& e1 = static_cast<sim::InlineEngine&>(s->engine(1));
    e0.pump();
    std::uint64_t t0 = 0;
    {
        std::lock_guard lock(p0.mutex());
        t0 = p0.now_ns();
    }
    REQUIRE(resolve(p0, net::Ipv4Address{192, 0, 2, 99}).state == datapath::ResolveState::pending);
    for (int i = 0; i < 50 && listener.unreachable_.empty(); ++i) {
        e0.pump();
        e1.pump();
    }
    {
        std::lock_guard lock(p0.mutex());
        p0.set_neighbour_listener(nullptr);
    }
    REQUIRE(listener.unreachable_.size() == 1);
    // The third request's interval ends 3 s after the first; the service that
    // sees it is the first idle tick at or past that time.
    CHECK(listener.unreachable_[0].second >= t0 + 3'000'000'000ull);
    CHECK(listener.unreachable_[0].second < t0 + 3'100'000'001ull);
    CHECK(p0.neighbours().counters().arp_requests_sent.get() == 3);
    CHECK(p0.neighbours().counters().arp_resolve_failures.get() == 1);
    // Device 1 saw three requests for an address not its own: no answer.
    CHECK(s->device(1).port.neighbours().counters().arp_frames.get() == 3);
    CHECK(s->device(1).port.neighbours().counters().arp_requests_answered.get() == 0);
}
