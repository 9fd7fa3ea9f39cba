// The sysfs files `rdmasim run` shows for each device in its private mount
// namespace (tools/device_nodes.cpp): what the drop-in library's emulated
// sysfs (device/abi/sysfs.cpp) answers under /rdmasim, as far as the
// configuration fixes it. Values drawn at random per process (a MAC, its node
// GUID and the addresses derived from it, when no key sets them) are left out:
// the program's library draws its own.
#pragma once

#include <string>
#include <vector>

#include "sim/config.hpp"

namespace rdmasim::sim {

// One file or symbolic link; `path` is relative to /sys/class.
struct SysfsEntry {
    std::string path;    // "infiniband/rdmasim0/ports/1/state"
    std::string content; // a file's text (with its newline), or a link's target
    bool symlink = false;
};

// Every entry of every device of `config`: class/infiniband/rdmasimN (node,
// port 1, GID table, device/numa_node) and class/infiniband_verbs/
// uverbs-rdmasimN/ibdev. netdevs[N], when there and not empty, names the
// interface that holds device N's configured IPv4 address: its
// gid_attrs/ndevs/0..1 and a device/net/IFNAME link to class/net/IFNAME.
[[nodiscard]] std::vector<SysfsEntry> device_sysfs(const Config& config,
                                                   const std::vector<std::string>& netdevs);

} // namespace rdmasim::sim
