// A frame source that makes its frames up: `count` valid Ethernet / IPv4 /
// UDP-or-TCP frames, generated on the fly from a seed (the same seed gives the
// same frames), with varied 5-tuples so that RSS spreads them, lengths 64..1500
// bytes (FCS not included, none carried) and one in eight 802.1Q-tagged.
// One frame buffer, rewritten in place: no allocation per frame. Like every
// source, it is pulled by one engine thread only.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "net/frame_source.hpp"

namespace rdmasim::test {

class SyntheticSource final : public net::FrameSource {
public:
    static constexpr std::uint32_t kMinLen = 64;
    static constexpr std::uint32_t kMaxLen = 1500;

    SyntheticSource(std::uint64_t count, std::uint64_t seed) noexcept
        : count_(count), seed_(seed), rng_(seed) {
        // The payload is a fixed pattern; next() rewrites only the headers.
        for (std::size_t i = 0; i < buf_.size(); ++i)
            buf_[i] = static_cast<std::uint8_t>(i * 7 + 3);
    }

    bool next(net::Frame& out) noexcept override {
        if (produced_ >= count_) return false;
        const std::uint64_t r1 = rand();
        const std::uint64_t r2 = rand();
        const std::uint32_t len =
            kMinLen + static_cast<std::uint32_t>(r1 % (kMaxLen - kMinLen + 1));
        const bool tagged = (r1 >> 16 & 7) == 0;
        const bool tcp = (r1 >> 19 & 1) != 0;
        std::uint8_t* p = buf_.data();
        // Ethernet: a fixed destination, a source that varies a little.
        static constexpr std::array<std::uint8_t, 6> kDst = {0x02, 0x52, 0x44, 0x4d, 0x00, 0x00};
        for (std::size_t i = 0; i < 6; ++i)
            p[i] = kDst[i];
        p[6] = 0x02;
        p[7] = 0x00;
        put32(p + 8, static_cast<std::uint32_t>(r2 >> 32));
        std::size_t at = 12;
        if (tagged) {
            put16(p + at, 0x8100);
            put16(p + at + 2, static_cast<std::uint16_t>(r1 >> 20 & 0xefff)); // PCP, VID
            at += 4;
        }
        put16(p + at, 0x0800);
        at += 2;
        // IPv4, 20-byte header, valid checksum.
        std::uint8_t* ip = p + at;
        const auto ip_len = static_cast<std::uint16_t>(len - at);
        ip[0] = 0x45;
        ip[1] = 0;
        put16(ip + 2, ip_len);
        put16(ip + 4, static_cast<std::uint16_t>(produced_));
        put16(ip + 6, 0x4000);
        ip[8] = 64;
        ip[9] = tcp ? 6 : 17;
        put16(ip + 10, 0);
        put32(ip + 12, 0x0a000000u | static_cast<std::uint32_t>(r2 & 0xffffff));     // 10/8
        put32(ip + 16, 0xc0a80000u | static_cast<std::uint32_t>(r2 >> 24 & 0xffff)); // 192.168/16
        std::uint32_t sum = 0;
        for (std::size_t i = 0; i < 20; i += 2)
            sum += static_cast<std::uint32_t>(ip[i] << 8 | ip[i + 1]);
        while (sum >> 16)
            sum = (sum & 0xffff) + (sum >> 16);
        put16(ip + 10, static_cast<std::uint16_t>(~sum));
        // L4: ports from the random bits; checksums left 0 (UDP: "none").
        std::uint8_t* l4 = ip + 20;
        put16(l4, static_cast<std::uint16_t>(1024 + (r2 >> 40 & 0x7fff)));
        put16(l4 + 2, static_cast<std::uint16_t>(r1 >> 32));
        if (tcp) {
            put32(l4 + 4, static_cast<std::uint32_t>(produced_));
            put32(l4 + 8, 0);
            l4[12] = 0x50;
            l4[13] = 0x18;
            put16(l4 + 14, 0xffff);
            put16(l4 + 16, 0);
            put16(l4 + 18, 0);
        } else {
            put16(l4 + 4, static_cast<std::uint16_t>(ip_len - 20));
            put16(l4 + 6, 0);
        }
        out = net::Frame{};
        out.data = p;
        out.len = len;
        out.wire_len = len;
        out.ts_ns = 1'000'000'000ull + produced_ * 1'000;
        ++produced_;
        ++counters_.frames;
        counters_.bytes += len;
        return true;
    }

    [[nodiscard]] bool exhausted() const noexcept override { return produced_ >= count_; }
    [[nodiscard]] std::string describe() const override {
        return "synthetic " + std::to_string(count_) + " frames, seed " + std::to_string(seed_);
    }
    [[nodiscard]] const net::SourceCounters& counters() const noexcept override {
        return counters_;
    }

private:
    static void put16(std::uint8_t* p, std::uint16_t v) noexcept {
        p[0] = static_cast<std::uint8_t>(v >> 8);
        p[1] = static_cast<std::uint8_t>(v);
    }
    static void put32(std::uint8_t* p, std::uint32_t v) noexcept {
        put16(p, static_cast<std::uint16_t>(v >> 16));
        put16(p + 2, static_cast<std::uint16_t>(v));
    }
    // splitmix64: small, fast, and every seed (0 included) gives a good stream.
    std::uint64_t rand() noexcept {
        std::uint64_t z = (rng_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }

    std::uint64_t count_;
    std::uint64_t seed_;
    std::uint64_t rng_;
    std::uint64_t produced_ = 0;
    net::SourceCounters counters_;
    std::array<std::uint8_t, kMaxLen> buf_{};
};

} // namespace rdmasim::test
