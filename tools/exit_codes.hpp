// The exit statuses every rdmasim subcommand uses (README.md, "Exit codes";
// tools/README.md). `rdmasim run` adds the program's own status, and 128+N
// for a program killed by signal N, as a shell reports it.
#pragma once

#include <cerrno>

namespace rdmasim::tools {

inline constexpr int kExitOk = 0;
// Something failed while doing what was asked: a capture or interface that
// cannot be opened, a verb that failed, a read error, an unbalanced count.
inline constexpr int kExitRuntime = 1;
// What was asked cannot be done as asked: a command-line error (CLI11), a bad
// option or configuration value, an unknown key or subcommand.
inline constexpr int kExitUsage = 2;

// The status for a configuration error: Config reports a bad key or value as
// EINVAL (usage); anything else (a configuration file that cannot be read) is
// a runtime error.
[[nodiscard]] inline int config_error_status(int code) { return code == EINVAL ? kExitUsage : kExitRuntime; }

} // namespace rdmasim::tools
