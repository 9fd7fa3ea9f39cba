// What the RC/UC/UD QP, AH and SRQ tests share: a QP of a type with its CQ,
// attributes that are valid for every transition, and the walk to RTS with
// the minimal masks the IB specification's table gives (written out here
// independently of device/qp_state.cpp, so that the tests check it).
#pragma once

#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "tests/device/verbs_helpers.hpp" // drain

namespace rdmasim::test {

// Minimal masks per transition and type (IB spec, QP state table).
inline int init_mask(ibv_qp_type t) {
    return IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
           (t == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
}
inline int rtr_mask(ibv_qp_type t) {
    switch (t) {
    case IBV_QPT_RC:
        return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
               IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    case IBV_QPT_UC:
        return IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    default:
        return IBV_QP_STATE;
    }
}
inline int rts_mask(ibv_qp_type t) {
    if (t == IBV_QPT_RC)
        return IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
               IBV_QP_MAX_QP_RD_ATOMIC;
    return IBV_QP_STATE | IBV_QP_SQ_PSN;
}

// Values every check accepts: port 1, P_Key index 0, GID 0, MTU 1024.
inline ibv_qp_attr good_attr(ibv_qp_state state) {
    ibv_qp_attr a{};
    a.qp_state = state;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qkey = 0x11111111;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    a.ah_attr.is_global = 1;
    a.ah_attr.port_num = 1;
    a.ah_attr.grh.sgid_index = 0;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.grh.dgid.raw[0] = 0xfe;
    a.ah_attr.grh.dgid.raw[1] = 0x80;
    a.ah_attr.grh.dgid.raw[15] = 0x42;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = 0x1234;
    a.rq_psn = 0x100;
    a.sq_psn = 0x200;
    a.max_dest_rd_atomic = 1;
    a.max_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    return a;
}

// A QP of type `t` on its own CQ (or `srq`), destroyed with its CQ.
class IbQp {
public:
    // `channel`: the CQ's completion channel (none by default).
    IbQp(ibv_pd* pd, ibv_qp_type t, std::uint32_t depth = 8, ibv_srq* srq = nullptr,
         bool sig_all = false, ibv_comp_channel* channel = nullptr) {
        cq = ibv_create_cq(pd->context, 256, nullptr, channel, 0);
        REQUIRE(cq != nullptr);
        ibv_qp_init_attr a{};
        a.qp_type = t;
        a.send_cq = cq;
        a.recv_cq = cq;
        a.srq = srq;
        a.sq_sig_all = sig_all ? 1 : 0;
        a.cap.max_send_wr = depth;
        a.cap.max_recv_wr = depth;
        a.cap.max_send_sge = 2;
        a.cap.max_recv_sge = 2;
        a.cap.max_inline_data = 64;
        qp = ibv_create_qp(pd, &a);
        REQUIRE(qp != nullptr);
        cap = a.cap;
    }
    ~IbQp() {
        CHECK(ibv_destroy_qp(qp) == 0);
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    IbQp(const IbQp&) = delete;
    IbQp& operator=(const IbQp&) = delete;

    // With IBV_QP_CUR_STATE in `mask` the attributes name the state the QP is in.
    int modify(ibv_qp_state state, int mask) {
        ibv_qp_attr a = good_attr(state);
        a.cur_qp_state = qp->state;
        return ibv_modify_qp(qp, &a, mask);
    }
    // RESET -> INIT -> RTR -> RTS, each with its minimal mask.
    void to_rts() {
        const ibv_qp_type t = qp->qp_type;
        REQUIRE(modify(IBV_QPS_INIT, init_mask(t)) == 0);
        REQUIRE(modify(IBV_QPS_RTR, rtr_mask(t)) == 0);
        REQUIRE(modify(IBV_QPS_RTS, rts_mask(t)) == 0);
        REQUIRE(qp->state == IBV_QPS_RTS);
    }

    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    ibv_qp_cap cap{};
};

// Connects `a` to `b` (RC or UC) at the port's own GID 0, where the packets
// loop back: RESET -> INIT (`access` the QP's remote rights) -> RTR -> RTS,
// PSN 0x100 both ways, `timeout` the ACK timeout exponent.
inline void connect_to_own_gid(IbQp& a, const IbQp& b, ibv_context* ctx, int access,
                               std::uint8_t timeout = 14) {
    ibv_gid own{};
    REQUIRE(ibv_query_gid(ctx, 1, 0, &own) == 0);
    const ibv_qp_type t = a.qp->qp_type;
    ibv_qp_attr at = good_attr(IBV_QPS_INIT);
    at.qp_access_flags = static_cast<unsigned>(access);
    REQUIRE(ibv_modify_qp(a.qp, &at, init_mask(t)) == 0);
    at = good_attr(IBV_QPS_RTR);
    at.ah_attr.grh.dgid = own;
    at.dest_qp_num = b.qp->qp_num;
    at.rq_psn = 0x100;
    REQUIRE(ibv_modify_qp(a.qp, &at, rtr_mask(t)) == 0);
    at = good_attr(IBV_QPS_RTS);
    at.sq_psn = 0x100; // = the peer's rq_psn
    at.timeout = timeout;
    REQUIRE(ibv_modify_qp(a.qp, &at, rts_mask(t)) == 0);
}

// Polls until `n` completions came (time passes on each empty poll: the
// inline engine's idle tick), at most `tries` polls; what came, maybe fewer.
inline std::vector<ibv_wc> wait_for(ibv_cq* cq, std::size_t n, int tries = 100000) {
    std::vector<ibv_wc> out;
    ibv_wc wc[8];
    for (int i = 0; i < tries && out.size() < n; ++i) {
        const int got = ibv_poll_cq(cq, 8, wc);
        REQUIRE(got >= 0);
        out.insert(out.end(), wc, wc + got);
    }
    return out;
}

} // namespace rdmasim::test
