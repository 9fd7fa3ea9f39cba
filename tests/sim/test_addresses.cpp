// Device addresses from the configuration or derived (sim/README.md,
// "Addresses"): configured keys win; random MACs per process on the thread
// engine, stable ones on the inline engine; IPv4 from the MAC and distinct
// within a process; the keys' checks and their messages.
#include <catch2/catch.hpp>

#include <endian.h>

#include <string>

#include "sim/addresses.hpp"
#include "sim/config.hpp"

using namespace rdmasim;
using sim::Config;

namespace {

Config with(std::initializer_list<std::pair<const char*, const char*>> settings) {
    Config c;
    for (const auto& [k, v] : settings) REQUIRE(c.set(k, v));
    REQUIRE(c.validate());
    return c;
}

std::string error_of(std::initializer_list<std::pair<const char*, const char*>> settings) {
    Config c;
    for (const auto& [k, v] : settings)
        if (auto r = c.set(k, v); !r) return r.error().message;
    if (auto r = c.validate(); !r) return r.error().message;
    return "";
}

} // namespace

TEST_CASE("addresses: configured values win, the rest derives from the MAC", "[sim][addresses]") {
    const Config c = with({{"devices", "2"}, {"mac.1", "02:00:00:00:00:02"}, {"ip.1", "192.0.2.2"},
                           {"ip6.1", "2001:db8::2"}, {"mtu.1", "2048"}, {"mac", "02:00:00:00:01:05"}});
    const auto d1 = sim::device_identity(c, 1);
    CHECK(d1.name == "rdmasim1");
    CHECK(net::to_string(d1.mac) == "02:00:00:00:00:02");
    CHECK(net::to_string(d1.ipv4) == "192.0.2.2");
    CHECK(net::to_string(d1.ipv6) == "2001:db8::2");
    CHECK(d1.mtu == 2048);
    const auto d0 = sim::device_identity(c, 0);
    CHECK(net::to_string(d0.ipv4) == "169.254.2.5"); // RFC 3927, from the MAC
    CHECK(net::to_string(d0.ipv6) == "fe80::ff:fe00:105");
    CHECK(d0.mtu == 1024);
    CHECK(d0.node_guid == htobe64(0x020000fffe000105ull));
}

TEST_CASE("addresses: stable on the inline engine, from the device index", "[sim][addresses]") {
    const Config c = with({{"devices", "3"}, {"deterministic", "on"}});
    for (std::uint32_t i = 0; i < 3; ++i) {
        const auto d = sim::device_identity(c, i);
        CHECK(d.mac == net::MacAddress{0x02, 0x52, 0x44, 0x4d, 0x00, static_cast<std::uint8_t>(i)});
        CHECK(d.ipv4 == net::Ipv4Address{169, 254, 1, static_cast<std::uint8_t>(i)});
    }
}

TEST_CASE("addresses: a deterministic device on a wire or live interface gets the random default",
          "[sim][addresses]") {
    // Two deterministic processes on one wire must not both be 02:52:44:4d:00:00.
    for (const auto& [key, value] : {std::pair{"wire", "ptp:///tmp/x"}, {"iface", "eth0"}, {"pcap_live", "eth0"}}) {
        INFO(key);
        const Config c = with({{"devices", "2"}, {"deterministic", "on"},
                               {(std::string(key) + ".1").c_str(), value}});
        CHECK(sim::device_identity(c, 0).mac == net::MacAddress{0x02, 0x52, 0x44, 0x4d, 0x00, 0x00});
        const auto d1 = sim::device_identity(c, 1);
        CHECK(d1.mac != net::MacAddress{0x02, 0x52, 0x44, 0x4d, 0x00, 0x01});
        CHECK(d1.mac[0] == 0x02);
        CHECK(sim::device_identity(c, 1).mac == d1.mac); // drawn once per process
    }
}

TEST_CASE("addresses: random per process on the thread engine, the same on every call", "[sim][addresses]") {
    const Config c = with({{"devices", "16"}});
    for (std::uint32_t i = 0; i < 16; ++i) {
        const auto d = sim::device_identity(c, i);
        CHECK(d.mac[0] == 0x02); // locally administered, unicast
        CHECK(d.ipv4[0] == 169);
        CHECK(d.ipv4[1] == 254);
        CHECK(d.ipv4[2] >= 1);
        CHECK(d.ipv4[2] <= 254);
        CHECK(sim::device_identity(c, i).mac == d.mac);
        for (std::uint32_t j = 0; j < i; ++j) {
            CHECK(sim::device_identity(c, j).mac != d.mac);
            CHECK(sim::device_identity(c, j).ipv4 != d.ipv4);
        }
    }
    CHECK(sim::device_identity(c, 0).mac != net::MacAddress{0x02, 0x52, 0x44, 0x4d, 0x00, 0x00});
}

TEST_CASE("addresses: a derived MAC moves past the configured ones", "[sim][addresses]") {
    const Config c = with({{"devices", "2"}, {"deterministic", "on"}, {"mac.1", "02:52:44:4d:00:00"}});
    CHECK(net::to_string(sim::device_identity(c, 0).mac) == "02:52:44:4d:00:01");
    CHECK(net::to_string(sim::device_identity(c, 1).mac) == "02:52:44:4d:00:00");
}

TEST_CASE("addresses: a derived IPv4 address moves past the taken ones", "[sim][addresses]") {
    // Device 0 would derive 169.254.1.0, which device 1 has; device 2 would
    // derive 169.254.1.2, which device 3 has, and then device 0's move.
    const Config c = with({{"devices", "4"}, {"deterministic", "on"}, {"ip.1", "169.254.1.0"}, {"ip.3", "169.254.1.2"},
                           {"mac.2", "02:00:00:00:00:02"}});
    CHECK(net::to_string(sim::device_identity(c, 0).ipv4) == "169.254.1.1");
    CHECK(net::to_string(sim::device_identity(c, 1).ipv4) == "169.254.1.0");
    CHECK(net::to_string(sim::device_identity(c, 2).ipv4) == "169.254.1.3");
    CHECK(net::to_string(sim::device_identity(c, 3).ipv4) == "169.254.1.2");
}

TEST_CASE("addresses: bad values are refused with the key and the reason", "[sim][addresses]") {
    CHECK(error_of({{"mac", "02:00:00:00:00"}}) ==
          "configuration: mac = '02:00:00:00:00': expected a MAC address like 02:00:00:00:00:01");
    CHECK(error_of({{"mac.2", "01:00:5e:00:00:01"}}).find("mac.2 = '01:00:5e:00:00:01': expected a unicast MAC") !=
          std::string::npos);
    CHECK(error_of({{"mac", "00:00:00:00:00:00"}}).find("unicast") != std::string::npos);
    CHECK(error_of({{"ip", "192.0.2.300"}}) == "configuration: ip = '192.0.2.300': expected an IPv4 address like 192.0.2.1");
    for (const char* ip : {"0.0.0.0", "255.255.255.255", "224.0.0.1", "127.0.0.1"}) {
        CAPTURE(ip);
        CHECK(error_of({{"ip", ip}}).find("an IPv4 address a port can own") != std::string::npos);
    }
    CHECK(error_of({{"ip6", "fe80::1::"}}).find("ip6 = 'fe80::1::': expected an IPv6 address") != std::string::npos);
    CHECK(error_of({{"ip6", "ff02::1"}}).find("an IPv6 address a port can own") != std::string::npos);
    for (const char* mtu : {"1000", "128", "8192", "1500", ""}) {
        CAPTURE(mtu);
        CHECK(error_of({{"mtu", mtu}}).find("expected 256, 512, 1024, 2048 or 4096") != std::string::npos);
    }
    CHECK(error_of({{"ip.16", "192.0.2.1"}}).find("ip.N with N a device index 0..15") != std::string::npos);
    CHECK(error_of({{"ip.1", "192.0.2.1"}}) ==
          "configuration: mac.1, ip.1, ip6.1 or mtu.1 set for device 1 but devices = 1");
    CHECK(error_of({{"devices", "2"}, {"ip", "192.0.2.1"}, {"ip.1", "192.0.2.1"}}) ==
          "configuration: devices 0 and 1 have the same ip 192.0.2.1");
    CHECK(error_of({{"devices", "2"}, {"mac", "02:00:00:00:00:01"}, {"mac.1", "02:00:00:00:00:01"}}) ==
          "configuration: devices 0 and 1 have the same mac 02:00:00:00:00:01");
}
