// Ethernet FCS: CRC-32 (IEEE 802.3, reflected, init and final xor 0xffffffff),
// computed by libdeflate. On the wire the FCS goes least significant byte first.
#pragma once

#include <cstdint>
#include <span>

namespace rdmasim::net {

[[nodiscard]] std::uint32_t ethernet_crc32(std::span<const std::uint8_t> bytes) noexcept;

// Writes the FCS of `bytes` into out[0..3] in wire order (LSB first).
void write_fcs(std::span<const std::uint8_t> bytes, std::uint8_t out[4]) noexcept;

} // namespace rdmasim::net
