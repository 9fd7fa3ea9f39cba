#include "sim/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace rdmasim::sim {

spdlog::logger& log() {
    static std::shared_ptr<spdlog::logger> logger = [] {
        auto l = spdlog::stderr_color_mt("rdmasim");
        l->set_level(spdlog::level::warn);
        l->set_pattern("%^rdmasim %l%$: %v");
        return l;
    }();
    return *logger;
}

void set_log_level(const std::string& level) { log().set_level(spdlog::level::from_str(level)); }

} // namespace rdmasim::sim
