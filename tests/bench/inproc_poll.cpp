// Target 5 of issue 11, the C++ side: the work dropin_poll does on the
// drop-in library (bench_poll_loop.h), in a C++ program that links the
// library and builds its Simulator itself (inline engine, FILE as device
// 0's capture, the replay starting at the first flow).
// usage: inproc_poll FILE FRAMES [WQS]   (prints what dropin_poll prints)
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "sim/config.hpp"
#include "sim/simulator.hpp"
#include "tests/bench/bench_poll_loop.h"

int main(int argc, char** argv) {
    if (argc < 3 || argc > 4) {
        std::fprintf(stderr, "usage: %s FILE FRAMES [WQS]\n", argv[0]);
        return 2;
    }
    rdmasim::sim::Config config;
    using Setting = std::pair<const char*, const char*>;
    for (auto [key, value] : {Setting{"pcap", argv[1]}, Setting{"engine", "inline"}})
        if (auto r = config.set(key, value); !r) {
            std::fprintf(stderr, "inproc_poll: %s\n", r.error().message.c_str());
            return 1;
        }
    auto sim = rdmasim::sim::Simulator::create(config);
    if (!sim) {
        std::fprintf(stderr, "inproc_poll: %s\n", sim.error().message.c_str());
        return 1;
    }
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr || n < 1) {
        std::fprintf(stderr, "inproc_poll: no device\n");
        return 1;
    }
    ibv_context* ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (ctx == nullptr) {
        std::fprintf(stderr, "inproc_poll: ibv_open_device: %s\n", std::strerror(errno));
        return 1;
    }
    const auto wqs = argc == 4 ? static_cast<std::uint32_t>(std::strtoul(argv[3], nullptr, 10)) : 4u;
    const int rc = bench_poll_loop(ctx, std::strtoull(argv[2], nullptr, 10), wqs);
    ibv_close_device(ctx);
    return rc;
}
