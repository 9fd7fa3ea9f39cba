// The RC responder's READ, atomic and ATOMIC WRITE requests: rkey checks,
// READ responses, atomics executed once and their results saved for
// duplicates; duplicate requests of every kind. (datapath/README.md, "RoCE transport")
#include <infiniband/verbs.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "datapath/roce/qp.hpp"

namespace rdmasim::datapath {

using net::RoceOpcode;

void RoceQp::send_read_responses(std::uint32_t psn, const std::uint8_t* src, std::uint32_t len,
                                 std::uint64_t now_ns) noexcept {
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    const std::uint32_t npkts = std::max(1u, (len + mtu - 1) / mtu);
    for (std::uint32_t k = 0; k < npkts; ++k) {
        net::RoceHeaders h;
        h.bth.opcode =
            static_cast<std::uint8_t>(npkts == 1       ? RoceOpcode::rc_read_response_only
                                      : k == 0         ? RoceOpcode::rc_read_response_first
                                      : k + 1 == npkts ? RoceOpcode::rc_read_response_last
                                                       : RoceOpcode::rc_read_response_middle);
        h.bth.pkey = attrs_.pkey;
        h.bth.dest_qp = attrs_.dest_qpn;
        h.bth.psn = net::psn_add(psn, k);
        h.aeth.syndrome = net::Aeth::make_syndrome(net::AckKind::ack, net::kCreditsInvalid);
        h.aeth.msn = resp_.msn;
        const std::uint32_t n = std::min(mtu, len - k * mtu);
        const std::span<const std::uint8_t> piece(src ? src + k * mtu : nullptr, src ? n : 0);
        transmit(attrs_.path, h, {&piece, 1}, now_ns);
        note(&RoceCounters::read_responses_sent);
    }
}

std::uint8_t* RoceQp::remote_target(std::uint32_t qp_access, std::uint32_t rkey, std::uint64_t va,
                                    std::uint32_t len, RemoteAccess kind) const noexcept {
    if (!(attrs_.access & qp_access)) return nullptr;
    return mrs_.translate_remote(rkey, resp_.pd, va, len, kind, attrs_.qpn);
}

void RoceQp::keep_rd_atomic(const RdAtomicSlot& done) noexcept {
    const std::uint32_t n = std::clamp<std::uint32_t>(attrs_.max_dest_rd_atomic, 1,
                                                      static_cast<std::uint32_t>(resp_.rd_slots.size()));
    resp_.rd_slots[resp_.rd_next++ % n] = done;
    resp_.msn = net::psn_add(resp_.msn, 1);
    resp_.epsn = net::psn_add(done.psn, done.npkts);
    resp_.seq_nak_sent = false;
    resp_.unacked = 0;
}

RoceRx RoceQp::rc_read(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    const net::Reth& r = p.headers.reth;
    // A zero-length READ needs the QP's access, not a key.
    const std::uint8_t* src = r.dma_len ? remote_target(IBV_ACCESS_REMOTE_READ, r.rkey, r.va,
                                                        r.dma_len, kRemoteRead)
                                        : nullptr;
    if (!(attrs_.access & IBV_ACCESS_REMOTE_READ) || (src == nullptr && r.dma_len > 0))
        return responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn,
                              now_ns);
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    const std::uint32_t npkts = std::max(1u, (r.dma_len + mtu - 1) / mtu);
    keep_rd_atomic({.valid = true, .psn = psn, .npkts = npkts, .va = r.va, .rkey = r.rkey,
                    .len = r.dma_len});
    send_read_responses(psn, src, r.dma_len, now_ns);
    return RoceRx::consumed;
}

RoceRx RoceQp::rc_atomic(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    const net::AtomicEth& a = p.headers.atomic_eth;
    if (a.va % 8 != 0)
        return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request, psn, now_ns);
    std::uint8_t* dst = remote_target(IBV_ACCESS_REMOTE_ATOMIC, a.rkey, a.va, 8, kRemoteAtomic);
    if (dst == nullptr)
        return responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn,
                              now_ns);
    std::uint64_t orig;
    if (reinterpret_cast<std::uintptr_t>(dst) % 8 == 0) {
        std::atomic_ref<std::uint64_t> ref(*reinterpret_cast<std::uint64_t*>(dst));
        if (p.info->op == net::RoceOp::compare_swap) {
            orig = a.compare;
            ref.compare_exchange_strong(orig, a.swap_add); // orig: the value found either way
        } else {
            orig = ref.fetch_add(a.swap_add);
        }
    } else { // an MR whose host mapping is not 8-aligned where the iova is: no atomicity to offer
        std::memcpy(&orig, dst, 8);
        const std::uint64_t v = p.info->op == net::RoceOp::compare_swap
                                    ? (orig == a.compare ? a.swap_add : orig)
                                    : orig + a.swap_add;
        std::memcpy(dst, &v, 8);
    }
    keep_rd_atomic({.valid = true, .atomic = true, .psn = psn, .npkts = 1, .orig = orig});
    send_aeth(static_cast<std::uint8_t>(RoceOpcode::rc_atomic_ack),
              net::Aeth::make_syndrome(net::AckKind::ack, net::kCreditsInvalid), psn, now_ns,
              &orig);
    return RoceRx::consumed;
}

// ATOMIC WRITE (IBA 1.5): 8 bytes at an 8-aligned address, placed in one
// store (no reader sees half of them), with RDMA WRITE's access rules;
// answered, and answered again for a duplicate, by an empty READ RESPONSE
// ONLY (as Linux's rxe). It takes a READ / atomic responder resource.
RoceRx RoceQp::rc_atomic_write(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    const net::Reth& r = p.headers.reth;
    if (r.dma_len != 8 || r.va % 8 != 0)
        return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request, psn, now_ns);
    std::uint8_t* dst = remote_target(IBV_ACCESS_REMOTE_WRITE, r.rkey, r.va, 8, kRemoteWrite);
    if (dst == nullptr)
        return responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn,
                              now_ns);
    std::uint64_t v;
    std::memcpy(&v, p.payload.data(), 8); // the payload's bytes, in memory order
    if (reinterpret_cast<std::uintptr_t>(dst) % 8 == 0)
        std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(dst)).store(v);
    else // a host mapping not 8-aligned where the iova is: no atomicity to offer
        std::memcpy(dst, &v, 8);
    keep_rd_atomic({.valid = true, .atomic_write = true, .psn = psn, .npkts = 1});
    send_read_responses(psn, nullptr, 0, now_ns);
    return RoceRx::consumed;
}

RoceRx RoceQp::rc_duplicate(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    const std::uint32_t n = std::clamp<std::uint32_t>(attrs_.max_dest_rd_atomic, 1,
                                                      static_cast<std::uint32_t>(resp_.rd_slots.size()));
    switch (p.info->op) {
    case net::RoceOp::rdma_read_request:
        rc_duplicate_read(p, now_ns);
        return RoceRx::duplicate;
    case net::RoceOp::atomic_write: // answered again, not written again
        for (std::uint32_t i = 0; i < n; ++i)
            if (resp_.rd_slots[i].valid && resp_.rd_slots[i].atomic_write && resp_.rd_slots[i].psn == psn) {
                send_read_responses(psn, nullptr, 0, now_ns);
                break;
            }
        return RoceRx::duplicate;
    case net::RoceOp::compare_swap:
    case net::RoceOp::fetch_add:
        for (std::uint32_t i = 0; i < n; ++i) {
            const RdAtomicSlot& s = resp_.rd_slots[i];
            if (s.valid && s.atomic && s.psn == psn) {
                send_aeth(static_cast<std::uint8_t>(RoceOpcode::rc_atomic_ack),
                          net::Aeth::make_syndrome(net::AckKind::ack, net::kCreditsInvalid), psn,
                          now_ns, &s.orig);
                break;
            }
        }
        return RoceRx::duplicate;
    default:
        // SEND / WRITE already placed: acknowledge again, up to the last PSN taken.
        if (p.headers.bth.ack_req) ack_now(net::psn_add(resp_.epsn, net::kPsnMask), now_ns);
        return RoceRx::duplicate;
    }
}

// Answered again from the saved request (IBA 9.7.5.1.2): only a READ still
// remembered, and only within it (rxe); its new RETH (a re-request from a
// later PSN carries an adjusted VA and length) is checked again. Anything
// else is dropped unanswered.
void RoceQp::rc_duplicate_read(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    const std::uint32_t n = std::clamp<std::uint32_t>(attrs_.max_dest_rd_atomic, 1,
                                                      static_cast<std::uint32_t>(resp_.rd_slots.size()));
    for (std::uint32_t i = 0; i < n; ++i) {
        const RdAtomicSlot& s = resp_.rd_slots[i];
        const std::int32_t k = net::psn_diff(psn, s.psn);
        if (!s.valid || s.atomic || s.atomic_write || k < 0 || k >= static_cast<std::int32_t>(s.npkts))
            continue;
        const net::Reth& r = p.headers.reth;
        if (r.rkey != s.rkey || r.va < s.va || r.dma_len > s.len || r.va - s.va > s.len - r.dma_len)
            return;
        const std::uint8_t* src =
            remote_target(IBV_ACCESS_REMOTE_READ, r.rkey, r.va, r.dma_len, kRemoteRead);
        if (src != nullptr || r.dma_len == 0) send_read_responses(psn, src, r.dma_len, now_ns);
        return;
    }
}

} // namespace rdmasim::datapath
