// The responder (rxe_resp.c), RC: a request's checks in order (XRC SRQ,
// PSN, opcode sequence and length, resources), duplicates, NAKs, SEND
// placement into receive WQEs, RDMA WRITE against rkeys, ACK coalescing.
// READ and atomics: read_atomic.cpp; UC and UD: unreliable.cpp. Receive
// completions for all of them are written here.
// (datapath/README.md, "RoCE transport")
#include <infiniband/verbs.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "datapath/mr_copy.hpp"
#include "datapath/roce/qp.hpp"
#include "datapath/roce/sge.hpp"

namespace rdmasim::datapath {

using net::RoceOpcode;
using net::SegmentPosition;

namespace {
// A receive CQE's sl on RoCE, as a ConnectX writes it and mlx5 passes it on
// (flags_rqpn bits 24..27): bit 3 "UDP header present" (RoCE v2), bits 0..2
// the L3 header type, 1 IPv6, 2 IPv4. UCX's UD transport reads it to learn
// where the destination address sits in the 40 bytes before the payload.
constexpr std::uint8_t kSlRoceV2 = 0x8, kSlIpv6 = 0x1, kSlIpv4 = 0x2;
constexpr std::uint8_t roce_cqe_sl(bool ipv6) noexcept {
    return kSlRoceV2 | (ipv6 ? kSlIpv6 : kSlIpv4);
}
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
    resp_.reset_message();
    tm_.msg = TmState::Msg::none;
    tm_.skip = 0;
}

void RoceQp::hold_wqe(const RecvView& v) noexcept {
    resp_.wqe_id = v.wqe->wr_id;
    resp_.wqe_len = v.wqe->total_len;
    resp_.wqe_nsge = std::min(v.wqe->num_sge, limits_.max_recv_sge);
    std::copy(v.sges, v.sges + resp_.wqe_nsge, resp_.wqe_sges.begin());
    resp_.have_wqe = true;
}

bool RoceQp::take_recv_wqe() noexcept {
    RecvView v;
    if (!host_.peek_recv(v)) return false;
    hold_wqe(v);
    host_.pop_recv();
    return true;
}

bool RoceQp::place(std::uint32_t offset, std::span<const std::uint8_t> data) noexcept {
    return data.empty() ||
           place_at(mrs_, resp_.pd, resp_.wqe_sges.data(), resp_.wqe_nsge, offset, data);
}

void RoceQp::recv_done(const RecvDone& d) noexcept {
    Cqe c = make_cqe(resp_.wqe_id, IBV_WC_SUCCESS, d.opcode);
    c.byte_len = d.byte_len;
    c.wc_flags = d.wc_flags;
    // ibv_wc's union: imm_data in network order, invalidated_rkey in host order.
    c.imm_data = (d.wc_flags & IBV_WC_WITH_IMM)   ? be32(d.imm_host)
                 : (d.wc_flags & IBV_WC_WITH_INV) ? d.imm_host
                                                  : 0;
    c.src_qp = d.src_qp;
    c.solicited = d.solicited;
    c.sl = roce_cqe_sl(d.ipv6);
    if (tm_.msg == TmState::Msg::eager || tm_.msg == TmState::Msg::rndv) {
        c.tm_tag = tm_.tag;
        c.tm_priv = tm_.priv;
    }
    resp_.have_wqe = false;
    push_recv_cqe(c);
}

void RoceQp::recv_failed(std::uint8_t status, std::uint8_t opcode) noexcept {
    Cqe c = make_cqe(resp_.wqe_id, status, opcode);
    if (tm_.msg == TmState::Msg::eager || tm_.msg == TmState::Msg::rndv) {
        c.tm_tag = tm_.tag;
        c.tm_priv = tm_.priv;
    }
    resp_.have_wqe = false;
    push_recv_cqe(c);
}

void RoceQp::send_aeth(std::uint8_t opcode, std::uint8_t syndrome, std::uint32_t psn,
                       std::uint64_t now_ns, const std::uint64_t* atomic_orig) noexcept {
    net::RoceHeaders h;
    h.bth.opcode = opcode;
    h.bth.pkey = attrs_.pkey;
    h.bth.dest_qp = attrs_.dest_qpn;
    h.bth.psn = psn;
    h.aeth.syndrome = syndrome;
    h.aeth.msn = resp_.msn;
    if (atomic_orig) h.atomic_ack_eth.orig = *atomic_orig;
    transmit(attrs_.path, h, {}, now_ns);
    note((syndrome >> 5) == 0 ? &RoceCounters::acks_sent : &RoceCounters::naks_sent);
}

void RoceQp::send_rnr_nak(std::uint32_t psn, std::uint64_t now_ns) noexcept {
    send_aeth(static_cast<std::uint8_t>(RoceOpcode::rc_ack),
              net::Aeth::make_syndrome(net::AckKind::rnr_nak, attrs_.min_rnr_timer), psn, now_ns);
}

void RoceQp::ack_now(std::uint32_t psn, std::uint64_t now_ns) noexcept {
    send_aeth(static_cast<std::uint8_t>(RoceOpcode::rc_ack),
              net::Aeth::make_syndrome(net::AckKind::ack, net::kCreditsInvalid), psn, now_ns);
    resp_.unacked = 0;
}

// The packet at ePSN was accepted: ePSN moves on; an ACK goes when the
// requester asked (AckReq), at the end of a message, or every ack_every packets.
void RoceQp::after_accept(const net::RocePacket& p, bool end, std::uint64_t now_ns) noexcept {
    resp_.epsn = net::psn_add(p.headers.bth.psn, 1);
    resp_.seq_nak_sent = false;
    ++resp_.unacked;
    if (p.headers.bth.ack_req || end || resp_.unacked >= limits_.ack_every)
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

// rxe's responder states, in order: each check either ends the packet
// with its outcome or lets it go on to the next.
RoceRx RoceQp::rc_request(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    resp_.pd = attrs_.pd;
    if (attrs_.xrc) { // the XRCETH's SRQ takes the receive; its PD guards the memory
        resp_.pd = host_.select_xrc_srq(p.headers.xrceth.srqn);
        if (resp_.pd == nullptr)
            return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request, psn,
                                  now_ns);
    }
    if (const auto r = rc_check_psn(p, now_ns)) return *r;
    if (const auto r = rc_check_request(p, now_ns)) return *r;
    return rc_execute(p, now_ns);
}

// Before ePSN: a duplicate. After it: a sequence error, NAKed once per ePSN.
std::optional<RoceRx> RoceQp::rc_check_psn(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::int32_t d = net::psn_diff(p.headers.bth.psn, resp_.epsn);
    if (d < 0) return rc_duplicate(p, now_ns);
    if (d == 0) return std::nullopt;
    if (!resp_.seq_nak_sent) {
        resp_.seq_nak_sent = true;
        send_aeth(static_cast<std::uint8_t>(RoceOpcode::rc_ack),
                  net::Aeth::make_syndrome(net::AckKind::nak, 0), resp_.epsn, now_ns);
    }
    return RoceRx::sequence_error;
}

// The opcode continues the message in progress (or starts one), the payload
// fits the opcode and the MTU; a RETH longer than max_msg_sz, and a READ or
// atomic to a QP that keeps no responder resources for them
// (max_dest_rd_atomic 0), are invalid requests too (rxe's check_length and
// check_resource; mlx5 alike).
std::optional<RoceRx> RoceQp::rc_check_request(const net::RocePacket& p,
                                               std::uint64_t now_ns) noexcept {
    using InMsg = RespState::InMsg;
    const net::RoceOp op = p.info->op;
    const bool cont =
        p.info->position == SegmentPosition::middle || p.info->position == SegmentPosition::last;
    const bool in_order = resp_.in_msg == InMsg::send    ? op == net::RoceOp::send && cont
                          : resp_.in_msg == InMsg::write ? op == net::RoceOp::rdma_write && cont
                                                         : !cont;
    const bool rd_atomic = op == net::RoceOp::rdma_read_request || op == net::RoceOp::compare_swap ||
                           op == net::RoceOp::fetch_add || op == net::RoceOp::atomic_write;
    const bool ok =
        in_order &&
        net::payload_length_ok(*p.info, static_cast<std::uint32_t>(p.payload.size()),
                               net::mtu_bytes(attrs_.mtu)) &&
        !(p.info->has(net::kExtReth) && p.headers.reth.dma_len > kMaxMessage) &&
        !(rd_atomic && attrs_.max_dest_rd_atomic == 0);
    if (ok) return std::nullopt;
    return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request,
                          p.headers.bth.psn, now_ns);
}

RoceRx RoceQp::rc_execute(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    switch (p.info->op) {
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

RoceRx RoceQp::rc_send(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const auto pos = p.info->position;
    const std::uint32_t psn = p.headers.bth.psn;
    const bool first = pos == SegmentPosition::first || pos == SegmentPosition::only;
    if (first) {
        // On a tag-matching QP the TMH picks the buffer (tag_matching.cpp).
        if (!(host_.tag_matching() ? tm_take(p) : take_recv_wqe())) {
            send_rnr_nak(psn, now_ns);
            return RoceRx::rnr;
        }
        resp_.msg_off = 0;
    }
    // msg_off counts bytes placed: a matched EAGER's TMH and a matched
    // RNDV's headers are not.
    const auto data = p.payload.subspan(first ? std::min<std::size_t>(tm_.skip, p.payload.size()) : 0);
    const auto len = static_cast<std::uint32_t>(data.size());
    const std::uint8_t rop =
        tm_.msg != TmState::Msg::none ? tm_wc_opcode() : std::uint8_t{IBV_WC_RECV};
    if (len > resp_.wqe_len - std::min(resp_.wqe_len, resp_.msg_off)) {
        recv_failed(IBV_WC_LOC_LEN_ERR, rop);
        return responder_fail(RoceRx::length_error, net::NakCode::invalid_request, psn, now_ns);
    }
    if (!place(resp_.msg_off, data)) {
        recv_failed(IBV_WC_LOC_PROT_ERR, rop);
        return responder_fail(RoceRx::remote_operation, net::NakCode::remote_operational_error, psn,
                              now_ns);
    }
    resp_.msg_off += len;
    if (message_end(pos)) return rc_send_end(p, rop, now_ns);
    resp_.in_msg = RespState::InMsg::send;
    after_accept(p, false, now_ns);
    return RoceRx::consumed;
}

// The last packet of a SEND is placed: the message completes (a matched
// RNDV after its ACK, with the READ of its data).
RoceRx RoceQp::rc_send_end(const net::RocePacket& p, std::uint8_t rop, std::uint64_t now_ns) noexcept {
    const bool inv = p.info->invalidate();
    // SEND with invalidate: the IETH's window goes once the data is placed
    // (IBA 9.4.1.1); one this QP may not invalidate is an invalid request.
    if (inv && !host_.invalidate_rkey(p.headers.ieth.rkey)) {
        recv_failed(IBV_WC_REM_INV_REQ_ERR, rop);
        return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request,
                              p.headers.bth.psn, now_ns);
    }
    resp_.msn = net::psn_add(resp_.msn, 1);
    resp_.in_msg = RespState::InMsg::none;
    const bool imm = p.info->immediate();
    const std::uint32_t tm_flags = tm_.msg != TmState::Msg::none ? tm_wc_flags() : 0;
    if (tm_.msg != TmState::Msg::rndv)
        recv_done({.opcode = rop,
                   .byte_len = resp_.msg_off,
                   .wc_flags = tm_flags | (imm   ? IBV_WC_WITH_IMM
                                           : inv ? IBV_WC_WITH_INV
                                                 : 0),
                   .imm_host = inv ? p.headers.ieth.rkey : p.headers.imm.value,
                   .solicited = p.headers.bth.solicited,

                   .ipv6 = p.ipv6});
    after_accept(p, true, now_ns);
    if (tm_.msg == TmState::Msg::rndv) tm_start_rndv(now_ns);
    tm_.msg = TmState::Msg::none;
    return RoceRx::consumed;
}

bool RoceQp::start_write(const net::Reth& r, const void* pd) noexcept {
    if (!(attrs_.access & IBV_ACCESS_REMOTE_WRITE)) return false;
    if (r.dma_len > 0 &&
        mrs_.translate_remote_ref(r.rkey, pd, r.va, r.dma_len, kRemoteWrite, attrs_.qpn).host ==
            nullptr)
        return false;
    resp_.write_va = r.va;
    resp_.write_rkey = r.rkey;
    resp_.write_len = r.dma_len;
    resp_.msg_off = 0;
    return true;
}

bool RoceQp::write_piece(const void* pd, std::span<const std::uint8_t> data) noexcept {
    if (data.empty()) return true;
    if (!(attrs_.access & IBV_ACCESS_REMOTE_WRITE)) return false;
    // start_write checked the whole range: resp_.write_va + resp_.msg_off cannot wrap.
    // An ODP page found unmapped or read-only fails it like a refused key.
    const MrRef dst = mrs_.translate_remote_ref(
        resp_.write_rkey, pd, resp_.write_va + resp_.msg_off,
        static_cast<std::uint32_t>(data.size()), kRemoteWrite, attrs_.qpn);
    return dst.host != nullptr && mr_write(dst, data.data(), data.size());
}

RoceRx RoceQp::rc_write(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const auto pos = p.info->position;
    const std::uint32_t psn = p.headers.bth.psn;
    const auto len = static_cast<std::uint32_t>(p.payload.size());
    if ((pos == SegmentPosition::first || pos == SegmentPosition::only) &&
        !start_write(p.headers.reth, resp_.pd))
        return responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn, now_ns);
    const bool end = message_end(pos);
    // More than the RETH announced, or a last packet short of it: invalid request.
    if (len > resp_.write_len - resp_.msg_off || (end && resp_.msg_off + len != resp_.write_len))
        return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request, psn, now_ns);
    const bool imm = p.info->immediate();
    RecvView v;
    if (imm && !host_.peek_recv(v)) {
        send_rnr_nak(psn, now_ns);
        return RoceRx::rnr;
    }
    // The key, window or QP access revoked since the FIRST: mlx5 NAKs the rest.
    if (!write_piece(resp_.pd, p.payload))
        return responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn, now_ns);
    resp_.msg_off += len;
    if (end) {
        resp_.msn = net::psn_add(resp_.msn, 1);
        resp_.in_msg = RespState::InMsg::none;
        if (imm) {
            (void)take_recv_wqe();
            recv_done({.opcode = IBV_WC_RECV_RDMA_WITH_IMM,
                       .byte_len = resp_.write_len,
                       .wc_flags = IBV_WC_WITH_IMM,
                       .imm_host = p.headers.imm.value,
                       .solicited = p.headers.bth.solicited,

                       .ipv6 = p.ipv6});
        }
    } else {
        resp_.in_msg = RespState::InMsg::write;
    }
    after_accept(p, end, now_ns);
    return RoceRx::consumed;
}

} // namespace rdmasim::datapath
