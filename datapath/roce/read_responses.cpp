// The requester's side of READ and atomics: READ responses scattered into
// the WR's SGEs, atomic ACKs and the original value, ATOMIC WRITE's empty
// response. (datapath/README.md, "RoCE transport")
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstring>

#include "datapath/roce/qp.hpp"
#include "datapath/roce/sge.hpp"

namespace rdmasim::datapath {

using net::RoceOpcode;

std::uint32_t RoceQp::oldest_unanswered() noexcept {
    for (std::uint32_t i = sq_tail_; i != assigned_; ++i)
        if (!slot(i).done && is_read_or_atomic(slot(i).wr.op)) return i;
    return assigned_;
}

RoceRx RoceQp::on_read_response(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t idx = oldest_unanswered();
    if (idx != assigned_ && slot(idx).wr.op == SendOp::atomic_write)
        return on_atomic_write_response(p, idx, now_ns);
    if (idx == assigned_ || slot(idx).wr.op != SendOp::read) return RoceRx::stale_ack;
    SendSlot& s = slot(idx);
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    const std::uint32_t k = s.read_done / mtu; // the response packet expected
    const std::uint32_t expected = net::psn_add(s.first_psn, k);
    const std::int32_t d = net::psn_diff(p.headers.bth.psn, expected);
    if (d < 0) return RoceRx::duplicate;
    if (d > 0) {
        // A response was lost: ask again from it, once per missing PSN.
        if (!(read_gap_pending_ && read_gap_psn_ == expected)) {
            read_gap_pending_ = true;
            read_gap_psn_ = expected;
            ack_through(net::psn_add(s.first_psn, net::kPsnMask), now_ns);
            go_back(expected);
            retire();
            pump(now_ns);
        }
        return RoceRx::sequence_error;
    }
    const std::uint32_t remaining = s.length - s.read_done;
    const auto pos = p.info->position;
    const bool want_last = remaining <= mtu;
    // A re-request (from a later PSN) is answered as a READ of its own:
    // its responses start again with FIRST, or ONLY for the last packet.
    const bool pos_ok =
        s.npkts == 1 ? pos == net::SegmentPosition::only
        : want_last
            ? pos == net::SegmentPosition::last || (k > 0 && pos == net::SegmentPosition::only)
        : k == 0 ? pos == net::SegmentPosition::first
                 : pos == net::SegmentPosition::middle || pos == net::SegmentPosition::first;
    const std::uint32_t len = static_cast<std::uint32_t>(p.payload.size());
    if (!pos_ok || len != std::min(remaining, mtu)) return RoceRx::stale_ack;
    if (p.info->has(net::kExtAeth)) ack_through(net::psn_add(s.first_psn, net::kPsnMask), now_ns);
    if (!place_at(mrs_, attrs_.pd, slot_sges(idx), s.num_sge, s.read_done, p.payload)) {
        fail_send(idx, IBV_WC_LOC_PROT_ERR);
        enter_error();
        return RoceRx::consumed;
    }
    s.read_done += len;
    read_gap_pending_ = false;
    retry_left_ = attrs_.retry_cnt;
    if (s.read_done == s.length) {
        s.done = true;
        --rd_in_flight_;
        const std::uint32_t after = net::psn_add(s.first_psn, s.npkts);
        if (net::psn_before(una_, after)) una_ = after;
    } else {
        una_ = net::psn_add(p.headers.bth.psn, 1);
    }
    arm_ack_timer(now_ns, true);
    retire();
    pump(now_ns);
    return RoceRx::consumed;
}

RoceRx RoceQp::on_atomic_ack(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t idx = oldest_unanswered();
    if (idx == assigned_ || slot(idx).wr.op == SendOp::read ||
        slot(idx).wr.op == SendOp::atomic_write)
        return RoceRx::stale_ack;
    SendSlot& s = slot(idx);
    const std::int32_t d = net::psn_diff(p.headers.bth.psn, s.first_psn);
    if (d < 0) return RoceRx::duplicate;
    if (d > 0) { // a later request's answer: this one's was lost, ask again
        if (ack_through(net::psn_add(p.headers.bth.psn, net::kPsnMask), now_ns)) {
            retire();
            pump(now_ns);
        }
        return RoceRx::sequence_error;
    }
    ack_through(net::psn_add(s.first_psn, net::kPsnMask), now_ns);
    std::uint8_t orig[8];
    const std::uint64_t v = p.headers.atomic_ack_eth.orig;
    std::memcpy(orig, &v, 8); // the original value, in host order, as the local SGE gets it
    if (!place_at(mrs_, attrs_.pd, slot_sges(idx), s.num_sge, 0, orig)) {
        fail_send(idx, IBV_WC_LOC_PROT_ERR);
        enter_error();
        return RoceRx::consumed;
    }
    s.done = true;
    --rd_in_flight_;
    una_ = net::psn_add(s.first_psn, 1);
    retry_left_ = attrs_.retry_cnt;
    arm_ack_timer(now_ns, true);
    retire();
    pump(now_ns);
    return RoceRx::consumed;
}

// The answer to an ATOMIC WRITE: an empty READ RESPONSE ONLY at its PSN.
RoceRx RoceQp::on_atomic_write_response(const net::RocePacket& p, std::uint32_t idx,
                                        std::uint64_t now_ns) noexcept {
    SendSlot& s = slot(idx);
    const std::int32_t d = net::psn_diff(p.headers.bth.psn, s.first_psn);
    if (d < 0) return RoceRx::duplicate;
    if (d > 0) { // a later request's answer: this one's was lost, ask again
        if (ack_through(net::psn_add(p.headers.bth.psn, net::kPsnMask), now_ns)) {
            retire();
            pump(now_ns);
        }
        return RoceRx::sequence_error;
    }
    if (p.info->position != net::SegmentPosition::only || !p.payload.empty())
        return RoceRx::stale_ack;
    ack_through(net::psn_add(s.first_psn, net::kPsnMask), now_ns);
    s.done = true;
    --rd_in_flight_;
    una_ = net::psn_add(s.first_psn, 1);
    retry_left_ = attrs_.retry_cnt;
    arm_ack_timer(now_ns, true);
    retire();
    pump(now_ns);
    return RoceRx::consumed;
}

} // namespace rdmasim::datapath
