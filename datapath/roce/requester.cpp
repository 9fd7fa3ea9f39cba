// The requester (rxe_req.c): posting, segmentation at the path MTU, PSN
// assignment, the send window, READ / atomic credits and fences, go-back-N.
// (datapath/README.md, "RoCE transport")
#include <infiniband/verbs.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstring>

#include "datapath/mr_copy.hpp"
#include "datapath/roce/port.hpp"
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

// 0, or why the WR cannot be posted (post_send); `total` gets its length.
int RoceQp::check_send(const SendWr& wr, std::span<const Sge> sges,
                       std::uint64_t& total) const noexcept {
    const QpTransport t = attrs_.type;
    if ((t == QpTransport::ud && wr.op != SendOp::send && wr.op != SendOp::send_imm) ||
        (t == QpTransport::uc && (is_read_or_atomic(wr.op) || wr.op == SendOp::send_inv)))
        return EINVAL;
    if (sges.size() > limits_.max_send_sge) return EINVAL;
    total = 0;
    for (const Sge& g : sges)
        total += g.length;
    if (wr.inline_data && (total > limits_.max_inline || is_read_or_atomic(wr.op))) return EINVAL;
    if (is_atomic(wr.op) && (sges.empty() || sges[0].length < 8)) return EINVAL;
    if (wr.op == SendOp::atomic_write && (t != QpTransport::rc || attrs_.xrc || !sges.empty()))
        return EINVAL; // its 8 bytes travel in the WR; RC only (no XRC opcode for it)
    if (total > kMaxMessage) return EINVAL;
    if (sq_.user_size() >= sq_.user_cap) return ENOMEM; // rendezvous slots apart
    return 0;
}

int RoceQp::post_send(const SendWr& wr, std::span<const Sge> sges, std::uint64_t now_ns) noexcept {
    now_ns_ = now_ns;
    std::uint64_t total = 0;
    if (const int err = check_send(wr, sges, total)) return err;
    fill_head_slot(wr, sges,
                   is_atomic(wr.op) || wr.op == SendOp::atomic_write ? 8 : static_cast<std::uint32_t>(total));
    ++sq_.head;
    if (state_ == TransportState::error) {
        // Flushed at once, in order: everything before it was flushed already.
        fail_send(sq_.tail, IBV_WC_WR_FLUSH_ERR);
        return 0;
    }
    if (state_ == TransportState::rts) pump(now_ns);
    return 0;
}

void RoceQp::fill_head_slot(const SendWr& wr, std::span<const Sge> sges, std::uint32_t length) noexcept {
    SendSlot& s = sq_.slot(sq_.head);
    s = SendSlot{};
    s.wr = wr;
    s.length = length;
    if (wr.inline_data) {
        std::uint8_t* dst = sq_.inline_of(sq_.head);
        for (const Sge& g : sges) {
            std::memcpy(dst, reinterpret_cast<const void*>(g.addr), g.length);
            dst += g.length;
        }
    } else {
        s.num_sge = static_cast<std::uint32_t>(sges.size());
        std::copy(sges.begin(), sges.end(), sq_.sges_of(sq_.head));
    }
}

// Collects [offset, offset + len) of slot idx's data into req_.pieces (local
// read access checked on each SGE); false on a protection failure. ODP
// pieces are read into `bounce` (len <= its size) and point there; false
// when one is unmapped.
bool RoceQp::gather(std::uint32_t idx, std::uint32_t offset, std::uint32_t len,
                    std::uint8_t* bounce) noexcept {
    req_.pieces.clear();
    SendSlot& s = sq_.slot(idx);
    if (len == 0) return true;
    if (s.wr.inline_data) {
        req_.pieces.emplace_back(sq_.inline_of(idx) + offset, len);
        return true;
    }
    const Sge* g = sq_.sges_of(idx);
    for (std::uint32_t i = 0; i < s.num_sge && len > 0; ++i) {
        if (offset >= g[i].length) {
            offset -= g[i].length;
            continue;
        }
        const std::uint32_t n = std::min(len, g[i].length - offset);
        const MrRef p = mrs_.translate_ref(g[i].lkey, attrs_.pd, g[i].addr + offset, n, false);
        if (p.host == nullptr) return false;
        if (p.odp) [[unlikely]] {
            if (!odp_read(bounce, p.host, n)) return false;
            req_.pieces.emplace_back(bounce, n);
            bounce += n;
        } else {
            req_.pieces.emplace_back(p.host, n);
        }
        len -= n;
        offset = 0;
    }
    return len == 0;
}

// The timer runs while a sent packet is unacknowledged (IBA 9.7.6.1.3):
// PSNs taken by WQEs that wait for their turn or for the wire are not on
// the wire, and a QP waiting with nothing in flight never times out.
void RoceQp::arm_ack_timer(std::uint64_t now_ns, bool restart) noexcept {
    if (attrs_.type != QpTransport::rc) return;
    if (!net::psn_before(comp_.una, req_.sent_psn)) {
        comp_.ack_deadline = kNoDeadline;
        return;
    }
    if (comp_.ack_deadline != kNoDeadline && !restart) return;
    const std::uint64_t t = ack_timeout_ns(attrs_.timeout);
    comp_.ack_deadline = t == kNoDeadline ? kNoDeadline : now_ns + t;
    if (comp_.ack_deadline != kNoDeadline) timer_armed(comp_.ack_deadline);
}

bool RoceQp::send_packet(std::uint32_t idx, std::uint32_t pkt, std::uint64_t now_ns) noexcept {
    SendSlot& s = sq_.slot(idx);
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    const std::uint32_t offset = pkt * mtu;
    const std::uint32_t len = std::min(mtu, s.length - std::min(s.length, offset));
    // ODP bytes of this packet (not zeroed: gather writes what it hands out).
    std::array<std::uint8_t, net::mtu_bytes(net::PathMtu::mtu4096)> bounce;
    if (!gather(idx, offset, len, bounce.data())) {
        fail_and_stop(idx, IBV_WC_LOC_PROT_ERR);
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
        h.bth.ack_req =
            pos == net::SegmentPosition::last || pos == net::SegmentPosition::only ||
            pkt % limits_.ack_every == limits_.ack_every - 1 || port_.turn_ending() ||
            net::psn_diff(h.bth.psn, comp_.una) + 1 >= in_flight_limit(); // fills the window
    const net::OpcodeInfo* info = net::opcode_info(h.bth.opcode);
    if (info->has(net::kExtReth)) h.reth = {s.wr.remote_addr, s.wr.rkey, s.length};
    if (info->immediate()) h.imm.value = s.wr.imm;
    if (info->invalidate()) h.ieth.rkey = s.wr.rkey;
    note_sent(h.bth.psn, net::psn_add(h.bth.psn, 1));
    port_.request_sent();
    transmit(*path, h, req_.pieces, now_ns);
    arm_ack_timer(now_ns, false);
    return true;
}

// A READ request for what is still missing from packet `pkt` on (a
// re-request after a lost response starts there, VA and length adjusted:
// IBA 9.7.4.1.3); atomics and ATOMIC WRITE are one packet.
bool RoceQp::send_read_request(std::uint32_t idx, std::uint32_t pkt,
                               std::uint64_t now_ns) noexcept {
    SendSlot& s = sq_.slot(idx);
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
    note_sent(h.bth.psn, net::psn_add(s.first_psn, s.npkts));
    port_.request_sent();
    transmit(attrs_.path, h, payload, now_ns);
    arm_ack_timer(now_ns, false);
    return true;
}

// A packet at `psn` goes out: a retransmission when `psn` was sent before;
// otherwise everything before `after` now has been.
void RoceQp::note_sent(std::uint32_t psn, std::uint32_t after) noexcept {
    if (net::psn_before(psn, req_.sent_psn))
        note(&RoceCounters::retransmitted);
    else
        req_.sent_psn = after;
}

bool RoceQp::wire_has_room() noexcept {
    if (port_.requester_may_send(*this)) [[likely]]
        return true;
    port_.wait_for_room(*this);
    return false;
}

// Sends what the window, the READ/atomic limit, a fence, an RNR wait and
// the wire's room allow: first what go_back rewound, then new WQEs.
// In SQD only WQEs already started are (re)sent.
void RoceQp::pump(std::uint64_t now_ns) noexcept {
    const bool sqd = state_ == TransportState::sqd;
    if ((state_ != TransportState::rts && !sqd) || req_.rnr_deadline != kNoDeadline) return;
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    bool local = false; // a local WR was reached: retire may complete it
    while (req_.send_idx != sq_.head &&
           (state_ == TransportState::rts || state_ == TransportState::sqd)) {
        SendSlot& s = sq_.slot(req_.send_idx);
        if (sqd && !s.assigned) break;
        if (!wire_has_room()) break;
        if (s.wr.op == SendOp::local) { // no packets: done once reached, in order
            if (!s.assigned) {
                s.assigned = s.done = true;
                s.first_psn = req_.next_psn;
                req_.assigned = req_.send_idx + 1;
            }
            local = true;
            if (s.wr.local_status != IBV_WC_SUCCESS) break; // nothing after it goes
        } else if (!(s.assigned && s.done)) { // else acknowledged while go-back-N was about to resend it
            if (!s.assigned && assign_psns(s, mtu) != Admit::go) return;
            if (is_read_or_atomic(s.wr.op))
                send_read_request(req_.send_idx, req_.send_pkt, now_ns);
            else if (!send_data_packets(s, now_ns))
                return;
        }
        ++req_.send_idx;
        req_.send_pkt = 0;
    }
    if (attrs_.type != QpTransport::rc || local) retire();
}

// A new WQE's turn: it waits for READ / atomic credits, a fence or the
// window (RC); a UD message over the MTU, or a READ / atomic whose local
// buffer cannot take the answer, fails it. Then its PSNs are taken.
RoceQp::Admit RoceQp::assign_psns(SendSlot& s, std::uint32_t mtu) noexcept {
    if (attrs_.type == QpTransport::rc) {
        if (is_read_or_atomic(s.wr.op) &&
            req_.rd_in_flight >= std::max<std::uint32_t>(1, attrs_.max_rd_atomic))
            return Admit::wait;
        if (s.wr.fence && req_.rd_in_flight > 0) return Admit::wait;
        if (net::psn_diff(req_.next_psn, comp_.una) >= in_flight_limit()) return Admit::wait;
    }
    if (attrs_.type == QpTransport::ud && s.length > mtu) {
        fail_and_stop(req_.send_idx, IBV_WC_LOC_LEN_ERR);
        return Admit::failed;
    }
    if (is_read_or_atomic(s.wr.op)) {
        // The local buffer must take the response (checked before the request goes;
        // an ATOMIC WRITE has none).
        const Sge* g = sq_.sges_of(req_.send_idx);
        for (std::uint32_t i = 0; i < s.num_sge; ++i) {
            const std::uint32_t n = is_atomic(s.wr.op) ? 8 : g[i].length;
            if (g[i].length && !mrs_.translate_ref(g[i].lkey, attrs_.pd, g[i].addr, n, true).host) {
                fail_and_stop(req_.send_idx, IBV_WC_LOC_PROT_ERR);
                return Admit::failed;
            }
        }
        ++req_.rd_in_flight;
    }
    s.npkts = is_atomic(s.wr.op) ? 1 : std::max(1u, (s.length + mtu - 1) / mtu);
    s.first_psn = req_.next_psn;
    req_.next_psn = net::psn_add(req_.next_psn, s.npkts);
    s.assigned = true;
    req_.assigned = req_.send_idx + 1;
    req_.send_pkt = 0;
    return Admit::go;
}

// The SEND / WRITE packets of the WQE at send_idx from send_pkt on, as far
// as the window allows (RC); false when sending stops here (window full, or
// the WQE failed). UC and UD complete once sent.
bool RoceQp::send_data_packets(SendSlot& s, std::uint64_t now_ns) noexcept {
    const bool rc = attrs_.type == QpTransport::rc;
    while (req_.send_pkt < s.npkts) {
        const std::uint32_t psn = net::psn_add(s.first_psn, req_.send_pkt);
        if (rc && net::psn_before(psn, comp_.una)) {
            ++req_.send_pkt; // acknowledged meanwhile
            continue;
        }
        if (rc && net::psn_diff(psn, comp_.una) >= in_flight_limit()) return false;
        if (!wire_has_room() || !send_packet(req_.send_idx, req_.send_pkt, now_ns)) return false;
        ++req_.send_pkt;
    }
    if (!rc) s.done = true;
    return true;
}

void RoceQp::restart_after_loss(std::uint32_t psn) noexcept {
    go_back(psn);
    if (req_.cwnd > limits_.restart_window) {
        req_.cwnd = limits_.restart_window;
        note(&RoceCounters::slow_restarts);
    }
}

void RoceQp::advance_una(std::uint32_t una) noexcept {
    const std::int32_t acked = net::psn_diff(una, comp_.una);
    comp_.una = una;
    if (acked > 0 && req_.cwnd < limits_.window)
        req_.cwnd = std::min(limits_.window, req_.cwnd + static_cast<std::uint32_t>(acked));
}

// Go-back-N: the next packet sent is `psn` (a NAK's, a timeout's oldest
// unacknowledged, a READ's first missing response). Everything before it
// stays acknowledged.
void RoceQp::go_back(std::uint32_t psn) noexcept {
    for (std::uint32_t i = sq_.tail; i != req_.assigned; ++i) {
        SendSlot& s = sq_.slot(i);
        const std::int32_t d = net::psn_diff(psn, s.first_psn);
        if (d < 0 || d >= static_cast<std::int32_t>(s.npkts)) continue;
        req_.send_idx = i;
        req_.send_pkt = static_cast<std::uint32_t>(d);
        if (s.wr.op == SendOp::read)
            req_.send_pkt = std::max(req_.send_pkt, s.read_done / net::mtu_bytes(attrs_.mtu));
        return;
    }
    // Not in flight (everything was acknowledged meanwhile): carry on from the unsent.
    req_.send_idx = req_.assigned;
    req_.send_pkt = 0;
}

} // namespace rdmasim::datapath
