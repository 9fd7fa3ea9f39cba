// RC, UC, UD and XRC queue pairs (device/qp_roles.hpp, IbQp): creation
// (qp_ib_create.cpp), the state machine, queries and destroy (qp_ib.cpp),
// posting into the rings the transport drains (qp_ib_post.cpp); see
// device/README.md, "RC, UC and UD queue pairs". Each QP's packets are its
// QpTransport's (device/qp_transport.hpp).
#pragma once

#include "device/objects.hpp"
#include "device/qp_roles.hpp"

namespace rdmasim::device {

// The role's verbs (qp.cpp calls them through Qp::ops).
extern const QpOps kIbQpOps;

int modify_ib_qp(IbQp& qp, ibv_qp_attr& attr, int mask) noexcept;
void query_ib_qp(IbQp& qp, ibv_qp_attr& attr, ibv_qp_init_attr& init) noexcept;
int destroy_ib_qp(IbQp& qp) noexcept;
// With `all_or_nothing` (ibv_wr_complete) every WR is checked, and room
// found for all, before any is posted (and IBV_WR_ATOMIC_WRITE, which only
// ibv_wr_atomic_write builds, is allowed); otherwise the WRs before *bad_wr stay.
int post_ib_send(IbQp& qp, ibv_send_wr* wr, ibv_send_wr** bad_wr, bool all_or_nothing = false) noexcept;
int post_ib_recv(IbQp& qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;

// Posts `wr` to a receive queue (a QP's or an SRQ's): a WR with num_sge < 0
// or above rq.max_sge, or SGEs but no list, is EINVAL; max_post WQEs already
// outstanding is ENOMEM; either way *bad_wr names it, the ones before stay.
// Zero-length SGEs are skipped. Caller holds rq.post_lock.
int post_work_recv(WorkRecvQueue& rq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;

// ---------------------------------------------------------------------------
// For the transport (device/qp_transport.*). Caller holds the port lock.

// The HCA moved `qp` to `state` on its own (the transport flushed already):
// the verbs state follows, nothing else happens.
void hca_set_qp_state(IbQp& qp, ibv_qp_state state) noexcept;

// Queues an async event of `qp` for ibv_get_async_event.
void raise_qp_event(Qp& qp, ibv_event_type type) noexcept;

} // namespace rdmasim::device
