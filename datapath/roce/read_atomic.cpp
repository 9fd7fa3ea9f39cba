// The RC responder's READ, atomic and ATOMIC WRITE requests: rkey checks,
// READ responses, atomics executed once and their results saved for
// duplicates; duplicate requests of every kind. (datapath/README.md, "RoCE transport")
#include <infiniband/verbs.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>

#include "datapath/mr_copy.hpp"
#include "datapath/roce/qp.hpp"

namespace rdmasim::datapath {

using net::RoceOpcode;

void RoceQp::send_read_responses(std::uint32_t psn, MrRef src, std::uint32_t len,
                                 std::uint64_t now_ns) noexcept {
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    std::array<std::uint8_t, net::mtu_bytes(net::PathMtu::mtu4096)> bounce; // ODP bytes; not zeroed
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
        std::span<const std::uint8_t> piece(src.host ? src.host + k * mtu : nullptr,
                                            src.host ? n : 0);
        if (src.odp && n != 0) {
            // Unmapped since remote_target checked it (the program's munmap
            // racing the READ): the rest goes unanswered; the requester asks
            // again and rc_duplicate_read NAKs it.
            if (!odp_read(bounce.data(), piece.data(), n)) return;
            piece = {bounce.data(), n};
        }
        transmit(attrs_.path, h, {&piece, 1}, now_ns);
        note(&RoceCounters::read_responses_sent);
    }
}

MrRef RoceQp::remote_target(std::uint32_t qp_access, std::uint32_t rkey, std::uint64_t va,
                            std::uint32_t len, RemoteAccess kind) const noexcept {
    if (!(attrs_.access & qp_access)) return {};
    const MrRef r = mrs_.translate_remote_ref(rkey, resp_.pd, va, len, kind, attrs_.qpn);
    if (r.odp && kind == kRemoteRead && !odp_readable(r.host, len)) [[unlikely]]
        return {};
    return r;
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
    const MrRef src =
        r.dma_len ? remote_target(IBV_ACCESS_REMOTE_READ, r.rkey, r.va, r.dma_len, kRemoteRead)
                  : MrRef{};
    if (!(attrs_.access & IBV_ACCESS_REMOTE_READ) || (src.host == nullptr && r.dma_len > 0))
        return responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn,
                              now_ns);
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    const std::uint32_t npkts = std::max(1u, (r.dma_len + mtu - 1) / mtu);
    keep_rd_atomic({.valid = true, .psn = psn, .npkts = npkts, .va = r.va, .rkey = r.rkey,
                    .len = r.dma_len});
    send_read_responses(psn, src, r.dma_len, now_ns);
    return RoceRx::consumed;
}

namespace {
// CMP_SWP or FETCH_ADD on the 8 bytes at `dst`; `orig` the value found.
// False (nothing written) when ODP memory is unmapped or read-only. An ODP
// target is read, then written: atomic against this device's other atomics
// (all run under the port lock, IBV_ATOMIC_HCA), not against the CPU.
bool execute_atomic(MrRef dst, net::RoceOp op, const net::AtomicEth& a,
                    std::uint64_t& orig) noexcept {
    if (!dst.odp && reinterpret_cast<std::uintptr_t>(dst.host) % 8 == 0) {
        std::atomic_ref<std::uint64_t> ref(*reinterpret_cast<std::uint64_t*>(dst.host));
        if (op == net::RoceOp::compare_swap) {
            orig = a.compare;
            ref.compare_exchange_strong(orig, a.swap_add); // orig: the value found either way
        } else {
            orig = ref.fetch_add(a.swap_add);
        }
        return true;
    }
    // ODP, or an MR whose host mapping is not 8-aligned where the iova is
    // (no atomicity to offer).
    if (!mr_read(&orig, dst, 8)) return false;
    const std::uint64_t v = op == net::RoceOp::compare_swap
                                ? (orig == a.compare ? a.swap_add : orig)
                                : orig + a.swap_add;
    return mr_write(dst, &v, 8); // even unchanged: an ODP page must be writable, as mlx5 faults it
}
} // namespace

RoceRx RoceQp::rc_atomic(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    const net::AtomicEth& a = p.headers.atomic_eth;
    if (a.va % 8 != 0)
        return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request, psn, now_ns);
    const MrRef dst = remote_target(IBV_ACCESS_REMOTE_ATOMIC, a.rkey, a.va, 8, kRemoteAtomic);
    std::uint64_t orig;
    if (dst.host == nullptr || !execute_atomic(dst, p.info->op, a, orig))
        return responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn,
                              now_ns);
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
    const MrRef dst = remote_target(IBV_ACCESS_REMOTE_WRITE, r.rkey, r.va, 8, kRemoteWrite);
    std::uint64_t v;
    std::memcpy(&v, p.payload.data(), 8); // the payload's bytes, in memory order
    if (dst.host != nullptr && !dst.odp && reinterpret_cast<std::uintptr_t>(dst.host) % 8 == 0)
        std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(dst.host)).store(v);
    else if (dst.host == nullptr || !mr_write(dst, &v, 8)) // ODP or not 8-aligned: no atomicity
        return responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn,
                              now_ns);
    keep_rd_atomic({.valid = true, .atomic_write = true, .psn = psn, .npkts = 1});
    send_read_responses(psn, {}, 0, now_ns);
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
                send_read_responses(psn, {}, 0, now_ns);
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
        const MrRef src =
            r.dma_len ? remote_target(IBV_ACCESS_REMOTE_READ, r.rkey, r.va, r.dma_len, kRemoteRead)
                      : MrRef{};
        if (src.host != nullptr || r.dma_len == 0) {
            send_read_responses(psn, src, r.dma_len, now_ns);
            return;
        }
        // A key that is still good but whose ODP pages went away: NAK it.
        const MrRef key =
            mrs_.translate_remote_ref(r.rkey, resp_.pd, r.va, r.dma_len, kRemoteRead, attrs_.qpn);
        if (key.odp)
            (void)responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn,
                                 now_ns);
        return;
    }
}

} // namespace rdmasim::datapath
