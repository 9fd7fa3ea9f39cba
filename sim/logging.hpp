// Named spdlog loggers, one per area. Set-up paths log; hot paths count.
#pragma once

#include <memory>
#include <spdlog/spdlog.h>
#include <string>

namespace rdmasim::sim {

// The runtime's logger ("rdmasim"), writing to stderr.
spdlog::logger& log();
// Sets the level of every rdmasim logger: trace, debug, info, warn, error, off.
void set_log_level(const std::string& level);
// fork() (sim/README.md, "Fork"): the prepare handler holds the sink's
// mutex, last of all locks (nothing is taken under it), so that no thread
// that dies in the fork leaves it locked in the child; both sides release it.
void hold_log_for_fork();
void release_log_after_fork();

} // namespace rdmasim::sim
