// The drop-in librdmacm.so.1: rdma-core 44's rdma_* exports, each forwarding
// to the table rdmasim's libibverbs.so.1 fills (device/rdmacm/ops.hpp). The
// table is looked up once; under the system's libibverbs there is none, and
// every call fails as librdmacm fails (-1 or NULL, errno ENOSYS) after one
// line on stderr. device/README.md, "librdmacm".
#include <cstdio>
#include <dlfcn.h>
#include <new>
#include <type_traits>

#include "device/rdmacm/fallback.hpp"
#include "device/rdmacm/ops.hpp"

using rdmasim::rdmacm::unavailable;

namespace {

const rdmasim_rdmacm_ops* find_table() noexcept {
    // RTLD_DEFAULT searches the caller's scope, so this library's own
    // dependencies too when a program dlopen()s it RTLD_LOCAL (pyverbs).
    const auto entry = reinterpret_cast<decltype(&rdmasim_rdmacm_ops_v1)>(
        dlsym(RTLD_DEFAULT, "rdmasim_rdmacm_ops_v1"));
    const rdmasim_rdmacm_ops* ops = entry != nullptr ? entry() : nullptr;
    if (ops == nullptr) {
        std::fputs("rdmasim: librdmacm.so.1 needs rdmasim's libibverbs.so.1: run the program "
                   "under 'rdmasim run'\n",
                   stderr);
    } else if (ops->size < sizeof(rdmasim_rdmacm_ops)) {
        std::fputs("rdmasim: librdmacm.so.1 and libibverbs.so.1 come from different rdmasim "
                   "builds: run the program under 'rdmasim run'\n",
                   stderr);
        ops = nullptr;
    }
    return ops;
}

// The table, or NULL; looked up by the first call (thread-safe: a
// function-local static), so loading the library prints nothing.
const rdmasim_rdmacm_ops* table() noexcept {
    static const rdmasim_rdmacm_ops* const ops = find_table();
    return ops;
}

// Calls the slot, or fails with ENOSYS when there is none. An exception
// from the slot becomes a failure (ENOMEM for std::bad_alloc, EIO else):
// the caller is C.
template <class R, class... P>
R call(R (*rdmasim_rdmacm_ops::*slot)(P...), std::type_identity_t<P>... args) noexcept {
    const rdmasim_rdmacm_ops* ops = table();
    if (ops == nullptr || ops->*slot == nullptr) {
        return unavailable<R>(ENOSYS);
    }
    try {
        return (ops->*slot)(args...);
    } catch (const std::bad_alloc&) {
        return unavailable<R>(ENOMEM);
    } catch (...) {
        return unavailable<R>(EIO);
    }
}

using Ops = rdmasim_rdmacm_ops;

} // namespace

extern "C" {

// <rdma/rdma_cma.h>

struct rdma_event_channel* rdma_create_event_channel(void) {
    return call(&Ops::create_event_channel);
}
void rdma_destroy_event_channel(struct rdma_event_channel* channel) {
    call(&Ops::destroy_event_channel, channel);
}
int rdma_create_id(struct rdma_event_channel* channel, struct rdma_cm_id** id, void* context,
                   enum rdma_port_space ps) {
    return call(&Ops::create_id, channel, id, context, ps);
}
int rdma_create_ep(struct rdma_cm_id** id, struct rdma_addrinfo* res, struct ibv_pd* pd,
                   struct ibv_qp_init_attr* qp_init_attr) {
    return call(&Ops::create_ep, id, res, pd, qp_init_attr);
}
void rdma_destroy_ep(struct rdma_cm_id* id) {
    call(&Ops::destroy_ep, id);
}
int rdma_destroy_id(struct rdma_cm_id* id) {
    return call(&Ops::destroy_id, id);
}
int rdma_bind_addr(struct rdma_cm_id* id, struct sockaddr* addr) {
    return call(&Ops::bind_addr, id, addr);
}
int rdma_resolve_addr(struct rdma_cm_id* id, struct sockaddr* src_addr, struct sockaddr* dst_addr,
                      int timeout_ms) {
    return call(&Ops::resolve_addr, id, src_addr, dst_addr, timeout_ms);
}
int rdma_resolve_route(struct rdma_cm_id* id, int timeout_ms) {
    return call(&Ops::resolve_route, id, timeout_ms);
}
int rdma_create_qp(struct rdma_cm_id* id, struct ibv_pd* pd,
                   struct ibv_qp_init_attr* qp_init_attr) {
    return call(&Ops::create_qp, id, pd, qp_init_attr);
}
int rdma_create_qp_ex(struct rdma_cm_id* id, struct ibv_qp_init_attr_ex* qp_init_attr) {
    return call(&Ops::create_qp_ex, id, qp_init_attr);
}
void rdma_destroy_qp(struct rdma_cm_id* id) {
    call(&Ops::destroy_qp, id);
}
int rdma_connect(struct rdma_cm_id* id, struct rdma_conn_param* conn_param) {
    return call(&Ops::connect, id, conn_param);
}
int rdma_establish(struct rdma_cm_id* id) {
    return call(&Ops::establish, id);
}
int rdma_listen(struct rdma_cm_id* id, int backlog) {
    return call(&Ops::listen, id, backlog);
}
int rdma_get_request(struct rdma_cm_id* listen, struct rdma_cm_id** id) {
    return call(&Ops::get_request, listen, id);
}
int rdma_accept(struct rdma_cm_id* id, struct rdma_conn_param* conn_param) {
    return call(&Ops::accept, id, conn_param);
}
int rdma_reject(struct rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
    return call(&Ops::reject, id, private_data, private_data_len);
}
int rdma_reject_ece(struct rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
    return call(&Ops::reject_ece, id, private_data, private_data_len);
}
int rdma_notify(struct rdma_cm_id* id, enum ibv_event_type event) {
    return call(&Ops::notify, id, event);
}
int rdma_disconnect(struct rdma_cm_id* id) {
    return call(&Ops::disconnect, id);
}
int rdma_join_multicast(struct rdma_cm_id* id, struct sockaddr* addr, void* context) {
    return call(&Ops::join_multicast, id, addr, context);
}
int rdma_leave_multicast(struct rdma_cm_id* id, struct sockaddr* addr) {
    return call(&Ops::leave_multicast, id, addr);
}
int rdma_join_multicast_ex(struct rdma_cm_id* id, struct rdma_cm_join_mc_attr_ex* mc_join_attr,
                           void* context) {
    return call(&Ops::join_multicast_ex, id, mc_join_attr, context);
}
int rdma_get_cm_event(struct rdma_event_channel* channel, struct rdma_cm_event** event) {
    return call(&Ops::get_cm_event, channel, event);
}
int rdma_ack_cm_event(struct rdma_cm_event* event) {
    return call(&Ops::ack_cm_event, event);
}
__be16 rdma_get_src_port(struct rdma_cm_id* id) {
    return call(&Ops::get_src_port, id);
}
__be16 rdma_get_dst_port(struct rdma_cm_id* id) {
    return call(&Ops::get_dst_port, id);
}
struct ibv_context** rdma_get_devices(int* num_devices) {
    return call(&Ops::get_devices, num_devices);
}
void rdma_free_devices(struct ibv_context** list) {
    call(&Ops::free_devices, list);
}
// Pure: answered here when there is no table.
const char* rdma_event_str(enum rdma_cm_event_type event) {
    const rdmasim_rdmacm_ops* t = table();
    return t != nullptr && t->event_str != nullptr ? call(&Ops::event_str, event)
                                                   : rdmasim::rdmacm::event_name(event);
}
int rdma_set_option(struct rdma_cm_id* id, int level, int optname, void* optval, size_t optlen) {
    return call(&Ops::set_option, id, level, optname, optval, optlen);
}
int rdma_migrate_id(struct rdma_cm_id* id, struct rdma_event_channel* channel) {
    return call(&Ops::migrate_id, id, channel);
}
int rdma_getaddrinfo(const char* node, const char* service, const struct rdma_addrinfo* hints,
                     struct rdma_addrinfo** res) {
    return call(&Ops::getaddrinfo, node, service, hints, res);
}
void rdma_freeaddrinfo(struct rdma_addrinfo* res) {
    call(&Ops::freeaddrinfo, res);
}
int rdma_init_qp_attr(struct rdma_cm_id* id, struct ibv_qp_attr* qp_attr, int* qp_attr_mask) {
    return call(&Ops::init_qp_attr, id, qp_attr, qp_attr_mask);
}
int rdma_set_local_ece(struct rdma_cm_id* id, struct ibv_ece* ece) {
    return call(&Ops::set_local_ece, id, ece);
}
int rdma_get_remote_ece(struct rdma_cm_id* id, struct ibv_ece* ece) {
    return call(&Ops::get_remote_ece, id, ece);
}

// <rdma/rdma_verbs.h>

int rdma_create_srq(struct rdma_cm_id* id, struct ibv_pd* pd, struct ibv_srq_init_attr* attr) {
    return call(&Ops::create_srq, id, pd, attr);
}
int rdma_create_srq_ex(struct rdma_cm_id* id, struct ibv_srq_init_attr_ex* attr) {
    return call(&Ops::create_srq_ex, id, attr);
}
void rdma_destroy_srq(struct rdma_cm_id* id) {
    call(&Ops::destroy_srq, id);
}

} // extern "C"
