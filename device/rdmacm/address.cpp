// Binding, address and route resolution, listening (device/README.md,
// "Connection manager"): an IPv4 address names a device by its port's
// address; the destination's MAC comes from the port's ARP on the wire; the
// route is the path a RoCE v2 port has to any neighbour.
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "device/rdmacm/api.hpp"
#include "device/rdmacm/cm_id.hpp"
#include "net/cma_header.hpp"

namespace rdmasim::rdmacm {

namespace {

// What an Agent resolution (CmId's AddressHandler) is for.
constexpr std::uint64_t kAddressToken = 0;
constexpr std::uint64_t kRouteToken = 1;

net::Ipv4Address ip_of(const sockaddr_in& sin) noexcept {
    net::Ipv4Address ip;
    std::memcpy(ip.data(), &sin.sin_addr, 4);
    return ip;
}

// 127.0.0.0/8: rdma_cm treats it as it treats the wildcard (bind), or as
// the first device's own address (resolve).
bool is_loopback(const net::Ipv4Address& ip) noexcept {
    return ip[0] == 127;
}

void set_gid(ibv_gid& gid, const net::Ipv4Address& ip) noexcept {
    const net::Gid g = net::ipv4_mapped_gid(ip.data());
    std::memcpy(gid.raw, g.data(), 16);
}

// Time the CM's timers run by: the engine's clock.
std::uint64_t now_of(device::Device& dev) noexcept {
    const std::uint64_t engine = dev.hooks ? dev.hooks->clock_ns() : 0;
    dev.port.advance_clock(engine);
    return dev.port.now_ns();
}

} // namespace

int bind_addr(rdma_cm_id* cm_id, sockaddr* addr) noexcept {
    if (cm_id == nullptr || addr == nullptr) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (id.state != IdState::idle || id.id().route.addr.src_sin.sin_port != 0) return fail(EINVAL);
    if (addr->sa_family != AF_INET) return fail(EAFNOSUPPORT);
    sockaddr_in sin;
    std::memcpy(&sin, addr, sizeof sin);
    const net::Ipv4Address ip = ip_of(sin);
    device::Device* dev = nullptr;
    if (ip != net::Ipv4Address{} && !is_loopback(ip)) { // the kernel binds 127/8 as it binds any
        dev = device_with_ip(ip);
        if (dev == nullptr) return fail(EADDRNOTAVAIL);
    }
    std::uint16_t port = ntohs(sin.sin_port);
    if (const int err = reserve_port(id.id().ps, port, id.reuse_addr); err != 0) return fail(err);
    sin.sin_port = htons(port);
    std::memcpy(&id.id().route.addr.src_sin, &sin, sizeof sin);
    if (dev != nullptr) {
        if (const int err = attach_device(id, *dev); err != 0) return fail(err);
        set_gid(id.id().route.addr.addr.ibaddr.sgid, ip);
        id.id().route.addr.addr.ibaddr.pkey = htons(0xffff);
    }
    return 0;
}

int resolve_addr(rdma_cm_id* cm_id, sockaddr* src, sockaddr* dst, int timeout_ms) noexcept {
    if (cm_id == nullptr || dst == nullptr || timeout_ms < 0) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (dst->sa_family != AF_INET || (src != nullptr && src->sa_family != AF_INET))
        return fail(EAFNOSUPPORT);
    if (id.state != IdState::idle) return fail(EINVAL);
    sockaddr_in to;
    std::memcpy(&to, dst, sizeof to);
    net::Ipv4Address dst_ip = ip_of(to);
    if (is_loopback(dst_ip)) { // the kernel's loopback: this host's first device, to itself
        device::Device* first = id.dev ? id.dev : route_device(dst_ip);
        if (first == nullptr) return fail(ENODEV);
        dst_ip = first->identity.ipv4;
    }
    if (id.id().route.addr.src_sin.sin_port ==
        0) { // bind first: to `src`, or where the route leaves
        sockaddr_in from{};
        if (src != nullptr) {
            std::memcpy(&from, src, sizeof from);
        } else {
            device::Device* dev = route_device(dst_ip);
            if (dev == nullptr) return fail(ENODEV);
            from.sin_family = AF_INET;
            std::memcpy(&from.sin_addr, dev->identity.ipv4.data(), 4);
        }
        if (bind_addr(cm_id, reinterpret_cast<sockaddr*>(&from)) != 0) return -1;
    }
    if (id.dev == nullptr) { // bound to the wildcard: the route decides
        device::Device* dev = route_device(dst_ip);
        if (dev == nullptr) return fail(ENODEV);
        if (const int err = attach_device(id, *dev); err != 0) return fail(err);
        std::memcpy(&id.id().route.addr.src_sin.sin_addr, dev->identity.ipv4.data(), 4);
        set_gid(id.id().route.addr.addr.ibaddr.sgid, dev->identity.ipv4);
        id.id().route.addr.addr.ibaddr.pkey = htons(0xffff);
    }
    if (const int err = injected(*id.dev, device::Verb::rdma_resolve_addr)) return fail(err);
    std::memcpy(&id.id().route.addr.dst_sin, &to, sizeof to);
    set_gid(id.id().route.addr.addr.ibaddr.dgid, dst_ip);
    device::Device& dev = *id.dev;
    {
        std::lock_guard lock(dev.port.mutex());
        id.state = IdState::addr_query;
        if (dst_ip == dev.identity.ipv4) { // our own address: loopback, no ARP
            dev.port.cm().defer(id, kAddressToken, dev.identity.mac);
        } else if ((dst_ip[0] & 0xf0) == 0xe0) { // a group: its MAC, no ARP
            dev.port.cm().defer(id, kAddressToken, net::multicast_mac(net::ipv4_mapped(dst_ip)));
        } else {
            const std::uint64_t timeout_ns =
                std::uint64_t(timeout_ms ? timeout_ms : 2000) * 1'000'000;
            (void)now_of(dev);
            dev.port.cm().resolve(dst_ip, timeout_ns, id, kAddressToken);
        }
        dev.port.finish_call();
    }
    kick_engine(dev);
    return id.own_channel ? complete(id) : 0;
}

// Both resolutions end here, from the engine (datapath/cm/agent.hpp).
void CmId::address_resolved(std::uint64_t token, const net::MacAddress& mac) noexcept {
    const bool route = token == kRouteToken;
    if (!route) dmac = mac;
    state = route ? IdState::route_resolved : IdState::addr_resolved;
    const auto kind = route ? RDMA_CM_EVENT_ROUTE_RESOLVED : RDMA_CM_EVENT_ADDR_RESOLVED;
    if (EventRec* rec = new_event(*this, kind, 0)) post_event(*channel, rec);
}

void CmId::address_failed(std::uint64_t token) noexcept {
    const bool route = token == kRouteToken;
    state = route ? IdState::addr_resolved : IdState::idle;
    const auto kind = route ? RDMA_CM_EVENT_ROUTE_ERROR : RDMA_CM_EVENT_ADDR_ERROR;
    if (EventRec* rec = new_event(*this, kind, -ETIMEDOUT)) post_event(*channel, rec);
}

int resolve_route(rdma_cm_id* cm_id, int timeout_ms) noexcept {
    if (cm_id == nullptr || timeout_ms < 0) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (id.state != IdState::addr_resolved || id.dev == nullptr) return fail(EINVAL);
    if (const int err = injected(*id.dev, device::Verb::rdma_resolve_route)) return fail(err);
    ibv_port_attr port{};
    if (ibv_query_port(id.id().verbs, 1, &port) != 0) return -1;
    ibv_sa_path_rec& p = id.path_rec;
    p = {};
    p.dgid = id.id().route.addr.addr.ibaddr.dgid;
    p.sgid = id.id().route.addr.addr.ibaddr.sgid;
    p.hop_limit = 64;
    p.traffic_class = id.tos;
    p.reversible = htonl(0x80000000); // RoCE: the reverse path is the same
    p.numb_path = 1;
    p.pkey = htons(0xffff);
    p.mtu_selector = 2; // exactly
    p.mtu = port.active_mtu;
    p.rate_selector = 2;
    p.rate = 7; // 40 Gb/s (IBV_RATE_40_GBPS), what ib_rate of a 4x QDR-speed port gives
    p.packet_life_time_selector = 2;
    p.packet_life_time = 16; // CMA_IBOE_PACKET_LIFETIME
    id.id().route.path_rec = &id.path_rec;
    id.id().route.num_paths = 1;
    {
        std::lock_guard lock(id.dev->port.mutex());
        id.state = IdState::route_query;
        id.dev->port.cm().defer(id, kRouteToken, id.dmac);
    }
    kick_engine(*id.dev);
    return id.own_channel ? complete(id) : 0;
}

int listen(rdma_cm_id* cm_id, int backlog) noexcept {
    if (cm_id == nullptr) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (id.state == IdState::listen) { // a new backlog, as the kernel allows
        id.backlog = backlog > 0 ? backlog : 1024;
        return 0;
    }
    if (id.state != IdState::idle) return fail(EINVAL);
    if (id.id().route.addr.src_sin.sin_port == 0) { // the kernel binds the wildcard, any port
        sockaddr_in any{};
        any.sin_family = AF_INET;
        if (bind_addr(cm_id, reinterpret_cast<sockaddr*>(&any)) != 0) return -1;
    }
    const std::uint16_t port = ntohs(id.id().route.addr.src_sin.sin_port);
    id.service_id = net::cma_service_id(static_cast<net::RdmaPortSpace>(id.id().ps), port);
    id.backlog = backlog > 0 ? backlog : 1024; // the kernel's default for <= 0
    std::vector<device::Device*> devs;
    if (id.dev != nullptr)
        devs.push_back(id.dev);
    else
        devs = all_devices();
    if (!devs.empty())
        if (const int err = injected(*devs.front(), device::Verb::rdma_listen)) return fail(err);
    id.listening_all = id.dev == nullptr;
    for (device::Device* dev :
         devs) // a REQ's new id takes the context under the port lock: open it now
        if (context_for(*dev) == nullptr) return fail(ENODEV);
    for (std::size_t i = 0; i < devs.size(); ++i) {
        std::lock_guard lock(devs[i]->port.mutex());
        bool ok = false;
        try {
            ok = devs[i]->port.cm().listen(id.service_id, id);
        } catch (...) {
        }
        if (!ok) {
            for (std::size_t j = 0; j < i; ++j) {
                std::lock_guard l(devs[j]->port.mutex());
                devs[j]->port.cm().stop_listening(id.service_id);
            }
            return fail(EADDRINUSE);
        }
    }
    id.state = IdState::listen;
    for (device::Device* dev : devs)
        kick_engine(*dev); // REQs are read from now on
    return 0;
}

} // namespace rdmasim::rdmacm
