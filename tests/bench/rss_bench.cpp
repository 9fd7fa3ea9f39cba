// The RSS entry of one frame (RssGroup::index) through each code this CPU
// runs (RssCode: portable, popcnt, gfni), timed in a loop: the one datapath
// stage whose code depends on the CPU, measured apart from the rest.
//
//   rss_bench [CALLS]
//       1,024 frames in memory per kind (IPv4/TCP, IPv4/UDP, IPv6/UDP,
//       random addresses and ports), each kind through a group hashing its
//       4-tuple with Microsoft's key, tables of 2^2, 2^4 and 2^9 entries. Per
//       code, kind and table: the median of 5 timed passes of CALLS calls
//       (default 4M). One JSON object per line: code, kind, log_size,
//       ns_per_call, and checksum (the entries summed: each code's must match).
#include <time.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <infiniband/verbs.h>

#include "datapath/rss.hpp"
#include "net/headers.hpp"

namespace {

using namespace rdmasim;

std::int64_t cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

struct Kind {
    const char* name;
    int ip_version;
    std::uint8_t proto;
    std::uint64_t fields;
};

constexpr std::uint64_t kPorts(std::uint8_t proto) {
    return proto == net::kIpProtoTcp ? IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP
                                     : IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
}

// A minimal well-formed frame of `k`: Ethernet, IP, the L4 ports; random
// addresses and ports.
std::vector<std::uint8_t> frame_of(const Kind& k, std::mt19937_64& rng) {
    std::vector<std::uint8_t> f(14, 0);
    f[0] = 0x02;
    f[6] = 0x02;
    f[12] = k.ip_version == 4 ? 0x08 : 0x86;
    f[13] = k.ip_version == 4 ? 0x00 : 0xdd;
    const std::size_t ip_len = k.ip_version == 4 ? 20 : 40;
    f.resize(14 + ip_len + 20, 0);
    std::uint8_t* ip = f.data() + 14;
    if (k.ip_version == 4) {
        ip[0] = 0x45;
        ip[3] = static_cast<std::uint8_t>(ip_len + 20);
        ip[8] = 64;
        ip[9] = k.proto;
        for (int i = 12; i < 20; ++i) ip[i] = static_cast<std::uint8_t>(rng());
    } else {
        ip[0] = 0x60;
        ip[5] = 20;
        ip[6] = k.proto;
        ip[7] = 64;
        for (int i = 8; i < 40; ++i) ip[i] = static_cast<std::uint8_t>(rng());
    }
    for (int i = 0; i < 4; ++i) ip[ip_len + i] = static_cast<std::uint8_t>(rng());
    if (k.proto == net::kIpProtoTcp) ip[ip_len + 12] = 0x50;
    return f;
}

} // namespace

int main(int argc, char** argv) {
    const std::uint64_t calls = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4'000'000;
    if (calls == 0) {
        std::fprintf(stderr, "usage: %s [CALLS]\n", argv[0]);
        return 2;
    }
    const std::array<Kind, 3> kinds{{
        {"ipv4-tcp", 4, net::kIpProtoTcp, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | kPorts(net::kIpProtoTcp)},
        {"ipv4-udp", 4, net::kIpProtoUdp, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | kPorts(net::kIpProtoUdp)},
        {"ipv6-udp", 6, net::kIpProtoUdp, IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 | kPorts(net::kIpProtoUdp)},
    }};
    std::mt19937_64 rng(20261202);
    for (const Kind& k : kinds) {
        std::vector<std::vector<std::uint8_t>> frames;
        std::vector<net::ParsedFrame> parsed;
        for (int i = 0; i < 1024; ++i) {
            frames.push_back(frame_of(k, rng));
            parsed.push_back(net::parse_frame(frames.back()));
        }
        for (const std::uint32_t log_size : {2u, 4u, 9u}) {
            for (const auto code : {datapath::RssCode::portable, datapath::RssCode::popcnt,
                                    datapath::RssCode::gfni}) {
                datapath::RssGroup g;
                g.configure(datapath::kMicrosoftRssKey, k.fields, log_size);
                if (!g.use(code)) continue;
                std::vector<std::int64_t> passes;
                std::uint64_t checksum = 0;
                for (int pass = 0; pass < 5; ++pass) {
                    std::uint64_t sum = 0;
                    const std::int64_t t0 = cpu_ns();
                    for (std::uint64_t c = 0; c < calls; ++c) {
                        const std::size_t i = c & 1023;
                        sum += g.index(frames[i], parsed[i]);
                    }
                    passes.push_back(cpu_ns() - t0);
                    checksum = sum;
                }
                std::sort(passes.begin(), passes.end());
                static constexpr const char* kNames[] = {"portable", "popcnt", "gfni"};
                std::printf("{\"code\": \"%s\", \"kind\": \"%s\", \"log_size\": %u, "
                            "\"ns_per_call\": %.2f, \"checksum\": %llu}\n",
                            kNames[static_cast<int>(code)], k.name, log_size,
                            static_cast<double>(passes[2]) / static_cast<double>(calls),
                            static_cast<unsigned long long>(checksum));
            }
        }
    }
    return 0;
}
