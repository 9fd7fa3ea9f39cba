// RC, UC and UD queue pairs: creation, the state machine, queries, posting
// into the rings the transport drains (device/README.md, "RC, UC and UD
// queue pairs"). qp.cpp dispatches here for these types; raw-packet QPs stay
// in qp.cpp. Each QP's packets are its QpTransport's (device/qp_transport.hpp).
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

// The verbs, for a QP whose qp_type is IBV_QPT_RC, UC or UD. create_ib_qp
// runs after qp.cpp's common checks (context, comp_mask, PD).
ibv_qp* create_ib_qp(Context& ctx, ibv_qp_init_attr_ex& attr) noexcept;
int modify_ib_qp(Qp& qp, ibv_qp_attr& attr, int mask) noexcept;
void query_ib_qp(Qp& qp, ibv_qp_attr& attr, ibv_qp_init_attr& init) noexcept;
int destroy_ib_qp(Qp& qp) noexcept;
// With `all_or_nothing` (ibv_wr_complete) every WR is checked, and room
// found for all, before any is posted (and IBV_WR_ATOMIC_WRITE, which only
// ibv_wr_atomic_write builds, is allowed); otherwise the WRs before *bad_wr stay.
int post_ib_send(Qp& qp, ibv_send_wr* wr, ibv_send_wr** bad_wr, bool all_or_nothing = false) noexcept;
int post_ib_recv(Qp& qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;

// Posts `wr` to a receive queue (a QP's or an SRQ's): a WR with num_sge < 0
// or above rq.max_sge, or SGEs but no list, is EINVAL; max_post WQEs already
// outstanding is ENOMEM; either way *bad_wr names it, the ones before stay.
// Zero-length SGEs are skipped. Caller holds rq.post_lock.
int post_work_recv(WorkRecvQueue& rq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;

// ---------------------------------------------------------------------------
// For the transport (device/qp_transport.*). Caller holds the port lock.

// The HCA moved `qp` to `state` on its own (the transport flushed already):
// the verbs state follows, nothing else happens.
void hca_set_qp_state(Qp& qp, ibv_qp_state state) noexcept;

// Queues an async event of `qp` for ibv_get_async_event.
void raise_qp_event(Qp& qp, ibv_event_type type) noexcept;

} // namespace rdmasim::device
