#include "net/crc32.hpp"

#include <isa-l/crc.h>
#include <libdeflate.h>

namespace rdmasim::net {

namespace {

// Both libraries fold with carry-less multiplies and choose their code by
// CPU at run time. From 256 bytes ISA-L's crc32_gzip_refl folds 512 bits at
// a time where the CPU has VPCLMULQDQ: 2 to 3.8 times libdeflate 1.14's
// speed (1,514 bytes: 56 against 116 ns on the Zen 4 guest of
// tests/bench/RESULTS.md, tests/bench/crc_bench.cpp); below 256 it folds
// 128 bits at a time and libdeflate is the faster by up to 6 ns (255 bytes:
// 19.6 against 25.4).
constexpr std::size_t kIsalFrom = 256;

// One call into a library for write_fcs too (the FCS of every frame).
inline std::uint32_t crc32_of(std::uint32_t crc, std::span<const std::uint8_t> bytes) noexcept {
    if (bytes.size() >= kIsalFrom)
        return ::crc32_gzip_refl(crc, bytes.data(), bytes.size());
    return static_cast<std::uint32_t>(::libdeflate_crc32(crc, bytes.data(), bytes.size()));
}

} // namespace

std::uint32_t crc32_update(std::uint32_t crc, std::span<const std::uint8_t> bytes) noexcept {
    return crc32_of(crc, bytes);
}

void write_fcs(std::span<const std::uint8_t> bytes, std::uint8_t out[4]) noexcept {
    const std::uint32_t crc = crc32_of(0, bytes);
    for (int i = 0; i < 4; ++i)
        out[i] = static_cast<std::uint8_t>(crc >> (8 * i));
}

} // namespace rdmasim::net
