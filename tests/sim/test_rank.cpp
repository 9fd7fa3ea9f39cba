// Key `rank` (sim/rank.hpp): ranks that share one environment get distinct
// addresses and output files; outside a launcher nothing moves.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "net/addresses.hpp"
#include "sim/rank.hpp"

using namespace rdmasim;

namespace {

// Sets one launcher variable for the scope, clearing the others.
struct LauncherEnv {
    explicit LauncherEnv(const char* name = nullptr, const char* value = nullptr) {
        clear();
        if (name != nullptr) ::setenv(name, value, 1);
    }
    ~LauncherEnv() { clear(); }
    static void clear() {
        for (const char* n : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
            ::unsetenv(n);
    }
};

sim::Config two_devices() {
    sim::Config c;
    REQUIRE(c.set("devices", "2"));
    REQUIRE(c.set("ip", "10.0.0.1"));
    REQUIRE(c.set("ip.1", "10.0.0.2"));
    REQUIRE(c.set("mac", "02:00:00:00:00:fe"));
    REQUIRE(c.set("ip6", "fd00::1"));
    REQUIRE(c.set("stats", "/tmp/stats.json"));
    REQUIRE(c.set("tx_capture.1", "/tmp/sent.pcap"));
    REQUIRE(c.set("report", "-"));
    return c;
}

} // namespace

TEST_CASE("rank auto: Open MPI's local rank moves configured addresses by rank * devices",
          "[rank]") {
    LauncherEnv env("OMPI_COMM_WORLD_LOCAL_RANK", "2");
    sim::Config c = two_devices();
    REQUIRE(sim::process_rank(c) == 2u);
    REQUIRE(sim::apply_rank(c));
    CHECK(net::to_string(*c.ports[0].ip) == "10.0.0.5");
    CHECK(net::to_string(*c.ports[1].ip) == "10.0.0.6");
    CHECK(*c.ports[0].mac == net::MacAddress{0x02, 0, 0, 0, 0x01, 0x02}); // carries into byte 4
    CHECK((*c.ports[0].ip6)[15] == 5);
    CHECK(!c.ports[1].mac); // derived addresses are random per process: left alone
    CHECK(c.stats == "/tmp/stats.rank2.json");
    CHECK(c.tx_capture[1] == "/tmp/sent.rank2.pcap");
    CHECK(c.report == "-");
}

TEST_CASE("rank auto: Hydra's and srun's variables count; outside a launcher nothing moves",
          "[rank]") {
    {
        LauncherEnv env("MPI_LOCALRANKID", "1");
        CHECK(sim::process_rank(sim::Config{}) == 1u);
    }
    {
        LauncherEnv env("SLURM_LOCALID", "3");
        CHECK(sim::process_rank(sim::Config{}) == 3u);
    }
    {
        LauncherEnv env("OMPI_COMM_WORLD_LOCAL_RANK", "not a number");
        CHECK(!sim::process_rank(sim::Config{}));
    }
    LauncherEnv none;
    sim::Config c = two_devices();
    REQUIRE(sim::apply_rank(c));
    CHECK(net::to_string(*c.ports[0].ip) == "10.0.0.1");
    CHECK(c.stats == "/tmp/stats.json");
}

TEST_CASE("rank off ignores the launcher; rank N pins it", "[rank]") {
    LauncherEnv env("OMPI_COMM_WORLD_LOCAL_RANK", "3");
    sim::Config off = two_devices();
    REQUIRE(off.set("rank", "off"));
    REQUIRE(sim::apply_rank(off));
    CHECK(net::to_string(*off.ports[0].ip) == "10.0.0.1");
    CHECK(off.stats == "/tmp/stats.json");
    sim::Config pinned = two_devices();
    REQUIRE(pinned.set("rank", "1"));
    REQUIRE(sim::apply_rank(pinned));
    CHECK(net::to_string(*pinned.ports[0].ip) == "10.0.0.3");
    CHECK(pinned.stats == "/tmp/stats.rank1.json");
    CHECK(!pinned.set("rank", "4096"));
    CHECK(!pinned.set("rank", "-1"));
}

TEST_CASE("rank: an address moved out of its kind is an error naming the key", "[rank]") {
    LauncherEnv env;
    sim::Config c;
    REQUIRE(c.set("ip", "223.255.255.255"));
    REQUIRE(c.set("rank", "1"));
    const auto r = sim::apply_rank(c);
    REQUIRE(!r);
    CHECK(r.error().code == EINVAL);
    CHECK(r.error().message.find("ip moved by rank 1") != std::string::npos);
}
