// RC, UC and UD queue pairs: creation, the state machine, queries, posting
// into the rings the transport drains (device/README.md, "RC, UC and UD
// queue pairs"). qp.cpp dispatches here for these types; raw-packet QPs stay
// in qp.cpp. Nothing is sent yet: the transport (a later round) consumes the
// SendQueue and the receive WQEs through the functions at the end.
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

// The verbs, for a QP whose qp_type is IBV_QPT_RC, UC or UD. create_ib_qp
// runs after qp.cpp's common checks (context, comp_mask, PD).
ibv_qp* create_ib_qp(Context& ctx, ibv_qp_init_attr_ex& attr) noexcept;
int modify_ib_qp(Qp& qp, ibv_qp_attr& attr, int mask) noexcept;
void query_ib_qp(Qp& qp, ibv_qp_attr& attr, ibv_qp_init_attr& init) noexcept;
int destroy_ib_qp(Qp& qp) noexcept;
int post_ib_send(Qp& qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) noexcept;
int post_ib_recv(Qp& qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;

// Posts `wr` to a receive queue (a QP's or an SRQ's): a WR with num_sge < 0
// or above rq.max_sge, or SGEs but no list, is EINVAL; max_post WQEs already
// outstanding is ENOMEM; either way *bad_wr names it, the ones before stay.
// Zero-length SGEs are skipped. Caller holds rq.post_lock.
int post_work_recv(WorkRecvQueue& rq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;

// ---------------------------------------------------------------------------
// For the transport and the HCA's own state changes. Caller holds the port
// lock.

// The next receive WQE of `qp` (from its SRQ when it has one), copied into
// `wqe` and `sges` (room for the queue's max_sge); false when none is
// posted. An SRQ whose armed limit is crossed raises
// IBV_EVENT_SRQ_LIMIT_REACHED (srq.cpp, take_srq_wqe).
bool take_recv_wqe(Device& dev, Qp& qp, datapath::Wqe& wqe, datapath::Sge* sges) noexcept;

// The HCA moves `qp` to SQE (a UC/UD send error) or ERR (an RC error), as a
// modify would: ERR flushes both queues and, with an SRQ, raises
// IBV_EVENT_QP_LAST_WQE_REACHED; SQE flushes the send queue.
void hca_set_qp_state(Device& dev, Qp& qp, ibv_qp_state state) noexcept;

// The ibv_wc_opcode a send WR completes with.
ibv_wc_opcode send_wc_opcode(ibv_wr_opcode op) noexcept;

} // namespace rdmasim::device
