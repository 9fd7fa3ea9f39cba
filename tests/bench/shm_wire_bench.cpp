// Two hosts on one shm:// wire in one process, a thread each: one sends
// frames to the other as fast as the ring takes them, the other reads them.
// The wire alone: no port, no transport, no ICRC.
//   usage: shm_wire_bench [FRAMES [BYTES [ROUNDS]]]   (default 2,000,000 x 1,072 B, 5 rounds)
// Prints each round's frames/s and ns a frame (the reader's clock, first
// frame to last), then the median. Every frame's sequence number is checked.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "net/shm_wire.hpp"

using namespace rdmasim::net;

namespace {

std::unique_ptr<ShmWire> open_or_die(const std::string& url) {
    auto w = ShmWire::open(url);
    if (!w) {
        std::fprintf(stderr, "shm_wire_bench: %s\n", w.error().message.c_str());
        std::exit(1);
    }
    return std::move(w.value());
}

std::vector<std::uint8_t> frame(std::uint8_t dst, std::uint8_t src, std::size_t bytes) {
    std::vector<std::uint8_t> f(bytes, 0x5a);
    const std::uint8_t d[6] = {0x02, 0, 0, 0, 0, dst}, s[6] = {0x02, 0, 0, 0, 0, src};
    std::memcpy(f.data(), d, 6);
    std::memcpy(f.data() + 6, s, 6);
    f[12] = 0x88;
    f[13] = 0xb5;
    return f;
}

// One round: `frames` frames a -> b. Returns ns from the first frame read to the last.
double round_ns(ShmWire& a, ShmWire& b, std::uint64_t frames, std::size_t bytes) {
    std::atomic<bool> go{false};
    std::thread sender([&] {
        auto f = frame(2, 1, bytes);
        while (!go.load()) {
        }
        for (std::uint64_t seq = 0; seq < frames; ++seq) {
            std::memcpy(f.data() + 14, &seq, sizeof seq);
            while (a.backlog_frames() >= 64)
                (void)a.flush(); // the ring is full: wait for room
            a.send(f, 0);
            if (seq % 64 == 63) (void)a.flush(); // as the port after a turn of 64 packets
        }
        while (a.backlog_frames() > 0)
            (void)a.flush();
    });
    std::array<Frame, 32> burst;
    std::uint64_t next = 0;
    go.store(true);
    std::chrono::steady_clock::time_point t0{};
    while (next < frames) {
        const std::uint32_t n = b.next_burst(burst);
        if (n > 0 && next == 0) t0 = std::chrono::steady_clock::now();
        for (std::uint32_t i = 0; i < n; ++i, ++next) {
            std::uint64_t seq = 0;
            std::memcpy(&seq, burst[i].data + 14, sizeof seq);
            if (seq != next || burst[i].len != bytes) {
                std::fprintf(stderr, "shm_wire_bench: frame %llu: got %llu, %u bytes\n",
                             static_cast<unsigned long long>(next),
                             static_cast<unsigned long long>(seq), burst[i].len);
                std::exit(1);
            }
        }
    }
    const auto t1 = std::chrono::steady_clock::now();
    sender.join();
    return std::chrono::duration<double, std::nano>(t1 - t0).count();
}

} // namespace

int main(int argc, char** argv) {
    const std::uint64_t frames = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2'000'000;
    const std::size_t bytes =
        argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1072; // a 1,024-byte RoCE payload
    const int rounds = argc > 3 ? std::atoi(argv[3]) : 5;
    if (frames == 0 || bytes < 22 || bytes > 9000 || rounds < 1) {
        std::fprintf(stderr, "usage: shm_wire_bench [FRAMES [BYTES (22-9000) [ROUNDS]]]\n");
        return 2;
    }
    char dir[] = "/dev/shm/shm-wire-bench-XXXXXX";
    if (::mkdtemp(dir) == nullptr) {
        std::perror("shm_wire_bench: mkdtemp");
        return 1;
    }
    const std::string url = std::string("shm://") + dir + "/shm";
    std::vector<double> per_frame;
    {
        auto a = open_or_die(url), b = open_or_die(url);
        b->send(frame(1, 2, 64), 0); // a learns b's MAC from it
        std::array<Frame, 1> one;
        while (a->next_burst(one) == 0) {
        }
        for (int r = 0; r < rounds; ++r) {
            const double ns = round_ns(*a, *b, frames, bytes);
            per_frame.push_back(ns / static_cast<double>(frames));
            std::printf("round %d: %.2f Mframes/s, %.1f ns a frame\n", r + 1, frames / ns * 1e3,
                        ns / frames);
        }
    }
    std::filesystem::remove_all(dir);
    std::sort(per_frame.begin(), per_frame.end());
    std::printf("median: %.1f ns a frame (%llu frames of %zu bytes, %d rounds)\n",
                per_frame[per_frame.size() / 2], static_cast<unsigned long long>(frames), bytes,
                rounds);
    return 0;
}
