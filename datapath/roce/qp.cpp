// RoceQp's life: construction, the counters, framing a packet to the host,
// and modify (states and attributes). (datapath/README.md, "RoCE transport")
#include <infiniband/verbs.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "datapath/roce/qp.hpp"

namespace rdmasim::datapath {

RoceQp::RoceQp(TransportHost& host, const MrTable& mrs, const TransportLimits& limits,
               RoceCounters* port_counters)
    : host_(host), mrs_(mrs), limits_(limits), port_counters_(port_counters) {
    limits_.max_send_sge = std::max(1u, limits_.max_send_sge);
    limits_.max_recv_sge = std::max(1u, limits_.max_recv_sge);
    limits_.window = std::clamp(limits_.window, 1u, 1u << 22);
    limits_.ack_every = std::max(1u, limits_.ack_every);
    user_cap_ = std::bit_ceil(std::max(1u, limits_.max_send_wr));
    // Tag matching: slots only the rendezvous takes, and room for a FIN's TMH inline.
    const std::uint32_t cap = std::bit_ceil(user_cap_ + limits_.tm_reserve);
    if (limits_.tm_reserve > 0) limits_.max_inline = std::max(limits_.max_inline, 16u);
    sq_mask_ = cap - 1;
    slots_.assign(cap, SendSlot{});
    sq_sges_.assign(static_cast<std::size_t>(cap) * limits_.max_send_sge, Sge{});
    sq_inline_.assign(static_cast<std::size_t>(cap) * limits_.max_inline, 0);
    tx_buf_.assign(kMaxRoceFrame, 0);
    pieces_.reserve(std::max(limits_.max_send_sge, limits_.max_recv_sge) + 1);
    rwqe_sges_.assign(limits_.max_recv_sge, Sge{});
    rd_slots_.assign(16, RdAtomicSlot{}); // max_dest_rd_atomic is at most 16 (device caps)
}

void RoceQp::count(RoceRx r) noexcept {
    counters_.count(r);
    if (port_counters_) port_counters_->count(r);
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
    const auto r = net::build_roce_frame(path, *headers, payload, tx_buf_);
    if (r.error != net::RoceBuildError::none) [[unlikely]]
        return; // the transport never builds a frame the codec refuses (sizes fixed above)
    counters_.tx_packets.add();
    counters_.tx_bytes.add(r.len);
    if (port_counters_) {
        port_counters_->tx_packets.add();
        port_counters_->tx_bytes.add(r.len);
    }
    host_.transmit({tx_buf_.data(), r.len}, now_ns);
}

void RoceQp::modify(const TransportAttrs& attrs, TransportState state,
                    std::uint64_t now_ns) noexcept {
    now_ns_ = now_ns;
    const TransportState old = state_;
    attrs_ = attrs;
    resp_pd_ = attrs.pd;
    switch (state) {
    case TransportState::reset:
        sq_tail_ = assigned_ = send_idx_ = sq_head_;
        send_pkt_ = rd_in_flight_ = tm_inflight_ = 0;
        ack_deadline_ = rnr_deadline_ = kNoDeadline;
        read_gap_pending_ = false;
        reset_responder();
        for (auto& s : rd_slots_)
            s = RdAtomicSlot{};
        comm_est_ = false;
        break;
    case TransportState::rtr:
        if (old != TransportState::rtr) {
            epsn_ = attrs.rq_psn & net::kPsnMask;
            msn_ = 0;
            seq_nak_sent_ = false;
            reset_responder();
        }
        break;
    case TransportState::rts:
        if (old != TransportState::rts && old != TransportState::sqd) {
            next_psn_ = una_ = sent_psn_ = attrs.sq_psn & net::kPsnMask;
            retry_left_ = attrs.retry_cnt;
            rnr_left_ = attrs.rnr_retry;
        }
        break;
    case TransportState::error:
        if (old != TransportState::error) {
            state_ = state;
            flush_all();
        }
        return;
    case TransportState::sqd:
        drain_pending_ = old != TransportState::sqd;
        break;
    case TransportState::init:
        break;
    }
    state_ = state;
    if (state_ == TransportState::rts) pump(now_ns);
    if (state_ == TransportState::sqd) retire();
}

} // namespace rdmasim::datapath
