// The emulated sysfs (ibv_get_sysfs_path, ibv_read_sysfs_file, ...): a path
// under the emulated root is answered from the device model and never reaches
// the filesystem; any other is read as rdma-core reads sysfs.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device/abi/declarations.hpp"
#include "device/abi/sysfs.hpp"
#include "device/abi/sysfs_text.hpp"
#include "device/context.hpp"
#include "device/registry.hpp"

using namespace rdmasim::device;

namespace {

// The emulated sysfs. Every path under emulated_root belongs to the emulator
// and never reaches the real filesystem: a device's ibdev_path and dev_path
// (device.cpp, make_device) and their sysfs-shaped aliases
// <root>/class/infiniband/<name> and <root>/class/infiniband_verbs/<dev_name>.
constexpr std::string_view emulated_root = sysfs_root;

// dir + "/" + file, with runs of '/' collapsed and no trailing '/'.
std::string join_path(std::string_view dir, std::string_view file) {
    std::string joined;
    joined.reserve(dir.size() + file.size() + 1);
    joined.append(dir);
    joined.push_back('/');
    joined.append(file);
    std::string out;
    out.reserve(joined.size());
    for (char c : joined)
        if (c != '/' || out.empty() || out.back() != '/') out.push_back(c);
    while (out.size() > 1 && out.back() == '/')
        out.pop_back();
    return out;
}

bool is_emulated(std::string_view path) noexcept {
    return path == emulated_root ||
           (path.starts_with(emulated_root) && path[emulated_root.size()] == '/');
}

// `path` relative to `dir`, if it lies strictly below it.
std::optional<std::string_view> below(std::string_view path, std::string_view dir) noexcept {
    if (dir.empty() || !path.starts_with(dir) || path.size() <= dir.size() + 1 ||
        path[dir.size()] != '/')
        return std::nullopt;
    return path.substr(dir.size() + 1);
}

std::string node_desc(const Device& dev) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return host[0] ? std::string(host) + " " + dev.ibdev.name : std::string(dev.ibdev.name);
}

// A file under the device's ibdev_path (sysfs class/infiniband/<name>).
std::optional<std::string> ibdev_file(const Device& dev, std::string_view rel) {
    if (rel == "board_id") return "RDMASIM";
    if (rel == "fw_ver") return std::string(firmware_version);
    if (rel == "hca_type") return "rdmasim";
    if (rel == "node_desc") return node_desc(dev);
    if (rel == "node_guid" || rel == "sys_image_guid")
        return sysfs_guid_text(dev.identity.node_guid);
    if (rel == "node_type") return "1: CA";
    if (rel == "ports/1/link_layer") return "Ethernet";
    // What ibv_query_port says: DOWN (phys_state 3) while the fault plan holds the port down.
    const bool up = dev.port_state.load() == IBV_PORT_ACTIVE;
    if (rel == "ports/1/state") return up ? "4: ACTIVE" : "1: DOWN";
    if (rel == "ports/1/phys_state") return up ? "5: LinkUp" : "3: Disabled";
    // mlx5's port Q counter: frames dropped for want of a posted WQE, the
    // port's rx_out_of_buffer (datapath/README.md, "Counters and outcomes").
    if (rel == "ports/1/hw_counters/out_of_buffer")
        return std::to_string(
            dev.port.counters().drops[static_cast<std::size_t>(rdmasim::datapath::Drop::out_of_buffer)].get());
    // The GID table (device/README.md, "Device and port"): gids/N for every
    // entry (the zero GID when empty, as the kernel shows it),
    // gid_attrs/types/N for the valid ones. gid_attrs/ndevs/N names a GID's
    // netdev: the emulated port has none (ndev_ifindex 0), and the kernel
    // fails that read too.
    if (rel.starts_with("ports/1/gids/") || rel.starts_with("ports/1/gid_attrs/types/")) {
        const std::string_view n = rel.substr(rel.rfind('/') + 1);
        int i = -1;
        const auto [p, ec] = std::from_chars(n.data(), n.data() + n.size(), i);
        if (ec != std::errc{} || p != n.data() + n.size() || i < 0 || i >= kGidTableLen ||
            (n.size() > 1 && n[0] == '0'))
            return std::nullopt;
        const auto gid = port_gid(dev, i);
        static constexpr ibv_gid zero{};
        if (rel.starts_with("ports/1/gids/")) return sysfs_gid_text(gid ? gid->raw : zero.raw);
        if (gid) return "RoCE v2";
        return std::nullopt;
    }
    if (rel == "ports/1/pkeys/0") return "0xffff";
    return std::nullopt;
}

// A file under the device's dev_path (sysfs class/infiniband_verbs/uverbsN).
std::optional<std::string> uverbs_file(const Device& dev, std::string_view rel) {
    if (rel == "ibdev") return std::string(dev.ibdev.name);
    return std::nullopt;
}

// The content of an emulated file, or nullopt (ENOENT).
std::optional<std::string> emulated_file(std::string_view path) {
    std::vector<Device*> devices;
    if (current_devices(devices) != 0) return std::nullopt;
    const std::string class_ib = std::string(emulated_root) + "/class/infiniband/";
    const std::string class_uverbs = std::string(emulated_root) + "/class/infiniband_verbs/";
    for (const Device* dev : devices) {
        for (const std::string& dir :
             {std::string(dev->ibdev.ibdev_path), class_ib + dev->ibdev.name})
            if (auto rel = below(path, dir)) return ibdev_file(*dev, *rel);
        for (const std::string& dir :
             {std::string(dev->ibdev.dev_path), class_uverbs + dev->ibdev.dev_name})
            if (auto rel = below(path, dir)) return uverbs_file(*dev, *rel);
    }
    return std::nullopt;
}

// Copies `text` into buf as a C string; returns its length (truncated to fit).
int copy_out(std::string_view text, char* buf, size_t size) noexcept {
    if (buf == nullptr || size == 0) return 0;
    const size_t n = std::min(text.size(), size - 1);
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
    return static_cast<int>(n);
}

// A real file outside the emulator's tree, read as rdma-core reads sysfs: one
// read, the trailing newline dropped.
int read_real_file(const std::string& path, char* buf, size_t size) noexcept {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const ssize_t len = ::read(fd, buf, size);
    const int saved = errno;
    ::close(fd);
    if (len < 0) {
        errno = saved;
        return -1;
    }
    size_t n = static_cast<size_t>(len);
    if (n > 0 && buf[n - 1] == '\n') --n;
    if (n < size) buf[n] = '\0';
    return static_cast<int>(n);
}

int read_sysfs_path(const std::string& path, char* buf, size_t size) {
    if (!is_emulated(path)) return read_real_file(path, buf, size);
    auto text = emulated_file(path);
    if (!text) {
        errno = ENOENT;
        return -1;
    }
    return copy_out(*text, buf, size);
}

} // namespace

extern "C" {

const char* ibv_get_sysfs_path(void) {
    return sysfs_root;
}

int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
    if (dir == nullptr || file == nullptr || buf == nullptr) {
        errno = EINVAL;
        return -1;
    }
    try {
        return read_sysfs_path(join_path(dir, file), buf, size);
    } catch (const std::bad_alloc&) {
        errno = ENOMEM;
    } catch (...) {
        errno = EIO;
    }
    return -1;
}

// rdma-core's provider helper: `sysfs_dev` is libibverbs' own record of a
// kernel device. Emulated devices have none (no provider can obtain one for
// them), so there is nothing to read.
int ibv_read_ibdev_sysfs_file(char* buf, size_t size, struct verbs_sysfs_dev*, const char*, ...) {
    if (buf != nullptr && size > 0) buf[0] = '\0';
    errno = ENOENT;
    return -1;
}

} // extern "C"
