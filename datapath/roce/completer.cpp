// The completer (rxe_comp.c): ACKs (coalesced: one ACK acknowledges every
// PSN up to its own), NAKs, RNR NAKs, the local ACK timeout and RNR wait;
// in-order completions; a failed WQE and the flush of those after it. READ
// responses and atomic ACKs: read_responses.cpp. (datapath/README.md,
// "RoCE transport")
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstring>

#include "datapath/roce/qp.hpp"

namespace rdmasim::datapath {

namespace {

std::uint8_t wc_opcode(SendOp op) noexcept {
    switch (op) {
    case SendOp::send:
    case SendOp::send_imm:
    case SendOp::send_inv:
        return IBV_WC_SEND;
    case SendOp::local:
        return IBV_WC_SEND; // the slot's own opcode (complete_send)
    case SendOp::write:
    case SendOp::write_imm:
        return IBV_WC_RDMA_WRITE;
    case SendOp::read:
        return IBV_WC_RDMA_READ;
    case SendOp::cmp_swp:
        return IBV_WC_COMP_SWAP;
    case SendOp::fetch_add:
        return IBV_WC_FETCH_ADD;
    case SendOp::atomic_write:
        return IBV_WC_ATOMIC_WRITE;
    }
    return IBV_WC_SEND;
}

std::uint8_t nak_status(net::NakCode code) noexcept {
    switch (code) {
    case net::NakCode::remote_access_error:
        return IBV_WC_REM_ACCESS_ERR;
    case net::NakCode::remote_operational_error:
        return IBV_WC_REM_OP_ERR;
    default:
        return IBV_WC_REM_INV_REQ_ERR;
    }
}

} // namespace

// Acknowledges every PSN up to and including `psn`. A READ or atomic the
// ACK passes whose response never came is asked for again (its response
// was lost: an implicit NAK). True when comp_.una moved or a request goes again;
// the retry counters and the timer restart only when comp_.una moved.
bool RoceQp::ack_through(std::uint32_t psn, std::uint64_t now_ns) noexcept {
    if (net::psn_before(psn, comp_.una) || !net::psn_before(psn, req_.next_psn)) return false;
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    std::uint32_t new_una = net::psn_add(psn, 1);
    bool again = false;
    for (std::uint32_t i = sq_.tail; i != req_.assigned; ++i) {
        SendSlot& s = sq_.slot(i);
        if (s.done) continue;
        const std::uint32_t last = net::psn_add(s.first_psn, s.npkts - 1);
        if (net::psn_before(psn, last)) break; // partly acknowledged at most
        if (is_read_or_atomic(s.wr.op)) {
            new_una = net::psn_add(s.first_psn, s.wr.op == SendOp::read ? s.read_done / mtu : 0);
            restart_after_loss(new_una);
            again = true;
            break;
        }
        s.done = true;
    }
    const bool moved = new_una != comp_.una;
    advance_una(new_una);
    if (moved) {
        comp_.retry_left = attrs_.retry_cnt;
        comp_.rnr_left = attrs_.rnr_retry;
        comp_.held_since = kNoDeadline;
        arm_ack_timer(now_ns, true);
    }
    return moved || again;
}

RoceRx RoceQp::on_ack(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    switch (p.headers.aeth.kind()) {
    case net::AckKind::ack:
        if (!ack_through(p.headers.bth.psn, now_ns)) return RoceRx::stale_ack;
        retire();
        pump(now_ns);
        return RoceRx::consumed;
    case net::AckKind::rnr_nak:
        return on_rnr_nak(p, now_ns);
    case net::AckKind::nak:
        return on_nak(p, now_ns);
    case net::AckKind::reserved:
        break;
    }
    return RoceRx::stale_ack;
}

// A NAK (RNR or not) names a PSN: one in flight acknowledges everything
// before it; any other is stale (false).
bool RoceQp::nak_in_flight(std::uint32_t psn, std::uint64_t now_ns) noexcept {
    if (net::psn_before(psn, comp_.una) || !net::psn_before(psn, req_.next_psn)) return false;
    ack_through(net::psn_add(psn, net::kPsnMask), now_ns); // psn - 1
    return true;
}

// The responder had no receive WQE for the packet at the NAK's PSN: what
// came before it is acknowledged, sending stops for the RNR timer, then
// resumes from it (rnr_retry 7: for ever).
RoceRx RoceQp::on_rnr_nak(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    if (!nak_in_flight(psn, now_ns)) return RoceRx::stale_ack;
    note(&RoceCounters::rnr_naks_received);
    if (attrs_.rnr_retry != 7) {
        if (comp_.rnr_left == 0) {
            retire();
            fail_and_stop(sq_.tail, IBV_WC_RNR_RETRY_EXC_ERR);
            return RoceRx::consumed;
        }
        --comp_.rnr_left;
    }
    go_back(net::psn_before(comp_.una, psn) ? comp_.una : psn); // a READ before it may need asking again
    comp_.ack_deadline = kNoDeadline;
    req_.rnr_deadline = now_ns + rnr_timer_ns(p.headers.aeth.value());
    timer_armed(req_.rnr_deadline);
    retire();
    return RoceRx::consumed;
}

// A sequence NAK resends from its PSN; any other NAK fails the WQE its PSN
// belongs to and the QP goes to error.
RoceRx RoceQp::on_nak(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    if (!nak_in_flight(psn, now_ns)) return RoceRx::stale_ack;
    const auto code = static_cast<net::NakCode>(p.headers.aeth.value());
    if (code == net::NakCode::psn_sequence_error) {
        // Resend from its PSN. It does not use up retry_cnt (a NAK shows
        // the responder is there; as Linux's rxe): packets that follow an
        // RNR-NAKed one draw a sequence NAK on every RNR round.
        note(&RoceCounters::seq_naks_received);
        restart_after_loss(net::psn_before(comp_.una, psn) ? comp_.una : psn);
        retire();
        pump(now_ns);
        return RoceRx::consumed;
    }
    retire();
    std::uint32_t idx = sq_.tail;
    for (std::uint32_t i = sq_.tail; i != req_.assigned; ++i) {
        const SendSlot& s = sq_.slot(i);
        const std::int32_t d = net::psn_diff(psn, s.first_psn);
        if (d >= 0 && d < static_cast<std::int32_t>(s.npkts)) {
            idx = i;
            break;
        }
    }
    fail_and_stop(idx, nak_status(code));
    return RoceRx::consumed;
}

void RoceQp::complete_send(SendSlot& s, std::uint8_t status) noexcept {
    if (s.wr.tm != SendWr::Tm::none) return tm_send_done(s, status); // the responder's own
    Cqe c = make_cqe(s.wr.wr_id, status,
                     s.wr.op == SendOp::local ? s.wr.local_opcode : wc_opcode(s.wr.op));
    if (status == IBV_WC_SUCCESS && is_read_or_atomic(s.wr.op)) c.byte_len = s.length;
    push_send_cqe(c);
}

// Completes acknowledged WQEs in posting order (unsignalled ones silently).
void RoceQp::retire() noexcept {
    while (sq_.tail != sq_.head && sq_.slot(sq_.tail).done) {
        SendSlot& s = sq_.slot(sq_.tail);
        if (s.wr.op == SendOp::local && s.wr.local_status != IBV_WC_SUCCESS) {
            fail_and_stop(sq_.tail, s.wr.local_status); // a failed bind: the QP goes to error
            return;
        }
        if (s.wr.signaled) complete_send(s, IBV_WC_SUCCESS);
        ++sq_.tail;
    }
    if (static_cast<std::int32_t>(req_.send_idx - sq_.tail) < 0) {
        req_.send_idx = sq_.tail;
        req_.send_pkt = 0;
    }
    if (static_cast<std::int32_t>(req_.assigned - sq_.tail) < 0) req_.assigned = sq_.tail;
    if (state_ == TransportState::sqd && comp_.drain_pending && sq_.tail == req_.assigned) {
        comp_.drain_pending = false;
        host_.event(TransportEvent::sq_drained);
    }
}

// WQE `idx` completes with `status`, every WQE posted after it (and any not
// acknowledged before it) with IBV_WC_WR_FLUSH_ERR; errors always complete,
// signalled or not.
void RoceQp::fail_send(std::uint32_t idx, std::uint8_t status) noexcept {
    for (std::uint32_t i = sq_.tail; i != sq_.head; ++i) {
        SendSlot& s = sq_.slot(i);
        if (i != idx && s.done) {
            if (s.wr.signaled) complete_send(s, IBV_WC_SUCCESS);
            continue;
        }
        complete_send(s, i == idx ? status : static_cast<std::uint8_t>(IBV_WC_WR_FLUSH_ERR));
    }
    sq_.tail = req_.assigned = req_.send_idx = sq_.head;
    req_.send_pkt = req_.rd_in_flight = 0;
    comp_.una = req_.next_psn;
    comp_.ack_deadline = req_.rnr_deadline = kNoDeadline;
}

void RoceQp::fail_and_stop(std::uint32_t idx, std::uint8_t status) noexcept {
    fail_send(idx, status);
    enter_error();
}

void RoceQp::service(std::uint64_t now_ns, bool peer_unread) noexcept {
    now_ns_ = now_ns;
    if (state_ != TransportState::rts && state_ != TransportState::sqd) return;
    if (req_.rnr_deadline <= now_ns) {
        req_.rnr_deadline = kNoDeadline;
        pump(now_ns);
    }
    if (comp_.ack_deadline <= now_ns) {
        comp_.ack_deadline = kNoDeadline;
        if (!net::psn_before(comp_.una, req_.sent_psn)) return; // nothing in flight
        if (peer_unread) {
            if (comp_.held_since == kNoDeadline) comp_.held_since = now_ns;
            if (now_ns - comp_.held_since < kMaxAckHold) {
                note(&RoceCounters::ack_timer_holds);
                arm_ack_timer(now_ns, true);
                return;
            }
        }
        comp_.held_since = kNoDeadline;
        note(&RoceCounters::timeouts);
        if (comp_.retry_left == 0) {
            retire();
            fail_and_stop(sq_.tail, IBV_WC_RETRY_EXC_ERR);
            return;
        }
        --comp_.retry_left;
        restart_after_loss(comp_.una);
        pump(now_ns);
        arm_ack_timer(now_ns, true);
    }
}

std::uint64_t RoceQp::next_deadline_ns() const noexcept {
    return std::min(comp_.ack_deadline, req_.rnr_deadline);
}

} // namespace rdmasim::datapath
