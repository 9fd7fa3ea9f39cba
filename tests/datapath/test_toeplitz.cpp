#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "datapath/toeplitz.hpp"

using rdmasim::datapath::Toeplitz;

namespace {

using rdmasim::datapath::kMicrosoftRssKey;

// Trivially correct model: for every set input bit, xor the 32 key bits that
// start at that bit position.
std::uint32_t reference_hash(const std::array<std::uint8_t, Toeplitz::kKeyLen>& key,
                             const std::vector<std::uint8_t>& input) {
    std::uint32_t h = 0;
    for (std::size_t bit = 0; bit < input.size() * 8; ++bit) {
        if (!((input[bit / 8] >> (7 - bit % 8)) & 1)) continue;
        std::uint32_t window = 0;
        for (std::size_t k = 0; k < 32; ++k) {
            const std::size_t kb = bit + k;
            window = (window << 1) | ((key[kb / 8] >> (7 - kb % 8)) & 1);
        }
        h ^= window;
    }
    return h;
}

void push_be16(std::vector<std::uint8_t>& v, std::uint16_t x) {
    v.push_back(static_cast<std::uint8_t>(x >> 8));
    v.push_back(static_cast<std::uint8_t>(x));
}

struct V4Row {
    std::array<std::uint8_t, 4> src, dst;
    std::uint16_t src_port, dst_port;
    std::uint32_t ip_hash, ip_tcp_hash;
};

struct V6Row {
    std::array<std::uint8_t, 16> src, dst;
    std::uint16_t src_port, dst_port;
    std::uint32_t ip_hash, ip_tcp_hash;
};

// Microsoft RSS verification suite (also in the Intel 82599 datasheet).
const V4Row kV4Rows[] = {
    {{66, 9, 149, 187}, {161, 142, 100, 80}, 2794, 1766, 0x323e8fc2, 0x51ccc178},
    {{199, 92, 111, 2}, {65, 69, 140, 83}, 14230, 4739, 0xd718262a, 0xc626b0ea},
    {{24, 19, 198, 95}, {12, 22, 207, 184}, 12898, 38024, 0xd2d0a5de, 0x5c2b394a},
    {{38, 27, 205, 30}, {209, 142, 163, 6}, 48228, 2217, 0x82989176, 0xafc7327f},
    {{153, 39, 163, 191}, {202, 188, 127, 2}, 44251, 1303, 0x5d1809c5, 0x10e828a2},
};

const V6Row kV6Rows[] = {
    // 3ffe:2501:200:1fff::7 -> 3ffe:2501:200:3::1
    {{0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x1f, 0xff, 0, 0, 0, 0, 0, 0, 0, 0x07},
     {0x3f, 0xfe, 0x25, 0x01, 0x02, 0x00, 0x00, 0x03, 0, 0, 0, 0, 0, 0, 0, 0x01},
     2794,
     1766,
     0x2cc18cd5,
     0x40207d3d},
    // 3ffe:501:8::260:97ff:fe40:efab -> ff02::1
    {{0x3f, 0xfe, 0x05, 0x01, 0x00, 0x08, 0, 0, 0x02, 0x60, 0x97, 0xff, 0xfe, 0x40, 0xef, 0xab},
     {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01},
     14230,
     4739,
     0x0f0c461c,
     0xdde51bbf},
    // 3ffe:1900:4545:3:200:f8ff:fe21:67cf -> fe80::200:f8ff:fe21:67cf
    {{0x3f, 0xfe, 0x19, 0x00, 0x45, 0x45, 0x00, 0x03, 0x02, 0x00, 0xf8, 0xff, 0xfe, 0x21, 0x67,
      0xcf},
     {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0xf8, 0xff, 0xfe, 0x21, 0x67, 0xcf},
     44251,
     38024,
     0x4b61e985,
     0x02d1feef},
};

} // namespace

TEST_CASE("Toeplitz matches the Microsoft IPv4 verification rows", "[datapath][toeplitz]") {
    const Toeplitz t(kMicrosoftRssKey);
    for (const V4Row& row : kV4Rows) {
        std::vector<std::uint8_t> in(row.src.begin(), row.src.end());
        in.insert(in.end(), row.dst.begin(), row.dst.end());
        CHECK(t.hash(in) == row.ip_hash);
        push_be16(in, row.src_port);
        push_be16(in, row.dst_port);
        CHECK(t.hash(in) == row.ip_tcp_hash);
    }
}

TEST_CASE("Toeplitz matches the Microsoft IPv6 verification rows", "[datapath][toeplitz]") {
    const Toeplitz t(kMicrosoftRssKey);
    for (const V6Row& row : kV6Rows) {
        std::vector<std::uint8_t> in(row.src.begin(), row.src.end());
        in.insert(in.end(), row.dst.begin(), row.dst.end());
        CHECK(t.hash(in) == row.ip_hash);
        push_be16(in, row.src_port);
        push_be16(in, row.dst_port);
        REQUIRE(in.size() == Toeplitz::kMaxInput);
        CHECK(t.hash(in) == row.ip_tcp_hash);
    }
}

TEST_CASE("Toeplitz keeps its key and hashes empty input to 0", "[datapath][toeplitz]") {
    const Toeplitz t(kMicrosoftRssKey);
    CHECK(t.key() == kMicrosoftRssKey);
    CHECK(t.hash({}) == 0);
}

TEST_CASE("Toeplitz agrees with a bit-by-bit model on random input", "[datapath][toeplitz]") {
    std::mt19937 rng(12345);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<std::size_t> len(0, Toeplitz::kMaxInput);
    for (int k = 0; k < 20; ++k) {
        std::array<std::uint8_t, Toeplitz::kKeyLen> key{};
        for (auto& b : key)
            b = static_cast<std::uint8_t>(byte(rng));
        const Toeplitz t(key);
        for (int i = 0; i < 200; ++i) {
            std::vector<std::uint8_t> in(len(rng));
            for (auto& b : in)
                b = static_cast<std::uint8_t>(byte(rng));
            REQUIRE(t.hash(in) == reference_hash(key, in));
        }
    }
}

TEST_CASE("Toeplitz cuts input longer than kMaxInput", "[datapath][toeplitz]") {
    const Toeplitz t(kMicrosoftRssKey);
    std::vector<std::uint8_t> in(Toeplitz::kMaxInput + 8, 0xa5);
    const std::uint32_t full = t.hash(in);
    in.resize(Toeplitz::kMaxInput);
    CHECK(full == t.hash(in));
    CHECK(full == reference_hash(kMicrosoftRssKey, in));
}
