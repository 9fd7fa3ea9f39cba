// The drop-in libibverbs.so.1: at the first ibv_get_device_list the
// environment (RDMASIM_*) builds a Simulator whose devices the program sees.
// Compiled only into the shared library.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>

#include <pthread.h>

#include "device/registry.hpp"
#include "sim/config.hpp"
#include "sim/logging.hpp"
#include "sim/rank.hpp"
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

// Guards the instance from the end of the program on: two threads may call
// exit() at once, and glibc then runs the exit handlers in both, each taking
// the next one, so one thread may reach the loader's fini (shut_down) while
// another is still in finish_run. Never destroyed either.
std::mutex& shutdown_mutex() {
    static auto* m = new std::mutex;
    return *m;
}
bool finished = false; // finish_run has run (under shutdown_mutex)
// How long an exiting program waits for its wires to take what is queued.
constexpr std::chrono::milliseconds kDrainLimit{1000};

// What the wires lost, --stats and --report: once, by whichever exiting
// thread comes first; another waits on the mutex until the files are whole
// (sim/README.md, "Statistics").
void finish_run() noexcept {
    std::lock_guard lock(shutdown_mutex());
    if (finished || !instance()) return;
    finished = true;
    Simulator& sim = *instance();
    if (sim.forked_child()) return; // the wires, --stats and --report are the parent's
    try {
        // Frames a peer has not taken yet still go: a program may exit as
        // soon as its last UC or UD send completed.
        if (const std::size_t left = sim.drain_wires(kDrainLimit); left != 0)
            log().warn("{} frame(s) still waiting for a wire after {} ms at exit: not sent", left,
                       kDrainLimit.count());
        sim.report_losses();
    } catch (...) { // a log line that could not be formatted: nothing to undo
    }
    if (auto r = write_stats(sim, "drop-in"); !r) std::fprintf(stderr, "rdmasim: %s\n", r.error().message.c_str());
    try {
        if (auto r = write_run_report(sim); !r) std::fprintf(stderr, "rdmasim: %s\n", r.error().message.c_str());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rdmasim: report %s: %s\n", sim.config().report.c_str(), e.what());
    }
}

int provide_devices() {
    try {
        Config config;
        if (auto r = config.apply_environment(); !r) {
            log().error("{}", r.error().message);
            return r.error().code;
        }
        if (auto r = apply_rank(config); !r) {
            log().error("{}", r.error().message);
            return r.error().code;
        }
        set_log_level(config.log_level);
        auto sim = Simulator::create(config);
        if (!sim) {
            log().error("{}", sim.error().message);
            return sim.error().code;
        }
        std::lock_guard lock(shutdown_mutex());
        if (finished) return ENODEV; // the program is exiting
        instance() = std::move(sim.value());
        log().info("{} device(s) ready", instance()->device_count());
        // At exit, while the program's static objects still live; shut_down
        // does it if another exiting thread got there first.
        std::atexit(finish_run);
        return 0;
    } catch (const std::bad_alloc&) {
        return ENOMEM;
    } catch (...) {
        return EIO;
    }
}

// fork() (sim/README.md, "Fork"): the Simulator's devices keep working in
// the child. prepare holds shutdown_mutex across fork(), so the instance
// neither appears nor goes meanwhile (order: shutdown_mutex, then the port
// locks, as in finish_run); both sides release it.
void fork_prepare() noexcept {
    shutdown_mutex().lock();
    if (instance()) instance()->prepare_fork();
}
void fork_parent() noexcept {
    if (instance()) instance()->parent_after_fork();
    shutdown_mutex().unlock();
}
void fork_child() noexcept {
    if (instance()) instance()->child_after_fork();
    shutdown_mutex().unlock();
}

// Runs when the library is loaded: devices are built lazily, on first use.
__attribute__((constructor)) void install_provider() {
    device::set_device_provider(provide_devices);
    // Fails only without memory: forked children then keep today's dead engine.
    (void)pthread_atfork(fork_prepare, fork_parent, fork_child);
}

// Stops engine threads before the program's static objects go away; waits
// for a finish_run in progress in another thread, or runs it.
__attribute__((destructor)) void shut_down() {
    finish_run();
    std::lock_guard lock(shutdown_mutex());
    instance().reset();
}

} // namespace
} // namespace rdmasim::sim
