// RoceQp as a whole: construction, counting, framing a packet to the port,
// its completions, modify (states and attributes), errors and flushes.
// (datapath/README.md, "RoCE transport")
#include "datapath/roce/qp.hpp"

#include <infiniband/verbs.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "datapath/roce/port.hpp"

namespace rdmasim::datapath {

RoceQp::RoceQp(TransportHost& host, RocePort& port, const MrTable& mrs,
               const TransportLimits& limits, QpRings rings)
    : host_(host), port_(port), mrs_(mrs), limits_(limits), rings_(rings),
      port_counters_(port.qp_counters()) {
    limits_.max_send_sge = std::max(1u, limits_.max_send_sge);
    limits_.max_recv_sge = std::max(1u, limits_.max_recv_sge);
    limits_.window = std::clamp(limits_.window, 1u, 1u << 22);
    limits_.ack_every = std::max(1u, limits_.ack_every);
    limits_.restart_window = std::clamp(limits_.restart_window, 1u, limits_.window);
    sq_.user_cap = std::bit_ceil(std::max(1u, limits_.max_send_wr));
    // Tag matching: slots only the rendezvous takes, and room for a FIN's TMH inline.
    const std::uint32_t cap = std::bit_ceil(sq_.user_cap + limits_.tm_reserve);
    if (limits_.tm_reserve > 0) limits_.max_inline = std::max(limits_.max_inline, 16u);
    sq_.mask = cap - 1;
    sq_.max_sge = limits_.max_send_sge;
    sq_.max_inline = limits_.max_inline;
    sq_.slots.assign(cap, SendSlot{});
    sq_.sges.assign(static_cast<std::size_t>(cap) * limits_.max_send_sge, Sge{});
    sq_.inline_bytes.assign(static_cast<std::size_t>(cap) * limits_.max_inline, 0);
    tx_buf_.assign(kMaxRoceFrame, 0);
    req_.pieces.reserve(std::max(limits_.max_send_sge, limits_.max_recv_sge) + 1);
    resp_.wqe_sges.assign(limits_.max_recv_sge, Sge{});
    resp_.rd_slots.assign(16, RdAtomicSlot{}); // max_dest_rd_atomic is at most 16 (device caps)
}

void RoceQp::transmit(const net::RocePath& path, const net::RoceHeaders& h,
                      std::span<const std::span<const std::uint8_t>> payload,
                      std::uint64_t now_ns) noexcept {
    net::RoceHeaders xrc_headers;
    const net::RoceHeaders* headers = &h;
    if (attrs_.xrc) { // the same operation under XRC's transport prefix
        xrc_headers = h;
        xrc_headers.bth.opcode = static_cast<std::uint8_t>(net::kXrcOpcodeBase | h.bth.opcode);
        headers = &xrc_headers;
    }
    if (const std::size_t len = port_.transmit_in_place(path, *headers, payload)) { // one copy
        note(&RoceCounters::tx_packets);
        note(&RoceCounters::tx_bytes, len);
        return;
    }
    const auto r = net::build_roce_frame(path, *headers, payload, tx_buf_);
    if (r.error != net::RoceBuildError::none) [[unlikely]]
        return; // the transport never builds a frame the codec refuses (sizes fixed above)
    note(&RoceCounters::tx_packets);
    note(&RoceCounters::tx_bytes, r.len);
    port_.transmit({tx_buf_.data(), r.len}, now_ns);
}

void RoceQp::timer_armed(std::uint64_t deadline_ns) noexcept { port_.deadline_changed(deadline_ns); }

Cqe RoceQp::make_cqe(std::uint64_t wr_id, std::uint8_t status, std::uint8_t opcode) const noexcept {
    Cqe c;
    c.wr_id = wr_id;
    c.timestamp_ns = now_ns_;
    c.qp_num = attrs_.qpn;
    c.status = status;
    c.opcode = opcode;
    return c;
}

namespace {
// A full CQ loses the completion and reports the overrun (the device raises
// IBV_EVENT_CQ_ERR after the call). A solicited or an error completion is
// what ibv_req_notify_cq(cq, 1) waits for.
void push(CqRing* cq, const Cqe& c) noexcept {
    if (cq == nullptr) return;
    (void)cq->push(c);
    if (c.solicited || c.status != IBV_WC_SUCCESS) cq->note_solicited();
}
} // namespace

void RoceQp::push_send_cqe(const Cqe& c) noexcept { push(rings_.send_cq, c); }

// An XRC TGT QP's receives complete on the CQ of the SRQ its request named.
void RoceQp::push_recv_cqe(const Cqe& c) noexcept {
    push(attrs_.xrc && rings_.recv_cq == nullptr ? host_.xrc_recv_cq() : rings_.recv_cq, c);
}

void RoceQp::modify(const TransportAttrs& attrs, TransportState state,
                    std::uint64_t now_ns) noexcept {
    now_ns_ = now_ns;
    const TransportState old = state_;
    attrs_ = attrs;
    resp_.pd = attrs.pd;
    switch (state) {
    case TransportState::reset:
        sq_.tail = req_.assigned = req_.send_idx = sq_.head;
        req_.send_pkt = req_.rd_in_flight = sq_.tm_inflight = 0;
        comp_.ack_deadline = req_.rnr_deadline = kNoDeadline;
        comp_.read_gap_pending = false;
        reset_responder();
        std::fill(resp_.rd_slots.begin(), resp_.rd_slots.end(), RdAtomicSlot{});
        resp_.comm_est = false;
        break;
    case TransportState::rtr:
        if (old != TransportState::rtr) {
            resp_.epsn = attrs.rq_psn & net::kPsnMask;
            resp_.msn = 0;
            resp_.seq_nak_sent = false;
            reset_responder();
        }
        break;
    case TransportState::rts:
        if (old != TransportState::rts && old != TransportState::sqd) {
            req_.next_psn = comp_.una = req_.sent_psn = attrs.sq_psn & net::kPsnMask;
            req_.cwnd = limits_.window;
            comp_.retry_left = attrs.retry_cnt;
            comp_.rnr_left = attrs.rnr_retry;
        }
        break;
    case TransportState::error:
        if (old != TransportState::error) {
            state_ = state;
            flush_all();
        }
        return;
    case TransportState::sqd:
        comp_.drain_pending = old != TransportState::sqd;
        break;
    case TransportState::init:
        break;
    }
    state_ = state;
    if (state_ == TransportState::rts) pump(now_ns);
    if (state_ == TransportState::sqd) retire();
}

void RoceQp::flush_receive_queue() noexcept {
    if (attrs_.srq) return;
    RecvView v;
    while (host_.peek_recv(v)) {
        const Cqe c = make_cqe(v.wqe->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
        host_.pop_recv();
        push_recv_cqe(c);
    }
}

void RoceQp::flush_all() noexcept {
    if (sq_.tail != sq_.head) fail_send(sq_.tail, IBV_WC_WR_FLUSH_ERR);
    comp_.ack_deadline = req_.rnr_deadline = kNoDeadline;
    if (resp_.have_wqe) recv_failed(IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
    reset_responder();
    flush_receive_queue();
    if (attrs_.srq) host_.event(TransportEvent::last_wqe_reached);
}

void RoceQp::enter_error() noexcept {
    if (state_ == TransportState::error) return;
    state_ = TransportState::error;
    flush_all();
    host_.event(TransportEvent::entered_error);
}

} // namespace rdmasim::datapath
