// Embedding the simulator in a program (README.md, "Install"): built against
// an installed rdmasim with `pkg-config --cflags --libs rdmasim`, no drop-in
// library and no `rdmasim run`. The program creates the Simulator itself and
// then uses the verbs API as usual: librdmasim.a holds the verbs.
#include <infiniband/verbs.h>

#include <cstdio>

#include "sim/config.hpp"
#include "sim/simulator.hpp"

int main() {
    // The same keys as RDMASIM_* and `--set` (README.md, "Configuration reference").
    rdmasim::sim::Config config;
    if (auto r = config.set("engine", "inline"); !r) {
        std::fprintf(stderr, "%s\n", r.error().message.c_str());
        return 1;
    }
    auto sim = rdmasim::sim::Simulator::create(config); // rdmasim0 exists while `sim` does
    if (!sim) {
        std::fprintf(stderr, "%s\n", sim.error().message.c_str());
        return 1;
    }

    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr || n != 1) {
        std::fprintf(stderr, "expected one device, got %d\n", n);
        return 1;
    }
    ibv_context* ctx = ibv_open_device(list[0]);
    ibv_device_attr attr{};
    if (ctx == nullptr || ibv_query_device(ctx, &attr) != 0) {
        std::fprintf(stderr, "cannot open or query %s\n", ibv_get_device_name(list[0]));
        return 1;
    }
    std::printf("opened %s, max_qp_wr %d\n", ibv_get_device_name(list[0]), attr.max_qp_wr);
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    return 0;
}
