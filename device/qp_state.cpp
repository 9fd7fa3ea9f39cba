// The modify-QP table (device/qp_state.hpp). Written from the IB
// specification's QP state table (volume 1, 11.2.5.2 and 10.3.1); XRC INI
// (IBV_QPT_XRC_SEND) and TGT (IBV_QPT_XRC_RECV) as the kernel's
// ib_modify_qp_is_ok lists them: INI is RC's send side, TGT its receive side.
#include "device/qp_state.hpp"

#include <cstdint>

namespace rdmasim::device {

namespace {

// One mask per QP type, as the kernel's req_param[] / opt_param[].
struct PerType {
    int rc = 0, uc = 0, ud = 0, xrc_ini = 0, xrc_tgt = 0;

    [[nodiscard]] constexpr int of(ibv_qp_type t) const noexcept {
        switch (t) {
        case IBV_QPT_RC:
            return rc;
        case IBV_QPT_UC:
            return uc;
        case IBV_QPT_XRC_SEND:
            return xrc_ini;
        case IBV_QPT_XRC_RECV:
            return xrc_tgt;
        default:
            return ud;
        }
    }
};

constexpr PerType all(int mask) noexcept { return {mask, mask, mask, mask, mask}; }

// One row of the table: a transition that exists, and its masks.
struct Row {
    ibv_qp_state cur, next;
    PerType required, optional;
};

// Where the QP sits (port, P_Key) and what peers may do to it (Q_Key for UD).
constexpr int kWhere = IBV_QP_PKEY_INDEX | IBV_QP_PORT;
constexpr int kConnInit = kWhere | IBV_QP_ACCESS_FLAGS;
constexpr int kUdInit = kWhere | IBV_QP_QKEY;
// The peer and receive PSN the connected types learn into RTR; RC's
// receive side adds its read and RNR limits.
constexpr int kPeer = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
constexpr int kRcRecv = kPeer | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kConnRtr = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX;
// RC's send side into RTS: PSN, retries, reads in flight.
constexpr int kRcSend = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_MAX_QP_RD_ATOMIC;
// What a running QP may change.
constexpr int kPath = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE;
constexpr int kRunRc = IBV_QP_CUR_STATE | kPath | IBV_QP_MIN_RNR_TIMER;
constexpr int kRunUc = IBV_QP_CUR_STATE | kPath;
constexpr int kRunUd = IBV_QP_CUR_STATE | IBV_QP_QKEY;
constexpr PerType kRunning{kRunRc, kRunUc, kRunUd, kRunUc, kRunRc};
// A drained send queue may take a new path and limits.
constexpr int kSqdRetry = IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | kPath | IBV_QP_PKEY_INDEX;

// Every transition but those into RESET (from any state) and ERR (from any
// but RESET), which take no attribute.
// clang-format off
constexpr Row kTable[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, {kConnInit, kConnInit, kUdInit, kConnInit, kConnInit}, {}},
    {IBV_QPS_INIT, IBV_QPS_INIT, {}, {kConnInit, kConnInit, kUdInit, kConnInit, kConnInit}},
    {IBV_QPS_INIT, IBV_QPS_RTR, {kRcRecv, kPeer, 0, kPeer, kRcRecv},
     {kConnRtr, kConnRtr, IBV_QP_PKEY_INDEX | IBV_QP_QKEY, kConnRtr, kConnRtr}},
    {IBV_QPS_RTR, IBV_QPS_RTS,
     {kRcSend, IBV_QP_SQ_PSN, IBV_QP_SQ_PSN, kRcSend, IBV_QP_SQ_PSN | IBV_QP_TIMEOUT},
     {kRunRc, kRunUc, kRunUd, kRunRc, kRunRc}},
    {IBV_QPS_RTS, IBV_QPS_RTS, {}, kRunning},
    {IBV_QPS_RTS, IBV_QPS_SQD, {}, all(IBV_QP_EN_SQD_ASYNC_NOTIFY)},
    {IBV_QPS_SQD, IBV_QPS_RTS, {}, kRunning},
    {IBV_QPS_SQD, IBV_QPS_SQD, {},
     {kSqdRetry | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
      IBV_QP_AV | kPath | IBV_QP_PKEY_INDEX,
      IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
      kSqdRetry | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
      kSqdRetry | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER}},
    // Only UC and UD enter SQE (an RC send error is fatal: ERR); the table
    // lists the transition for RC too, with no attribute.
    {IBV_QPS_SQE, IBV_QPS_RTS, {},
     {0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS, IBV_QP_CUR_STATE | IBV_QP_QKEY, 0, 0}},
};
// clang-format on

// How each stored attribute's value goes into the QP's ibv_qp_attr.
struct Copier {
    int bit;
    void (*copy)(ibv_qp_attr& to, const ibv_qp_attr& from) noexcept;
};

template <auto Field>
void field(ibv_qp_attr& to, const ibv_qp_attr& from) noexcept {
    to.*Field = from.*Field;
}

// PSNs and QP numbers are 24 bits wide.
template <std::uint32_t ibv_qp_attr::*Field>
void low24(ibv_qp_attr& to, const ibv_qp_attr& from) noexcept {
    to.*Field = from.*Field & 0xffffff;
}

constexpr Copier kCopiers[] = {
    {IBV_QP_EN_SQD_ASYNC_NOTIFY, field<&ibv_qp_attr::en_sqd_async_notify>},
    {IBV_QP_ACCESS_FLAGS, field<&ibv_qp_attr::qp_access_flags>},
    {IBV_QP_PKEY_INDEX, field<&ibv_qp_attr::pkey_index>},
    {IBV_QP_PORT, field<&ibv_qp_attr::port_num>},
    {IBV_QP_QKEY, field<&ibv_qp_attr::qkey>},
    {IBV_QP_AV, field<&ibv_qp_attr::ah_attr>},
    {IBV_QP_PATH_MTU, field<&ibv_qp_attr::path_mtu>},
    {IBV_QP_TIMEOUT, field<&ibv_qp_attr::timeout>},
    {IBV_QP_RETRY_CNT, field<&ibv_qp_attr::retry_cnt>},
    {IBV_QP_RNR_RETRY, field<&ibv_qp_attr::rnr_retry>},
    {IBV_QP_RQ_PSN, low24<&ibv_qp_attr::rq_psn>},
    {IBV_QP_MAX_QP_RD_ATOMIC, field<&ibv_qp_attr::max_rd_atomic>},
    {IBV_QP_MIN_RNR_TIMER, field<&ibv_qp_attr::min_rnr_timer>},
    {IBV_QP_SQ_PSN, low24<&ibv_qp_attr::sq_psn>},
    {IBV_QP_MAX_DEST_RD_ATOMIC, field<&ibv_qp_attr::max_dest_rd_atomic>},
    {IBV_QP_PATH_MIG_STATE, field<&ibv_qp_attr::path_mig_state>},
    {IBV_QP_DEST_QPN, low24<&ibv_qp_attr::dest_qp_num>},
};

constexpr int stored_bits() noexcept {
    int bits = 0;
    for (const Copier& c : kCopiers) bits |= c.bit;
    return bits;
}

static_assert((stored_bits() | IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_CAP) ==
              kQpAttrBits);

} // namespace

Transition qp_transition(ibv_qp_state cur, ibv_qp_state next, ibv_qp_type t) noexcept {
    if (next == IBV_QPS_RESET) return {true, 0, 0};
    if (next == IBV_QPS_ERR) return {cur != IBV_QPS_RESET, 0, 0}; // RESET -> ERR is not in the table
    for (const Row& r : kTable)
        if (r.cur == cur && r.next == next) return {true, r.required.of(t), r.optional.of(t)};
    return {};
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

void store_qp_attrs(ibv_qp_attr& to, const ibv_qp_attr& from, int mask) noexcept {
    for (const Copier& c : kCopiers)
        if (mask & c.bit) c.copy(to, from);
}

} // namespace rdmasim::device
