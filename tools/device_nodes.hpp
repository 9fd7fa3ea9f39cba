// `rdmasim run`'s device nodes (tools/README.md, "Device nodes"; README.md,
// "UCX, MPI and libfabric"): in the program's process, before it is exec'd,
// a private mount namespace in which each device has the character node
// /dev/infiniband/uverbs-rdmasimN and a sysfs tree under /sys/class, so that
// UCX lists it. The host's /dev and /sys do not change.
#pragma once

#include "net/result.hpp"
#include "sim/config.hpp"

namespace rdmasim::tools {

// Enters a private mount namespace (a user namespace too, mapping the
// caller's own uid and gid, when the caller may not make one alone) and
// shows config's devices in it. Call in a single-threaded child. On an error
// (naming the call and errno) nothing the program sees has changed, but the
// process may be in a namespace of its own.
Result<void> show_device_nodes(const sim::Config& config);

// What `run` does with show_device_nodes' outcome for config.device_nodes:
// nothing for off; for auto, one line on stderr when it failed; for on (or
// a user namespace left without its uid map, where the program would not run
// as its user), the error on stderr and false (the program must not run).
[[nodiscard]] bool apply_device_nodes(const sim::Config& config);

} // namespace rdmasim::tools
