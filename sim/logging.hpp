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

} // namespace rdmasim::sim
