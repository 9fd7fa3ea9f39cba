// Ethernet FCS: CRC-32 (IEEE 802.3, reflected, init and final xor 0xffffffff:
// the value zlib's crc32 gives), computed by libdeflate for short inputs and
// by ISA-L for 256 bytes and more. On the wire the FCS goes least
// significant byte first.
#pragma once

#include <cstdint>
#include <span>

namespace rdmasim::net {

// The CRC-32 of `bytes` continued from `crc`, the value of the call over
// the bytes before them (0 to start): crc32_update(crc32_update(0, a), b)
// is the CRC of a followed by b.
[[nodiscard]] std::uint32_t crc32_update(std::uint32_t crc, std::span<const std::uint8_t> bytes) noexcept;

[[nodiscard]] inline std::uint32_t ethernet_crc32(std::span<const std::uint8_t> bytes) noexcept {
    return crc32_update(0, bytes);
}

// Writes the FCS of `bytes` into out[0..3] in wire order (LSB first).
void write_fcs(std::span<const std::uint8_t> bytes, std::uint8_t out[4]) noexcept;

} // namespace rdmasim::net
