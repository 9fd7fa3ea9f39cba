// The RC/UC/UD state machine through ibv_modify_qp (device/README.md, "RC,
// UC and UD queue pairs"): every legal transition with its minimal mask,
// each missing required bit and an extra bit EINVAL, illegal transitions,
// the range checks, cur_qp_state, and ibv_query_qp's round trip.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cstring>

#include "tests/device/ib_qp_helpers.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim::test;

namespace {

const ibv_qp_type kTypes[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};

// Each required bit of `mask` (but IBV_QP_STATE) left out is EINVAL and
// changes nothing; then the whole mask works.
void each_bit_required(IbQp& q, ibv_qp_state to, int mask) {
    const ibv_qp_state before = q.qp->state;
    for (int bit = 1; bit < (1 << 26); bit <<= 1) {
        if (!(mask & bit) || bit == IBV_QP_STATE) continue;
        CAPTURE(bit);
        CHECK(q.modify(to, mask & ~bit) == EINVAL);
        CHECK(q.qp->state == before);
    }
    REQUIRE(q.modify(to, mask) == 0);
    CHECK(q.qp->state == to);
}

} // namespace

TEST_CASE("RC/UC/UD: RESET -> INIT -> RTR -> RTS, each required bit needed", "[ib_qp][qp_state]") {
    SimFixture fx;
    for (const ibv_qp_type t : kTypes) {
        CAPTURE(t);
        IbQp q(fx.pd, t);
        CHECK(q.qp->state == IBV_QPS_RESET);
        each_bit_required(q, IBV_QPS_INIT, init_mask(t));
        each_bit_required(q, IBV_QPS_RTR, rtr_mask(t));
        each_bit_required(q, IBV_QPS_RTS, rts_mask(t));
    }
}

TEST_CASE("RC/UC/UD: a bit the transition does not take is EINVAL", "[ib_qp][qp_state]") {
    SimFixture fx;
    for (const ibv_qp_type t : kTypes) {
        CAPTURE(t);
        IbQp q(fx.pd, t);
        // RESET -> INIT: no peer yet; UD has no access flags, RC/UC no Q_Key.
        CHECK(q.modify(IBV_QPS_INIT, init_mask(t) | IBV_QP_DEST_QPN) == EINVAL);
        CHECK(q.modify(IBV_QPS_INIT, init_mask(t) | IBV_QP_SQ_PSN) == EINVAL);
        CHECK(q.modify(IBV_QPS_INIT, init_mask(t) | (t == IBV_QPT_UD ? IBV_QP_ACCESS_FLAGS
                                                                       : IBV_QP_QKEY)) == EINVAL);
        CHECK(q.modify(IBV_QPS_INIT, init_mask(t) | IBV_QP_RATE_LIMIT) == EINVAL);
        CHECK(q.modify(IBV_QPS_INIT, init_mask(t) | IBV_QP_CUR_STATE) == EINVAL);
        CHECK(q.modify(IBV_QPS_INIT, init_mask(t) | (1 << 30)) == EINVAL);
        CHECK(q.qp->state == IBV_QPS_RESET);
        REQUIRE(q.modify(IBV_QPS_INIT, init_mask(t)) == 0);
        CHECK(q.modify(IBV_QPS_RTR, rtr_mask(t) | IBV_QP_SQ_PSN) == EINVAL);
        CHECK(q.modify(IBV_QPS_RTR, rtr_mask(t) | IBV_QP_TIMEOUT) == EINVAL);
        REQUIRE(q.modify(IBV_QPS_RTR, rtr_mask(t)) == 0);
        CHECK(q.modify(IBV_QPS_RTS, rts_mask(t) | IBV_QP_DEST_QPN) == EINVAL);
        CHECK(q.modify(IBV_QPS_RTS, rts_mask(t) | IBV_QP_PORT) == EINVAL);
        CHECK(q.qp->state == IBV_QPS_RTR);
        // The optional ones are taken.
        const int opt = t == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
        REQUIRE(q.modify(IBV_QPS_RTS, rts_mask(t) | opt | IBV_QP_CUR_STATE) == 0);
    }
}

TEST_CASE("RC/UC/UD: the transitions after RTS", "[ib_qp][qp_state]") {
    SimFixture fx;
    for (const ibv_qp_type t : kTypes) {
        CAPTURE(t);
        IbQp q(fx.pd, t);
        q.to_rts();
        CHECK(q.modify(IBV_QPS_RTS, IBV_QP_STATE) == 0);
        if (t == IBV_QPT_RC) CHECK(q.modify(IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER) == 0);
        if (t != IBV_QPT_RC) CHECK(q.modify(IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER) == EINVAL);
        // RTS -> SQD -> SQD -> RTS.
        CHECK(q.modify(IBV_QPS_SQD, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY) == 0);
        CHECK(q.qp->state == IBV_QPS_SQD);
        CHECK(q.modify(IBV_QPS_SQD, IBV_QP_STATE | IBV_QP_PKEY_INDEX) == 0);
        CHECK(q.modify(IBV_QPS_SQD, IBV_QP_STATE | IBV_QP_TIMEOUT) ==
              (t == IBV_QPT_RC ? 0 : EINVAL));
        CHECK(q.modify(IBV_QPS_RTS, IBV_QP_STATE | IBV_QP_CUR_STATE) == 0);
        CHECK(q.qp->state == IBV_QPS_RTS);
        // SQE is the HCA's to enter; RTS -> SQE, INIT, RTR are not transitions.
        for (const ibv_qp_state s : {IBV_QPS_SQE, IBV_QPS_INIT, IBV_QPS_RTR}) {
            CAPTURE(s);
            CHECK(q.modify(s, IBV_QP_STATE) == EINVAL);
        }
        CHECK(q.modify(IBV_QPS_ERR, IBV_QP_STATE) == 0);
        CHECK(q.modify(IBV_QPS_ERR, IBV_QP_STATE) == 0);
        CHECK(q.modify(IBV_QPS_RTS, IBV_QP_STATE) == EINVAL);
        CHECK(q.modify(IBV_QPS_RESET, IBV_QP_STATE) == 0);
        CHECK(q.qp->state == IBV_QPS_RESET);
    }
}

TEST_CASE("RC/UC/UD: transitions the table lacks", "[ib_qp][qp_state]") {
    SimFixture fx;
    for (const ibv_qp_type t : kTypes) {
        CAPTURE(t);
        IbQp q(fx.pd, t);
        // From RESET only RESET and INIT (not ERR).
        for (const ibv_qp_state s : {IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE, IBV_QPS_ERR})
            CHECK(q.modify(s, IBV_QP_STATE | init_mask(t) | rtr_mask(t) | rts_mask(t)) == EINVAL);
        CHECK(q.modify(IBV_QPS_RESET, IBV_QP_STATE) == 0);
        ibv_qp_attr a = good_attr(IBV_QPS_UNKNOWN);
        CHECK(ibv_modify_qp(q.qp, &a, IBV_QP_STATE) == EINVAL);
        REQUIRE(q.modify(IBV_QPS_INIT, init_mask(t)) == 0);
        CHECK(q.modify(IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_PKEY_INDEX) == 0); // INIT -> INIT
        CHECK(q.modify(IBV_QPS_RTS, rts_mask(t)) == EINVAL);
        CHECK(q.modify(IBV_QPS_SQD, IBV_QP_STATE) == EINVAL);
        REQUIRE(q.modify(IBV_QPS_RTR, rtr_mask(t)) == 0);
        CHECK(q.modify(IBV_QPS_RTR, IBV_QP_STATE) == EINVAL); // RTR -> RTR is not in the table
        CHECK(q.modify(IBV_QPS_INIT, IBV_QP_STATE) == EINVAL);
        CHECK(q.modify(IBV_QPS_ERR, IBV_QP_STATE) == 0);
    }
}

TEST_CASE("RC/UC/UD: cur_qp_state", "[ib_qp][qp_state]") {
    SimFixture fx;
    IbQp q(fx.pd, IBV_QPT_RC);
    q.to_rts();
    ibv_qp_attr a = good_attr(IBV_QPS_RTS);
    a.cur_qp_state = IBV_QPS_RTS;
    CHECK(ibv_modify_qp(q.qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE) == 0);
    a.cur_qp_state = IBV_QPS_SQD; // not the state it is in
    CHECK(ibv_modify_qp(q.qp, &a, IBV_QP_STATE | IBV_QP_CUR_STATE) == EINVAL);
    // Without IBV_QP_STATE the target is the current state.
    a.cur_qp_state = IBV_QPS_RTS;
    CHECK(ibv_modify_qp(q.qp, &a, IBV_QP_CUR_STATE | IBV_QP_MIN_RNR_TIMER) == 0);
    CHECK(q.qp->state == IBV_QPS_RTS);
}

TEST_CASE("RC/UC: attribute ranges are checked", "[ib_qp][qp_state]") {
    SimFixture fx;
    ibv_device_attr dev{};
    REQUIRE(ibv_query_device(fx.ctx, &dev) == 0);
    ibv_port_attr port{};
    REQUIRE(ibv_query_port(fx.ctx, 1, &port) == 0);
    IbQp q(fx.pd, IBV_QPT_RC);
    const auto init_with = [&](auto change) {
        ibv_qp_attr a = good_attr(IBV_QPS_INIT);
        change(a);
        return ibv_modify_qp(q.qp, &a, init_mask(IBV_QPT_RC));
    };
    CHECK(init_with([](ibv_qp_attr& a) { a.port_num = 2; }) == EINVAL);
    CHECK(init_with([](ibv_qp_attr& a) { a.port_num = 0; }) == EINVAL);
    CHECK(init_with([&](ibv_qp_attr& a) { a.pkey_index = port.pkey_tbl_len; }) == EINVAL);
    CHECK(init_with([](ibv_qp_attr& a) { a.qp_access_flags = IBV_ACCESS_MW_BIND; }) == EINVAL);
    REQUIRE(init_with([](ibv_qp_attr&) {}) == 0);
    const auto rtr_with = [&](auto change) {
        ibv_qp_attr a = good_attr(IBV_QPS_RTR);
        change(a);
        return ibv_modify_qp(q.qp, &a, rtr_mask(IBV_QPT_RC));
    };
    // Above the port's active MTU (or above 4096 when that is the active one).
    CHECK(rtr_with([&](ibv_qp_attr& a) {
              a.path_mtu = static_cast<ibv_mtu>(port.active_mtu + 1);
          }) == EINVAL);
    REQUIRE(q.qp->state == IBV_QPS_INIT);
    CHECK(rtr_with([](ibv_qp_attr& a) { a.path_mtu = static_cast<ibv_mtu>(0); }) == EINVAL);
    CHECK(rtr_with([](ibv_qp_attr& a) { a.ah_attr.is_global = 0; }) == EINVAL);
    // gid_tbl_len is 256 (a uint8_t index is always inside): an empty entry is ENODATA.
    REQUIRE(port.gid_tbl_len == 256);
    CHECK(rtr_with([](ibv_qp_attr& a) { a.ah_attr.grh.sgid_index = 2; }) == ENODATA);
    CHECK(rtr_with([](ibv_qp_attr& a) { a.ah_attr.grh.sgid_index = 255; }) == ENODATA);
    CHECK(rtr_with([](ibv_qp_attr& a) { a.ah_attr.port_num = 2; }) == EINVAL);
    CHECK(rtr_with([](ibv_qp_attr& a) { a.min_rnr_timer = 32; }) == EINVAL);
    CHECK(rtr_with([&](ibv_qp_attr& a) {
              a.max_dest_rd_atomic = static_cast<std::uint8_t>(dev.max_qp_rd_atom + 1);
          }) == EINVAL);
    CHECK(rtr_with([](ibv_qp_attr& a) { a.ah_attr.dlid = 0xbeef; }) == 0); // the LID is ignored
    const auto rts_with = [&](auto change) {
        ibv_qp_attr a = good_attr(IBV_QPS_RTS);
        change(a);
        return ibv_modify_qp(q.qp, &a, rts_mask(IBV_QPT_RC));
    };
    CHECK(rts_with([](ibv_qp_attr& a) { a.retry_cnt = 8; }) == EINVAL);
    CHECK(rts_with([](ibv_qp_attr& a) { a.rnr_retry = 8; }) == EINVAL);
    CHECK(rts_with([](ibv_qp_attr& a) { a.timeout = 32; }) == EINVAL);
    CHECK(rts_with([&](ibv_qp_attr& a) {
              a.max_rd_atomic = static_cast<std::uint8_t>(dev.max_qp_init_rd_atom + 1);
          }) == EINVAL);
    CHECK(q.qp->state == IBV_QPS_RTR);
    // Alternate paths do not exist on RoCE.
    ibv_qp_attr a = good_attr(IBV_QPS_RTS);
    CHECK(ibv_modify_qp(q.qp, &a, rts_mask(IBV_QPT_RC) | IBV_QP_ALT_PATH) == EINVAL);
    REQUIRE(rts_with([](ibv_qp_attr&) {}) == 0);
}

TEST_CASE("ibv_query_qp returns every attribute set, and RESET forgets them", "[ib_qp][qp_state]") {
    SimFixture fx;
    for (const ibv_qp_type t : kTypes) {
        CAPTURE(t);
        IbQp q(fx.pd, t);
        q.to_rts();
        ibv_qp_attr got{};
        ibv_qp_init_attr init{};
        REQUIRE(ibv_query_qp(q.qp, &got, IBV_QP_STATE, &init) == 0);
        const ibv_qp_attr want = good_attr(IBV_QPS_RTS);
        CHECK(got.qp_state == IBV_QPS_RTS);
        CHECK(got.cur_qp_state == IBV_QPS_RTS);
        CHECK(got.port_num == 1);
        CHECK(got.pkey_index == 0);
        CHECK(got.sq_psn == want.sq_psn);
        if (t == IBV_QPT_UD) {
            CHECK(got.qkey == want.qkey);
        } else {
            CHECK(got.qp_access_flags == want.qp_access_flags);
            CHECK(got.dest_qp_num == want.dest_qp_num);
            CHECK(got.rq_psn == want.rq_psn);
            CHECK(got.path_mtu == want.path_mtu);
            CHECK(got.ah_attr.is_global == 1);
            CHECK(std::memcmp(&got.ah_attr.grh.dgid, &want.ah_attr.grh.dgid, 16) == 0);
            CHECK(got.ah_attr.grh.hop_limit == want.ah_attr.grh.hop_limit);
        }
        if (t == IBV_QPT_RC) {
            CHECK(got.max_dest_rd_atomic == want.max_dest_rd_atomic);
            CHECK(got.min_rnr_timer == want.min_rnr_timer);
            CHECK(got.timeout == want.timeout);
            CHECK(got.retry_cnt == want.retry_cnt);
            CHECK(got.rnr_retry == want.rnr_retry);
            CHECK(got.max_rd_atomic == want.max_rd_atomic);
        }
        CHECK(got.cap.max_send_wr == q.cap.max_send_wr);
        CHECK(got.cap.max_inline_data == q.cap.max_inline_data);
        CHECK(init.qp_type == t);
        CHECK(init.send_cq == q.cq);
        CHECK(init.recv_cq == q.cq);
        CHECK(init.srq == nullptr);
        CHECK(init.cap.max_recv_wr == q.cap.max_recv_wr);
        CHECK(init.sq_sig_all == 0);
        REQUIRE(q.modify(IBV_QPS_RESET, IBV_QP_STATE) == 0);
        REQUIRE(ibv_query_qp(q.qp, &got, IBV_QP_STATE, &init) == 0);
        CHECK(got.qp_state == IBV_QPS_RESET);
        CHECK(got.sq_psn == 0);
        CHECK(got.dest_qp_num == 0);
        CHECK(got.cap.max_send_wr == q.cap.max_send_wr);
    }
}

TEST_CASE("PSNs and the destination QP number keep 24 bits", "[ib_qp][qp_state]") {
    SimFixture fx;
    IbQp q(fx.pd, IBV_QPT_UC);
    REQUIRE(q.modify(IBV_QPS_INIT, init_mask(IBV_QPT_UC)) == 0);
    ibv_qp_attr a = good_attr(IBV_QPS_RTR);
    a.rq_psn = 0x12345678;
    a.dest_qp_num = 0xff000042;
    REQUIRE(ibv_modify_qp(q.qp, &a, rtr_mask(IBV_QPT_UC)) == 0);
    ibv_qp_attr got{};
    ibv_qp_init_attr init{};
    REQUIRE(ibv_query_qp(q.qp, &got, IBV_QP_RQ_PSN, &init) == 0);
    CHECK(got.rq_psn == 0x345678);
    CHECK(got.dest_qp_num == 0x42);
}
