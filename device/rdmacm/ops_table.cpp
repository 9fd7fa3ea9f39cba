// The table behind librdmacm.so.1 (device/rdmacm/ops.hpp), exported by the
// drop-in libibverbs.so.1 as rdmasim_rdmacm_ops_v1@@RDMASIM_PRIVATE_1. The
// connection manager is not here yet: every slot fails with ENOSYS as
// librdmacm reports failures (device/rdmacm/fallback.hpp), but event_str,
// which is pure. One slot a line: replace `enosys<...>` with the
// implementation when it comes.
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
    .create_event_channel = enosys<&Ops::create_event_channel>,
    .destroy_event_channel = enosys<&Ops::destroy_event_channel>,
    .create_id = enosys<&Ops::create_id>,
    .create_ep = enosys<&Ops::create_ep>,
    .destroy_ep = enosys<&Ops::destroy_ep>,
    .destroy_id = enosys<&Ops::destroy_id>,
    .bind_addr = enosys<&Ops::bind_addr>,
    .resolve_addr = enosys<&Ops::resolve_addr>,
    .resolve_route = enosys<&Ops::resolve_route>,
    .create_qp = enosys<&Ops::create_qp>,
    .create_qp_ex = enosys<&Ops::create_qp_ex>,
    .destroy_qp = enosys<&Ops::destroy_qp>,
    .connect = enosys<&Ops::connect>,
    .establish = enosys<&Ops::establish>,
    .listen = enosys<&Ops::listen>,
    .get_request = enosys<&Ops::get_request>,
    .accept = enosys<&Ops::accept>,
    .reject = enosys<&Ops::reject>,
    .reject_ece = enosys<&Ops::reject_ece>,
    .notify = enosys<&Ops::notify>,
    .disconnect = enosys<&Ops::disconnect>,
    .join_multicast = enosys<&Ops::join_multicast>,
    .leave_multicast = enosys<&Ops::leave_multicast>,
    .join_multicast_ex = enosys<&Ops::join_multicast_ex>,
    .get_cm_event = enosys<&Ops::get_cm_event>,
    .ack_cm_event = enosys<&Ops::ack_cm_event>,
    .get_src_port = enosys<&Ops::get_src_port>,
    .get_dst_port = enosys<&Ops::get_dst_port>,
    .get_devices = enosys<&Ops::get_devices>,
    .free_devices = enosys<&Ops::free_devices>,
    .event_str = event_str,
    .set_option = enosys<&Ops::set_option>,
    .migrate_id = enosys<&Ops::migrate_id>,
    .getaddrinfo = enosys<&Ops::getaddrinfo>,
    .freeaddrinfo = enosys<&Ops::freeaddrinfo>,
    .init_qp_attr = enosys<&Ops::init_qp_attr>,
    .set_local_ece = enosys<&Ops::set_local_ece>,
    .get_remote_ece = enosys<&Ops::get_remote_ece>,
    .create_srq = enosys<&Ops::create_srq>,
    .create_srq_ex = enosys<&Ops::create_srq_ex>,
    .destroy_srq = enosys<&Ops::destroy_srq>,
};

} // namespace

extern "C" const rdmasim_rdmacm_ops* rdmasim_rdmacm_ops_v1(void) {
    return &table;
}
