// --link rdmasim0:rdmasim1: two devices of one process wired back to back.
// What a raw-packet QP on one sends arrives at the other's WQs.
#include <catch2/catch.hpp>

#include <memory>
#include <vector>

#include "net/link_channel.hpp"
#include "sim/simulator.hpp"
#include "tests/sim/port_io_helpers.hpp"

using namespace rdmasim;
using test::NamedDevice;
using test::RawSender;
using test::ReceiveRig;

namespace {

std::unique_ptr<sim::Simulator> linked(sim::EngineKind engine) {
    sim::Config c;
    REQUIRE(c.set("devices", "2"));
    REQUIRE(c.set("link", "rdmasim0:rdmasim1"));
    REQUIRE(c.set("start", "now"));
    c.engine = engine;
    auto s = sim::Simulator::create(c);
    REQUIRE(s);
    return std::move(s.value());
}

using test::numbered_frame;

const net::LinkChannel& link_into(sim::Simulator& s, std::size_t device) {
    const auto* ch = dynamic_cast<const net::LinkChannel*>(&s.engine(device).source());
    REQUIRE(ch != nullptr);
    return *ch;
}

std::uint64_t frames_in(sim::Simulator& s, std::size_t device) {
    return s.port_counters(device).frames.get();
}

} // namespace

TEST_CASE("a link carries a raw QP's sends to the other device's WQs, both ways", "[sim][link]") {
    for (const auto engine : {sim::EngineKind::inline_, sim::EngineKind::thread}) {
        INFO((engine == sim::EngineKind::inline_ ? "inline" : "thread") << " engine");
        auto s = linked(engine);
        CHECK(link_into(*s, 1).describe() == "link rdmasim0 -> rdmasim1");
        CHECK(link_into(*s, 0).describe() == "link rdmasim1 -> rdmasim0");
        NamedDevice a(0), b(1);
        {
            ReceiveRig rx_b(b.ctx, b.pd, {.wqs = 1, .depth = 32});
            RawSender tx_a(a.pd);
            std::vector<std::vector<std::uint8_t>> sent;
            for (unsigned i = 0; i < 20; ++i) {
                sent.push_back(numbered_frame(i, 46 + i * 50));
                tx_a.send(sent.back());
            }
            CHECK(test::receive(rx_b, 20) == sent); // in order, byte for byte, no FCS added
        }
        {
            ReceiveRig rx_a(a.ctx, a.pd, {.wqs = 1, .depth = 16});
            RawSender tx_b(b.pd);
            const auto back = numbered_frame(999, 100);
            tx_b.send(back);
            const auto got = test::receive(rx_a, 1);
            REQUIRE(got.size() == 1);
            CHECK(got[0] == back);
        }
        // Each port also offered its own sends to its own flows (loopback):
        // 20 + 1 frames at each.
        CHECK(frames_in(*s, 1) == 21);
        CHECK(frames_in(*s, 0) == 21);
        CHECK(link_into(*s, 1).counters().frames == 20);
        CHECK(link_into(*s, 0).counters().frames == 1);
        CHECK(link_into(*s, 1).overflow_drops() == 0);
    }
}

TEST_CASE("a link is lossless: what the receiver has not pulled waits in the sender's backlog, in order",
          "[sim][link]") {
    auto s = linked(sim::EngineKind::inline_); // rdmasim1 pulls only when its program polls
    NamedDevice a(0), b(1);
    {
        ReceiveRig rx_b(b.ctx, b.pd, {.wqs = 1, .depth = 64});
        RawSender tx_a(a.pd);
        const std::size_t capacity = link_into(*s, 1).capacity();
        const std::size_t extra = 76;
        for (std::size_t i = 0; i < capacity + extra; ++i) tx_a.send(numbered_frame(static_cast<unsigned>(i), 46));
        CHECK(link_into(*s, 1).overflow_drops() == 0);
        CHECK(link_into(*s, 1).backlog_counters()->queued == extra);
        CHECK(frames_in(*s, 1) == 0);
        const auto got = test::receive(rx_b, capacity);
        REQUIRE(got.size() == capacity);
        CHECK(got.front() == numbered_frame(0, 46)); // in order
        CHECK(got.back() == numbered_frame(static_cast<unsigned>(capacity - 1), 46));
        {
            // The sender's port flushes its backlog (its engine's service does).
            device::Device& dev_a = s->device(0);
            std::lock_guard lock(dev_a.port.mutex());
            CHECK(dev_a.port.flush_wire() == 0);
        }
        const auto rest = test::receive(rx_b, extra);
        REQUIRE(rest.size() == extra);
        CHECK(rest.front() == numbered_frame(static_cast<unsigned>(capacity), 46));
        CHECK(rest.back() == numbered_frame(static_cast<unsigned>(capacity + extra - 1), 46));
    }
    CHECK(link_into(*s, 1).overflow_drops() == 0);
}

TEST_CASE("a linked device takes no other source", "[sim][link]") {
    sim::Config c;
    REQUIRE(c.set("devices", "2"));
    REQUIRE(c.set("link", "rdmasim0:rdmasim1"));
    REQUIRE(c.set("wire.1", "ptp:///tmp/never-opened"));
    auto s = sim::Simulator::create(c);
    REQUIRE_FALSE(s);
    CHECK(s.error().message.find("link rdmasim0:rdmasim1") != std::string::npos);
    CHECK(s.error().message.find("wire.1") != std::string::npos);
}
