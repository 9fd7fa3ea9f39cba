// The requester: posting, segmentation at the path MTU, PSN assignment, the
// send window, go-back-N. (datapath/README.md, "RoCE transport")
#include <infiniband/verbs.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "datapath/roce/qp.hpp"

namespace rdmasim::datapath {

using net::RoceOpcode;

namespace {

bool is_atomic(SendOp op) noexcept {
    return op == SendOp::cmp_swp || op == SendOp::fetch_add;
}
bool has_imm(SendOp op) noexcept {
    return op == SendOp::send_imm || op == SendOp::write_imm;
}

// SEND / WRITE opcodes of RC (UC: | 0x20), by position: first, middle,
// last, last with immediate, only, only with immediate.
std::uint8_t data_opcode(QpTransport t, SendOp op, net::SegmentPosition pos) noexcept {
    if (t == QpTransport::ud)
        return static_cast<std::uint8_t>(op == SendOp::send_imm ? RoceOpcode::ud_send_only_imm
                                                                : RoceOpcode::ud_send_only);
    const bool write = op == SendOp::write || op == SendOp::write_imm;
    std::uint8_t base = write ? 0x06 : 0x00;
    switch (pos) {
    case net::SegmentPosition::first:
        break;
    case net::SegmentPosition::middle:
        base += 1;
        break;
    case net::SegmentPosition::last:
        if (op == SendOp::send_inv) return static_cast<std::uint8_t>(RoceOpcode::rc_send_last_inv);
        base += has_imm(op) ? 3 : 2;
        break;
    case net::SegmentPosition::only:
        if (op == SendOp::send_inv) return static_cast<std::uint8_t>(RoceOpcode::rc_send_only_inv);
        base += has_imm(op) ? 5 : 4;
        break;
    }
    return static_cast<std::uint8_t>(t == QpTransport::uc ? base | 0x20 : base);
}

} // namespace

int RoceQp::post_send(const SendWr& wr, std::span<const Sge> sges, std::uint64_t now_ns) noexcept {
    now_ns_ = now_ns;
    const QpTransport t = attrs_.type;
    if ((t == QpTransport::ud && wr.op != SendOp::send && wr.op != SendOp::send_imm) ||
        (t == QpTransport::uc && (is_read_or_atomic(wr.op) || wr.op == SendOp::send_inv)))
        return EINVAL;
    if (sges.size() > limits_.max_send_sge) return EINVAL;
    std::uint64_t total = 0;
    for (const Sge& g : sges)
        total += g.length;
    if (wr.inline_data && (total > limits_.max_inline || is_read_or_atomic(wr.op))) return EINVAL;
    if (is_atomic(wr.op) && (sges.empty() || sges[0].length < 8)) return EINVAL;
    if (wr.op == SendOp::atomic_write && (t != QpTransport::rc || attrs_.xrc || !sges.empty()))
        return EINVAL; // its 8 bytes travel in the WR; RC only (no XRC opcode for it)
    if (total > kMaxMessage) return EINVAL;
    if (sq_head_ - sq_tail_ - tm_inflight_ >= user_cap_) return ENOMEM; // rendezvous slots apart

    fill_head_slot(wr, sges,
                   is_atomic(wr.op) || wr.op == SendOp::atomic_write ? 8 : static_cast<std::uint32_t>(total));
    if (state_ == TransportState::error) {
        // Flushed at once, in order: everything before it was flushed already.
        ++sq_head_;
        fail_send(sq_tail_, IBV_WC_WR_FLUSH_ERR);
        return 0;
    }
    ++sq_head_;
    if (state_ == TransportState::rts) pump(now_ns);
    return 0;
}

void RoceQp::fill_head_slot(const SendWr& wr, std::span<const Sge> sges, std::uint32_t length) noexcept {
    SendSlot& s = slot(sq_head_);
    s = SendSlot{};
    s.wr = wr;
    s.length = length;
    if (wr.inline_data) {
        std::uint8_t* dst = slot_inline(sq_head_);
        for (const Sge& g : sges) {
            std::memcpy(dst, reinterpret_cast<const void*>(g.addr), g.length);
            dst += g.length;
        }
    } else {
        s.num_sge = static_cast<std::uint32_t>(sges.size());
        std::copy(sges.begin(), sges.end(), slot_sges(sq_head_));
    }
}

// Collects [offset, offset + len) of slot idx's data into pieces_ (local
// read access checked on each SGE); false on a protection failure.
bool RoceQp::gather(std::uint32_t idx, std::uint32_t offset, std::uint32_t len) noexcept {
    pieces_.clear();
    SendSlot& s = slot(idx);
    if (len == 0) return true;
    if (s.wr.inline_data) {
        pieces_.emplace_back(slot_inline(idx) + offset, len);
        return true;
    }
    const Sge* g = slot_sges(idx);
    for (std::uint32_t i = 0; i < s.num_sge && len > 0; ++i) {
        if (offset >= g[i].length) {
            offset -= g[i].length;
            continue;
        }
        const std::uint32_t n = std::min(len, g[i].length - offset);
        const std::uint8_t* p = mrs_.translate(g[i].lkey, attrs_.pd, g[i].addr + offset, n, false);
        if (p == nullptr) return false;
        pieces_.emplace_back(p, n);
        len -= n;
        offset = 0;
    }
    return len == 0;
}

void RoceQp::arm_ack_timer(std::uint64_t now_ns, bool restart) noexcept {
    if (attrs_.type != QpTransport::rc) return;
    if (una_ == next_psn_) {
        ack_deadline_ = kNoDeadline;
        return;
    }
    if (ack_deadline_ != kNoDeadline && !restart) return;
    const std::uint64_t t = ack_timeout_ns(attrs_.timeout);
    ack_deadline_ = t == kNoDeadline ? kNoDeadline : now_ns + t;
    if (ack_deadline_ != kNoDeadline) host_.deadline_changed(ack_deadline_);
}

bool RoceQp::send_packet(std::uint32_t idx, std::uint32_t pkt, std::uint64_t now_ns) noexcept {
    SendSlot& s = slot(idx);
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    const std::uint32_t offset = pkt * mtu;
    const std::uint32_t len = std::min(mtu, s.length - std::min(s.length, offset));
    if (!gather(idx, offset, len)) {
        fail_send(idx, IBV_WC_LOC_PROT_ERR);
        enter_error();
        return false;
    }
    net::SegmentPosition pos = net::SegmentPosition::only;
    if (s.npkts > 1)
        pos = pkt == 0             ? net::SegmentPosition::first
              : pkt + 1 == s.npkts ? net::SegmentPosition::last
                                   : net::SegmentPosition::middle;
    net::RoceHeaders h;
    h.bth.opcode = data_opcode(attrs_.type, s.wr.op, pos);
    h.bth.solicited =
        s.wr.solicited && (pos == net::SegmentPosition::last || pos == net::SegmentPosition::only);
    h.bth.pkey = attrs_.pkey;
    h.bth.psn = net::psn_add(s.first_psn, pkt);
    const net::RocePath* path = &attrs_.path;
    if (attrs_.type == QpTransport::ud) {
        path = &s.wr.ud_path;
        h.bth.dest_qp = s.wr.remote_qpn;
        h.deth.qkey = (s.wr.remote_qkey & 0x80000000u) ? attrs_.qkey : s.wr.remote_qkey;
        h.deth.src_qp = attrs_.qpn;
    } else {
        h.bth.dest_qp = attrs_.dest_qpn;
    }
    h.xrceth.srqn = s.wr.xrc_srqn; // on the wire only under an XRC opcode
    if (attrs_.type == QpTransport::rc)
        h.bth.ack_req = pos == net::SegmentPosition::last || pos == net::SegmentPosition::only ||
                        pkt % limits_.ack_every == limits_.ack_every - 1;
    const net::OpcodeInfo* info = net::opcode_info(h.bth.opcode);
    if (info->has(net::kExtReth)) h.reth = {s.wr.remote_addr, s.wr.rkey, s.length};
    if (info->immediate()) h.imm.value = s.wr.imm;
    if (info->invalidate()) h.ieth.rkey = s.wr.rkey;
    if (net::psn_before(h.bth.psn, sent_psn_)) {
        counters_.retransmitted.add();
        if (port_counters_) port_counters_->retransmitted.add();
    } else {
        sent_psn_ = net::psn_add(h.bth.psn, 1);
    }
    transmit(*path, h, pieces_, now_ns);
    arm_ack_timer(now_ns, false);
    return true;
}

// A READ request for what is still missing from packet `pkt` on (a
// re-request after a lost response starts there, VA and length adjusted:
// IBA 9.7.4.1.3); atomics and ATOMIC WRITE are one packet.
bool RoceQp::send_read_request(std::uint32_t idx, std::uint32_t pkt,
                               std::uint64_t now_ns) noexcept {
    SendSlot& s = slot(idx);
    net::RoceHeaders h;
    h.bth.pkey = attrs_.pkey;
    h.bth.dest_qp = attrs_.dest_qpn;
    h.bth.ack_req = true;
    h.bth.psn = net::psn_add(s.first_psn, pkt);
    h.xrceth.srqn = s.wr.xrc_srqn;
    std::uint8_t data[8];
    const std::span<const std::uint8_t> piece(data, 8);
    std::span<const std::span<const std::uint8_t>> payload;
    if (s.wr.op == SendOp::atomic_write) {
        h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::rc_atomic_write);
        h.reth = {s.wr.remote_addr, s.wr.rkey, 8};
        std::memcpy(data, &s.wr.compare_add, 8);
        payload = {&piece, 1};
    } else if (s.wr.op == SendOp::read) {
        const std::uint32_t off = pkt * net::mtu_bytes(attrs_.mtu);
        h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::rc_read_request);
        h.reth = {s.wr.remote_addr + off, s.wr.rkey, s.length - std::min(s.length, off)};
    } else {
        const bool cas = s.wr.op == SendOp::cmp_swp;
        h.bth.opcode =
            static_cast<std::uint8_t>(cas ? RoceOpcode::rc_compare_swap : RoceOpcode::rc_fetch_add);
        h.atomic_eth = {s.wr.remote_addr, s.wr.rkey, cas ? s.wr.swap : s.wr.compare_add,
                        cas ? s.wr.compare_add : 0};
    }
    if (net::psn_before(h.bth.psn, sent_psn_)) {
        counters_.retransmitted.add();
        if (port_counters_) port_counters_->retransmitted.add();
    } else {
        sent_psn_ = net::psn_add(s.first_psn, s.npkts);
    }
    transmit(attrs_.path, h, payload, now_ns);
    arm_ack_timer(now_ns, false);
    return true;
}

// Sends what the window, the READ/atomic limit, a fence and an RNR wait
// allow: first what go_back rewound, then new WQEs.
// In SQD only WQEs already started are (re)sent.
void RoceQp::pump(std::uint64_t now_ns) noexcept {
    const bool sqd = state_ == TransportState::sqd;
    if ((state_ != TransportState::rts && !sqd) || rnr_deadline_ != kNoDeadline) return;
    const bool rc = attrs_.type == QpTransport::rc;
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    bool local = false; // a local WR was reached: retire may complete it
    while (send_idx_ != sq_head_ &&
           (state_ == TransportState::rts || state_ == TransportState::sqd)) {
        SendSlot& s = slot(send_idx_);
        if (sqd && !s.assigned) break;
        if (s.wr.op == SendOp::local) { // no packets: done once reached, in order
            if (!s.assigned) {
                s.assigned = s.done = true;
                s.first_psn = next_psn_;
                assigned_ = send_idx_ + 1;
            }
            local = true;
            if (s.wr.local_status != IBV_WC_SUCCESS) break; // nothing after it goes
            ++send_idx_;
            send_pkt_ = 0;
            continue;
        }
        if (s.assigned && s.done) { // acknowledged while go-back-N was about to resend it
            ++send_idx_;
            send_pkt_ = 0;
            continue;
        }
        if (!s.assigned) {
            if (rc) {
                if (is_read_or_atomic(s.wr.op) &&
                    rd_in_flight_ >= std::max<std::uint32_t>(1, attrs_.max_rd_atomic))
                    return;
                if (s.wr.fence && rd_in_flight_ > 0) return;
                if (net::psn_diff(next_psn_, una_) >= static_cast<std::int32_t>(limits_.window))
                    return;
            }
            if (attrs_.type == QpTransport::ud && s.length > mtu) {
                fail_send(send_idx_, IBV_WC_LOC_LEN_ERR);
                enter_error();
                return;
            }
            if (is_read_or_atomic(s.wr.op)) {
                // The local buffer must take the response (checked before the request goes;
                // an ATOMIC WRITE has none).
                const Sge* g = slot_sges(send_idx_);
                for (std::uint32_t i = 0; i < s.num_sge; ++i)
                    if (g[i].length &&
                        !mrs_.translate(g[i].lkey, attrs_.pd, g[i].addr,
                                        is_atomic(s.wr.op) ? 8 : g[i].length, true)) {
                        fail_send(send_idx_, IBV_WC_LOC_PROT_ERR);
                        enter_error();
                        return;
                    }
                ++rd_in_flight_;
            }
            s.npkts = is_atomic(s.wr.op) ? 1 : std::max(1u, (s.length + mtu - 1) / mtu);
            s.first_psn = next_psn_;
            next_psn_ = net::psn_add(next_psn_, s.npkts);
            s.assigned = true;
            assigned_ = send_idx_ + 1;
            send_pkt_ = 0;
        }
        if (is_read_or_atomic(s.wr.op)) {
            send_read_request(send_idx_, send_pkt_, now_ns);
        } else {
            while (send_pkt_ < s.npkts) {
                if (rc && net::psn_before(net::psn_add(s.first_psn, send_pkt_), una_)) {
                    ++send_pkt_; // acknowledged meanwhile
                    continue;
                }
                if (rc && net::psn_diff(net::psn_add(s.first_psn, send_pkt_), una_) >=
                              static_cast<std::int32_t>(limits_.window))
                    return;
                if (!send_packet(send_idx_, send_pkt_, now_ns)) return;
                ++send_pkt_;
            }
            if (!rc) s.done = true; // UC / UD complete once sent
        }
        ++send_idx_;
        send_pkt_ = 0;
    }
    if (!rc || local) retire();
}

// Go-back-N: the next packet sent is `psn` (a NAK's, a timeout's oldest
// unacknowledged, a READ's first missing response). Everything before it
// stays acknowledged.
void RoceQp::go_back(std::uint32_t psn) noexcept {
    for (std::uint32_t i = sq_tail_; i != assigned_; ++i) {
        SendSlot& s = slot(i);
        const std::int32_t d = net::psn_diff(psn, s.first_psn);
        if (d < 0 || d >= static_cast<std::int32_t>(s.npkts)) continue;
        send_idx_ = i;
        send_pkt_ = static_cast<std::uint32_t>(d);
        if (s.wr.op == SendOp::read)
            send_pkt_ = std::max(send_pkt_, s.read_done / net::mtu_bytes(attrs_.mtu));
        return;
    }
    // Not in flight (everything was acknowledged meanwhile): carry on from the unsent.
    send_idx_ = assigned_;
    send_pkt_ = 0;
}

} // namespace rdmasim::datapath
