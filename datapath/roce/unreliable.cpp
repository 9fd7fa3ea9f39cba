// The UC and UD responders: no ACKs, no NAKs. UC drops the rest of a
// message after a PSN gap and starts afresh at the next FIRST or ONLY; UD
// checks the Q_Key and places the GRH before the payload.
// (datapath/README.md, "RoCE transport")
#include <infiniband/verbs.h>

#include <cstring>

#include "datapath/roce/qp.hpp"

namespace rdmasim::datapath {

using net::SegmentPosition;

RoceRx RoceQp::uc_request(const net::RocePacket& p) noexcept {
    using InMsg = RespState::InMsg;
    const std::uint32_t psn = p.headers.bth.psn;
    const auto pos = p.info->position;
    const bool cont = pos == SegmentPosition::middle || pos == SegmentPosition::last;
    const bool end = pos == SegmentPosition::last || pos == SegmentPosition::only;
    if (psn != resp_.epsn && resp_.in_msg != InMsg::none) { // a gap (UC cannot tell a duplicate from one)
        resp_.in_msg = InMsg::none;
        resp_.uc_drop = true;
    }
    resp_.epsn = net::psn_add(psn, 1);
    if (cont && (resp_.uc_drop || resp_.in_msg == InMsg::none))
        return uc_drop(RoceRx::message_dropped, end);
    const bool send = p.info->op == net::RoceOp::send;
    if (cont && ((resp_.in_msg == InMsg::send) != send)) return uc_drop(RoceRx::invalid_request, end);
    resp_.uc_drop = false;
    if (!cont) resp_.in_msg = InMsg::none; // a FIRST or ONLY abandons a message in progress
    if (!net::payload_length_ok(*p.info, static_cast<std::uint32_t>(p.payload.size()),
                                net::mtu_bytes(attrs_.mtu)))
        return uc_drop(RoceRx::invalid_request, end);
    return send ? uc_send(p, cont, end) : uc_write(p, cont, end);
}

// The rest of the message goes unplaced; its receive WQE is kept for the
// next one (msg_off restarts).
RoceRx RoceQp::uc_drop(RoceRx why, bool end) noexcept {
    resp_.in_msg = RespState::InMsg::none;
    resp_.uc_drop = !end;
    return why;
}

RoceRx RoceQp::uc_send(const net::RocePacket& p, bool cont, bool end) noexcept {
    const auto len = static_cast<std::uint32_t>(p.payload.size());
    if (!cont) {
        if (!resp_.have_wqe && !take_recv_wqe()) return uc_drop(RoceRx::no_receive_wqe, end);
        resp_.msg_off = 0;
    }
    if (len > resp_.wqe_len - std::min(resp_.wqe_len, resp_.msg_off)) {
        recv_failed(IBV_WC_LOC_LEN_ERR, IBV_WC_RECV);
        return uc_drop(RoceRx::length_error, end);
    }
    if (!place(resp_.msg_off, p.payload)) {
        recv_failed(IBV_WC_LOC_PROT_ERR, IBV_WC_RECV);
        return uc_drop(RoceRx::remote_operation, end);
    }
    resp_.msg_off += len;
    if (!end) {
        resp_.in_msg = RespState::InMsg::send;
        return RoceRx::consumed;
    }
    resp_.in_msg = RespState::InMsg::none;
    const bool imm = p.info->immediate();
    recv_done({.opcode = IBV_WC_RECV,
               .byte_len = resp_.msg_off,
               .wc_flags = imm ? std::uint32_t{IBV_WC_WITH_IMM} : 0u,
               .imm_host = p.headers.imm.value,
               .solicited = p.headers.bth.solicited,

               .ipv6 = p.ipv6});
    return RoceRx::consumed;
}

// RDMA WRITE: every packet translated again (start_write, write_piece).
RoceRx RoceQp::uc_write(const net::RocePacket& p, bool cont, bool end) noexcept {
    const auto len = static_cast<std::uint32_t>(p.payload.size());
    if (!cont) {
        if (p.headers.reth.dma_len > kMaxMessage) return uc_drop(RoceRx::invalid_request, end);
        if (!start_write(p.headers.reth, attrs_.pd)) return uc_drop(RoceRx::remote_access, end);
    }
    if (len > resp_.write_len - resp_.msg_off || (end && resp_.msg_off + len != resp_.write_len))
        return uc_drop(RoceRx::invalid_request, end);
    const bool imm = p.info->immediate();
    if (imm && !resp_.have_wqe && !take_recv_wqe()) return uc_drop(RoceRx::no_receive_wqe, end);
    if (!write_piece(attrs_.pd, p.payload)) return uc_drop(RoceRx::remote_access, end);
    resp_.msg_off += len;
    if (!end) {
        resp_.in_msg = RespState::InMsg::write;
        return RoceRx::consumed;
    }
    resp_.in_msg = RespState::InMsg::none;
    if (imm)
        recv_done({.opcode = IBV_WC_RECV_RDMA_WITH_IMM,
                   .byte_len = resp_.write_len,
                   .wc_flags = IBV_WC_WITH_IMM,
                   .imm_host = p.headers.imm.value,
                   .solicited = p.headers.bth.solicited,

                   .ipv6 = p.ipv6});
    return RoceRx::consumed;
}

RoceRx RoceQp::ud_request(const net::RocePacket& p) noexcept {
    if (p.headers.deth.qkey != attrs_.qkey) return RoceRx::qkey_mismatch;
    const auto len = static_cast<std::uint32_t>(p.payload.size());
    if (len > net::mtu_bytes(attrs_.mtu)) return RoceRx::invalid_request;
    if (!take_recv_wqe()) return RoceRx::no_receive_wqe;
    const bool imm = p.info->immediate();
    if (len + 40 > resp_.wqe_len) {
        recv_failed(IBV_WC_LOC_LEN_ERR, IBV_WC_RECV);
        return RoceRx::length_error;
    }
    std::uint8_t grh[40];
    net::write_ud_grh(p, grh);
    if (!place(0, grh) || !place(40, p.payload)) {
        recv_failed(IBV_WC_LOC_PROT_ERR, IBV_WC_RECV);
        return RoceRx::remote_operation;
    }
    recv_done({.opcode = IBV_WC_RECV,
               .byte_len = len + 40,
               .wc_flags = IBV_WC_GRH | (imm ? std::uint32_t{IBV_WC_WITH_IMM} : 0u),
               .imm_host = p.headers.imm.value,
               .src_qp = p.headers.deth.src_qp,
               .solicited = p.headers.bth.solicited,

               .ipv6 = p.ipv6});
    return RoceRx::consumed;
}

} // namespace rdmasim::datapath
