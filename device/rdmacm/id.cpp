// rdma_cm_id lifetime, options and ports (device/README.md, "Connection manager").
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <random>

#include "device/rdmacm/api.hpp"
#include "device/rdmacm/cm_id.hpp"

namespace rdmasim::rdmacm {

namespace {

bool known_ps(rdma_port_space ps) noexcept {
    return ps == RDMA_PS_TCP || ps == RDMA_PS_UDP || ps == RDMA_PS_IB || ps == RDMA_PS_IPOIB;
}

ibv_qp_type qp_type_of(rdma_port_space ps) noexcept {
    return ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
}

// Drops what is still queued for `id` on its channel (the kernel's
// rdma_destroy_id does the same with events not yet read).
void drop_queued(CmId& id) noexcept {
    if (id.channel == nullptr) return;
    std::lock_guard lock(id.channel->lock);
    auto& q = id.channel->queue;
    for (auto it = q.begin(); it != q.end();) {
        if ((*it)->owner == &id) {
            delete *it;
            it = q.erase(it); // its count stays on the fd: take() passes over it
        } else {
            ++it;
        }
    }
}

} // namespace

int attach_device(CmId& id, device::Device& dev, bool port_locked) noexcept {
    ibv_context* ctx = context_for(dev);
    if (ctx == nullptr) return ENODEV;
    try { // it hears of the port going down and the device dying from now on
        if (port_locked) {
            dev.port.cm().watch(id);
        } else {
            std::lock_guard lock(dev.port.mutex());
            dev.port.cm().watch(id);
        }
    } catch (...) {
        return ENOMEM;
    }
    id.dev = &dev;
    id.id().verbs = ctx;
    id.id().pd = default_pd(dev);
    id.id().port_num = 1;
    return 0;
}

int create_id(rdma_event_channel* channel, rdma_cm_id** out, void* context,
              rdma_port_space ps) noexcept {
    if (out == nullptr || !known_ps(ps)) return fail(EINVAL);
    auto* id = new (std::nothrow) CmId;
    if (id == nullptr) return fail(ENOMEM);
    id->box.self = id;
    if (channel == nullptr) { // synchronous: a channel of its own, waited on by each call
        channel = create_event_channel();
        if (channel == nullptr) {
            delete id;
            return -1;
        }
        id->own_channel = true;
    }
    id->channel = from_cm(channel);
    id->id().channel = channel;
    id->id().context = context;
    id->id().ps = ps;
    id->id().qp_type = qp_type_of(ps);
    id->own_psn = std::random_device{}() & 0xffffff;
    *out = &id->id();
    return 0;
}

int destroy_id(rdma_cm_id* cm_id) noexcept {
    if (cm_id == nullptr) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    forget_connection(id);
    drop_queued(id);
    if (id.id().event != nullptr) { // a synchronous id's last event
        (void)ack_cm_event(id.id().event);
        id.id().event = nullptr;
    }
    {
        std::unique_lock lock(id.gate); // every event handed out is acked first, as librdmacm
        id.acked.wait(lock, [&] { return id.events_out == 0; });
    }
    if (const std::uint16_t port = ntohs(id.id().route.addr.src_sin.sin_port); port != 0)
        release_port(id.id().ps, port);
    if (id.own_channel) destroy_event_channel(id.id().channel);
    delete &id;
    return 0;
}

int migrate_id(rdma_cm_id* cm_id, rdma_event_channel* channel) noexcept {
    if (cm_id == nullptr) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (id.own_channel && id.id().event != nullptr) { // a synchronous id's last event, as librdmacm
        (void)ack_cm_event(id.id().event);
        id.id().event = nullptr;
    }
    std::unique_lock lock(id.gate);
    id.acked.wait(lock, [&] { return id.events_out == 0; });
    lock.unlock();
    Channel* to = channel != nullptr ? from_cm(channel) : nullptr;
    if (to == nullptr) {
        rdma_event_channel* own = create_event_channel();
        if (own == nullptr) return -1;
        to = from_cm(own);
    }
    // Queued events move with the id, in order (under the device's lock, so no new one slips
    // between).
    std::unique_lock port_lock =
        id.dev != nullptr ? std::unique_lock(id.dev->port.mutex()) : std::unique_lock<std::mutex>();
    Channel* from = id.channel;
    std::deque<EventRec*> moving;
    {
        std::lock_guard l(from->lock);
        for (auto it = from->queue.begin(); it != from->queue.end();)
            if ((*it)->owner == &id) {
                moving.push_back(*it);
                it = from->queue.erase(it);
            } else {
                ++it;
            }
    }
    const bool was_own = id.own_channel;
    id.channel = to;
    id.id().channel = &to->ch;
    id.own_channel = channel == nullptr;
    for (EventRec* rec : moving)
        post_event(*to, rec);
    port_lock = {};
    if (was_own) destroy_event_channel(&from->ch);
    return 0;
}

int set_option(rdma_cm_id* cm_id, int level, int optname, void* optval, size_t optlen) noexcept {
    if (cm_id == nullptr || optval == nullptr) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) return fail(ENOSYS);
    if (level != RDMA_OPTION_ID) return fail(ENOSYS);
    switch (optname) {
    case RDMA_OPTION_ID_TOS:
        if (optlen != sizeof(std::uint8_t)) return fail(EINVAL);
        id.tos = *static_cast<std::uint8_t*>(optval);
        return 0;
    case RDMA_OPTION_ID_REUSEADDR:
        if (optlen != sizeof(int)) return fail(EINVAL);
        if (id.state != IdState::idle) return fail(EINVAL); // the kernel: only before bind
        id.reuse_addr = *static_cast<int*>(optval) != 0;
        return 0;
    case RDMA_OPTION_ID_AFONLY:
        if (optlen != sizeof(int)) return fail(EINVAL);
        id.afonly = *static_cast<int*>(optval) != 0;
        return 0;
    case RDMA_OPTION_ID_ACK_TIMEOUT:
        if (optlen != sizeof(std::uint8_t)) return fail(EINVAL);
        id.ack_timeout = std::min<std::uint8_t>(*static_cast<std::uint8_t*>(optval), 31);
        return 0;
    default:
        return fail(ENOSYS);
    }
}

__be16 get_src_port(rdma_cm_id* id) noexcept {
    return id == nullptr ? 0 : id->route.addr.src_sin.sin_port; // sin6_port is at the same offset
}

__be16 get_dst_port(rdma_cm_id* id) noexcept {
    return id == nullptr ? 0 : id->route.addr.dst_sin.sin_port;
}

// As librdmacm checks them: only for an id without a QP of its own (an
// external QP's ECE is the program's), a vendor set, no comp_mask.
int set_local_ece(rdma_cm_id* cm_id, ibv_ece* ece) noexcept {
    if (cm_id == nullptr || cm_id->qp != nullptr || ece == nullptr || ece->vendor_id == 0 ||
        ece->comp_mask != 0)
        return fail(EINVAL);
    from_cm(cm_id)->local_ece = *ece;
    return 0;
}

// The peer's ECE: rdmasim's CM sends none and reads none, so a peer is one
// without ECE (vendor_id 0), as librdmacm reports a kernel CM's such peer.
int get_remote_ece(rdma_cm_id* cm_id, ibv_ece* ece) noexcept {
    if (cm_id == nullptr || cm_id->qp != nullptr || ece == nullptr) return fail(EINVAL);
    *ece = ibv_ece{};
    return 0;
}

} // namespace rdmasim::rdmacm
