#include "net/icrc.hpp"

#include <cstring>

#include "net/crc32.hpp"

namespace rdmasim::net {

namespace {

constexpr std::size_t kUdp = 8, kBth = 12;
// The CRC-32 of the 8 bytes of 0xff that stand for the LRH (zlib.crc32(b"\xff" * 8)).
constexpr std::uint32_t kLrhCrc = 0x2144df1c;

// The offsets of the variant bytes from the IP header on, with the bits of
// each that the ICRC sees as ones; `count` of them.
struct VariantBytes {
    std::size_t offset[8];
    std::uint8_t mask[8];
    std::size_t count;
};

VariantBytes variant_bytes(std::uint8_t first_byte, std::size_t ip_header_len) noexcept {
    const std::size_t udp = ip_header_len, bth = ip_header_len + kUdp;
    if ((first_byte >> 4) == 4) // TOS (DSCP, ECN), TTL, header checksum
        return {{1, 8, 10, 11, udp + 6, udp + 7, bth + 4},
                {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
                7};
    // traffic class (low nibble of byte 0, high nibble of byte 1), flow label, hop limit
    return {{0, 1, 2, 3, 7, udp + 6, udp + 7, bth + 4},
            {0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
            8};
}

} // namespace

std::uint32_t roce_icrc(std::span<const std::uint8_t> datagram,
                        std::size_t ip_header_len) noexcept {
    // A masked copy of the headers (at most a 60-byte IPv4 header, UDP, BTH).
    std::uint8_t masked[60 + kUdp + kBth];
    const std::size_t head = ip_header_len + kUdp + kBth;
    if (ip_header_len > 60 || datagram.size() < head) return 0; // outside the contract
    std::memcpy(masked, datagram.data(), head);
    const VariantBytes v = variant_bytes(masked[0], ip_header_len);
    for (std::size_t i = 0; i < v.count; ++i)
        masked[v.offset[i]] |= v.mask[i];
    const std::uint32_t crc = crc32_update(kLrhCrc, {masked, head});
    return crc32_update(crc, datagram.subspan(head));
}

std::uint32_t roce_icrc_in_place(std::span<std::uint8_t> datagram,
                                 std::size_t ip_header_len) noexcept {
    const std::size_t head = ip_header_len + kUdp + kBth;
    if (ip_header_len > 60 || datagram.size() < head) return 0; // outside the contract
    const VariantBytes v = variant_bytes(datagram[0], ip_header_len);
    std::uint8_t saved[8];
    for (std::size_t i = 0; i < v.count; ++i) {
        saved[i] = datagram[v.offset[i]];
        datagram[v.offset[i]] |= v.mask[i];
    }
    const std::uint32_t crc = crc32_update(kLrhCrc, datagram);
    for (std::size_t i = 0; i < v.count; ++i)
        datagram[v.offset[i]] = saved[i];
    return crc;
}

} // namespace rdmasim::net
