// The modify-QP table of RC, UC, UD and XRC QPs, as data: which transitions
// exist and which ibv_modify_qp attribute bits each requires and allows, per
// QP type, as the InfiniBand specification's table gives them (the kernel
// encodes the same table as qp_state_table in ib_modify_qp_is_ok,
// drivers/infiniband/core/verbs.c); and, per attribute bit, how its value is
// stored in the QP's ibv_qp_attr. ibv_modify_qp checks a mask against the
// first and stores what it allowed through the second. See device/README.md,
// "RC, UC and UD queue pairs".
#pragma once

#include <infiniband/verbs.h>

namespace rdmasim::device {

struct Transition {
    bool valid = false;
    int required = 0; // attribute bits the transition needs (IBV_QP_STATE aside)
    int optional = 0; // attribute bits it also takes
};

// The transition cur -> next for `type` (IBV_QPT_RC, UC, UD, XRC_SEND or XRC_RECV).
[[nodiscard]] Transition qp_transition(ibv_qp_state cur, ibv_qp_state next, ibv_qp_type type) noexcept;

// As ib_modify_qp_is_ok: IBV_QP_CUR_STATE only from RTR, RTS, SQD or SQE;
// the transition exists; every required bit is there; no bit outside
// required | optional | IBV_QP_STATE.
[[nodiscard]] bool modify_is_ok(ibv_qp_state cur, ibv_qp_state next, ibv_qp_type type,
                                int mask) noexcept;

// Every attribute bit ibv_modify_qp knows for RC/UC/UD/XRC: those with a
// copier (qp_state.cpp checks), the state bits, and the two no transition
// here takes (IBV_QP_ALT_PATH,
// IBV_QP_CAP). IBV_QP_RATE_LIMIT and the later bits are raw-packet or not
// emulated.
inline constexpr int kQpAttrBits =
    IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY | IBV_QP_ACCESS_FLAGS |
    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT |
    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
    IBV_QP_ALT_PATH | IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
    IBV_QP_PATH_MIG_STATE | IBV_QP_CAP | IBV_QP_DEST_QPN;

// Stores into `to` the value of every attribute `mask` names, through the
// table's copier for its bit (PSNs and the QP number keep their low 24 bits).
void store_qp_attrs(ibv_qp_attr& to, const ibv_qp_attr& from, int mask) noexcept;

} // namespace rdmasim::device
