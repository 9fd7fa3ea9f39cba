// The completer's side of READ and atomics: READ responses scattered into
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
    for (std::uint32_t i = sq_.tail; i != req_.assigned; ++i)
        if (!sq_.slot(i).done && is_read_or_atomic(sq_.slot(i).wr.op)) return i;
    return req_.assigned;
}

RoceRx RoceQp::on_read_response(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t idx = oldest_unanswered();
    if (idx != req_.assigned && sq_.slot(idx).wr.op == SendOp::atomic_write)
        return on_atomic_write_response(p, idx, now_ns);
    if (idx == req_.assigned || sq_.slot(idx).wr.op != SendOp::read) return RoceRx::stale_ack;
    SendSlot& s = sq_.slot(idx);
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    const std::uint32_t k = s.read_done / mtu; // the response packet expected
    const std::uint32_t expected = net::psn_add(s.first_psn, k);
    const std::int32_t d = net::psn_diff(p.headers.bth.psn, expected);
    if (d < 0) return RoceRx::duplicate;
    if (d > 0) {
        // A response was lost: ask again from it, once per missing PSN.
        if (!(comp_.read_gap_pending && comp_.read_gap_psn == expected)) {
            comp_.read_gap_pending = true;
            comp_.read_gap_psn = expected;
            ack_through(net::psn_add(s.first_psn, net::kPsnMask), now_ns);
            restart_after_loss(expected);
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
    if (!place_at(mrs_, attrs_.pd, sq_.sges_of(idx), s.num_sge, s.read_done, p.payload))
        return answer_lost_buffer(idx);
    s.read_done += len;
    comp_.read_gap_pending = false;
    comp_.retry_left = attrs_.retry_cnt;
    if (s.read_done == s.length) {
        s.done = true;
        --req_.rd_in_flight;
        const std::uint32_t after = net::psn_add(s.first_psn, s.npkts);
        if (net::psn_before(comp_.una, after)) advance_una(after);
    } else {
        advance_una(net::psn_add(p.headers.bth.psn, 1));
    }
    arm_ack_timer(now_ns, true);
    retire();
    pump(now_ns);
    return RoceRx::consumed;
}

RoceRx RoceQp::on_atomic_ack(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t idx = oldest_unanswered();
    if (idx == req_.assigned || sq_.slot(idx).wr.op == SendOp::read ||
        sq_.slot(idx).wr.op == SendOp::atomic_write)
        return RoceRx::stale_ack;
    if (const auto r = answer_out_of_order(p, idx, now_ns)) return *r;
    SendSlot& s = sq_.slot(idx);
    ack_through(net::psn_add(s.first_psn, net::kPsnMask), now_ns);
    std::uint8_t orig[8];
    const std::uint64_t v = p.headers.atomic_ack_eth.orig;
    std::memcpy(orig, &v, 8); // the original value, in host order, as the local SGE gets it
    if (!place_at(mrs_, attrs_.pd, sq_.sges_of(idx), s.num_sge, 0, orig))
        return answer_lost_buffer(idx);
    answered(idx, now_ns);
    return RoceRx::consumed;
}

// The answer to an ATOMIC WRITE: an empty READ RESPONSE ONLY at its PSN.
RoceRx RoceQp::on_atomic_write_response(const net::RocePacket& p, std::uint32_t idx,
                                        std::uint64_t now_ns) noexcept {
    if (const auto r = answer_out_of_order(p, idx, now_ns)) return *r;
    if (p.info->position != net::SegmentPosition::only || !p.payload.empty())
        return RoceRx::stale_ack;
    ack_through(net::psn_add(sq_.slot(idx).first_psn, net::kPsnMask), now_ns);
    answered(idx, now_ns);
    return RoceRx::consumed;
}

std::optional<RoceRx> RoceQp::answer_out_of_order(const net::RocePacket& p, std::uint32_t idx,
                                                  std::uint64_t now_ns) noexcept {
    const std::int32_t d = net::psn_diff(p.headers.bth.psn, sq_.slot(idx).first_psn);
    if (d < 0) return RoceRx::duplicate;
    if (d == 0) return std::nullopt;
    // A later request's answer: this one's was lost, ask again.
    if (ack_through(net::psn_add(p.headers.bth.psn, net::kPsnMask), now_ns)) {
        retire();
        pump(now_ns);
    }
    return RoceRx::sequence_error;
}

void RoceQp::answered(std::uint32_t idx, std::uint64_t now_ns) noexcept {
    SendSlot& s = sq_.slot(idx);
    s.done = true;
    --req_.rd_in_flight;
    advance_una(net::psn_add(s.first_psn, 1));
    comp_.retry_left = attrs_.retry_cnt;
    arm_ack_timer(now_ns, true);
    retire();
    pump(now_ns);
}

RoceRx RoceQp::answer_lost_buffer(std::uint32_t idx) noexcept {
    fail_and_stop(idx, IBV_WC_LOC_PROT_ERR);
    return RoceRx::consumed;
}

} // namespace rdmasim::datapath
