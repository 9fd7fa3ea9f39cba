// How `rdmasim replay` gives up: a ReplayFailure thrown anywhere in its
// steps (tools/replay.cpp, tools/replay_poll.cpp) and caught once, in
// run_replay, which prints the message and returns the status.
#pragma once

#include <string>
#include <utility>

#include "net/result.hpp"
#include "tools/exit_codes.hpp"

namespace rdmasim::tools {

struct ReplayFailure {
    std::string message;
    int status = kExitRuntime;
};

[[noreturn]] inline void fail(std::string message) {
    throw ReplayFailure{std::move(message)};
}

// A bad option value or setting: the usage status (tools/exit_codes.hpp).
[[noreturn]] inline void usage_error(std::string message) {
    throw ReplayFailure{std::move(message), kExitUsage};
}

[[noreturn]] inline void config_error(const Error& e) {
    throw ReplayFailure{e.message, config_error_status(e.code)};
}

} // namespace rdmasim::tools
