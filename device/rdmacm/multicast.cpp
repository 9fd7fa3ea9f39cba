// Multicast on a RoCE port (device/README.md, "Connection manager"): no SA
// to ask, so a join completes at once with a MULTICAST_JOIN event that
// carries the group's address handle (the kernel's rdma_cm on RoCE), and
// the id's QP is attached when the program reads it (librdmacm's step);
// leaving detaches it.
#include <infiniband/ib.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "datapath/roce/port.hpp"
#include "device/rdmacm/api.hpp"
#include "device/rdmacm/cm_id.hpp"
#include "net/addresses.hpp"

namespace rdmasim::rdmacm {

namespace {

// The kernel's ENOTSUPP (not a user-space errno): a group other than IPv4
// on a RoCE v2 port, as cma_iboe_join_multicast answers.
constexpr int kKernelEnotsupp = 524;

// The length librdmacm gives an address of the family (ucma_addrlen); 0: unknown.
std::size_t addr_len(const sockaddr* addr) noexcept {
    if (addr == nullptr) return 0;
    switch (addr->sa_family) {
    case AF_INET:
        return sizeof(sockaddr_in);
    case AF_INET6:
        return sizeof(sockaddr_in6);
    case AF_IB:
        return sizeof(sockaddr_ib);
    default:
        return 0;
    }
}

// The MULTICAST_JOIN event (cma_make_mc_event): the group's AH from the
// id's source GID (index 0, its IPv4 address), hop limit 64 (IPv4 on
// RoCE v2), QPN 0xffffff, the id's Q_Key; the join's context as private data.
EventRec* join_event(CmId& id, const std::shared_ptr<McJoin>& join,
                     const net::Gid& group) noexcept {
    EventRec* rec = new_event(id, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
    if (rec == nullptr) return nullptr;
    rec->join = join;
    rdma_ud_param& ud = rec->ev.param.ud;
    ud.private_data = join->context;
    ud.qp_num = datapath::RocePort::kMcastQpn;
    ud.qkey = kUdpQkey;
    ud.ah_attr.is_global = 1;
    std::memcpy(ud.ah_attr.grh.dgid.raw, group.data(), group.size());
    ud.ah_attr.grh.sgid_index = 0;
    ud.ah_attr.grh.hop_limit = 64;
    ud.ah_attr.port_num = id.id().port_num;
    return rec;
}

// The kernel's rdma_join_multicast checks, then the join queued with its event.
int join(CmId& id, const sockaddr* addr, std::size_t len, bool send_only, void* context) {
    if (id.dev == nullptr || (id.state != IdState::idle && id.state != IdState::addr_resolved))
        return fail(EINVAL); // neither bound to a device nor resolved
    if (id.id().qp_type != IBV_QPT_UD) return fail(EINVAL);
    if (addr->sa_family != AF_INET) return fail(kKernelEnotsupp);
    sockaddr_in sin;
    std::memcpy(&sin, addr, sizeof sin);
    net::Ipv4Address ip;
    std::memcpy(ip.data(), &sin.sin_addr, 4);
    if (ip == net::Ipv4Address{}) return fail(EINVAL); // cma_zero_addr
    auto mc = std::make_shared<McJoin>();
    std::memcpy(&mc->addr, addr, len);
    mc->addr_len = len;
    mc->context = context;
    mc->send_only = send_only;
    {
        std::lock_guard lock(id.mc_lock);
        id.joins.push_back(mc);
    }
    device::Device& dev = *id.dev;
    {
        std::lock_guard lock(dev.port.mutex());
        EventRec* rec = join_event(id, mc, net::ipv4_mapped(ip));
        if (rec == nullptr) {
            std::lock_guard l(id.mc_lock);
            std::erase(id.joins, mc);
            return fail(ENOMEM);
        }
        post_event(*id.channel, rec);
    }
    return id.own_channel ? complete(id) : 0;
}

} // namespace

int join_multicast(rdma_cm_id* id, sockaddr* addr, void* context) noexcept {
    const std::size_t len = addr_len(addr);
    if (id == nullptr || len == 0) return fail(EINVAL);
    try {
        return join(*from_cm(id), addr, len, false, context);
    } catch (...) {
        return fail(ENOMEM);
    }
}

int join_multicast_ex(rdma_cm_id* id, rdma_cm_join_mc_attr_ex* attr, void* context) noexcept {
    if (id == nullptr || attr == nullptr) return fail(EINVAL);
    if (attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED) return fail(ENOTSUP);
    if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS)) return fail(EINVAL);
    if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
        attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
        return fail(EINVAL);
    const std::size_t len = addr_len(attr->addr);
    if (len == 0) return fail(EINVAL);
    try {
        return join(*from_cm(id), attr->addr, len,
                    attr->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, context);
    } catch (...) {
        return fail(ENOMEM);
    }
}

int leave_multicast(rdma_cm_id* cm_id, sockaddr* addr) noexcept {
    const std::size_t len = addr_len(addr);
    if (cm_id == nullptr || len == 0) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    std::lock_guard lock(id.mc_lock); // before the port lock, as process_join
    const auto it = std::find_if(id.joins.begin(), id.joins.end(), [&](const auto& j) {
        return std::memcmp(&j->addr, addr, len) == 0;
    });
    if (it == id.joins.end()) return fail(EADDRNOTAVAIL);
    McJoin& mc = **it;
    mc.left = true; // an event not read yet attaches nothing
    if (mc.attached && id.id().qp != nullptr) (void)ibv_detach_mcast(id.id().qp, &mc.mgid, 0);
    id.joins.erase(it);
    return 0;
}

void process_join(EventRec& rec) noexcept {
    CmId& id = *rec.owner;
    McJoin& mc = *rec.join;
    std::lock_guard lock(id.mc_lock);
    mc.mgid = rec.ev.param.ud.ah_attr.grh.dgid;
    if (mc.left || mc.send_only || id.id().qp == nullptr) return;
    if (const int err = ibv_attach_mcast(id.id().qp, &mc.mgid, 0); err != 0) {
        errno = err;
        rec.ev.event = RDMA_CM_EVENT_MULTICAST_ERROR; // status -1, as librdmacm's rdma_seterrno
        rec.ev.status = -1;
        return;
    }
    mc.attached = true;
}

} // namespace rdmasim::rdmacm
