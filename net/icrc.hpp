// The invariant CRC of a RoCE v2 packet (IBA annex A17, RoCE v2; net/README.md,
// "RoCE v2 frames"): CRC-32 (the Ethernet polynomial, as net/crc32.hpp) over
// 8 bytes of 0xff standing for the LRH, the IP header with its variant
// fields set to all ones (IPv4: TOS, TTL, header checksum; IPv6: traffic
// class, flow label, hop limit), the UDP header with its checksum set to
// all ones, the BTH with its byte 4 (FECN, BECN, resv6) set to all ones,
// then everything after the BTH up to the ICRC. On the wire the ICRC goes
// least significant byte first, as the FCS does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace rdmasim::net {

// `datagram` starts at the IP header and ends before the ICRC; `ip_header_len`
// is 20..60 for IPv4 (version from the first nibble), 40 for IPv6. The
// caller guarantees ip_header_len + 8 (UDP) + 12 (BTH) bytes.
[[nodiscard]] std::uint32_t roce_icrc(std::span<const std::uint8_t> datagram,
                                      std::size_t ip_header_len) noexcept;

// The same value in one pass over a buffer the caller owns: the variant
// fields are set to ones for the computation and restored before return.
[[nodiscard]] std::uint32_t roce_icrc_in_place(std::span<std::uint8_t> datagram,
                                               std::size_t ip_header_len) noexcept;

inline void store_icrc(std::uint8_t* p, std::uint32_t icrc) noexcept {
    for (int i = 0; i < 4; ++i)
        p[i] = static_cast<std::uint8_t>(icrc >> (8 * i));
}
[[nodiscard]] inline std::uint32_t load_icrc(const std::uint8_t* p) noexcept {
    return std::uint32_t{p[0]} | (std::uint32_t{p[1]} << 8) | (std::uint32_t{p[2]} << 16) |
           (std::uint32_t{p[3]} << 24);
}

} // namespace rdmasim::net
