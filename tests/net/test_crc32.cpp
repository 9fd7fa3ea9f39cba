// Ethernet FCS against published CRC-32 check values and frames whose FCS
// was computed with Python's zlib.crc32.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string_view>
#include <vector>

#include "net/crc32.hpp"

using namespace rdmasim::net;

namespace {

std::vector<std::uint8_t> bytes_of(std::string_view s) {
    return {s.begin(), s.end()};
}

// Ether(dst ff:ff:ff:ff:ff:ff, src 02:11:22:33:44:55, type ARP)/ARP-ish body, zero-padded to 60.
std::vector<std::uint8_t> arp_frame() {
    std::vector<std::uint8_t> f = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0x11,
                                   0x22, 0x33, 0x44, 0x55, 0x08, 0x06, 0x00, 0x01,
                                   0x08, 0x00, 0x06, 0x04, 0x00, 0x01};
    f.resize(60, 0);
    return f;
}

// Ether/IP(10.0.0.1 -> 10.0.0.2)/TCP(40000 -> 80)/"hello", 59 bytes.
const std::vector<std::uint8_t> kIpv4Tcp = {
    0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x08, 0x00, 0x45,
    0x10, 0x00, 0x2d, 0x12, 0x34, 0x40, 0x00, 0x3f, 0x06, 0x15, 0x85, 0x0a, 0x00, 0x00, 0x01,
    0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x00, 0x50, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
    0x02, 0x50, 0x18, 0x02, 0x00, 0xb9, 0x5f, 0x00, 0x00, 0x68, 0x65, 0x6c, 0x6c, 0x6f};

} // namespace

TEST_CASE("CRC-32 check values", "[net][crc32]") {
    CHECK(ethernet_crc32(bytes_of("123456789")) == 0xCBF43926u);
    CHECK(ethernet_crc32({}) == 0u);
    CHECK(ethernet_crc32(bytes_of("a")) == 0xe8b7be43u);
    CHECK(ethernet_crc32(bytes_of("The quick brown fox jumps over the lazy dog")) == 0x414fa339u);
}

TEST_CASE("Ethernet frames: FCS value and wire order", "[net][crc32]") {
    SECTION("minimum-size ARP frame") {
        const auto f = arp_frame();
        CHECK(ethernet_crc32(f) == 0x95be44a0u);
        std::uint8_t fcs[4] = {};
        write_fcs(f, fcs);
        CHECK(fcs[0] == 0xa0); // least significant byte first
        CHECK(fcs[1] == 0x44);
        CHECK(fcs[2] == 0xbe);
        CHECK(fcs[3] == 0x95);
    }
    SECTION("IPv4/TCP frame, unpadded and padded to 60") {
        CHECK(ethernet_crc32(kIpv4Tcp) == 0xcde6b0f4u);
        auto padded = kIpv4Tcp;
        padded.resize(60, 0);
        CHECK(ethernet_crc32(padded) == 0x681f3f38u);
    }
    SECTION("a frame followed by its FCS leaves the CRC-32 residue") {
        for (auto f : {arp_frame(), kIpv4Tcp}) {
            std::uint8_t fcs[4] = {};
            write_fcs(f, fcs);
            f.insert(f.end(), fcs, fcs + 4);
            CHECK(ethernet_crc32(f) == 0x2144df1cu);
        }
    }
    SECTION("a single flipped bit changes the FCS") {
        auto f = arp_frame();
        const std::uint32_t good = ethernet_crc32(f);
        f[30] ^= 0x04;
        CHECK(ethernet_crc32(f) != good);
    }
}

namespace {

// The CRC-32 bit by bit, as IEEE 802.3 defines it (reflected polynomial
// 0xedb88320): an oracle independent of both libraries crc32.cpp calls.
std::uint32_t bitwise_crc32(std::uint32_t crc, const std::uint8_t* p, std::size_t n) {
    crc = ~crc;
    for (std::size_t i = 0; i < n; ++i) {
        crc ^= p[i];
        for (int b = 0; b < 8; ++b)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

std::vector<std::uint8_t> pseudo_random_bytes(std::size_t n) {
    std::vector<std::uint8_t> v(n);
    std::uint32_t x = 0x12345678;
    for (auto& b : v) {
        x = x * 1664525u + 1013904223u;
        b = static_cast<std::uint8_t>(x >> 24);
    }
    return v;
}

} // namespace

// crc32.cpp hands inputs of 256 bytes and more to another library than the
// shorter ones: every length either side of that and up to a jumbo frame,
// at every alignment a frame in a buffer can have.
TEST_CASE("CRC-32 of every length and alignment equals the bitwise definition", "[net][crc32]") {
    const auto data = pseudo_random_bytes(9100);
    std::vector<std::size_t> lengths;
    for (std::size_t n = 0; n <= 2100; ++n) lengths.push_back(n);
    for (std::size_t n : {4095, 4096, 4097, 9000, 9018}) lengths.push_back(n);
    for (std::size_t offset = 0; offset < 8; ++offset) {
        for (std::size_t n : lengths) {
            const std::span<const std::uint8_t> bytes(data.data() + offset, n);
            const std::uint32_t want = bitwise_crc32(0, bytes.data(), n);
            if (ethernet_crc32(bytes) != want) {
                FAIL_CHECK("length " << n << " at offset " << offset);
                return;
            }
        }
    }
    SUCCEED();
}

TEST_CASE("crc32_update chains across the split between the two libraries", "[net][crc32]") {
    const auto data = pseudo_random_bytes(1500);
    const std::span<const std::uint8_t> all(data);
    const std::uint32_t whole = ethernet_crc32(all);
    REQUIRE(whole == bitwise_crc32(0, data.data(), data.size()));
    for (std::size_t cut = 0; cut <= data.size(); ++cut) {
        const std::uint32_t chained = crc32_update(crc32_update(0, all.first(cut)), all.subspan(cut));
        if (chained != whole) {
            FAIL_CHECK("split at " << cut);
            return;
        }
    }
    // Chaining from a value that is not 0, as the RoCE ICRC starts from its LRH's.
    const std::uint8_t lrh[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    const std::uint32_t start = crc32_update(0, lrh);
    CHECK(start == 0x2144df1cu);
    CHECK(crc32_update(start, all) == bitwise_crc32(start, data.data(), data.size()));
}
