// The Microsoft RSS verification suite (also in the Intel 82599 datasheet):
// IPv4 and IPv6 addresses and ports with the Toeplitz hashes, under
// datapath::kMicrosoftRssKey, of the addresses alone (ip_hash) and of the
// addresses and TCP ports (ip_tcp_hash). The datapath's Toeplitz and RSS
// tests check against the same rows.
#pragma once

#include <array>
#include <cstdint>

namespace rdmasim::test {

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

inline constexpr V4Row kV4Rows[] = {
    {{66, 9, 149, 187}, {161, 142, 100, 80}, 2794, 1766, 0x323e8fc2, 0x51ccc178},
    {{199, 92, 111, 2}, {65, 69, 140, 83}, 14230, 4739, 0xd718262a, 0xc626b0ea},
    {{24, 19, 198, 95}, {12, 22, 207, 184}, 12898, 38024, 0xd2d0a5de, 0x5c2b394a},
    {{38, 27, 205, 30}, {209, 142, 163, 6}, 48228, 2217, 0x82989176, 0xafc7327f},
    {{153, 39, 163, 191}, {202, 188, 127, 2}, 44251, 1303, 0x5d1809c5, 0x10e828a2},
};

inline constexpr V6Row kV6Rows[] = {
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

} // namespace rdmasim::test
