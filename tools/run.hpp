// `rdmasim run` and `rdmasim env`: put the drop-in libibverbs.so.1 in front
// of an unmodified program, with the RDMASIM_* configuration it reads.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rdmasim::tools {

struct RunOptions {
    std::vector<std::pair<std::string, std::string>> settings; // config key -> value
    std::vector<std::string> command;                          // program and its arguments
};

// The environment `run` adds: LD_LIBRARY_PATH first, then RDMASIM_* for each setting.
// Fails (message in `error`) when a setting does not validate or the library is missing.
bool run_environment(const RunOptions& options, std::vector<std::pair<std::string, std::string>>& env,
                     std::string& error);

// Replaces this process with the command (so its exit status is the command's).
int run_command(const RunOptions& options);
// Prints the environment as shell exports.
int print_environment(const RunOptions& options);

} // namespace rdmasim::tools
