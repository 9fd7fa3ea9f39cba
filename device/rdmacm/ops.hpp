// The private link between rdmasim's two drop-in libraries. librdmacm.so.1
// (device/rdmacm/shim.cpp) is only the ABI a program loads: every rdma_*
// export forwards to this table, which the connection manager inside
// rdmasim's libibverbs.so.1 fills (it lives with the devices, their port locks
// and engine threads). The rsocket r* exports are not in it (not emulated:
// device/rdmacm/rsocket.cpp). device/README.md, "librdmacm".
#pragma once

#include <cstddef>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

extern "C" {

// One slot per rdma_* export of rdma-core 44's librdmacm.so.1, named without
// the rdma_ prefix and typed as <rdma/rdma_cma.h> (or <rdma/rdma_verbs.h>)
// declares it. The order is the headers'. A slot answers exactly what the
// export of its name answers; a NULL slot makes the export fail with ENOSYS.
struct rdmasim_rdmacm_ops {
    // sizeof(rdmasim_rdmacm_ops) as the filler saw it: librdmacm.so.1 refuses a
    // table smaller than its own (two libraries from different builds).
    std::size_t size;

    // <rdma/rdma_cma.h>
    decltype(&::rdma_create_event_channel) create_event_channel;
    decltype(&::rdma_destroy_event_channel) destroy_event_channel;
    decltype(&::rdma_create_id) create_id;
    decltype(&::rdma_create_ep) create_ep;
    decltype(&::rdma_destroy_ep) destroy_ep;
    decltype(&::rdma_destroy_id) destroy_id;
    decltype(&::rdma_bind_addr) bind_addr;
    decltype(&::rdma_resolve_addr) resolve_addr;
    decltype(&::rdma_resolve_route) resolve_route;
    decltype(&::rdma_create_qp) create_qp;
    decltype(&::rdma_create_qp_ex) create_qp_ex;
    decltype(&::rdma_destroy_qp) destroy_qp;
    decltype(&::rdma_connect) connect;
    decltype(&::rdma_establish) establish;
    decltype(&::rdma_listen) listen;
    decltype(&::rdma_get_request) get_request;
    decltype(&::rdma_accept) accept;
    decltype(&::rdma_reject) reject;
    decltype(&::rdma_reject_ece) reject_ece;
    decltype(&::rdma_notify) notify;
    decltype(&::rdma_disconnect) disconnect;
    decltype(&::rdma_join_multicast) join_multicast;
    decltype(&::rdma_leave_multicast) leave_multicast;
    decltype(&::rdma_join_multicast_ex) join_multicast_ex;
    decltype(&::rdma_get_cm_event) get_cm_event;
    decltype(&::rdma_ack_cm_event) ack_cm_event;
    decltype(&::rdma_get_src_port) get_src_port;
    decltype(&::rdma_get_dst_port) get_dst_port;
    decltype(&::rdma_get_devices) get_devices;
    decltype(&::rdma_free_devices) free_devices;
    decltype(&::rdma_event_str) event_str;
    decltype(&::rdma_set_option) set_option;
    decltype(&::rdma_migrate_id) migrate_id;
    decltype(&::rdma_getaddrinfo) getaddrinfo;
    decltype(&::rdma_freeaddrinfo) freeaddrinfo;
    decltype(&::rdma_init_qp_attr) init_qp_attr;
    decltype(&::rdma_set_local_ece) set_local_ece;
    decltype(&::rdma_get_remote_ece) get_remote_ece;

    // <rdma/rdma_verbs.h>
    decltype(&::rdma_create_srq) create_srq;
    decltype(&::rdma_create_srq_ex) create_srq_ex;
    decltype(&::rdma_destroy_srq) destroy_srq;
};

// The table, filled and constant for the life of the process; never NULL.
// Contract: exported by rdmasim's libibverbs.so.1 (device/rdmacm/ops_table.cpp)
// under version node RDMASIM_PRIVATE_1 (device/abi/libibverbs.map), never by
// the system's libibverbs, so that librdmacm.so.1 finding it with dlsym knows
// it runs on the emulated devices. Callable from any thread, at any time
// after libibverbs.so.1 is loaded; it allocates nothing and cannot fail.
const rdmasim_rdmacm_ops* rdmasim_rdmacm_ops_v1(void);

} // extern "C"
