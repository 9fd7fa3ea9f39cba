// IBVERBS_PRIVATE_34: rdma-core's interface to its provider libraries, as stubs
// so that providers (libmlx5.so.1, libefa.so.1, ...) load. The emulator is no
// kernel device: whatever would need one answers EOPNOTSUPP.
#include <pthread.h>

#include "device/abi/declarations.hpp"
#include "device/abi_guard.hpp"

using namespace rdmasim::device;

// Prototypes follow driver.h.
extern "C" {

bool verbs_allow_disassociate_destroy = false;

// Provider constructors call this when they are loaded: accept and ignore.
void verbs_register_driver_34(const struct verbs_device_ops*) noexcept {}

// Provider logging: nothing to log to.
void __verbs_log(struct verbs_context*, uint32_t, const char*, ...) noexcept {}

void* _verbs_init_and_alloc_context(struct ibv_device*, int, size_t, struct verbs_context*,
                                    uint32_t) noexcept {
    return fail(not_emulated);
}
struct ibv_context* verbs_open_device(struct ibv_device*, void*) noexcept {
    return fail<ibv_context>(not_emulated);
}
void verbs_uninit_context(struct verbs_context*) noexcept {}
void verbs_set_ops(struct verbs_context*, const struct verbs_context_ops*) noexcept {}

// The generic part of a provider's CQ set-up: fills the public fields.
void verbs_init_cq(struct ibv_cq* cq, struct ibv_context* context, struct ibv_comp_channel* channel,
                   void* cq_context) noexcept {
    if (cq == nullptr) return;
    cq->context = context;
    cq->channel = channel;
    cq->cq_context = cq_context;
    cq->comp_events_completed = 0;
    cq->async_events_completed = 0;
    pthread_mutex_init(&cq->mutex, nullptr);
    pthread_cond_init(&cq->cond, nullptr);
}

unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, struct ibv_command_buffer*) noexcept {
    return num_attrs;
}
int execute_ioctl(struct ibv_context*, struct ibv_command_buffer*) noexcept {
    return not_emulated;
}

int ibv_cmd_get_context(struct verbs_context*, struct ibv_get_context*, size_t,
                        struct ib_uverbs_get_context_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_query_context(struct ibv_context*, struct ibv_command_buffer*) noexcept {
    return not_emulated;
}
int ibv_cmd_query_device_any(struct ibv_context*, const struct ibv_query_device_ex_input*,
                             struct ibv_device_attr_ex*, size_t,
                             struct ib_uverbs_ex_query_device_resp*, size_t*) noexcept {
    return not_emulated;
}
int ibv_cmd_query_port(struct ibv_context*, uint8_t, struct ibv_port_attr*, struct ibv_query_port*,
                       size_t) noexcept {
    return not_emulated;
}

int ibv_cmd_alloc_pd(struct ibv_context*, struct ibv_pd*, struct ibv_alloc_pd*, size_t,
                     struct ib_uverbs_alloc_pd_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_dealloc_pd(struct ibv_pd*) noexcept {
    return not_emulated;
}
int ibv_cmd_open_xrcd(struct ibv_context*, struct verbs_xrcd*, int, struct ibv_xrcd_init_attr*,
                      struct ibv_open_xrcd*, size_t, struct ib_uverbs_open_xrcd_resp*,
                      size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_close_xrcd(struct verbs_xrcd*) noexcept {
    return not_emulated;
}

int ibv_cmd_reg_mr(struct ibv_pd*, void*, size_t, uint64_t, int, struct verbs_mr*,
                   struct ibv_reg_mr*, size_t, struct ib_uverbs_reg_mr_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_rereg_mr(struct verbs_mr*, uint32_t, void*, size_t, uint64_t, int, struct ibv_pd*,
                     struct ibv_rereg_mr*, size_t, struct ib_uverbs_rereg_mr_resp*,
                     size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_dereg_mr(struct verbs_mr*) noexcept {
    return not_emulated;
}
int ibv_cmd_query_mr(struct ibv_pd*, struct verbs_mr*, uint32_t) noexcept {
    return not_emulated;
}
int ibv_cmd_advise_mr(struct ibv_pd*, enum ibv_advise_mr_advice, uint32_t, struct ibv_sge*,
                      uint32_t) noexcept {
    return not_emulated;
}
int ibv_cmd_reg_dmabuf_mr(struct ibv_pd*, uint64_t, size_t, uint64_t, int, int,
                          struct verbs_mr*) noexcept {
    return not_emulated;
}
int ibv_cmd_reg_dm_mr(struct ibv_pd*, struct verbs_dm*, uint64_t, size_t, unsigned int,
                      struct verbs_mr*, struct ibv_command_buffer*) noexcept {
    return not_emulated;
}

int ibv_cmd_alloc_mw(struct ibv_pd*, enum ibv_mw_type, struct ibv_mw*, struct ibv_alloc_mw*, size_t,
                     struct ib_uverbs_alloc_mw_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_dealloc_mw(struct ibv_mw*) noexcept {
    return not_emulated;
}

int ibv_cmd_alloc_dm(struct ibv_context*, const struct ibv_alloc_dm_attr*, struct verbs_dm*,
                     struct ibv_command_buffer*) noexcept {
    return not_emulated;
}
int ibv_cmd_free_dm(struct verbs_dm*) noexcept {
    return not_emulated;
}

int ibv_cmd_create_cq(struct ibv_context*, int, struct ibv_comp_channel*, int, struct ibv_cq*,
                      struct ibv_create_cq*, size_t, struct ib_uverbs_create_cq_resp*,
                      size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_create_cq_ex(struct ibv_context*, const struct ibv_cq_init_attr_ex*, struct verbs_cq*,
                         struct ibv_create_cq_ex*, size_t, struct ib_uverbs_ex_create_cq_resp*,
                         size_t, uint32_t) noexcept {
    return not_emulated;
}
// Returns a completion count: failure is negative.
int ibv_cmd_poll_cq(struct ibv_cq*, int, struct ibv_wc*) noexcept {
    errno = not_emulated;
    return -1;
}
int ibv_cmd_req_notify_cq(struct ibv_cq*, int) noexcept {
    return not_emulated;
}
int ibv_cmd_resize_cq(struct ibv_cq*, int, struct ibv_resize_cq*, size_t,
                      struct ib_uverbs_resize_cq_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_cq(struct ibv_cq*) noexcept {
    return not_emulated;
}
int ibv_cmd_modify_cq(struct ibv_cq*, struct ibv_modify_cq_attr*, struct ibv_modify_cq*,
                      size_t) noexcept {
    return not_emulated;
}

int ibv_cmd_create_srq(struct ibv_pd*, struct ibv_srq*, struct ibv_srq_init_attr*,
                       struct ibv_create_srq*, size_t, struct ib_uverbs_create_srq_resp*,
                       size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_create_srq_ex(struct ibv_context*, struct verbs_srq*, struct ibv_srq_init_attr_ex*,
                          struct ibv_create_xsrq*, size_t, struct ib_uverbs_create_srq_resp*,
                          size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_modify_srq(struct ibv_srq*, struct ibv_srq_attr*, int, struct ibv_modify_srq*,
                       size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_query_srq(struct ibv_srq*, struct ibv_srq_attr*, struct ibv_query_srq*,
                      size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_srq(struct ibv_srq*) noexcept {
    return not_emulated;
}

int ibv_cmd_create_qp(struct ibv_pd*, struct ibv_qp*, struct ibv_qp_init_attr*,
                      struct ibv_create_qp*, size_t, struct ib_uverbs_create_qp_resp*,
                      size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_create_qp_ex(struct ibv_context*, struct verbs_qp*, struct ibv_qp_init_attr_ex*,
                         struct ibv_create_qp*, size_t, struct ib_uverbs_create_qp_resp*,
                         size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_create_qp_ex2(struct ibv_context*, struct verbs_qp*, struct ibv_qp_init_attr_ex*,
                          struct ibv_create_qp_ex*, size_t, struct ib_uverbs_ex_create_qp_resp*,
                          size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_open_qp(struct ibv_context*, struct verbs_qp*, int, struct ibv_qp_open_attr*,
                    struct ibv_open_qp*, size_t, struct ib_uverbs_create_qp_resp*,
                    size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_query_qp(struct ibv_qp*, struct ibv_qp_attr*, int, struct ibv_qp_init_attr*,
                     struct ibv_query_qp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_modify_qp(struct ibv_qp*, struct ibv_qp_attr*, int, struct ibv_modify_qp*,
                      size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_modify_qp_ex(struct ibv_qp*, struct ibv_qp_attr*, int, struct ibv_modify_qp_ex*, size_t,
                         struct ib_uverbs_ex_modify_qp_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_qp(struct ibv_qp*) noexcept {
    return not_emulated;
}

// Post calls name the first work request not posted: here, the first one.
int ibv_cmd_post_send(struct ibv_qp*, struct ibv_send_wr* wr,
                      struct ibv_send_wr** bad_wr) noexcept {
    if (bad_wr) *bad_wr = wr;
    return not_emulated;
}
int ibv_cmd_post_recv(struct ibv_qp*, struct ibv_recv_wr* wr,
                      struct ibv_recv_wr** bad_wr) noexcept {
    if (bad_wr) *bad_wr = wr;
    return not_emulated;
}
int ibv_cmd_post_srq_recv(struct ibv_srq*, struct ibv_recv_wr* wr,
                          struct ibv_recv_wr** bad_wr) noexcept {
    if (bad_wr) *bad_wr = wr;
    return not_emulated;
}

int ibv_cmd_create_ah(struct ibv_pd*, struct ibv_ah*, struct ibv_ah_attr*,
                      struct ib_uverbs_create_ah_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_ah(struct ibv_ah*) noexcept {
    return not_emulated;
}
int ibv_cmd_attach_mcast(struct ibv_qp*, const union ibv_gid*, uint16_t) noexcept {
    return not_emulated;
}
int ibv_cmd_detach_mcast(struct ibv_qp*, const union ibv_gid*, uint16_t) noexcept {
    return not_emulated;
}

int ibv_cmd_create_flow(struct ibv_qp*, struct ibv_flow*, struct ibv_flow_attr*, void*,
                        size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_flow(struct ibv_flow*) noexcept {
    return not_emulated;
}
int ibv_cmd_create_flow_action_esp(struct ibv_context*, struct ibv_flow_action_esp_attr*,
                                   struct verbs_flow_action*, struct ibv_command_buffer*) noexcept {
    return not_emulated;
}
int ibv_cmd_modify_flow_action_esp(struct verbs_flow_action*, struct ibv_flow_action_esp_attr*,
                                   struct ibv_command_buffer*) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_flow_action(struct verbs_flow_action*) noexcept {
    return not_emulated;
}

int ibv_cmd_create_wq(struct ibv_context*, struct ibv_wq_init_attr*, struct ibv_wq*,
                      struct ibv_create_wq*, size_t, struct ib_uverbs_ex_create_wq_resp*,
                      size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_modify_wq(struct ibv_wq*, struct ibv_wq_attr*, struct ibv_modify_wq*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_wq(struct ibv_wq*) noexcept {
    return not_emulated;
}
int ibv_cmd_create_rwq_ind_table(struct ibv_context*, struct ibv_rwq_ind_table_init_attr*,
                                 struct ibv_rwq_ind_table*,
                                 struct ib_uverbs_ex_create_rwq_ind_table_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table*) noexcept {
    return not_emulated;
}

int ibv_cmd_create_counters(struct ibv_context*, struct ibv_counters_init_attr*,
                            struct verbs_counters*, struct ibv_command_buffer*) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_counters(struct verbs_counters*) noexcept {
    return not_emulated;
}
int ibv_cmd_read_counters(struct verbs_counters*, uint64_t*, uint32_t, uint32_t,
                          struct ibv_command_buffer*) noexcept {
    return not_emulated;
}

} // extern "C"
