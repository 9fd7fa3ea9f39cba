// The rdma_* entry points as rdmasim implements them: the signatures of
// <rdma/rdma_cma.h>, filled into the table librdmacm.so.1 forwards to
// (device/rdmacm/ops_table.cpp). Each validates its arguments and answers
// as rdma-core's librdmacm over a kernel rdma_cm does (device/README.md,
// "Connection manager"): 0 or a pointer, else -1 or NULL with errno.
#pragma once

#include <rdma/rdma_cma.h>

namespace rdmasim::rdmacm {

struct EventRec;

// channel.cpp
rdma_event_channel* create_event_channel() noexcept;
void destroy_event_channel(rdma_event_channel* channel) noexcept;
int get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) noexcept;
int ack_cm_event(rdma_cm_event* event) noexcept;
// A REP for an id: librdmacm's own step before the program sees it. False
// when the event was consumed (freed) instead of handed on.
bool process_conn_response(EventRec& rec) noexcept;

// id.cpp
int create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context,
              rdma_port_space ps) noexcept;
int destroy_id(rdma_cm_id* id) noexcept;
int migrate_id(rdma_cm_id* id, rdma_event_channel* channel) noexcept;
int set_option(rdma_cm_id* id, int level, int optname, void* optval, size_t optlen) noexcept;
int set_local_ece(rdma_cm_id* id, ibv_ece* ece) noexcept;
int get_remote_ece(rdma_cm_id* id, ibv_ece* ece) noexcept;
ibv_context** get_devices(int* num_devices) noexcept;
void free_devices(ibv_context** list) noexcept;
__be16 get_src_port(rdma_cm_id* id) noexcept;
__be16 get_dst_port(rdma_cm_id* id) noexcept;

// address.cpp
int bind_addr(rdma_cm_id* id, sockaddr* addr) noexcept;
int resolve_addr(rdma_cm_id* id, sockaddr* src, sockaddr* dst, int timeout_ms) noexcept;
int resolve_route(rdma_cm_id* id, int timeout_ms) noexcept;
int listen(rdma_cm_id* id, int backlog) noexcept;

// connect.cpp
int connect(rdma_cm_id* id, rdma_conn_param* param) noexcept;
int accept(rdma_cm_id* id, rdma_conn_param* param) noexcept;
int reject(rdma_cm_id* id, const void* private_data, uint8_t len) noexcept;
int establish(rdma_cm_id* id) noexcept;
int disconnect(rdma_cm_id* id) noexcept;
int notify(rdma_cm_id* id, ibv_event_type event) noexcept;

// qp.cpp
int create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* attr) noexcept;
int create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) noexcept;
void destroy_qp(rdma_cm_id* id) noexcept;
int init_qp_attr(rdma_cm_id* id, ibv_qp_attr* attr, int* mask) noexcept;

// multicast.cpp
int join_multicast(rdma_cm_id* id, sockaddr* addr, void* context) noexcept;
int join_multicast_ex(rdma_cm_id* id, rdma_cm_join_mc_attr_ex* attr, void* context) noexcept;
int leave_multicast(rdma_cm_id* id, sockaddr* addr) noexcept;
// A MULTICAST_JOIN read by the program: the id's QP joins the group
// (librdmacm's ucma_process_join); on failure the event becomes MULTICAST_ERROR.
void process_join(EventRec& rec) noexcept;

// info.cpp
int getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints,
                rdma_addrinfo** res) noexcept;
void freeaddrinfo(rdma_addrinfo* res) noexcept;

// endpoint.cpp
int create_ep(rdma_cm_id** id, rdma_addrinfo* res, ibv_pd* pd,
              ibv_qp_init_attr* qp_init_attr) noexcept;
void destroy_ep(rdma_cm_id* id) noexcept;
int get_request(rdma_cm_id* listen, rdma_cm_id** id) noexcept;

} // namespace rdmasim::rdmacm
