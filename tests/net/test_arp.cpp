// The ARP codec against golden bytes (net/README.md, "ARP"): a request and a
// reply as scapy builds them, parsed field by field and rebuilt byte for byte;
// what is not IPv4-over-Ethernet ARP is refused.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <vector>

#include "net/arp.hpp"

using namespace rdmasim::net;

namespace {

// Ether(src="02:00:00:00:00:01", dst="ff:ff:ff:ff:ff:ff") /
// ARP(op=1, hwsrc="02:00:00:00:00:01", psrc="192.0.2.1", pdst="192.0.2.2"), padded to 60.
const std::vector<std::uint8_t> kRequest = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, // Ethernet
    0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01,                                     // htype..op
    0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0xc0, 0x00, 0x02, 0x01,                         // sender
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x02, 0x02,                         // target
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};                              // padding

// The answer of 192.0.2.2 at 02:00:00:00:00:02.
const std::vector<std::uint8_t> kReply = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x08, 0x06,
    0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0xc0, 0x00, 0x02, 0x02,
    0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0xc0, 0x00, 0x02, 0x01,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

const MacAddress kMac1{0x02, 0, 0, 0, 0, 0x01};
const MacAddress kMac2{0x02, 0, 0, 0, 0, 0x02};
const Ipv4Address kIp1{192, 0, 2, 1};
const Ipv4Address kIp2{192, 0, 2, 2};

std::vector<std::uint8_t> build(const MacAddress& dst, const ArpPacket& arp) {
    std::array<std::uint8_t, kMinFrameLen> out;
    out.fill(0xee);
    REQUIRE(build_arp(out, dst, arp) == kMinFrameLen);
    return {out.begin(), out.end()};
}

} // namespace

TEST_CASE("an ARP request parses field by field and rebuilds byte for byte", "[net][arp]") {
    const auto arp = parse_arp(kRequest);
    REQUIRE(arp);
    CHECK(arp->op == ArpOp::request);
    CHECK(arp->sender_mac == kMac1);
    CHECK(arp->sender_ip == kIp1);
    CHECK(arp->target_mac == MacAddress{});
    CHECK(arp->target_ip == kIp2);
    CHECK(*arp == arp_request(kMac1, kIp1, kIp2));
    CHECK(build(kBroadcastMac, *arp) == kRequest);
}

TEST_CASE("the reply to a request swaps the roles and goes to the asker", "[net][arp]") {
    const ArpPacket reply = arp_reply(*parse_arp(kRequest), kMac2);
    CHECK(reply.op == ArpOp::reply);
    CHECK(reply.sender_mac == kMac2);
    CHECK(reply.sender_ip == kIp2);
    CHECK(reply.target_mac == kMac1);
    CHECK(reply.target_ip == kIp1);
    CHECK(build(kMac1, reply) == kReply);
    CHECK(parse_arp(kReply) == reply);
}

TEST_CASE("the 42 ARP bytes are enough; padding is ignored", "[net][arp]") {
    const std::vector<std::uint8_t> bare(kRequest.begin(), kRequest.begin() + kArpFrameLen);
    CHECK(parse_arp(bare) == parse_arp(kRequest));
    const std::vector<std::uint8_t> cut(kRequest.begin(), kRequest.begin() + kArpFrameLen - 1);
    CHECK_FALSE(parse_arp(cut));
}

TEST_CASE("anything but IPv4-over-Ethernet ARP is refused", "[net][arp]") {
    struct Case {
        const char* what;
        std::size_t offset;
        std::uint8_t value;
    };
    for (const Case& c : {Case{"ether type IPv4", 13, 0x00}, Case{"hardware type 6", 15, 0x06},
                          Case{"protocol type IPv6", 16, 0x86}, Case{"hardware length 8", 18, 0x08},
                          Case{"protocol length 16", 19, 0x10}, Case{"operation 3 (RARP)", 21, 0x03},
                          Case{"operation 0", 21, 0x00}}) {
        CAPTURE(c.what);
        auto frame = kRequest;
        frame[c.offset] = c.value;
        CHECK_FALSE(parse_arp(frame));
    }
    // A tagged frame carries the tag where the ether type would be.
    std::vector<std::uint8_t> tagged(kRequest.begin(), kRequest.begin() + 12);
    for (std::uint8_t b : {0x81, 0x00, 0x00, 0x07}) tagged.push_back(b);
    tagged.insert(tagged.end(), kRequest.begin() + 12, kRequest.end());
    CHECK_FALSE(parse_arp(tagged));
}
