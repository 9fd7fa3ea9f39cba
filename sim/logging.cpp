#include "sim/logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace rdmasim::sim {

spdlog::logger& log() {
    // Never destroyed: a thread still logging while another runs exit's
    // handlers (the drop-in's finish_run) must not find it gone.
    static auto* logger = new std::shared_ptr<spdlog::logger>([] {
        auto l = spdlog::stderr_color_mt("rdmasim");
        l->set_level(spdlog::level::warn);
        l->set_pattern("%^rdmasim %l%$: %v");
        return l;
    }());
    return **logger;
}

void set_log_level(const std::string& level) { log().set_level(spdlog::level::from_str(level)); }

} // namespace rdmasim::sim
