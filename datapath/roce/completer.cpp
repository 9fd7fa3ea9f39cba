// The requester's receive side and its timers: ACKs (coalesced: one ACK
// acknowledges every PSN up to its own), NAKs, RNR NAKs, READ responses,
// atomic ACKs, the local ACK timeout; in-order completions; errors and
// flushes. Also the per-packet dispatch. (datapath/README.md, "RoCE transport")
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstring>

#include "datapath/roce/qp.hpp"
#include "datapath/roce/sge.hpp"

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

RoceRx RoceQp::receive(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    now_ns_ = now_ns;
    RoceRx r = RoceRx::not_ready;
    const auto want = attrs_.xrc                       ? net::RoceTransport::xrc
                      : attrs_.type == QpTransport::rc ? net::RoceTransport::rc
                      : attrs_.type == QpTransport::uc ? net::RoceTransport::uc
                                                       : net::RoceTransport::ud;
    if (p.info->transport != want) {
        r = RoceRx::wrong_transport;
    } else if (state_ != TransportState::rtr && state_ != TransportState::rts &&
               state_ != TransportState::sqd) {
        r = RoceRx::not_ready;
    } else if (!net::pkey_match(p.headers.bth.pkey, attrs_.pkey)) {
        r = RoceRx::pkey_violation; // every packet, responses and ACKs too (rxe's check_keys)
    } else {
        if (state_ == TransportState::rtr && !comm_est_) {
            comm_est_ = true;
            host_.event(TransportEvent::comm_est);
        }
        switch (p.info->op) {
        case net::RoceOp::ack:
        case net::RoceOp::atomic_ack:
        case net::RoceOp::rdma_read_response:
            if (state_ == TransportState::rtr) break; // a requester not started yet
            r = p.info->op == net::RoceOp::ack          ? on_ack(p, now_ns)
                : p.info->op == net::RoceOp::atomic_ack ? on_atomic_ack(p, now_ns)
                                                        : on_read_response(p, now_ns);
            break;
        default:
            r = attrs_.type == QpTransport::rc   ? rc_request(p, now_ns)
                : attrs_.type == QpTransport::uc ? uc_request(p, now_ns)
                                                 : ud_request(p, now_ns);
        }
    }
    count(r);
    return r;
}

// Acknowledges every PSN up to and including `psn`. A READ or atomic the
// ACK passes whose response never came is asked for again (its response
// was lost: an implicit NAK). True when una_ moved or a request goes again;
// the retry counters and the timer restart only when una_ moved.
bool RoceQp::ack_through(std::uint32_t psn, std::uint64_t now_ns) noexcept {
    if (net::psn_before(psn, una_) || !net::psn_before(psn, next_psn_)) return false;
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    std::uint32_t new_una = net::psn_add(psn, 1);
    bool again = false;
    for (std::uint32_t i = sq_tail_; i != assigned_; ++i) {
        SendSlot& s = slot(i);
        if (s.done) continue;
        const std::uint32_t last = net::psn_add(s.first_psn, s.npkts - 1);
        if (net::psn_before(psn, last)) break; // partly acknowledged at most
        if (is_read_or_atomic(s.wr.op)) {
            new_una = net::psn_add(s.first_psn, s.wr.op == SendOp::read ? s.read_done / mtu : 0);
            go_back(new_una);
            again = true;
            break;
        }
        s.done = true;
    }
    const bool moved = new_una != una_;
    una_ = new_una;
    if (moved) {
        retry_left_ = attrs_.retry_cnt;
        rnr_left_ = attrs_.rnr_retry;
        arm_ack_timer(now_ns, true);
    }
    return moved || again;
}

RoceRx RoceQp::on_ack(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    const net::Aeth& a = p.headers.aeth;
    const std::uint32_t before = net::psn_add(psn, net::kPsnMask); // psn - 1
    switch (a.kind()) {
    case net::AckKind::ack:
        if (!ack_through(psn, now_ns)) return RoceRx::stale_ack;
        break;
    case net::AckKind::rnr_nak: {
        if (net::psn_before(psn, una_) || !net::psn_before(psn, next_psn_))
            return RoceRx::stale_ack;
        ack_through(before, now_ns);
        counters_.rnr_naks_received.add();
        if (port_counters_) port_counters_->rnr_naks_received.add();
        if (attrs_.rnr_retry != 7) {
            if (rnr_left_ == 0) {
                retire();
                fail_send(sq_tail_, IBV_WC_RNR_RETRY_EXC_ERR);
                enter_error();
                return RoceRx::consumed;
            }
            --rnr_left_;
        }
        go_back(net::psn_before(una_, psn) ? una_ : psn); // a READ before it may need asking again
        ack_deadline_ = kNoDeadline;
        rnr_deadline_ = now_ns + rnr_timer_ns(a.value());
        host_.deadline_changed(rnr_deadline_);
        retire();
        return RoceRx::consumed;
    }
    case net::AckKind::nak: {
        if (net::psn_before(psn, una_) || !net::psn_before(psn, next_psn_))
            return RoceRx::stale_ack;
        ack_through(before, now_ns);
        const auto code = static_cast<net::NakCode>(a.value());
        if (code == net::NakCode::psn_sequence_error) {
            // Resend from its PSN. It does not use up retry_cnt (a NAK shows
            // the responder is there; as Linux's rxe): packets that follow an
            // RNR-NAKed one draw a sequence NAK on every RNR round.
            counters_.seq_naks_received.add();
            if (port_counters_) port_counters_->seq_naks_received.add();
            go_back(net::psn_before(una_, psn) ? una_ : psn);
            break;
        }
        // A fatal NAK: the WQE the PSN belongs to fails, the QP goes to error.
        retire();
        std::uint32_t idx = sq_tail_;
        for (std::uint32_t i = sq_tail_; i != assigned_; ++i) {
            const SendSlot& s = slot(i);
            const std::int32_t d = net::psn_diff(psn, s.first_psn);
            if (d >= 0 && d < static_cast<std::int32_t>(s.npkts)) {
                idx = i;
                break;
            }
        }
        fail_send(idx, nak_status(code));
        enter_error();
        return RoceRx::consumed;
    }
    case net::AckKind::reserved:
        return RoceRx::stale_ack;
    }
    retire();
    pump(now_ns);
    return RoceRx::consumed;
}

void RoceQp::complete_send(SendSlot& s, std::uint8_t status) noexcept {
    if (s.wr.tm != SendWr::Tm::none) return tm_send_done(s, status); // the responder's own
    Cqe c = make_cqe(s.wr.wr_id, status,
                     s.wr.op == SendOp::local ? s.wr.local_opcode : wc_opcode(s.wr.op));
    if (status == IBV_WC_SUCCESS && is_read_or_atomic(s.wr.op)) c.byte_len = s.length;
    host_.complete_send(c);
}

// Completes acknowledged WQEs in posting order (unsignalled ones silently).
void RoceQp::retire() noexcept {
    while (sq_tail_ != sq_head_ && slot(sq_tail_).done) {
        SendSlot& s = slot(sq_tail_);
        if (s.wr.op == SendOp::local && s.wr.local_status != IBV_WC_SUCCESS) {
            fail_send(sq_tail_, s.wr.local_status); // a failed bind: the QP goes to error
            enter_error();
            return;
        }
        if (s.wr.signaled) complete_send(s, IBV_WC_SUCCESS);
        ++sq_tail_;
    }
    if (static_cast<std::int32_t>(send_idx_ - sq_tail_) < 0) {
        send_idx_ = sq_tail_;
        send_pkt_ = 0;
    }
    if (static_cast<std::int32_t>(assigned_ - sq_tail_) < 0) assigned_ = sq_tail_;
    if (state_ == TransportState::sqd && drain_pending_ && sq_tail_ == assigned_) {
        drain_pending_ = false;
        host_.event(TransportEvent::sq_drained);
    }
}

// WQE `idx` completes with `status`, every WQE posted after it (and any not
// acknowledged before it) with IBV_WC_WR_FLUSH_ERR; errors always complete,
// signalled or not.
void RoceQp::fail_send(std::uint32_t idx, std::uint8_t status) noexcept {
    for (std::uint32_t i = sq_tail_; i != sq_head_; ++i) {
        SendSlot& s = slot(i);
        if (i != idx && s.done) {
            if (s.wr.signaled) complete_send(s, IBV_WC_SUCCESS);
            continue;
        }
        complete_send(s, i == idx ? status : static_cast<std::uint8_t>(IBV_WC_WR_FLUSH_ERR));
    }
    sq_tail_ = assigned_ = send_idx_ = sq_head_;
    send_pkt_ = rd_in_flight_ = 0;
    una_ = next_psn_;
    ack_deadline_ = rnr_deadline_ = kNoDeadline;
}

void RoceQp::flush_receive_queue() noexcept {
    if (attrs_.srq) return;
    RecvView v;
    while (host_.peek_recv(v)) {
        const Cqe c = make_cqe(v.wqe->wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV);
        host_.pop_recv();
        host_.complete_recv(c);
    }
}

void RoceQp::flush_all() noexcept {
    if (sq_tail_ != sq_head_) fail_send(sq_tail_, IBV_WC_WR_FLUSH_ERR);
    ack_deadline_ = rnr_deadline_ = kNoDeadline;
    if (have_wqe_) complete_recv(IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0, 0, 0);
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

void RoceQp::service(std::uint64_t now_ns) noexcept {
    now_ns_ = now_ns;
    if (state_ != TransportState::rts && state_ != TransportState::sqd) return;
    if (rnr_deadline_ <= now_ns) {
        rnr_deadline_ = kNoDeadline;
        pump(now_ns);
    }
    if (ack_deadline_ <= now_ns) {
        ack_deadline_ = kNoDeadline;
        if (una_ == next_psn_) return;
        counters_.timeouts.add();
        if (port_counters_) port_counters_->timeouts.add();
        if (retry_left_ == 0) {
            retire();
            fail_send(sq_tail_, IBV_WC_RETRY_EXC_ERR);
            enter_error();
            return;
        }
        --retry_left_;
        go_back(una_);
        pump(now_ns);
        arm_ack_timer(now_ns, true);
    }
}

std::uint64_t RoceQp::next_deadline_ns() const noexcept {
    return std::min(ack_deadline_, rnr_deadline_);
}

} // namespace rdmasim::datapath
