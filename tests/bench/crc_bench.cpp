// The two CRC-32 libraries net/crc32.cpp chooses between, and its choice,
// timed per length (the threshold's evidence). Every length is checked to
// give the same value in all three first.
//   usage: crc_bench [LENGTH...]   (default: 60 to 9000 bytes)
// Prints one line per length: ns per call, median of 9 rounds, for
// libdeflate_crc32, ISA-L's crc32_gzip_refl and net::ethernet_crc32; the
// data (1 MiB) stays in the cache, as a frame does after its copy.
#include <isa-l/crc.h>
#include <libdeflate.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "net/crc32.hpp"

namespace {

constexpr std::size_t kBuffer = 1 << 20, kStride = 2048, kCalls = 100'000, kRounds = 9;

template <class F> double median_ns(const std::vector<std::uint8_t>& buf, std::size_t len, F crc) {
    std::vector<double> rounds;
    std::uint32_t sink = 0;
    for (std::size_t r = 0; r < kRounds; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (std::size_t i = 0; i < kCalls; ++i)
            sink += crc(buf.data() + (i * kStride) % (kBuffer - len), len);
        const auto t1 = std::chrono::steady_clock::now();
        rounds.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kCalls);
    }
    if (sink == 0x5a5a5a5a) std::puts(""); // keeps the calls
    std::nth_element(rounds.begin(), rounds.begin() + kRounds / 2, rounds.end());
    return rounds[kRounds / 2];
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::size_t> lengths;
    for (int i = 1; i < argc; ++i) lengths.push_back(std::strtoul(argv[i], nullptr, 10));
    if (lengths.empty()) lengths = {60, 64, 128, 192, 224, 255, 256, 320, 512, 1024, 1514, 4096, 9000};
    std::vector<std::uint8_t> buf(kBuffer);
    std::uint32_t x = 1;
    for (auto& b : buf) b = static_cast<std::uint8_t>((x = x * 1664525u + 1013904223u) >> 24);

    const auto deflate = [](const std::uint8_t* p, std::size_t n) {
        return static_cast<std::uint32_t>(libdeflate_crc32(0, p, n));
    };
    const auto isal = [](const std::uint8_t* p, std::size_t n) { return crc32_gzip_refl(0, p, n); };
    const auto ours = [](const std::uint8_t* p, std::size_t n) {
        return rdmasim::net::ethernet_crc32({p, n});
    };
    std::printf("%8s %14s %14s %14s\n", "bytes", "libdeflate ns", "isa-l ns", "ethernet_crc32");
    for (std::size_t len : lengths) {
        if (len == 0 || len >= kBuffer - kStride) {
            std::fprintf(stderr, "crc_bench: length %zu: 1 to %zu\n", len, kBuffer - kStride - 1);
            return 2;
        }
        if (deflate(buf.data() + 3, len) != isal(buf.data() + 3, len) ||
            ours(buf.data() + 3, len) != isal(buf.data() + 3, len)) {
            std::fprintf(stderr, "crc_bench: the libraries disagree at %zu bytes\n", len);
            return 1;
        }
        std::printf("%8zu %14.1f %14.1f %14.1f\n", len, median_ns(buf, len, deflate),
                    median_ns(buf, len, isal), median_ns(buf, len, ours));
    }
    return 0;
}
