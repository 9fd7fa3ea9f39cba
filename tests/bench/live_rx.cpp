// The receivers of the live-interface benchmark, on one interface until
// FRAMES frames or 1 s without one:
//   ring      net::AfPacketPort (rdmasim's TPACKET_V3 ring source); poll(2) on
//             its wait_fd() when the ring is empty
//   recvfrom  a plain AF_PACKET socket, one blocking recvfrom(2) per frame,
//             SO_RCVBUF as large as the ring
// Each copies every frame once into a 2 KiB buffer, as a receiver must.
// usage: live_rx ring|recvfrom INTERFACE FRAMES
// prints "ready" once bound, then one JSON object: frames, seconds (first to
// last frame), cpu_s (user + system of this process from the first frame
// on), kernel_drops.
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
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
    if (argc != 4 || (std::strcmp(argv[1], "ring") != 0 && std::strcmp(argv[1], "recvfrom") != 0)) {
        std::fprintf(stderr, "usage: %s ring|recvfrom INTERFACE FRAMES\n", argv[0]);
        return 2;
    }
    const unsigned long long want = std::strtoull(argv[3], nullptr, 10);
    Tally t;
    unsigned long long drops = 0;
    const int rc = std::strcmp(argv[1], "ring") == 0 ? ring(argv[2], want, t, drops)
                                                     : plain(argv[2], want, t, drops);
    if (rc != 0) return rc;
    const double secs = std::chrono::duration<double>(t.last - t.first).count();
    std::printf("{\"frames\": %llu, \"seconds\": %.6f, \"cpu_s\": %.6f, \"kernel_drops\": %llu, "
                "\"checksum\": %llu}\n",
                t.frames, secs, t.cpu_last - t.cpu_first, drops, t.sum);
    return 0;
}
