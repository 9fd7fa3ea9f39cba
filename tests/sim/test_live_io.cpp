// Live interfaces opened from the configuration (sim/live_io.cpp): the
// errors a user meets, and that nothing stays open after one. Traffic tests
// need a network namespace: tests/tools/live_iface_test.py.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <vector>

#include "net/af_packet.hpp"
#include "sim/config.hpp"
#include "sim/device_io.hpp"

using rdmasim::sim::Config;
using rdmasim::sim::open_device_io;

namespace {

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

std::size_t open_fds() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
    return n;
}

// An interface name no host has: short enough to be a valid name.
std::string missing_iface() {
    return "rsnone" + std::to_string(::getpid() % 1000000);
}

// True when this process may open packet sockets; otherwise the test checks
// the privilege message instead (the integration test covers both as root).
bool may_capture() {
    rdmasim::net::AfPacketOptions o;
    o.iface = "lo";
    auto p = rdmasim::net::AfPacketPort::open(o);
    if (!p) {
        CHECK(p.error().code == EPERM);
        CHECK(contains(p.error().message, "CAP_NET_RAW"));
        CHECK(contains(p.error().message, "iface lo"));
    }
    return p.ok();
}

} // namespace

TEST_CASE("live io: an unknown interface is an error naming it", "[sim][live]") {
    for (const std::string key : {"iface", "pcap_live"}) {
        Config c;
        REQUIRE(c.set(key, missing_iface()));
        auto io = open_device_io(c, 0);
        INFO(key);
        REQUIRE_FALSE(io);
        CHECK(contains(io.error().message, key + " " + missing_iface()));
        if (key == "iface" || may_capture()) {
            CHECK(io.error().code == ENODEV);
            CHECK(contains(io.error().message, "no such network interface"));
        }
    }
}

TEST_CASE("live io: a bad filter names the expression and libpcap's text", "[sim][live]") {
    // Refused where it is set, before any interface is opened.
    Config c;
    REQUIRE(c.set("pcap_live", "lo"));
    auto r = c.set("filter", "udp and and");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == EINVAL);
    CHECK(contains(r.error().message, "filter = 'udp and and': "));
    CHECK(contains(r.error().message, "syntax error")); // libpcap's words
}

TEST_CASE("live io: a failure after the interface opened leaves nothing open", "[sim][live]") {
    if (!may_capture()) return;
    const std::string bad_path = "/nonexistent-" + std::to_string(::getpid()) + "/tx.pcap";
    for (const std::string key : {"iface", "pcap_live"}) {
        INFO(key);
        const std::size_t before = open_fds();
        {
            Config c;
            REQUIRE(c.set(key, "lo"));
            REQUIRE(c.set("tx_capture", bad_path));
            auto io = open_device_io(c, 0);
            REQUIRE_FALSE(io);
            CHECK(contains(io.error().message, bad_path));
        }
        CHECK(open_fds() == before);
        {
            Config c;
            REQUIRE(c.set(key, "lo"));
            auto io = open_device_io(c, 0);
            REQUIRE(io);
            REQUIRE(io.value().source != nullptr);
            CHECK(io.value().source->wait_fd() >= 0);
            CHECK_FALSE(io.value().source->exhausted());
            CHECK(io.value().sinks.size() == 1); // the same socket sends
            CHECK(open_fds() == before + 1);
        }
        CHECK(open_fds() == before); // source and sink gone: the socket closed
    }
}

TEST_CASE("live io: a send the kernel refuses is counted, not waited for", "[sim][live]") {
    if (!may_capture()) return;
    rdmasim::net::AfPacketOptions o;
    o.iface = "lo";
    auto p = rdmasim::net::AfPacketPort::open(o);
    REQUIRE(p);
    rdmasim::net::AfPacketPort& port = *p.value();
    // Neither reaches the wire: above lo's MTU, and shorter than an Ethernet header.
    const std::vector<std::uint8_t> huge(70000, 0x55), tiny(5, 0x55);
    port.send(huge, 0);
    port.send(tiny, 0);
    const auto& c = port.send_counters();
    CHECK(c.frames.load() == 0);
    CHECK(c.too_big.load() == 1);
    CHECK(c.failures() == 2);
    CHECK(contains(c.text(), "2 not sent: EAGAIN 0, ENOBUFS 0, EMSGSIZE 1, other 1"));
    CHECK(contains(port.describe(), "interface lo (AF_PACKET, TPACKET_V3 ring 32 x 256 KiB"));
}
