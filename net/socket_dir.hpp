// Who may plant a socket beside ours: the directory a ptp:// wire puts its
// two socket files in (net/README.md, "Virtual wires", "Who may plug in").
#pragma once

#include <string>

#include "net/result.hpp"

namespace rdmasim::net {

// Accepts `dir` only when no other user can create, remove or rename files
// in it: owned by this process's effective user (or by root), and writable
// by neither its group nor others (a sticky /tmp is refused too: anyone may
// create the peer's socket name there first). As ssh refuses a control
// socket's directory. The error is EPERM naming the directory and why (the
// tools' runtime status 1: the command is right, the file system is not);
// a directory that cannot be examined is its stat errno.
Result<void> check_socket_directory(const std::string& dir);

// The directory a socket path lies in ("." for a bare name).
[[nodiscard]] std::string socket_directory(const std::string& socket_path);

} // namespace rdmasim::net
