// What rdma_cm knows of devices and addresses (device/README.md,
// "Connection manager"): one verbs context and one protection domain per
// device, opened at first use and kept for the process (as librdmacm's
// device list); devices by address; the ports of each port space.
#include <cerrno>
#include <map>
#include <mutex>
#include <new>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "device/rdmacm/api.hpp"
#include "device/rdmacm/cm_id.hpp"
#include "device/registry.hpp"

namespace rdmasim::rdmacm {

namespace {

struct Opened {
    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
};

struct Devices {
    std::mutex lock;
    std::map<device::Device*, Opened> opened;
    std::map<rdma_port_space, std::map<std::uint16_t, int>> ports; // port -> users
    std::uint16_t next_ephemeral = 0;
};

Devices& devices() {
    static auto* d = new Devices; // never destroyed: ids may outlive static destructors
    return *d;
}

Opened open_locked(device::Device& dev) noexcept {
    Devices& d = devices();
    if (auto it = d.opened.find(&dev); it != d.opened.end()) return it->second;
    Opened o;
    o.ctx = ibv_open_device(&dev.ibdev);
    if (o.ctx == nullptr) return o;
    o.pd = ibv_alloc_pd(o.ctx);
    try {
        d.opened.emplace(&dev, o);
    } catch (...) {
        return {};
    }
    return o;
}

} // namespace

std::vector<device::Device*> all_devices() noexcept {
    std::vector<device::Device*> out;
    try {
        if (device::current_devices(out) != 0) out.clear();
    } catch (...) {
        out.clear();
    }
    return out;
}

ibv_context* context_for(device::Device& dev) noexcept {
    std::lock_guard lock(devices().lock);
    return open_locked(dev).ctx;
}

ibv_pd* default_pd(device::Device& dev) noexcept {
    std::lock_guard lock(devices().lock);
    return open_locked(dev).pd;
}

device::Device* device_with_ip(const net::Ipv4Address& ip) noexcept {
    for (device::Device* dev : all_devices())
        if (dev->identity.ipv4 == ip) return dev;
    return nullptr;
}

device::Device* route_device(const net::Ipv4Address& dst) noexcept {
    if (device::Device* own = device_with_ip(dst)) return own;
    for (device::Device* dev : all_devices())
        if (dev->identity.ipv4 != net::Ipv4Address{}) return dev;
    return nullptr;
}

int reserve_port(rdma_port_space ps, std::uint16_t& port, bool reuse) noexcept {
    Devices& d = devices();
    std::lock_guard lock(d.lock);
    try {
        auto& used = d.ports[ps];
        if (port == 0) { // Linux's default ip_local_port_range: 32768-60999, from a random start
            constexpr std::uint16_t lo = 32768, span = 60999 - 32768 + 1;
            if (d.next_ephemeral == 0) d.next_ephemeral = std::random_device{}() % span;
            for (std::uint32_t i = 0; i < span; ++i) {
                const auto p = static_cast<std::uint16_t>(lo + (d.next_ephemeral++ % span));
                if (!used.contains(p)) {
                    port = p;
                    used[p] = 1;
                    return 0;
                }
            }
            return EADDRNOTAVAIL;
        }
        auto [it, fresh] = used.try_emplace(port, 0);
        if (!fresh && !reuse) return EADDRINUSE;
        ++it->second;
        return 0;
    } catch (...) {
        return ENOMEM;
    }
}

void release_port(rdma_port_space ps, std::uint16_t port) noexcept {
    Devices& d = devices();
    std::lock_guard lock(d.lock);
    auto pit = d.ports.find(ps);
    if (pit == d.ports.end()) return;
    auto it = pit->second.find(port);
    if (it != pit->second.end() && --it->second <= 0) pit->second.erase(it);
}

ibv_context** get_devices(int* num_devices) noexcept {
    const std::vector<device::Device*> devs = all_devices();
    auto* list = new (std::nothrow) ibv_context*[devs.size() + 1];
    if (list == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    std::size_t n = 0;
    for (device::Device* dev : devs)
        if (ibv_context* ctx = context_for(*dev)) list[n++] = ctx;
    list[n] = nullptr;
    if (num_devices != nullptr) *num_devices = static_cast<int>(n);
    return list;
}

void free_devices(ibv_context** list) noexcept {
    delete[] list; // the contexts stay open: rdma_cm's own, for the process
}

} // namespace rdmasim::rdmacm
