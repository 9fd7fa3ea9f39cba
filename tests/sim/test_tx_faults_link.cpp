// Transmit-side frame faults end to end (sim/README.md, "Fault injection"):
// two devices joined by a link, a raw-packet QP on rdmasim0 sending N frames
// with drop:p=0.1,dir=tx. rdmasim1 receives exactly the frames the fault's
// seeded stream keeps, in order, and the counters balance: what the port
// sent = what reached the link + what the fault dropped.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "net/link_channel.hpp"
#include "sim/frame_faults.hpp"
#include "sim/simulator.hpp"
#include "tests/sim/port_io_helpers.hpp"

using namespace rdmasim;
using test::NamedDevice;
using test::RawSender;
using test::ReceiveRig;

namespace {

constexpr std::uint64_t kSeed = 42;
constexpr unsigned kFrames = 300;

using test::numbered_frame;

// The frames drop:p=0.1 keeps, from the stream the transmit side of the
// plan's item 0 draws from: one draw per frame sent.
std::vector<std::vector<std::uint8_t>> expected_kept() {
    sim::FaultRng rng(sim::FrameFaults::stream_seed(kSeed, 0, sim::Direction::tx));
    std::vector<std::vector<std::uint8_t>> kept;
    for (unsigned i = 0; i < kFrames; ++i)
        if (!(rng.unit() < 0.1)) kept.push_back(numbered_frame(i));
    return kept;
}

} // namespace

TEST_CASE("drop:p=0.1,dir=tx over a link: the seeded subset arrives, every frame counted",
          "[sim][faults][tx][link]") {
    const auto kept = expected_kept();
    REQUIRE(kept.size() > kFrames * 8 / 10);
    REQUIRE(kept.size() < kFrames);
    const auto dropped = kFrames - kept.size();
    for (const auto engine : {sim::EngineKind::inline_, sim::EngineKind::thread}) {
        INFO((engine == sim::EngineKind::inline_ ? "inline" : "thread") << " engine");
        const auto trace = std::filesystem::temp_directory_path() /
                           ("rdmasim-tx-faults-" + std::to_string(::getpid()) + ".jsonl");
        {
            sim::Config c;
            REQUIRE(c.set("devices", "2"));
            REQUIRE(c.set("link", "rdmasim0:rdmasim1"));
            REQUIRE(c.set("start", "now"));
            REQUIRE(c.set("faults", "seed=" + std::to_string(kSeed) + "; drop:p=0.1,dir=tx,device=0"));
            REQUIRE(c.set("trace", trace.string()));
            c.engine = engine;
            auto made = sim::Simulator::create(c);
            REQUIRE(made);
            sim::Simulator& s = *made.value();
            NamedDevice a(0), b(1);
            {
                ReceiveRig rx_b(b.ctx, b.pd, {.wqs = 1, .depth = 512});
                RawSender tx_a(a.pd);
                for (unsigned i = 0; i < kFrames; ++i) tx_a.send(numbered_frame(i));
                CHECK(test::receive(rx_b, kept.size()) == kept);
                CHECK(test::receive(rx_b, 1, std::chrono::milliseconds(100)).empty()); // nothing more
            }
            const sim::TxFaultCounters* tx = s.tx_fault_counters(0);
            REQUIRE(tx != nullptr);
            CHECK(s.tx_fault_counters(1) == nullptr); // device=0 only
            CHECK(tx->sent.load() == kFrames);
            CHECK(tx->fault_drops.load() == dropped);
            CHECK(tx->passed.load() == kept.size());
            CHECK(tx->sent.load() == tx->passed.load() + tx->fault_drops.load());
            const auto* link = dynamic_cast<const net::LinkChannel*>(&s.engine(1).source());
            REQUIRE(link != nullptr);
            CHECK(link->counters().frames == kept.size());
            CHECK(link->overflow_drops() == 0);
            CHECK(s.port_counters(1).frames.get() == kept.size());
            // The loopback to rdmasim0's own flows is inside the NIC: not faulted.
            CHECK(s.port_counters(0).frames.get() == kFrames);
            CHECK(s.faults_injected(0)[static_cast<std::size_t>(sim::FaultKind::drop)] == dropped);
            CHECK(s.faults_injected(1)[static_cast<std::size_t>(sim::FaultKind::drop)] == 0);
        }
        std::ifstream in(trace);
        std::string line;
        std::size_t tx_faults = 0;
        while (std::getline(in, line))
            if (line.find("\"event\":\"fault\"") != std::string::npos &&
                line.find("\"kind\":\"drop\"") != std::string::npos &&
                line.find("\"dir\":\"tx\"") != std::string::npos)
                ++tx_faults;
        CHECK(tx_faults == dropped);
        std::filesystem::remove(trace);
    }
}
