// Receive work queues and RSS indirection tables (device/README.md, "Work queues"
// and "Indirection tables and RSS QPs").
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

ibv_wq* create_wq(ibv_context* context, ibv_wq_init_attr* attr) noexcept;
int modify_wq(ibv_wq* wq, ibv_wq_attr* attr) noexcept;
int destroy_wq(ibv_wq* wq) noexcept;
int post_wq_recv(ibv_wq* wq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;

// Drives a WQ to ERR as a fault would, raising IBV_EVENT_WQ_FATAL.
void wq_fatal(Wq& wq) noexcept;

ibv_rwq_ind_table* create_rwq_ind_table(ibv_context* context,
                                        ibv_rwq_ind_table_init_attr* attr) noexcept;
int destroy_rwq_ind_table(ibv_rwq_ind_table* table) noexcept;

} // namespace rdmasim::device
