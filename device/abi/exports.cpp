// The exported libibverbs functions: the C ABI programs link against. Every
// entry point sits here and only forwards to the device model; the ops-table
// slots the inline wrappers of verbs.h call are in the ops table (ops.cpp).
#include <infiniband/verbs.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "device/abi_guard.hpp"
#include "device/ah.hpp"
#include "device/async_events.hpp"
#include "device/context.hpp"
#include "device/cq.hpp"
#include "device/import.hpp"
#include "device/mcast.hpp"
#include "device/pd.hpp"
#include "device/qp.hpp"
#include "device/qp_ex.hpp"
#include "device/registry.hpp"
#include "device/srq.hpp"

using namespace rdmasim::device;

// verbs.h wraps some exported names in macros; the definitions need the names.
#undef ibv_get_device_list
#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_query_port

extern "C" {

ibv_device** ibv_get_device_list(int* num_devices) {
    return guard_ptr<ibv_device*>([&]() -> ibv_device** {
        std::vector<Device*> devs;
        if (int err = current_devices(devs)) return fail<ibv_device*>(err);
        auto** list = static_cast<ibv_device**>(std::calloc(devs.size() + 1, sizeof(ibv_device*)));
        if (list == nullptr) return fail<ibv_device*>(ENOMEM);
        for (std::size_t i = 0; i < devs.size(); ++i) list[i] = &devs[i]->ibdev;
        if (num_devices) *num_devices = static_cast<int>(devs.size());
        return list;
    });
}

void ibv_free_device_list(ibv_device** list) { std::free(list); }

const char* ibv_get_device_name(ibv_device* device) {
    return device ? device->name : fail<const char>(EINVAL);
}

__be64 ibv_get_device_guid(ibv_device* device) {
    return device ? from_verbs(device)->identity.node_guid : 0;
}

int ibv_get_device_index(ibv_device* device) {
    return device ? static_cast<int>(from_verbs(device)->identity.index) : -1;
}

ibv_context* ibv_open_device(ibv_device* device) { return open_device(device); }
int ibv_close_device(ibv_context* context) { return close_device(context); }

// Shared contexts (device/import.hpp).
ibv_context* ibv_import_device(int cmd_fd) {
    return import_device(cmd_fd);
}
ibv_pd* ibv_import_pd(ibv_context* context, uint32_t pd_handle) {
    return import_pd(context, pd_handle);
}
void ibv_unimport_pd(ibv_pd* pd) {
    unimport_pd(pd);
}
ibv_mr* ibv_import_mr(ibv_pd* pd, uint32_t mr_handle) {
    return import_mr(pd, mr_handle);
}
void ibv_unimport_mr(ibv_mr* mr) {
    unimport_mr(mr);
}
ibv_dm* ibv_import_dm(ibv_context* context, uint32_t dm_handle) {
    return import_dm(context, dm_handle);
}
void ibv_unimport_dm(ibv_dm* dm) {
    unimport_dm(dm);
}

// Multicast groups of UD QPs (device/mcast.hpp).
int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
    return attach_mcast(qp, gid, lid);
}
int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
    return detach_mcast(qp, gid, lid);
}

int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
    return query_device(context, attr);
}

int ibv_query_port(ibv_context* context, uint8_t port_num, struct _compat_ibv_port_attr* attr) {
    // The pre-1.1 entry point: the caller's struct is the old, shorter layout.
    // rdma-core's compat layout is ibv_port_attr up to `flags`.
    return query_port(context, port_num, reinterpret_cast<ibv_port_attr*>(attr),
                      offsetof(ibv_port_attr, port_cap_flags2));
}

int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
    return query_gid(context, port_num, index, gid);
}

int ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
    return query_pkey(context, port_num, index, pkey);
}

int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
    return get_async_event(context, event);
}
void ibv_ack_async_event(ibv_async_event* event) { ack_async_event(event); }

ibv_pd* ibv_alloc_pd(ibv_context* context) { return alloc_pd(context); }
int ibv_dealloc_pd(ibv_pd* pd) { return dealloc_pd(pd); }

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
    return reg_mr(pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                  static_cast<unsigned>(access));
}
ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
    return reg_mr(pd, addr, length, iova, static_cast<unsigned>(access));
}
ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova,
                         unsigned int access) {
    return reg_mr(pd, addr, length, iova, access);
}
int ibv_dereg_mr(ibv_mr* mr) { return dereg_mr(mr); }
int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
    return rereg_mr(mr, flags, pd, addr, length, access);
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
    return create_comp_channel(context);
}
int ibv_destroy_comp_channel(ibv_comp_channel* channel) { return destroy_comp_channel(channel); }

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
    return create_cq(context, cqe, cq_context, channel, comp_vector);
}
int ibv_destroy_cq(ibv_cq* cq) { return destroy_cq(cq); }
int ibv_resize_cq(ibv_cq* cq, int cqe) { return resize_cq(cq, cqe); }
int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
    return get_cq_event(channel, cq, cq_context);
}
void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) { ack_cq_events(cq, nevents); }

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) { return create_qp(pd, attr); }
int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
    return modify_qp(qp, attr, attr_mask);
}
int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) {
    return query_qp(qp, attr, attr_mask, init_attr);
}
int ibv_destroy_qp(ibv_qp* qp) { return destroy_qp(qp); }
ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) { return qp_to_qp_ex(qp); }

ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) { return create_ah(pd, attr); }
int ibv_destroy_ah(ibv_ah* ah) { return destroy_ah(ah); }
int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc, ibv_grh* grh,
                        ibv_ah_attr* ah_attr) {
    return init_ah_from_wc(context, port_num, wc, grh, ah_attr);
}
ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
    return create_ah_from_wc(pd, wc, grh, port_num);
}

ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) { return create_srq(pd, attr); }
int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int attr_mask) {
    return modify_srq(srq, attr, attr_mask);
}
int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) { return query_srq(srq, attr); }
int ibv_destroy_srq(ibv_srq* srq) { return destroy_srq(srq); }

} // extern "C"
