// The RC/UC/UD/XRC transition table (device/qp_state.hpp). Written from the IB
// specification's QP state table (volume 1, 11.2.5.2 and 10.3.1); XRC INI
// (IBV_QPT_XRC_SEND) and TGT (IBV_QPT_XRC_RECV) as the kernel's
// ib_modify_qp_is_ok lists them: INI is RC's send side, TGT its receive side.
#include "device/qp_state.hpp"

namespace rdmasim::device {

namespace {

constexpr int kPath = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE;

// RESET -> INIT: where the QP sits (port, P_Key) and what peers may do to it.
Transition reset_to_init(ibv_qp_type t) noexcept {
    const int base = IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    return {true, t == IBV_QPT_UD ? base | IBV_QP_QKEY : base | IBV_QP_ACCESS_FLAGS, 0};
}

// INIT -> INIT: the same attributes, all optional.
Transition init_to_init(ibv_qp_type t) noexcept {
    return {true, 0, reset_to_init(t).required};
}

// INIT -> RTR: the connected types learn their peer and receive PSN.
Transition init_to_rtr(ibv_qp_type t) noexcept {
    const int peer = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    switch (t) {
    case IBV_QPT_RC:
    case IBV_QPT_XRC_RECV:
        return {true, peer | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX};
    case IBV_QPT_UC:
    case IBV_QPT_XRC_SEND:
        return {true, peer, IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX};
    default:
        return {true, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY};
    }
}

// RTR -> RTS: the send side (PSN; for RC the retry and read limits).
Transition rtr_to_rts(ibv_qp_type t) noexcept {
    switch (t) {
    case IBV_QPT_RC:
    case IBV_QPT_XRC_SEND:
        return {true,
                IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_MAX_QP_RD_ATOMIC,
                IBV_QP_CUR_STATE | kPath | IBV_QP_MIN_RNR_TIMER};
    case IBV_QPT_XRC_RECV:
        return {true, IBV_QP_SQ_PSN | IBV_QP_TIMEOUT, IBV_QP_CUR_STATE | kPath | IBV_QP_MIN_RNR_TIMER};
    case IBV_QPT_UC:
        return {true, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | kPath};
    default:
        return {true, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY};
    }
}

// RTS -> RTS and SQD -> RTS: the attributes a running QP may change.
Transition running(ibv_qp_type t) noexcept {
    switch (t) {
    case IBV_QPT_RC:
    case IBV_QPT_XRC_RECV:
        return {true, 0, IBV_QP_CUR_STATE | kPath | IBV_QP_MIN_RNR_TIMER};
    case IBV_QPT_UC:
    case IBV_QPT_XRC_SEND:
        return {true, 0, IBV_QP_CUR_STATE | kPath};
    default:
        return {true, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY};
    }
}

// SQD -> SQD: a drained send queue may take a new path and limits.
Transition sqd_to_sqd(ibv_qp_type t) noexcept {
    switch (t) {
    case IBV_QPT_RC:
        return {true, 0,
                IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | kPath |
                    IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER};
    case IBV_QPT_XRC_SEND:
        return {true, 0,
                IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                    IBV_QP_MAX_QP_RD_ATOMIC | kPath | IBV_QP_PKEY_INDEX};
    case IBV_QPT_XRC_RECV:
        return {true, 0,
                IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_MAX_DEST_RD_ATOMIC | kPath |
                    IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER};
    case IBV_QPT_UC:
        return {true, 0, IBV_QP_AV | kPath | IBV_QP_PKEY_INDEX};
    default:
        return {true, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY};
    }
}

// SQE -> RTS: only UC and UD enter SQE (an RC send error is fatal: ERR);
// the table lists the transition for RC too, with no attribute.
Transition sqe_to_rts(ibv_qp_type t) noexcept {
    switch (t) {
    case IBV_QPT_UC:
        return {true, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS};
    case IBV_QPT_UD:
        return {true, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY};
    default:
        return {true, 0, 0};
    }
}

} // namespace

Transition qp_transition(ibv_qp_state cur, ibv_qp_state next, ibv_qp_type t) noexcept {
    if (next == IBV_QPS_RESET) return {true, 0, 0};
    if (next == IBV_QPS_ERR) return {cur != IBV_QPS_RESET, 0, 0}; // RESET -> ERR is not in the table
    switch (cur) {
    case IBV_QPS_RESET:
        return next == IBV_QPS_INIT ? reset_to_init(t) : Transition{};
    case IBV_QPS_INIT:
        if (next == IBV_QPS_INIT) return init_to_init(t);
        return next == IBV_QPS_RTR ? init_to_rtr(t) : Transition{};
    case IBV_QPS_RTR:
        return next == IBV_QPS_RTS ? rtr_to_rts(t) : Transition{};
    case IBV_QPS_RTS:
        if (next == IBV_QPS_RTS) return running(t);
        return next == IBV_QPS_SQD ? Transition{true, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY} : Transition{};
    case IBV_QPS_SQD:
        if (next == IBV_QPS_RTS) return running(t);
        return next == IBV_QPS_SQD ? sqd_to_sqd(t) : Transition{};
    case IBV_QPS_SQE:
        return next == IBV_QPS_RTS ? sqe_to_rts(t) : Transition{};
    default:
        return {};
    }
}

bool modify_is_ok(ibv_qp_state cur, ibv_qp_state next, ibv_qp_type type, int mask) noexcept {
    if ((mask & IBV_QP_CUR_STATE) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
        cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
        return false;
    const Transition tr = qp_transition(cur, next, type);
    if (!tr.valid) return false;
    if ((mask & tr.required) != tr.required) return false;
    return (mask & ~(tr.required | tr.optional | IBV_QP_STATE)) == 0;
}

} // namespace rdmasim::device
