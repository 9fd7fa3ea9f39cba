// A raw-packet QP as a program makes one: created with ibv_create_qp_ex (a PD,
// one SGE a WQE, the depths and inline size of RawQpCaps), and moved to RTS
// the way mlx5 programs do (INIT with IBV_QP_PORT, then RTR, then RTS).
#pragma once

#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include <cstdint>

namespace rdmasim::test {

struct RawQpCaps {
    std::uint32_t send_wr = 16;    // max_send_wr
    std::uint32_t recv_wr = 16;    // max_recv_wr
    std::uint32_t max_inline = 0;  // max_inline_data
    std::uint32_t create_flags = 0; // IBV_QP_CREATE_*; their comp_mask bit only when given
};

// A raw-packet QP of `pd` in RESET, completing on `recv_cq` and `send_cq`.
inline ibv_qp* make_raw_qp(ibv_pd* pd, ibv_cq* recv_cq, ibv_cq* send_cq, RawQpCaps caps = {}) {
    ibv_qp_init_attr_ex a{};
    a.qp_type = IBV_QPT_RAW_PACKET;
    a.comp_mask = IBV_QP_INIT_ATTR_PD;
    a.pd = pd;
    a.send_cq = send_cq;
    a.recv_cq = recv_cq;
    a.cap.max_send_wr = caps.send_wr;
    a.cap.max_recv_wr = caps.recv_wr;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = caps.max_inline;
    if (caps.create_flags != 0) {
        a.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
        a.create_flags = caps.create_flags;
    }
    ibv_qp* qp = ibv_create_qp_ex(pd->context, &a);
    REQUIRE(qp != nullptr);
    return qp;
}

// RESET -> INIT (port 1) -> RTR -> RTS.
inline void raw_qp_to_rts(ibv_qp* qp) {
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    REQUIRE(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PORT) == 0);
    m.qp_state = IBV_QPS_RTR;
    REQUIRE(ibv_modify_qp(qp, &m, IBV_QP_STATE) == 0);
    m.qp_state = IBV_QPS_RTS;
    REQUIRE(ibv_modify_qp(qp, &m, IBV_QP_STATE) == 0);
}

// One signaled SEND of `len` bytes at `data` with IBV_SEND_INLINE (no MR):
// the verb's result.
inline int post_inline_send(ibv_qp* qp, const void* data, std::uint32_t len, std::uint64_t wr_id) {
    ibv_sge sge{reinterpret_cast<std::uint64_t>(data), len, 0};
    ibv_send_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(qp, &wr, &bad);
}

} // namespace rdmasim::test
