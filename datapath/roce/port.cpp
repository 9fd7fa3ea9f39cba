#include "datapath/roce/port.hpp"

#include <algorithm>
#include <bit>

namespace rdmasim::datapath {

RocePort::RocePort(std::size_t loopback_bytes, std::uint32_t loopback_frames)
    : loopback_(loopback_bytes, loopback_frames), held_(kHeldBytes, kHeldFrames) {}

bool RocePort::queue_loopback(std::span<const std::uint8_t> frame, bool to_group) noexcept {
    if (!loopback_.push(frame)) [[unlikely]] {
        counters_.loopback_overflow.add();
        return false;
    }
    (to_group ? counters_.mcast_loopback : counters_.loopback_frames).add();
    return true;
}

void RocePort::drain_loopback(std::uint64_t now_ns) noexcept {
    if (draining_) return;
    draining_ = true;
    while (!loopback_.empty()) {
        // The frame stays queued while it is processed, so frames it causes
        // are placed around its bytes, never over them.
        (void)ingress(loopback_.front(), now_ns);
        loopback_.pop();
    }
    draining_ = false;
}

std::size_t RocePort::transmit_in_place(const net::RocePath& path, const net::RoceHeaders& h,
                                       std::span<const std::span<const std::uint8_t>> payload) noexcept {
    if (wire_.claim == nullptr) return 0;
    std::size_t payload_len = 0;
    for (const auto& piece : payload)
        payload_len += piece.size();
    if (payload_len < kInPlaceMin) return 0;
    const net::RoceBuildResult plan = net::roce_frame_plan(path, h, payload_len);
    if (plan.error != net::RoceBuildError::none) [[unlikely]]
        return 0;
    const std::span<std::uint8_t> room = wire_.claim(wire_.context, path, plan.len);
    if (room.empty()) return 0;
    (void)net::build_roce_frame(path, h, payload, room.first(plan.len)); // planned: cannot fail
    wire_.commit(wire_.context, plan.len);
    return plan.len;
}

bool RocePort::attach(RoceQp& qp) {
    // Each QP waits at most once, and a resumed one may queue again before
    // the resumed are erased: twice the QPs, never a reallocation under load.
    room_waiters_.reserve(2 * (qps_.size() + 1));
    return qps_.emplace(qp.attrs().qpn, &qp).second;
}

void RocePort::wait_for_room(RoceQp& qp) noexcept {
    if (qp.waiting_for_room()) return;
    // Flagged only when listed: a QP the list cannot hold (not attached)
    // stays unflagged, so the next ACK or post pumps it again rather than
    // nothing ever resuming it.
    if (room_waiters_.size() == room_waiters_.capacity()) [[unlikely]]
        return;
    qp.set_waiting_for_room(true);
    room_waiters_.push_back(qp.attrs().qpn);
}

void RocePort::resume_waiting(std::uint64_t now_ns) noexcept {
    const std::size_t n = room_waiters_.size();
    std::size_t i = 0;
    for (; i < n && turn_open(); ++i)
        if (RoceQp* qp = find(room_waiters_[i]); qp != nullptr && qp->waiting_for_room()) {
            qp->set_waiting_for_room(false);
            resuming_ = qp;
            qp->resume(now_ns); // may wait again: appended after n
            resuming_ = nullptr;
        }
    room_waiters_.erase(room_waiters_.begin(), room_waiters_.begin() + static_cast<std::ptrdiff_t>(i));
}

void RocePort::detach(std::uint32_t qpn) noexcept {
    qps_.erase(qpn);
    mcast_.detach_all(qpn);
}

RoceQp* RocePort::find(std::uint32_t qpn) const noexcept {
    const auto it = qps_.find(qpn);
    return it == qps_.end() ? nullptr : it->second;
}

std::optional<RoceRx> RocePort::ingress(std::span<const std::uint8_t> frame,
                                        std::uint64_t now_ns) noexcept {
    counters_.frames.add();
    net::RocePacket p;
    const net::RoceDrop d = net::parse_roce_frame(frame, p);
    if (d != net::RoceDrop::none) [[unlikely]] {
        counters_.parse_drops[static_cast<std::size_t>(d)].add();
        return std::nullopt;
    }
    RoceQp* qp = find(p.headers.bth.dest_qp);
    if (qp == nullptr) [[unlikely]] {
        if (family_ != nullptr && draining_ && to_sibling(frame, now_ns)) return RoceRx::consumed;
        if (p.headers.bth.dest_qp == kMcastQpn) return to_group(p, now_ns);
        if (p.headers.bth.dest_qp == kGsiQpn && gsi_.receive != nullptr &&
            p.info->op == net::RoceOp::send && p.info->transport == net::RoceTransport::ud) {
            counters_.gsi_mads.add();
            gsi_.receive(gsi_.context, p);
            return RoceRx::consumed;
        }
        counters_.unknown_qp.add();
        return std::nullopt;
    }
    switch (hold(*qp, p, frame)) {
    case Hold::no:
        return qp->receive(p, now_ns);
    case Hold::held:
        return RoceRx::consumed;
    case Hold::lost:
        return std::nullopt;
    }
    return std::nullopt;
}

bool RocePort::to_sibling(std::span<const std::uint8_t> frame, std::uint64_t now_ns) noexcept {
    const int owner = family_->owner(frame); // a group's datagram reached the bus on its way out
    if (owner < 0 || static_cast<std::uint32_t>(owner) == family_->member()) return false;
    (void)family_->forward(frame, now_ns); // the bus counts what it loses
    counters_.family_out.add();
    return true;
}

// A QP that blocks its own multicast loopback (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB)
// is passed over for a datagram it sent itself: one looped back (draining_)
// from its QPN. A datagram that reaches no QP is unknown_qp.
std::optional<RoceRx> RocePort::to_group(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const bool group = p.info->transport == net::RoceTransport::ud && net::is_multicast_gid(p.dgid);
    // Receiving never detaches a QP: the span stays valid through the loop.
    const std::span<const std::uint32_t> qpns =
        group ? mcast_.members(p.dgid) : std::span<const std::uint32_t>{};
    std::optional<RoceRx> out;
    std::uint64_t receives = 0;
    for (const std::uint32_t qpn : qpns) {
        RoceQp* qp = find(qpn);
        if (qp == nullptr ||
            (draining_ && qpn == p.headers.deth.src_qp && qp->attrs().block_self_mcast))
            continue;
        const RoceRx r = qp->receive(p, now_ns);
        if (!out || r == RoceRx::consumed) out = r;
        ++receives;
    }
    if (receives == 0) {
        counters_.unknown_qp.add();
        return std::nullopt;
    }
    counters_.mcast_frames.add();
    counters_.mcast_copies.add(receives - 1);
    return out;
}

RocePort::Hold RocePort::hold(RoceQp& qp, const net::RocePacket& p,
                              std::span<const std::uint8_t> frame) noexcept {
    if (releasing_) return Hold::no; // the frame being let go
    if (qp.held_requests() == 0) {
        if (p.info->op != net::RoceOp::rdma_read_request || !tx_congested()) [[likely]]
            return Hold::no;
    } else if (net::is_response(p.info->op)) {
        return Hold::no; // a response or an ACK to this QP's requester: never held
    }
    if (!held_.push(frame)) {
        counters_.requests_held_overflow.add();
        return Hold::lost;
    }
    qp.add_held_requests(1);
    counters_.requests_held.add();
    return Hold::held;
}

void RocePort::release_held(std::uint64_t now_ns) noexcept {
    if (releasing_) return;
    // Each let go as it arrived, while the wire has room; one may fill it again.
    while (!held_.empty() && !tx_congested()) {
        const std::span<const std::uint8_t> frame = held_.front();
        net::RocePacket p;
        if (net::parse_roce_frame(frame, p) == net::RoceDrop::none) { // it parsed on arrival
            if (RoceQp* qp = find(p.headers.bth.dest_qp)) {
                if (qp->held_requests() != 0)
                    qp->add_held_requests(-1); // 0: a new QP under its number
                releasing_ = true;
                (void)qp->receive(p, now_ns);
                releasing_ = false;
            } else {
                counters_.unknown_qp.add(); // destroyed while its requests waited
            }
        }
        held_.pop();
        drain_loopback(now_ns);
    }
}

void RocePort::service(std::uint64_t now_ns) noexcept {
    // The cached deadline may be early (a timer that moved later since): it
    // is looked at again once real time passes it, even while a live wire
    // holds the timers' clock back, and only what is due by that clock
    // fires. (Compared with the held clock, a stale deadline stayed stale
    // as long as pulls came back full, and every poll woke the engine for it.)
    if (now_ns < next_deadline_) return;
    const std::uint64_t clock = timers_clock(now_ns);
    // Timers re-armed while firing report themselves through deadline_changed as well.
    std::uint64_t next = kNoDeadline;
    int unread = -1; // the wire is asked once, and only when a timer fires
    for (auto& [qpn, qp] : qps_) {
        if (qp->next_deadline_ns() <= clock) {
            if (unread < 0)
                unread =
                    live_wire_ && wire_.unread != nullptr && wire_.unread(wire_.context) ? 1 : 0;
            qp->service(clock, unread == 1);
        }
        next = std::min(next, qp->next_deadline_ns());
    }
    next_deadline_ = next;
}

} // namespace rdmasim::datapath
