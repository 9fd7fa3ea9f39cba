// Frame faults on the receive side (sim/README.md, "Fault injection"): the
// FaultStage alone, frame by frame (sim::pull_through), and through a device's port, where
// every frame keeps its account: offered = delivered + drops, duplicates
// counted as offered, a lost frame as fault_drops.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <vector>

#include "net/crc32.hpp"
#include "net/memory_source.hpp"
#include "sim/config.hpp"
#include "sim/burst.hpp"
#include "sim/fault_stage.hpp"
#include "sim/simulator.hpp"
#include "support/golden_frames.hpp"
#include "support/sim_fixture.hpp"

using namespace rdmasim;
namespace golden = rdmasim::test::golden;
using Buf = std::vector<std::uint8_t>;

namespace {

struct Out {
    Buf bytes;
    std::uint64_t ts_ns;
    std::uint8_t fcs_len;
    bool lost;
};

// `n` frames, each the untagged golden frame with its last byte = its index
// (so that order can be read back), at ts = index * 1000 ns.
std::unique_ptr<net::MemorySource> numbered(unsigned n, const Buf& base = golden::concat(golden::kUntagged)) {
    auto src = std::make_unique<net::MemorySource>();
    for (unsigned i = 0; i < n; ++i) {
        Buf f = base;
        f.back() = static_cast<std::uint8_t>(i);
        src->push(f, i * 1000ull);
    }
    src->close();
    return src;
}

std::vector<Out> run(const std::string& plan_text, std::unique_ptr<net::FrameSource> src,
                     sim::FaultCounts* injected = nullptr) {
    auto plan = sim::FaultPlan::parse(plan_text);
    REQUIRE(plan);
    auto stage = sim::FaultStage::make(plan.value(), 0);
    REQUIRE(stage);
    std::vector<Out> out;
    net::Frame f;
    while (sim::pull_through(*src, *stage.value(), f))
        out.push_back({Buf(f.data, f.data + f.len), f.ts_ns, f.fcs_len, f.lost});
    CHECK((src->exhausted() && stage.value()->empty()));
    if (injected) *injected = stage.value()->injected();
    return out;
}

std::vector<int> order(const std::vector<Out>& v) {
    std::vector<int> o;
    for (const Out& x : v) o.push_back(x.bytes.back());
    return o;
}

std::uint64_t count(const sim::FaultCounts& c, sim::FaultKind k) { return c[static_cast<std::size_t>(k)]; }

} // namespace

TEST_CASE("drop:every=3 marks every third frame lost; the others pass untouched", "[sim][faults]") {
    sim::FaultCounts injected;
    auto out = run("drop:every=3", numbered(9), &injected);
    REQUIRE(out.size() == 9);
    for (std::size_t i = 0; i < out.size(); ++i) {
        INFO(i);
        CHECK(out[i].lost == (i % 3 == 2));
        CHECK(out[i].bytes.back() == i);
    }
    CHECK(count(injected, sim::FaultKind::drop) == 3);
}

TEST_CASE("corrupt-fcs: a wrong FCS, appended when the frame carried none", "[sim][faults]") {
    auto src = std::make_unique<net::MemorySource>();
    src->push(golden::concat(golden::kUntagged), 0, 0);
    src->push(golden::concat(golden::kUntagged, golden::kUntaggedFcs), 1, 4);
    src->close();
    auto out = run("corrupt-fcs:every=1", std::move(src));
    REQUIRE(out.size() == 2);
    for (const Out& o : out) {
        REQUIRE(o.fcs_len == 4);
        REQUIRE(o.bytes.size() == golden::kUntagged.size() + 4);
        CHECK(std::equal(golden::kUntagged.begin(), golden::kUntagged.end(), o.bytes.begin()));
        Buf good(4);
        net::write_fcs({o.bytes.data(), golden::kUntagged.size()}, good.data());
        CHECK_FALSE(std::equal(good.begin(), good.end(), o.bytes.end() - 4));
    }
}

TEST_CASE("flip changes at most `bytes` bytes; truncate cuts the frame and its FCS", "[sim][faults]") {
    const Buf base = golden::concat(golden::kTcpGood);
    auto flipped = run("seed=3;flip:nth=1,bytes=2", numbered(1, base));
    REQUIRE(flipped.size() == 1);
    REQUIRE(flipped[0].bytes.size() == base.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i + 1 < base.size(); ++i) differ += flipped[0].bytes[i] != base[i];
    CHECK(differ >= 1);
    CHECK(differ <= 2);

    auto src = std::make_unique<net::MemorySource>();
    src->push(golden::concat(golden::kUntagged, golden::kUntaggedFcs), 0, 4);
    src->close();
    auto cut = run("truncate:every=1,len=20", std::move(src));
    REQUIRE(cut.size() == 1);
    CHECK(cut[0].bytes == Buf(golden::kUntagged.begin(), golden::kUntagged.begin() + 20));
    CHECK(cut[0].fcs_len == 0);
}

TEST_CASE("duplicate hands the frame over twice, in place", "[sim][faults]") {
    CHECK(order(run("duplicate:every=2", numbered(4))) == std::vector<int>{0, 1, 1, 2, 3, 3});
}

TEST_CASE("reorder holds a frame back behind up to window-1 later ones, nothing lost",
          "[sim][faults]") {
    for (std::uint64_t seed = 0; seed < 20; ++seed) {
        INFO("seed " << seed);
        const auto o = order(run("seed=" + std::to_string(seed) + ";reorder:nth=2,window=4", numbered(8)));
        REQUIRE(o.size() == 8);
        const auto at = std::find(o.begin(), o.end(), 1) - o.begin();
        CHECK(at >= 2); // passed by at least one frame
        CHECK(at <= 4); // by at most three
        std::vector<int> rest = o;
        rest.erase(rest.begin() + at);
        CHECK(rest == std::vector<int>{0, 2, 3, 4, 5, 6, 7});
    }
}

TEST_CASE("delay moves a frame later in time, behind the frames of that time", "[sim][faults]") {
    const auto out = run("delay:nth=1,us=2", numbered(5)); // frame 0: ts 0 -> 2000 ns
    CHECK(order(out) == std::vector<int>{1, 2, 0, 3, 4});
    CHECK(out[2].ts_ns == 2000);
    // At the end of the source a delayed frame still comes out.
    CHECK(order(run("delay:nth=3,us=100", numbered(3))) == std::vector<int>{0, 1, 2});
}

TEST_CASE("a filter narrows a fault to the frames it matches", "[sim][faults]") {
    auto src = std::make_unique<net::MemorySource>();
    for (int i = 0; i < 3; ++i) {
        src->push(golden::concat(golden::kUntagged)); // UDP
        src->push(golden::concat(golden::kTcpGood));  // TCP
    }
    src->close();
    const auto out = run("drop:every=1,filter=tcp", std::move(src));
    REQUIRE(out.size() == 6);
    for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i].lost == (i % 2 == 1));
    auto plan = sim::FaultPlan::parse("drop:every=1,filter=tcp port nope");
    REQUIRE(plan);
    auto bad = sim::FaultStage::make(plan.value(), 0);
    REQUIRE_FALSE(bad);
    CHECK_THAT(bad.error().message, Catch::Contains("column 1") && Catch::Contains("tcp port nope"));
}

TEST_CASE("drop:p=0.1 is seeded: the same seed loses the same frames, another seed others",
          "[sim][faults]") {
    auto lost = [](std::uint64_t seed) {
        std::set<std::size_t> s;
        const auto out = run("seed=" + std::to_string(seed) + ";drop:p=0.1", numbered(10000));
        for (std::size_t i = 0; i < out.size(); ++i)
            if (out[i].lost) s.insert(i);
        return s;
    };
    const auto a = lost(7), b = lost(7), c = lost(8);
    CHECK(a == b);
    CHECK(a != c);
    CHECK(a.size() > 900);
    CHECK(a.size() < 1100);
}

TEST_CASE("through the port: drop, duplicate and reorder keep every frame accounted for",
          "[sim][faults]") {
    test::SimFixture fx(std::vector<std::pair<std::string, std::string>>{
        {"faults", "seed=5; drop:every=4; duplicate:every=5; reorder:every=7,window=3"}});
    // No receive queue: every frame that is not lost misses steering.
    for (unsigned i = 0; i < 40; ++i) fx.offer(golden::concat(golden::kUntagged), i * 1000ull);
    fx.pump_all();
    const auto& port = fx.port();
    const auto injected = fx.simulator().faults_injected(0);
    CHECK(count(injected, sim::FaultKind::drop) == 10);
    CHECK(port.drops[static_cast<std::size_t>(datapath::Drop::fault_injected)].get() == 10);
    CHECK(count(injected, sim::FaultKind::duplicate) > 0);
    CHECK(count(injected, sim::FaultKind::reorder) > 0);
    // Every frame read, and one more for each duplicate: none still held back.
    CHECK(port.frames.get() == 40 + count(injected, sim::FaultKind::duplicate));
    CHECK(port.drops[static_cast<std::size_t>(datapath::Drop::steering_miss)].get() ==
          port.frames.get() - 10);
    CHECK(fx.balanced());
}

TEST_CASE("TOML [[fault]] tables spell the same plan", "[sim][faults][config]") {
    const auto path = std::filesystem::temp_directory_path() / "rdmasim-test-faults.toml";
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        REQUIRE(f);
        std::fputs("[[fault]]\nseed = 7\n[[fault]]\nkind = \"drop\"\np = 0.01\n"
                   "[[fault]]\nkind = \"verb-fail\"\nverb = \"create_wq\"\nnth = 3\nerrno = \"ENOMEM\"\n",
                   f);
        std::fclose(f);
    }
    sim::Config c;
    REQUIRE(c.apply_toml_file(path.string()));
    CHECK(c.faults == "seed=7; drop:p=0.01; verb-fail:create_wq,errno=ENOMEM,nth=3");
    CHECK(c.fault_plan.seed == 7);
    REQUIRE(c.fault_plan.faults.size() == 2);
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        std::fputs("[[fault]]\nkind = \"dorp\"\np = 0.5\n", f);
        std::fclose(f);
    }
    sim::Config d;
    auto r = d.apply_toml_file(path.string());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("unknown fault kind") && Catch::Contains(path.string()));
    std::filesystem::remove(path);
}
