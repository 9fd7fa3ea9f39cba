// Address text forms and the addresses derived from a MAC (net/README.md,
// "Addresses").
#include <catch2/catch.hpp>

#include "net/addresses.hpp"

using namespace rdmasim::net;

TEST_CASE("MAC, IPv4 and IPv6 text forms parse and print", "[net][addresses]") {
    CHECK(parse_mac("02:0A:ff:00:10:01") == MacAddress{0x02, 0x0a, 0xff, 0x00, 0x10, 0x01});
    CHECK(to_string(MacAddress{0x02, 0x0a, 0xff, 0x00, 0x10, 0x01}) == "02:0a:ff:00:10:01");
    for (const char* bad : {"", "02:00:00:00:00", "02:00:00:00:00:001", "02-00-00-00-00-01", "0g:00:00:00:00:01"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_mac(bad));
    }
    CHECK(parse_ipv4("192.0.2.1") == Ipv4Address{192, 0, 2, 1});
    CHECK(parse_ipv4("0.0.0.0") == Ipv4Address{});
    CHECK(to_string(Ipv4Address{192, 0, 2, 255}) == "192.0.2.255");
    for (const char* bad : {"", "192.0.2", "192.0.2.1.", "192.0.2.256", "192.0.02.1", "192.0.2.-1", "a.b.c.d",
                            "192.0.2.1 ", "1.2.3.4.5"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_ipv4(bad));
    }
    CHECK(parse_ipv6("fe80::1") == Ipv6Address{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1});
    CHECK(to_string(*parse_ipv6("FE80:0::00:1")) == "fe80::1");
    CHECK_FALSE(parse_ipv6("fe80::1::2"));
    CHECK_FALSE(parse_ipv6("192.0.2.1"));
}

TEST_CASE("addresses derived from a MAC", "[net][addresses]") {
    const MacAddress mac{0x02, 0x52, 0x44, 0x4d, 0x00, 0x07};
    // RFC 4291 appendix A: the universal/local bit inverted, ff:fe in the middle.
    CHECK(to_string(ipv6_link_local(mac)) == "fe80::52:44ff:fe4d:7");
    CHECK(to_string(ipv4_mapped(Ipv4Address{192, 0, 2, 1})) == "::ffff:192.0.2.1");
    CHECK(ipv4_link_local(mac) == Ipv4Address{169, 254, 1, 7});
    // The third byte stays in 1..254 (RFC 3927's range for hosts).
    CHECK(ipv4_link_local(MacAddress{0x02, 0, 0, 0, 253, 9}) == Ipv4Address{169, 254, 254, 9});
    CHECK(ipv4_link_local(MacAddress{0x02, 0, 0, 0, 254, 9}) == Ipv4Address{169, 254, 1, 9});
    CHECK(ipv4_link_local(MacAddress{0x02, 0, 0, 0, 255, 9}) == Ipv4Address{169, 254, 2, 9});
    CHECK(is_unicast(mac));
    CHECK_FALSE(is_unicast(MacAddress{0x01, 0x00, 0x5e, 0, 0, 1}));
}
