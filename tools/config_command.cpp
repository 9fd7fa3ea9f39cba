#include "tools/config_command.hpp"

#include <cstdio>

#include "sim/config.hpp"
#include "sim/config_reference.hpp"
#include "tools/exit_codes.hpp"

namespace rdmasim::tools {

int print_config_reference() {
    const std::string table = sim::reference_markdown();
    std::fwrite(table.data(), 1, table.size(), stdout);
    return std::fflush(stdout) == 0 && !std::ferror(stdout) ? kExitOk : kExitRuntime;
}

int check_config(const std::vector<std::pair<std::string, std::string>>& settings) {
    sim::Config config;
    auto fail = [](const Error& e) {
        std::fprintf(stderr, "rdmasim config: %s\n", e.message.c_str());
        return config_error_status(e.code);
    };
    if (auto r = config.apply_environment(); !r) return fail(r.error());
    for (const auto& [k, v] : settings)
        if (auto r = config.set(k, v); !r) return fail(r.error());
    if (auto r = config.validate(); !r) return fail(r.error());
    if (auto r = config.check_files(); !r) return fail(r.error());
    std::printf("configuration ok: %u device(s)\n", config.devices);
    return kExitOk;
}

} // namespace rdmasim::tools
