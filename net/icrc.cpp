#include "net/icrc.hpp"

#include <cstring>

#include <libdeflate.h>

namespace rdmasim::net {

std::uint32_t roce_icrc(std::span<const std::uint8_t> datagram,
                        std::size_t ip_header_len) noexcept {
    constexpr std::size_t kUdp = 8, kBth = 12;
    // The masked copy of the variant headers: at most a 60-byte IPv4 header.
    std::uint8_t masked[60 + kUdp + kBth];
    const std::size_t head = ip_header_len + kUdp + kBth;
    if (ip_header_len > 60 || datagram.size() < head) return 0; // outside the contract
    std::memcpy(masked, datagram.data(), head);
    if ((masked[0] >> 4) == 4) {
        masked[1] = 0xff;               // TOS: DSCP and ECN
        masked[8] = 0xff;               // TTL
        masked[10] = masked[11] = 0xff; // header checksum
    } else {
        masked[0] |= 0x0f;                        // traffic class, high nibble
        masked[1] = masked[2] = masked[3] = 0xff; // traffic class low nibble, flow label
        masked[7] = 0xff;                         // hop limit
    }
    std::uint8_t* udp = masked + ip_header_len;
    udp[6] = udp[7] = 0xff; // UDP checksum
    udp[kUdp + 4] = 0xff;   // BTH byte 4: FECN, BECN, resv6
    static constexpr std::uint8_t kLrh[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    // libdeflate_crc32 chains: the value of one call is the start of the next.
    std::uint32_t crc = ::libdeflate_crc32(0, kLrh, sizeof kLrh);
    crc = ::libdeflate_crc32(crc, masked, head);
    return ::libdeflate_crc32(crc, datagram.data() + head, datagram.size() - head);
}

} // namespace rdmasim::net
