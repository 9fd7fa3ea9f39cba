#include "datapath/roce/port.hpp"

#include <algorithm>
#include <bit>

namespace rdmasim::datapath {

RocePort::RocePort(std::size_t loopback_bytes, std::uint32_t loopback_frames)
    : lb_bytes_(loopback_bytes), lb_entries_(std::bit_ceil(std::max(1u, loopback_frames))) {}

bool RocePort::queue_loopback(std::span<const std::uint8_t> frame) noexcept {
    const std::size_t len = frame.size();
    const std::size_t cap = lb_bytes_.size();
    std::size_t off = 0;
    bool room = lb_head_ - lb_tail_ < lb_entries_.size();
    if (room && lb_head_ == lb_tail_) {
        lb_write_ = 0; // empty: start over
        room = len <= cap;
    } else if (room) {
        // The oldest frame's bytes start at `rd`; the writer never catches up
        // with it (strict <), so lb_write_ == rd only when the queue is empty.
        const std::size_t rd = lb_entries_[lb_tail_ & (lb_entries_.size() - 1)].off;
        if (lb_write_ >= rd) {
            if (cap - lb_write_ >= len)
                off = lb_write_;
            else
                room = len < rd; // wrap to the start
        } else {
            off = lb_write_;
            room = lb_write_ + len < rd;
        }
    }
    if (!room) [[unlikely]] {
        counters_.loopback_overflow.add();
        return false;
    }
    std::copy(frame.begin(), frame.end(), lb_bytes_.data() + off);
    lb_entries_[lb_head_ & (lb_entries_.size() - 1)] = {static_cast<std::uint32_t>(off),
                                                        static_cast<std::uint32_t>(len)};
    ++lb_head_;
    lb_write_ = off + len;
    counters_.loopback_frames.add();
    return true;
}

void RocePort::drain_loopback(std::uint64_t now_ns) noexcept {
    if (draining_) return;
    draining_ = true;
    while (lb_head_ != lb_tail_) {
        const LoopbackEntry e = lb_entries_[lb_tail_ & (lb_entries_.size() - 1)];
        // The entry stays queued while it is processed, so frames it causes
        // are placed around its bytes, never over them.
        (void)ingress({lb_bytes_.data() + e.off, e.len}, now_ns);
        ++lb_tail_;
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
        counters_.unknown_qp.add();
        return std::nullopt;
    }
    return qp->receive(p, now_ns);
}

void RocePort::service(std::uint64_t now_ns) noexcept {
    now_ns = timers_clock(now_ns);
    if (now_ns < next_deadline_) return;
    // Due: fire what is, and find the next one (timers re-armed while
    // firing report themselves through deadline_changed as well).
    std::uint64_t next = kNoDeadline;
    const bool unread = live_wire_ && wire_.unread != nullptr && wire_.unread(wire_.context);
    for (auto& [qpn, qp] : qps_) {
        if (qp->next_deadline_ns() <= now_ns) qp->service(now_ns, unread);
        next = std::min(next, qp->next_deadline_ns());
    }
    next_deadline_ = next;
}

} // namespace rdmasim::datapath
