#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "datapath/toeplitz.hpp"
#include "support/ms_rss_vectors.hpp"

using rdmasim::datapath::Toeplitz;

namespace {

using rdmasim::datapath::kMicrosoftRssKey;
using rdmasim::test::kV4Rows;
using rdmasim::test::kV6Rows;
using rdmasim::test::V4Row;
using rdmasim::test::V6Row;

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
