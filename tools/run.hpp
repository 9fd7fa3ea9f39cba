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
// Returns kExitOk, or (message in `error`) kExitUsage for a setting that does
// not validate, kExitRuntime for a capture that cannot be read or no drop-in
// library (tools/exit_codes.hpp).
int run_environment(const RunOptions& options, std::vector<std::pair<std::string, std::string>>& env,
                     std::string& error);

// Runs the command as a child process and returns its exit status (128+N
// when signal N killed it); signals sent to rdmasim are passed on to it.
int run_command(const RunOptions& options);
// Prints the environment as shell exports.
int print_environment(const RunOptions& options);

} // namespace rdmasim::tools
