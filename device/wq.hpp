// Receive work queues and RSS indirection tables (SPEC.md sections 3 and 5).
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

// Shared by WQs and raw-packet QPs: posts a receive list into `rx` (SPEC
// section 3 rules: EINVAL for too many SGEs, ENOMEM when full, *bad_wr names
// the WR and the ones before it stay posted). Caller holds the post lock.
int post_receive_list(datapath::RxQueue& rx, std::uint32_t max_sge, ibv_recv_wr* wr,
                      ibv_recv_wr** bad_wr) noexcept;
// Completes whatever is posted with IBV_WC_WR_FLUSH_ERR (a queue in ERR).
// Takes the port lock, then `post_lock`: never call it holding either.
void flush_posted(Device& dev, datapath::RxQueue& rx, SpinLock& post_lock) noexcept;

} // namespace rdmasim::device
