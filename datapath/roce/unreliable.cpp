// The UC and UD responders: no ACKs, no NAKs. UC drops the rest of a
// message after a PSN gap and starts afresh at the next FIRST or ONLY; UD
// checks the Q_Key and places the GRH before the payload.
// (datapath/README.md, "RoCE transport")
#include <infiniband/verbs.h>

#include <cstring>

#include "datapath/roce/qp.hpp"

namespace rdmasim::datapath {

using net::SegmentPosition;

RoceRx RoceQp::uc_request(const net::RocePacket& p, std::uint64_t) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    const auto pos = p.info->position;
    const bool cont = pos == SegmentPosition::middle || pos == SegmentPosition::last;
    const bool end = pos == SegmentPosition::last || pos == SegmentPosition::only;
    const auto len = static_cast<std::uint32_t>(p.payload.size());
    // A message cut short keeps its receive WQE for the next one (msg_off_ restarts).
    auto drop_message = [&](RoceRx why) {
        in_msg_ = InMsg::none;
        uc_drop_ = !end;
        return why;
    };
    if (psn != epsn_ && in_msg_ != InMsg::none) { // a gap (UC cannot tell a duplicate from one)
        in_msg_ = InMsg::none;
        uc_drop_ = true;
    }
    epsn_ = net::psn_add(psn, 1);
    if (cont && (uc_drop_ || in_msg_ == InMsg::none)) return drop_message(RoceRx::message_dropped);
    const net::RoceOp op = p.info->op;
    if (cont && ((in_msg_ == InMsg::send) != (op == net::RoceOp::send)))
        return drop_message(RoceRx::invalid_request);
    uc_drop_ = false;
    if (!cont) in_msg_ = InMsg::none; // a FIRST or ONLY abandons a message in progress
    if (!net::payload_length_ok(*p.info, len, net::mtu_bytes(attrs_.mtu)))
        return drop_message(RoceRx::invalid_request);

    if (op == net::RoceOp::send) {
        if (!cont) {
            if (!have_wqe_ && !take_recv_wqe()) return drop_message(RoceRx::no_receive_wqe);
            msg_off_ = 0;
        }
        if (len > rwqe_len_ - std::min(rwqe_len_, msg_off_)) {
            complete_recv(IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0, 0);
            return drop_message(RoceRx::length_error);
        }
        if (!place(msg_off_, p.payload)) {
            complete_recv(IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, 0);
            return drop_message(RoceRx::remote_operation);
        }
        msg_off_ += len;
        if (end) {
            in_msg_ = InMsg::none;
            const bool imm = p.info->immediate();
            complete_recv(IBV_WC_SUCCESS, IBV_WC_RECV, msg_off_, imm ? IBV_WC_WITH_IMM : 0,
                          p.headers.imm.value, 0, p.headers.bth.solicited);
        } else {
            in_msg_ = InMsg::send;
        }
        return RoceRx::consumed;
    }
    // RDMA WRITE: every packet translated again (start_write, write_piece).
    if (!cont) {
        if (p.headers.reth.dma_len > kMaxMessage) return drop_message(RoceRx::invalid_request);
        if (!start_write(p.headers.reth, attrs_.pd)) return drop_message(RoceRx::remote_access);
    }
    if (len > write_len_ - msg_off_ || (end && msg_off_ + len != write_len_))
        return drop_message(RoceRx::invalid_request);
    const bool imm = p.info->immediate();
    if (imm && !have_wqe_ && !take_recv_wqe()) return drop_message(RoceRx::no_receive_wqe);
    if (!write_piece(attrs_.pd, p.payload)) return drop_message(RoceRx::remote_access);
    msg_off_ += len;
    if (end) {
        in_msg_ = InMsg::none;
        if (imm)
            complete_recv(IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, write_len_, IBV_WC_WITH_IMM,
                          p.headers.imm.value, 0, p.headers.bth.solicited);
    } else {
        in_msg_ = InMsg::write;
    }
    return RoceRx::consumed;
}

RoceRx RoceQp::ud_request(const net::RocePacket& p, std::uint64_t) noexcept {
    if (p.headers.deth.qkey != attrs_.qkey) return RoceRx::qkey_mismatch;
    const auto len = static_cast<std::uint32_t>(p.payload.size());
    if (len > net::mtu_bytes(attrs_.mtu)) return RoceRx::invalid_request;
    if (!take_recv_wqe()) return RoceRx::no_receive_wqe;
    const bool imm = p.info->immediate();
    if (len + 40 > rwqe_len_) {
        complete_recv(IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, 0, 0, 0);
        return RoceRx::length_error;
    }
    std::uint8_t grh[40];
    net::write_ud_grh(p, grh);
    if (!place(0, grh) || !place(40, p.payload)) {
        complete_recv(IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, 0, 0, 0);
        return RoceRx::remote_operation;
    }
    complete_recv(IBV_WC_SUCCESS, IBV_WC_RECV, len + 40, IBV_WC_GRH | (imm ? IBV_WC_WITH_IMM : 0),
                  p.headers.imm.value, p.headers.deth.src_qp, p.headers.bth.solicited);
    return RoceRx::consumed;
}

} // namespace rdmasim::datapath
