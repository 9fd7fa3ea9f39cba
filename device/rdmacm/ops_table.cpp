// The table behind librdmacm.so.1 (device/rdmacm/ops.hpp), exported by the
// drop-in libibverbs.so.1 as rdmasim_rdmacm_ops_v1@@RDMASIM_PRIVATE_1: rdma_cm
// as device/rdmacm/api.hpp implements it. Slots still `enosys<...>`
// (rdma_reject_ece, SRQs on ids) fail with ENOSYS as librdmacm reports failures
// (device/rdmacm/fallback.hpp).
#include "device/rdmacm/api.hpp"
#include "device/rdmacm/fallback.hpp"
#include "device/rdmacm/ops.hpp"

namespace {

using rdmasim::rdmacm::enosys;
using Ops = rdmasim_rdmacm_ops;

const char* event_str(rdma_cm_event_type event) noexcept {
    return rdmasim::rdmacm::event_name(event);
}

// Designated initializers in member order: a slot missing or out of order
// does not compile (-Wmissing-field-initializers, -Werror).
constexpr Ops table = {
    .size = sizeof(Ops),
    .create_event_channel = rdmasim::rdmacm::create_event_channel,
    .destroy_event_channel = rdmasim::rdmacm::destroy_event_channel,
    .create_id = rdmasim::rdmacm::create_id,
    .create_ep = rdmasim::rdmacm::create_ep,
    .destroy_ep = rdmasim::rdmacm::destroy_ep,
    .destroy_id = rdmasim::rdmacm::destroy_id,
    .bind_addr = rdmasim::rdmacm::bind_addr,
    .resolve_addr = rdmasim::rdmacm::resolve_addr,
    .resolve_route = rdmasim::rdmacm::resolve_route,
    .create_qp = rdmasim::rdmacm::create_qp,
    .create_qp_ex = rdmasim::rdmacm::create_qp_ex,
    .destroy_qp = rdmasim::rdmacm::destroy_qp,
    .connect = rdmasim::rdmacm::connect,
    .establish = rdmasim::rdmacm::establish,
    .listen = rdmasim::rdmacm::listen,
    .get_request = rdmasim::rdmacm::get_request,
    .accept = rdmasim::rdmacm::accept,
    .reject = rdmasim::rdmacm::reject,
    .reject_ece = enosys<&Ops::reject_ece>,
    .notify = rdmasim::rdmacm::notify,
    .disconnect = rdmasim::rdmacm::disconnect,
    .join_multicast = rdmasim::rdmacm::join_multicast,
    .leave_multicast = rdmasim::rdmacm::leave_multicast,
    .join_multicast_ex = rdmasim::rdmacm::join_multicast_ex,
    .get_cm_event = rdmasim::rdmacm::get_cm_event,
    .ack_cm_event = rdmasim::rdmacm::ack_cm_event,
    .get_src_port = rdmasim::rdmacm::get_src_port,
    .get_dst_port = rdmasim::rdmacm::get_dst_port,
    .get_devices = rdmasim::rdmacm::get_devices,
    .free_devices = rdmasim::rdmacm::free_devices,
    .event_str = event_str,
    .set_option = rdmasim::rdmacm::set_option,
    .migrate_id = rdmasim::rdmacm::migrate_id,
    .getaddrinfo = rdmasim::rdmacm::getaddrinfo,
    .freeaddrinfo = rdmasim::rdmacm::freeaddrinfo,
    .init_qp_attr = rdmasim::rdmacm::init_qp_attr,
    .set_local_ece = rdmasim::rdmacm::set_local_ece,
    .get_remote_ece = rdmasim::rdmacm::get_remote_ece,
    .create_srq = enosys<&Ops::create_srq>,
    .create_srq_ex = enosys<&Ops::create_srq_ex>,
    .destroy_srq = enosys<&Ops::destroy_srq>,
};

} // namespace

extern "C" const rdmasim_rdmacm_ops* rdmasim_rdmacm_ops_v1(void) {
    return &table;
}
