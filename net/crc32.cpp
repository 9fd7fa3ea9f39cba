#include "net/crc32.hpp"

#include <zlib.h>

namespace rdmasim::net {

std::uint32_t ethernet_crc32(std::span<const std::uint8_t> bytes) noexcept {
    // zlib's crc32 is the IEEE 802.3 CRC: reflected, init and final xor 0xffffffff.
    return static_cast<std::uint32_t>(::crc32_z(0L, bytes.data(), bytes.size()));
}

void write_fcs(std::span<const std::uint8_t> bytes, std::uint8_t out[4]) noexcept {
    const std::uint32_t crc = ethernet_crc32(bytes);
    for (int i = 0; i < 4; ++i)
        out[i] = static_cast<std::uint8_t>(crc >> (8 * i));
}

} // namespace rdmasim::net
