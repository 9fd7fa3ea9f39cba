// The invariant CRC against frames built and checked by an independent
// implementation (scapy's RoCE contrib layer; for IPv6, which that layer
// does not cover, Python's zlib.crc32 over the masked bytes).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "net/icrc.hpp"
#include "tests/net/roce_golden_frames.hpp"

using namespace rdmasim::net;

namespace {

using namespace rdmasim::test;
using Buf = std::vector<std::uint8_t>;

std::uint32_t icrc_of(const Buf& frame, std::size_t ip_header_len) {
    const std::span<const std::uint8_t> datagram(frame.data() + 14, frame.size() - 14 - 4);
    return roce_icrc(datagram, ip_header_len);
}

std::uint32_t carried(const Buf& frame) {
    return load_icrc(frame.data() + frame.size() - 4);
}

} // namespace

TEST_CASE("ICRC of frames from an independent implementation", "[roce][icrc]") {
    CHECK(icrc_of(kRcSendOnly, 20) == carried(kRcSendOnly));
    CHECK(carried(kRcSendOnly) ==
          0xc976ec4f); // on the wire 4f ec 76 c9: least significant byte first
    CHECK(icrc_of(kRcAck, 20) == carried(kRcAck));
    CHECK(icrc_of(kUdIpv6, 40) == carried(kUdIpv6));

    std::uint8_t wire[4];
    store_icrc(wire, 0xc976ec4f);
    CHECK(wire[0] == 0x4f);
    CHECK(wire[3] == 0xc9);
}

TEST_CASE("ICRC ignores the variant fields and covers everything else", "[roce][icrc]") {
    const std::uint32_t v4 = carried(kRcSendOnly);
    const std::uint32_t v6 = carried(kUdIpv6);
    auto mutated = [](Buf frame, std::size_t offset, std::uint8_t xor_mask) {
        frame[offset] ^= xor_mask;
        return frame;
    };
    // IPv4: TOS (DSCP, ECN) at 15, TTL at 22, header checksum at 24..25, UDP checksum at 40..41,
    // BTH byte 4 (FECN, BECN, resv6) at 46.
    for (std::size_t off : {15u, 22u, 24u, 25u, 40u, 41u, 46u})
        CHECK(icrc_of(mutated(kRcSendOnly, off, 0xff), 20) == v4);
    // Identification, flags, protocol, addresses, UDP ports and length, every other BTH
    // byte, the payload and the pad are covered.
    for (std::size_t off :
         {18u, 20u, 23u, 26u, 33u, 34u, 37u, 39u, 42u, 43u, 44u, 47u, 50u, 53u, 54u, 61u})
        CHECK(icrc_of(mutated(kRcSendOnly, off, 0x01), 20) != v4);
    // IPv6: traffic class (low nibble of byte 14, high nibble of 15), flow label
    // (rest of 15, 16, 17), hop limit (21), UDP checksum (60, 61), BTH byte 4 (66).
    for (std::size_t off : {15u, 16u, 17u, 21u, 60u, 61u, 66u})
        CHECK(icrc_of(mutated(kUdIpv6, off, 0xff), 40) == v6);
    CHECK(icrc_of(mutated(kUdIpv6, 14, 0x0f), 40) == v6);
    // Version nibble, payload length, next header, addresses, BTH opcode, DETH covered.
    for (std::size_t off : {18u, 19u, 20u, 22u, 37u, 53u, 62u, 72u, 76u, 90u})
        CHECK(icrc_of(mutated(kUdIpv6, off, 0x01), 40) != v6);
}

TEST_CASE("ICRC in place: the same value, the bytes unchanged", "[roce][icrc]") {
    for (const Buf* frame : {&kRcSendOnly, &kRcAck, &kUdIpv6}) {
        Buf copy = *frame;
        const std::size_t ip_len = copy[12] == 0x86 ? 40 : 20;
        const std::span<std::uint8_t> datagram(copy.data() + 14, copy.size() - 14 - 4);
        CHECK(roce_icrc_in_place(datagram, ip_len) == carried(*frame));
        CHECK(copy == *frame);
    }
}
