// The receivers of the live-interface benchmark, on one interface until
// FRAMES frames or 1 s without one:
//   ring      net::AfPacketPort (rdmasim's TPACKET_V3 ring source); poll(2) on
//             its wait_fd() when the ring is empty
//   tpacket   a bare TPACKET_V3 ring loop, no library: the ring's geometry
//             as net::AfPacketOptions' defaults (32 blocks of 256 KiB, 1 ms
//             retire timeout), poll(2) when the current block is not ready
//   recvfrom  a plain AF_PACKET socket, one blocking recvfrom(2) per frame,
//             SO_RCVBUF as large as the ring
// Each copies every frame once into a 2 KiB buffer, as a receiver must.
// usage: live_rx ring|tpacket|recvfrom INTERFACE FRAMES
// prints "ready" once bound, then one JSON object: frames, seconds (first to
// last frame), cpu_s (user + system of this process from the first frame
// on), kernel_drops.
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "net/af_packet.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto s = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
    return s(ru.ru_utime) + s(ru.ru_stime);
}

struct Tally {
    unsigned long long frames = 0, sum = 0;
    Clock::time_point first{}, last{};
    double cpu_first = 0, cpu_last = 0;
    unsigned char buf[2048];
    void take(const unsigned char* data, std::size_t len) {
        if (frames++ == 0) {
            first = Clock::now();
            cpu_first = cpu_seconds();
        }
        const std::size_t n = len < sizeof buf ? len : sizeof buf;
        std::memcpy(buf, data, n);
        sum += buf[n / 2];
        last = Clock::now();
    }
    // The CPU time spent waiting out the quiet second after the last frame is ~0.
    void done() { cpu_last = cpu_seconds(); }
};

int ring(const char* iface, unsigned long long want, Tally& t, unsigned long long& drops) {
    rdmasim::net::AfPacketOptions o;
    o.iface = iface;
    auto p = rdmasim::net::AfPacketPort::open(o);
    if (!p) {
        std::fprintf(stderr, "live_rx: %s\n", p.error().message.c_str());
        return 1;
    }
    rdmasim::net::AfPacketPort& port = *p.value();
    std::printf("ready\n");
    std::fflush(stdout);
    rdmasim::net::Frame f;
    while (t.frames < want) {
        if (port.next(f)) {
            t.take(f.data, f.len);
            continue;
        }
        pollfd pfd{port.wait_fd(), POLLIN, 0};
        if (poll(&pfd, 1, 1000) == 0 && t.frames != 0) break; // 1 s quiet: the sender is done
    }
    t.done();
    while (port.next(f)) {
    }
    drops = port.counters().kernel_drops;
    return 0;
}

int tpacket(const char* iface, unsigned long long want, Tally& t, unsigned long long& drops) {
    constexpr unsigned kBlock = 1u << 18, kBlocks = 32, kFrame = 2048;
    const int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (fd < 0) {
        std::perror("live_rx: socket");
        return 1;
    }
    const int version = TPACKET_V3;
    tpacket_req3 req{};
    req.tp_block_size = kBlock;
    req.tp_block_nr = kBlocks;
    req.tp_frame_size = kFrame;
    req.tp_frame_nr = kBlock / kFrame * kBlocks;
    req.tp_retire_blk_tov = 1;
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) != 0 ||
        setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) != 0) {
        std::perror("live_rx: TPACKET_V3 ring");
        return 1;
    }
    auto* ring = static_cast<std::uint8_t*>(mmap(nullptr, std::size_t{kBlock} * kBlocks,
                                                 PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                                                 fd, 0));
    if (ring == MAP_FAILED) {
        std::perror("live_rx: mmap");
        return 1;
    }
    sockaddr_ll addr{};
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_ALL);
    addr.sll_ifindex = static_cast<int>(if_nametoindex(iface));
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        std::perror("live_rx: bind");
        return 1;
    }
    std::printf("ready\n");
    std::fflush(stdout);
    unsigned block = 0;
    while (t.frames < want) {
        auto* b = reinterpret_cast<tpacket_block_desc*>(ring + std::size_t{block} * kBlock);
        if ((__atomic_load_n(&b->hdr.bh1.block_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) == 0) {
            pollfd pfd{fd, POLLIN, 0};
            if (poll(&pfd, 1, 1000) == 0 && t.frames != 0) break; // 1 s quiet
            continue;
        }
        auto* h = reinterpret_cast<tpacket3_hdr*>(reinterpret_cast<std::uint8_t*>(b) +
                                                  b->hdr.bh1.offset_to_first_pkt);
        for (unsigned i = 0; i < b->hdr.bh1.num_pkts; ++i) {
            t.take(reinterpret_cast<const unsigned char*>(h) + h->tp_mac, h->tp_snaplen);
            h = reinterpret_cast<tpacket3_hdr*>(reinterpret_cast<std::uint8_t*>(h) +
                                                h->tp_next_offset);
        }
        __atomic_store_n(&b->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        block = (block + 1) % kBlocks;
    }
    t.done();
    tpacket_stats_v3 st{};
    socklen_t len = sizeof st;
    getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len);
    drops = st.tp_drops;
    munmap(ring, std::size_t{kBlock} * kBlocks);
    close(fd);
    return 0;
}

int plain(const char* iface, unsigned long long want, Tally& t, unsigned long long& drops) {
    const int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    if (fd < 0) {
        std::perror("live_rx: socket");
        return 1;
    }
    const int rcvbuf = 8 << 20; // the ring's size
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    sockaddr_ll addr{};
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_ALL);
    addr.sll_ifindex = static_cast<int>(if_nametoindex(iface));
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        std::perror("live_rx: bind");
        return 1;
    }
    timeval quiet{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &quiet, sizeof quiet);
    std::printf("ready\n");
    std::fflush(stdout);
    unsigned char buf[65536];
    while (t.frames < want) {
        sockaddr_ll from{};
        socklen_t fl = sizeof from;
        const ssize_t n = recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &fl);
        if (n < 0) {
            if (t.frames != 0) break; // 1 s quiet
            continue;
        }
        t.take(buf, static_cast<std::size_t>(n));
    }
    t.done();
    tpacket_stats st{};
    socklen_t len = sizeof st;
    getsockopt(fd, SOL_PACKET, PACKET_STATISTICS, &st, &len);
    drops = st.tp_drops;
    close(fd);
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    const std::string mode = argc == 4 ? argv[1] : "";
    if (mode != "ring" && mode != "tpacket" && mode != "recvfrom") {
        std::fprintf(stderr, "usage: %s ring|tpacket|recvfrom INTERFACE FRAMES\n", argv[0]);
        return 2;
    }
    const unsigned long long want = std::strtoull(argv[3], nullptr, 10);
    Tally t;
    unsigned long long drops = 0;
    const int rc = mode == "ring"      ? ring(argv[2], want, t, drops)
                   : mode == "tpacket" ? tpacket(argv[2], want, t, drops)
                                       : plain(argv[2], want, t, drops);
    if (rc != 0) return rc;
    const double secs = std::chrono::duration<double>(t.last - t.first).count();
    std::printf("{\"frames\": %llu, \"seconds\": %.6f, \"cpu_s\": %.6f, \"kernel_drops\": %llu, "
                "\"checksum\": %llu}\n",
                t.frames, secs, t.cpu_last - t.cpu_first, drops, t.sum);
    return 0;
}
