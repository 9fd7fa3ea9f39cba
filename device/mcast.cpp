// Multicast attach (device/README.md, "Multicast"): the kernel's
// ib_uverbs_attach_mcast / ib_attach_mcast checks, the groups kept by the
// port (datapath::McastGroups) under the port lock.
#include "device/mcast.hpp"

#include <cstring>
#include <mutex>

#include "device/abi_guard.hpp"

namespace rdmasim::device {

namespace {

// The group's GID, after the checks both verbs share: a QP and a GID, a UD
// QP (ib_attach_mcast: EINVAL for any other type), a multicast GID
// (rdma_is_multicast_addr: EINVAL).
int check(ibv_qp* qp, const ibv_gid* gid, net::Gid& out) noexcept {
    if (qp == nullptr || gid == nullptr) return EINVAL;
    if (qp->qp_type != IBV_QPT_UD) return EINVAL;
    std::memcpy(out.data(), gid->raw, out.size());
    if (!net::is_multicast_gid(out)) return EINVAL;
    return 0;
}

// The checks, then `change(groups, group)` under the port lock.
template <class F> int on_group(ibv_qp* qp, const ibv_gid* gid, F change) noexcept {
    return guard_errno([&] {
        net::Gid group;
        if (int err = check(qp, gid, group)) return err;
        Device& dev = *from_verbs(qp->context)->device;
        std::lock_guard lock(dev.port.mutex());
        return change(dev.port.roce().mcast(), group);
    });
}

} // namespace

int attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t) noexcept {
    return on_group(qp, gid, [&](datapath::McastGroups& g, const net::Gid& group) {
        return g.attach(group, qp->qp_num); // ENOMEM at a limit
    });
}

int detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t) noexcept {
    return on_group(qp, gid, [&](datapath::McastGroups& g, const net::Gid& group) {
        return g.detach(group, qp->qp_num); // EINVAL: not attached
    });
}

} // namespace rdmasim::device
