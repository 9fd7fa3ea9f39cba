// The drop-in libibverbs.so.1: at the first ibv_get_device_list the
// environment (RDMASIM_*) builds a Simulator whose devices the program sees.
// Compiled only into the shared library.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>

#include "device/registry.hpp"
#include "sim/config.hpp"
#include "sim/logging.hpp"
#include "sim/run_report.hpp"
#include "sim/simulator.hpp"
#include "sim/stats_file.hpp"

namespace rdmasim::sim {
namespace {

// Never destroyed by exit's handlers: shut_down() is the only teardown, and it
// runs from the loader's fini, after atexit handlers have already run.
std::unique_ptr<Simulator>& instance() {
    static auto* sim = new std::unique_ptr<Simulator>;
    return *sim;
}

int provide_devices() {
    try {
        Config config;
        if (auto r = config.apply_environment(); !r) {
            log().error("{}", r.error().message);
            return r.error().code;
        }
        set_log_level(config.log_level);
        auto sim = Simulator::create(config);
        if (!sim) {
            log().error("{}", sim.error().message);
            return sim.error().code;
        }
        instance() = std::move(sim.value());
        log().info("{} device(s) ready", instance()->device_count());
        // Registered after the logger came to be, so it runs before the
        // logger goes: what the wires lost is said at exit, and --stats is
        // written (sim/README.md, "Statistics"), its failure said on stderr.
        std::atexit([] {
            if (!instance()) return;
            instance()->report_losses();
            if (auto r = write_stats(*instance(), "drop-in"); !r)
                std::fprintf(stderr, "rdmasim: %s\n", r.error().message.c_str());
            try {
                if (auto r = write_run_report(*instance()); !r) log().error("{}", r.error().message);
            } catch (const std::exception& e) {
                log().error("report {}: {}", instance()->config().report, e.what());
            }
        });
        return 0;
    } catch (const std::bad_alloc&) {
        return ENOMEM;
    } catch (...) {
        return EIO;
    }
}

// Runs when the library is loaded: devices are built lazily, on first use.
__attribute__((constructor)) void install_provider() { device::set_device_provider(provide_devices); }

// Stops engine threads before the program's static objects go away.
__attribute__((destructor)) void shut_down() { instance().reset(); }

} // namespace
} // namespace rdmasim::sim
