// The RC responder: the expected PSN, duplicates, NAKs, SEND placement into
// receive WQEs, RDMA WRITE / READ / atomics against rkeys, ACK coalescing.
// (datapath/README.md, "RoCE transport")
#include <infiniband/verbs.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "datapath/roce/qp.hpp"
#include "datapath/roce/sge.hpp"

namespace rdmasim::datapath {

using net::RoceOpcode;
using net::SegmentPosition;

namespace {
bool message_end(SegmentPosition pos) noexcept {
    return pos == SegmentPosition::last || pos == SegmentPosition::only;
}
std::uint32_t be32(std::uint32_t v) noexcept {
    const std::uint8_t b[4] = {static_cast<std::uint8_t>(v >> 24),
                               static_cast<std::uint8_t>(v >> 16),
                               static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)};
    std::uint32_t r;
    std::memcpy(&r, b, 4);
    return r;
}
} // namespace

void RoceQp::reset_responder() noexcept {
    in_msg_ = InMsg::none;
    uc_drop_ = false;
    have_wqe_ = false;
    msg_off_ = 0;
    write_va_ = 0;
    write_rkey_ = 0;
    write_len_ = 0;
    unacked_ = 0;
    tm_msg_ = TmMsg::none;
    tm_skip_ = 0;
}

bool RoceQp::take_recv_wqe() noexcept {
    RecvView v;
    if (!host_.peek_recv(v)) return false;
    rwqe_id_ = v.wqe->wr_id;
    rwqe_len_ = v.wqe->total_len;
    rwqe_nsge_ = std::min(v.wqe->num_sge, limits_.max_recv_sge);
    std::copy(v.sges, v.sges + rwqe_nsge_, rwqe_sges_.begin());
    host_.pop_recv();
    have_wqe_ = true;
    return true;
}

bool RoceQp::place(std::uint32_t offset, std::span<const std::uint8_t> data) noexcept {
    return data.empty() || place_at(mrs_, resp_pd_, rwqe_sges_.data(), rwqe_nsge_, offset, data);
}

void RoceQp::complete_recv(std::uint8_t status, std::uint8_t opcode, std::uint32_t byte_len,
                           std::uint32_t wc_flags, std::uint32_t imm_host, std::uint32_t src_qp,
                           bool solicited) noexcept {
    Cqe c = make_cqe(rwqe_id_, status, opcode);
    c.byte_len = status == IBV_WC_SUCCESS ? byte_len : 0;
    c.wc_flags = status == IBV_WC_SUCCESS ? wc_flags : 0;
    // ibv_wc's union: imm_data in network order, invalidated_rkey in host order.
    c.imm_data = (wc_flags & IBV_WC_WITH_IMM)   ? be32(imm_host)
                 : (wc_flags & IBV_WC_WITH_INV) ? imm_host
                                                : 0;
    c.src_qp = src_qp;
    c.solicited = solicited;
    if (tm_msg_ == TmMsg::eager || tm_msg_ == TmMsg::rndv) {
        c.tm_tag = tm_tag_;
        c.tm_priv = tm_priv_;
    }
    have_wqe_ = false;
    host_.complete_recv(c);
}

void RoceQp::send_aeth(std::uint8_t opcode, std::uint8_t syndrome, std::uint32_t psn,
                       std::uint64_t now_ns, const std::uint64_t* atomic_orig) noexcept {
    net::RoceHeaders h;
    h.bth.opcode = opcode;
    h.bth.pkey = attrs_.pkey;
    h.bth.dest_qp = attrs_.dest_qpn;
    h.bth.psn = psn;
    h.aeth.syndrome = syndrome;
    h.aeth.msn = msn_;
    if (atomic_orig) h.atomic_ack_eth.orig = *atomic_orig;
    transmit(attrs_.path, h, {}, now_ns);
    const bool ack = (syndrome >> 5) == 0;
    Counter& c = ack ? counters_.acks_sent : counters_.naks_sent;
    c.add();
    if (port_counters_) (ack ? port_counters_->acks_sent : port_counters_->naks_sent).add();
}

void RoceQp::ack_now(std::uint32_t psn, std::uint64_t now_ns) noexcept {
    send_aeth(static_cast<std::uint8_t>(RoceOpcode::rc_ack),
              net::Aeth::make_syndrome(net::AckKind::ack, net::kCreditsInvalid), psn, now_ns);
    unacked_ = 0;
}

// The packet at ePSN was accepted: ePSN moves on; an ACK goes when the
// requester asked (AckReq), at the end of a message, or every ack_every packets.
void RoceQp::after_accept(const net::RocePacket& p, bool end, std::uint64_t now_ns) noexcept {
    epsn_ = net::psn_add(p.headers.bth.psn, 1);
    seq_nak_sent_ = false;
    ++unacked_;
    if (p.headers.bth.ack_req || end || unacked_ >= limits_.ack_every)
        ack_now(p.headers.bth.psn, now_ns);
}

// A class of error the requester is told by a NAK and that moves the
// responder's QP to ERR (IBA 9.9.3.1: invalid request, remote access,
// remote operational errors), with the async event the spec pairs with it.
RoceRx RoceQp::responder_fail(RoceRx why, net::NakCode code, std::uint32_t psn,
                              std::uint64_t now_ns) noexcept {
    send_aeth(static_cast<std::uint8_t>(RoceOpcode::rc_ack),
              net::Aeth::make_syndrome(net::AckKind::nak, static_cast<std::uint8_t>(code)), psn,
              now_ns);
    host_.event(code == net::NakCode::remote_access_error        ? TransportEvent::qp_access_err
                : code == net::NakCode::remote_operational_error ? TransportEvent::qp_fatal
                                                                 : TransportEvent::qp_req_err);
    enter_error();
    return why;
}

RoceRx RoceQp::rc_request(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    resp_pd_ = attrs_.pd;
    if (attrs_.xrc) { // the XRCETH's SRQ takes the receive; its PD guards the memory
        resp_pd_ = host_.select_xrc_srq(p.headers.xrceth.srqn);
        if (resp_pd_ == nullptr)
            return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request, psn,
                                  now_ns);
    }
    const std::int32_t d = net::psn_diff(psn, epsn_);
    if (d < 0) return rc_duplicate(p, now_ns);
    if (d > 0) {
        if (!seq_nak_sent_) {
            seq_nak_sent_ = true;
            send_aeth(static_cast<std::uint8_t>(RoceOpcode::rc_ack),
                      net::Aeth::make_syndrome(net::AckKind::nak, 0), epsn_, now_ns);
        }
        return RoceRx::sequence_error;
    }
    const net::RoceOp op = p.info->op;
    const bool cont =
        p.info->position == SegmentPosition::middle || p.info->position == SegmentPosition::last;
    const bool in_order = in_msg_ == InMsg::send    ? op == net::RoceOp::send && cont
                          : in_msg_ == InMsg::write ? op == net::RoceOp::rdma_write && cont
                                                    : !cont;
    if (!in_order || !net::payload_length_ok(*p.info, static_cast<std::uint32_t>(p.payload.size()),
                                             net::mtu_bytes(attrs_.mtu)))
        return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request, psn, now_ns);
    // A RETH longer than max_msg_sz, and a READ or atomic to a QP that keeps
    // no responder resources for them (max_dest_rd_atomic 0): invalid
    // requests (rxe's check_length and check_resource; mlx5 alike).
    const bool rd_atomic = op == net::RoceOp::rdma_read_request || op == net::RoceOp::compare_swap ||
                           op == net::RoceOp::fetch_add || op == net::RoceOp::atomic_write;
    if ((p.info->has(net::kExtReth) && p.headers.reth.dma_len > kMaxMessage) ||
        (rd_atomic && attrs_.max_dest_rd_atomic == 0))
        return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request, psn, now_ns);
    switch (op) {
    case net::RoceOp::send:
        return rc_send(p, now_ns);
    case net::RoceOp::rdma_write:
        return rc_write(p, now_ns);
    case net::RoceOp::rdma_read_request:
        return rc_read(p, now_ns);
    case net::RoceOp::compare_swap:
    case net::RoceOp::fetch_add:
        return rc_atomic(p, now_ns);
    case net::RoceOp::atomic_write:
        return rc_atomic_write(p, now_ns);
    default:
        return RoceRx::stale_ack;
    }
}

RoceRx RoceQp::rc_duplicate(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    const std::uint32_t n = std::clamp<std::uint32_t>(attrs_.max_dest_rd_atomic, 1,
                                                      static_cast<std::uint32_t>(rd_slots_.size()));
    switch (p.info->op) {
    case net::RoceOp::rdma_read_request:
        // Answered again from the saved request (IBA 9.7.5.1.2): only a
        // READ still remembered, and only within it (rxe); its new RETH (a
        // re-request from a later PSN carries an adjusted VA and length) is
        // checked again. Anything else is dropped unanswered.
        for (std::uint32_t i = 0; i < n; ++i) {
            const RdAtomicSlot& s = rd_slots_[i];
            const std::int32_t k = net::psn_diff(psn, s.psn);
            if (!s.valid || s.atomic || s.atomic_write || k < 0 || k >= static_cast<std::int32_t>(s.npkts)) continue;
            const net::Reth& r = p.headers.reth;
            if (r.rkey != s.rkey || r.va < s.va || r.dma_len > s.len || r.va - s.va > s.len - r.dma_len)
                break;
            const std::uint8_t* src =
                (attrs_.access & IBV_ACCESS_REMOTE_READ)
                    ? mrs_.translate_remote(r.rkey, resp_pd_, r.va, r.dma_len, kRemoteRead, attrs_.qpn)
                    : nullptr;
            if (src != nullptr || r.dma_len == 0) send_read_responses(psn, src, r.dma_len, now_ns);
            break;
        }
        return RoceRx::duplicate;
    case net::RoceOp::atomic_write: // answered again, not written again
        for (std::uint32_t i = 0; i < n; ++i)
            if (rd_slots_[i].valid && rd_slots_[i].atomic_write && rd_slots_[i].psn == psn) {
                send_read_responses(psn, nullptr, 0, now_ns);
                break;
            }
        return RoceRx::duplicate;
    case net::RoceOp::compare_swap:
    case net::RoceOp::fetch_add:
        for (std::uint32_t i = 0; i < n; ++i) {
            const RdAtomicSlot& s = rd_slots_[i];
            if (s.valid && s.atomic && s.psn == psn) {
                send_aeth(static_cast<std::uint8_t>(RoceOpcode::rc_atomic_ack),
                          net::Aeth::make_syndrome(net::AckKind::ack, net::kCreditsInvalid), psn,
                          now_ns, &s.orig);
                break;
            }
        }
        return RoceRx::duplicate;
    default:
        // SEND / WRITE already placed: acknowledge again, up to the last PSN taken.
        if (p.headers.bth.ack_req) ack_now(net::psn_add(epsn_, net::kPsnMask), now_ns);
        return RoceRx::duplicate;
    }
}

RoceRx RoceQp::rc_send(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const auto pos = p.info->position;
    const std::uint32_t psn = p.headers.bth.psn;
    const bool first = pos == SegmentPosition::first || pos == SegmentPosition::only;
    if (first) {
        // On a tag-matching QP the TMH picks the buffer (roce_tag_matching.cpp).
        if (!(host_.tag_matching() ? tm_take(p) : take_recv_wqe())) {
            send_aeth(static_cast<std::uint8_t>(RoceOpcode::rc_ack),
                      net::Aeth::make_syndrome(net::AckKind::rnr_nak, attrs_.min_rnr_timer), psn,
                      now_ns);
            return RoceRx::rnr;
        }
        msg_off_ = 0;
    }
    // msg_off_ counts bytes placed: a matched EAGER's TMH and a matched
    // RNDV's headers are not.
    const auto data = p.payload.subspan(first ? std::min<std::size_t>(tm_skip_, p.payload.size()) : 0);
    const auto len = static_cast<std::uint32_t>(data.size());
    const std::uint8_t rop = tm_msg_ != TmMsg::none ? tm_wc_opcode() : std::uint8_t{IBV_WC_RECV};
    if (len > rwqe_len_ - std::min(rwqe_len_, msg_off_)) {
        complete_recv(IBV_WC_LOC_LEN_ERR, rop, 0, 0, 0, 0);
        return responder_fail(RoceRx::length_error, net::NakCode::invalid_request, psn, now_ns);
    }
    if (!place(msg_off_, data)) {
        complete_recv(IBV_WC_LOC_PROT_ERR, rop, 0, 0, 0, 0);
        return responder_fail(RoceRx::remote_operation, net::NakCode::remote_operational_error, psn,
                              now_ns);
    }
    msg_off_ += len;
    const bool end = message_end(pos);
    if (end) {
        const bool inv = p.info->invalidate();
        // SEND with invalidate: the IETH's window goes once the data is placed
        // (IBA 9.4.1.1); one this QP may not invalidate is an invalid request.
        if (inv && !host_.invalidate_rkey(p.headers.ieth.rkey)) {
            complete_recv(IBV_WC_REM_INV_REQ_ERR, rop, 0, 0, 0, 0);
            return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request, psn,
                                  now_ns);
        }
        msn_ = net::psn_add(msn_, 1);
        in_msg_ = InMsg::none;
        const bool imm = p.info->immediate();
        const std::uint32_t tm_flags = tm_msg_ != TmMsg::none ? tm_wc_flags() : 0;
        if (tm_msg_ != TmMsg::rndv) // a matched RNDV completes after its ACK (below)
            complete_recv(IBV_WC_SUCCESS, rop, msg_off_,
                          tm_flags | (imm ? IBV_WC_WITH_IMM : inv ? IBV_WC_WITH_INV : 0),
                          inv ? p.headers.ieth.rkey : p.headers.imm.value, 0, p.headers.bth.solicited);
    } else {
        in_msg_ = InMsg::send;
    }
    after_accept(p, end, now_ns);
    if (end && tm_msg_ == TmMsg::rndv) tm_start_rndv(now_ns);
    if (end) tm_msg_ = TmMsg::none;
    return RoceRx::consumed;
}

bool RoceQp::start_write(const net::Reth& r, const void* pd) noexcept {
    if (!(attrs_.access & IBV_ACCESS_REMOTE_WRITE)) return false;
    if (r.dma_len > 0 &&
        mrs_.translate_remote(r.rkey, pd, r.va, r.dma_len, kRemoteWrite, attrs_.qpn) == nullptr)
        return false;
    write_va_ = r.va;
    write_rkey_ = r.rkey;
    write_len_ = r.dma_len;
    msg_off_ = 0;
    return true;
}

bool RoceQp::write_piece(const void* pd, std::span<const std::uint8_t> data) noexcept {
    if (data.empty()) return true;
    if (!(attrs_.access & IBV_ACCESS_REMOTE_WRITE)) return false;
    // start_write checked the whole range: write_va_ + msg_off_ cannot wrap.
    std::uint8_t* dst = mrs_.translate_remote(write_rkey_, pd, write_va_ + msg_off_,
                                              static_cast<std::uint32_t>(data.size()),
                                              kRemoteWrite, attrs_.qpn);
    if (dst == nullptr) return false;
    std::memcpy(dst, data.data(), data.size());
    return true;
}

RoceRx RoceQp::rc_write(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const auto pos = p.info->position;
    const std::uint32_t psn = p.headers.bth.psn;
    const auto len = static_cast<std::uint32_t>(p.payload.size());
    if ((pos == SegmentPosition::first || pos == SegmentPosition::only) &&
        !start_write(p.headers.reth, resp_pd_))
        return responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn, now_ns);
    const bool end = message_end(pos);
    // More than the RETH announced, or a last packet short of it: invalid request.
    if (len > write_len_ - msg_off_ || (end && msg_off_ + len != write_len_))
        return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request, psn, now_ns);
    const bool imm = p.info->immediate();
    RecvView v;
    if (imm && !host_.peek_recv(v)) {
        send_aeth(static_cast<std::uint8_t>(RoceOpcode::rc_ack),
                  net::Aeth::make_syndrome(net::AckKind::rnr_nak, attrs_.min_rnr_timer), psn,
                  now_ns);
        return RoceRx::rnr;
    }
    // The key, window or QP access revoked since the FIRST: mlx5 NAKs the rest.
    if (!write_piece(resp_pd_, p.payload))
        return responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn, now_ns);
    msg_off_ += len;
    if (end) {
        msn_ = net::psn_add(msn_, 1);
        in_msg_ = InMsg::none;
        if (imm) {
            (void)take_recv_wqe();
            complete_recv(IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, write_len_, IBV_WC_WITH_IMM,
                          p.headers.imm.value, 0, p.headers.bth.solicited);
        }
    } else {
        in_msg_ = InMsg::write;
    }
    after_accept(p, end, now_ns);
    return RoceRx::consumed;
}

} // namespace rdmasim::datapath
