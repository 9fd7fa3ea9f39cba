#include "tools/device_nodes.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <vector>

#include "sim/device_sysfs.hpp"
#include "tools/mount_graft.hpp"

namespace rdmasim::tools {

namespace {

Error failed(std::string_view call, std::string_view path = {}) {
    const int err = errno;
    return make_error(
        err, fmt::format("{}{}{}: {}", call, path.empty() ? "" : " ", path, std::strerror(err)));
}

// Whether the process holds any capability: a user namespace would leave it
// none in the host's namespaces (CAP_NET_RAW for an --iface, say).
bool holds_capabilities() {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
    if (::syscall(SYS_capget, &header, data) != 0) return false;
    return data[0].effective != 0 || data[1].effective != 0;
}

Result<void> write_file(const std::string& path, std::string_view text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return failed("open", path);
    const ssize_t n = ::write(fd, text.data(), text.size());
    auto r = n == static_cast<ssize_t>(text.size()) ? Result<void>{} : failed("write", path);
    ::close(fd);
    return r;
}

// A user and a mount namespace, the caller's uid and gid mapped to themselves.
Result<void> enter_user_namespace() {
    if (::geteuid() != 0 && holds_capabilities()) {
        errno = EPERM;
        return failed("unshare(CLONE_NEWUSER) (it would take the capabilities this process holds)");
    }
    const uid_t uid = ::geteuid();
    const gid_t gid = ::getegid();
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
        return failed("unshare(CLONE_NEWUSER|CLONE_NEWNS)");
    if (auto r = write_file("/proc/self/setgroups", "deny"); !r) return r;
    if (auto r = write_file("/proc/self/uid_map", fmt::format("{} {} 1", uid, uid)); !r) return r;
    return write_file("/proc/self/gid_map", fmt::format("{} {} 1", gid, gid));
}

// A private mount namespace: alone when the process may (CAP_SYS_ADMIN), else
// with a user namespace; nothing mounted in it propagates to the host.
Result<void> enter_mount_namespace() {
    if (::unshare(CLONE_NEWNS) != 0) {
        if (errno != EPERM) return failed("unshare(CLONE_NEWNS)");
        if (auto r = enter_user_namespace(); !r) return r;
    }
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        return failed("mount(MS_REC|MS_PRIVATE)", "/");
    return {};
}

// The interface of this network namespace holding each device's configured
// IPv4 address ("" for none, or no `ip` set).
std::vector<std::string> netdevs(const sim::Config& config) {
    std::vector<std::string> out(config.devices);
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) return out;
    for (std::uint32_t i = 0; i < config.devices && i < config.ports.size(); ++i) {
        const auto& ip = config.ports[i].ip;
        for (const ifaddrs* a = list; ip && a != nullptr; a = a->ifa_next) {
            if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
            const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
            if (std::memcmp(&in->sin_addr, ip->data(), 4) == 0) {
                out[i] = a->ifa_name;
                break;
            }
        }
    }
    ::freeifaddrs(list);
    return out;
}

// `path` and the directories above it below `root` (mkdir -p).
Result<void> make_parents(const std::string& root, const std::string& rel) {
    for (std::size_t slash = rel.find('/'); slash != std::string::npos;
         slash = rel.find('/', slash + 1)) {
        const std::string dir = root + "/" + rel.substr(0, slash);
        if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return failed("mkdir", dir);
    }
    return {};
}

Result<void> write_sysfs(const sim::Config& config) {
    for (const sim::SysfsEntry& e : sim::device_sysfs(config, netdevs(config))) {
        if (auto r = make_parents("/sys/class", e.path); !r) return r;
        const std::string path = "/sys/class/" + e.path;
        if (e.symlink) {
            if (::symlink(e.content.c_str(), path.c_str()) != 0) return failed("symlink", path);
            continue;
        }
        const int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
        if (fd < 0) return failed("open(O_CREAT)", path);
        const ssize_t n = ::write(fd, e.content.data(), e.content.size());
        ::close(fd);
        if (n != static_cast<ssize_t>(e.content.size())) return failed("write", path);
    }
    return {};
}

// The nodes and the sysfs tree, in the namespace entered.
Result<void> make_device_nodes(const sim::Config& config, MountUndo& undo) {
    if (auto r = make_tmpfs_dirs("/dev", {"infiniband"}, undo); !r) return r;
    for (std::uint32_t i = 0; i < config.devices; ++i)
        if (auto r = bind_file("/dev/null", fmt::format("/dev/infiniband/uverbs-rdmasim{}", i)); !r)
            return r;
    if (auto r = make_tmpfs_dirs("/sys/class", {"infiniband", "infiniband_verbs"}, undo); !r)
        return r;
    if (auto r = write_sysfs(config); !r) return r;
    for (const char* dir :
         {"/dev/infiniband", "/sys/class/infiniband", "/sys/class/infiniband_verbs"})
        if (auto r = remount_read_only(dir); !r) return r;
    return {};
}

} // namespace

Result<void> show_device_nodes(const sim::Config& config) {
    if (auto r = enter_mount_namespace(); !r) return r;
    MountUndo undo;
    auto r = make_device_nodes(config, undo);
    if (!r) undo.undo();
    return r;
}

bool apply_device_nodes(const sim::Config& config) {
    if (config.device_nodes == sim::DeviceNodes::off) return true;
    const uid_t uid = ::geteuid();
    const auto r = show_device_nodes(config);
    if (r) return true;
    // A user namespace entered but its uid_map not written: the program would
    // run as the overflow uid, so it does not run at all.
    if (config.device_nodes == sim::DeviceNodes::on || ::geteuid() != uid) {
        std::fprintf(stderr, "rdmasim run: device_nodes = on: %s\n", r.error().message.c_str());
        return false;
    }
    std::fprintf(
        stderr,
        "rdmasim run: no /dev/infiniband or /sys/class entries for the devices (UCX will not list "
        "them): %s; running the program anyway (device_nodes = off: do not try)\n",
        r.error().message.c_str());
    return true;
}

} // namespace rdmasim::tools
