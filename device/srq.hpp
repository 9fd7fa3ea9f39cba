// Shared receive queues (device/README.md, "Shared receive queues"): basic
// XRC and tag-matching SRQs (the tag list: device/tm_srq.hpp).
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) noexcept;
ibv_srq* create_srq_ex(ibv_context* context, ibv_srq_init_attr_ex* attr) noexcept;
int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) noexcept;
int query_srq(ibv_srq* srq, ibv_srq_attr* attr) noexcept;
int destroy_srq(ibv_srq* srq) noexcept; // EBUSY while a QP uses it
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;
int get_srq_num(ibv_srq* srq, uint32_t* srq_num) noexcept;

// For the transport (port lock held): consumes the SRQ's front WQE. When
// that leaves fewer WQEs posted than an armed limit,
// IBV_EVENT_SRQ_LIMIT_REACHED is raised and the limit disarms
// (ibv_modify_srq(3)).
void pop_srq_wqe(Srq& srq) noexcept;

} // namespace rdmasim::device
