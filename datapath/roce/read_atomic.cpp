// The RC responder's READ, atomic and ATOMIC WRITE requests: rkey checks,
// READ responses, atomics executed once and their results saved for
// duplicates. (datapath/README.md, "RoCE transport")
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
        h.aeth.msn = msn_;
        const std::uint32_t n = std::min(mtu, len - k * mtu);
        const std::span<const std::uint8_t> piece(src ? src + k * mtu : nullptr, src ? n : 0);
        transmit(attrs_.path, h, {&piece, 1}, now_ns);
        counters_.read_responses_sent.add();
        if (port_counters_) port_counters_->read_responses_sent.add();
    }
}

RoceRx RoceQp::rc_read(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    const net::Reth& r = p.headers.reth;
    const std::uint8_t* src = nullptr;
    if (attrs_.access & IBV_ACCESS_REMOTE_READ)
        src = r.dma_len ? mrs_.translate_remote(r.rkey, resp_pd_, r.va, r.dma_len, kRemoteRead, attrs_.qpn)
                        : nullptr;
    if (!(attrs_.access & IBV_ACCESS_REMOTE_READ) || (src == nullptr && r.dma_len > 0))
        return responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn,
                              now_ns);
    const std::uint32_t mtu = net::mtu_bytes(attrs_.mtu);
    const std::uint32_t npkts = std::max(1u, (r.dma_len + mtu - 1) / mtu);
    const std::uint32_t n = std::clamp<std::uint32_t>(attrs_.max_dest_rd_atomic, 1,
                                                      static_cast<std::uint32_t>(rd_slots_.size()));
    rd_slots_[rd_next_++ % n] = {true, false, false, psn, npkts, 0, r.va, r.rkey, r.dma_len};
    msn_ = net::psn_add(msn_, 1);
    epsn_ = net::psn_add(psn, npkts);
    seq_nak_sent_ = false;
    unacked_ = 0;
    send_read_responses(psn, src, r.dma_len, now_ns);
    return RoceRx::consumed;
}

RoceRx RoceQp::rc_atomic(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    const std::uint32_t psn = p.headers.bth.psn;
    const net::AtomicEth& a = p.headers.atomic_eth;
    if (a.va % 8 != 0)
        return responder_fail(RoceRx::invalid_request, net::NakCode::invalid_request, psn, now_ns);
    std::uint8_t* dst = (attrs_.access & IBV_ACCESS_REMOTE_ATOMIC)
                            ? mrs_.translate_remote(a.rkey, resp_pd_, a.va, 8, kRemoteAtomic, attrs_.qpn)
                            : nullptr;
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
    const std::uint32_t n = std::clamp<std::uint32_t>(attrs_.max_dest_rd_atomic, 1,
                                                      static_cast<std::uint32_t>(rd_slots_.size()));
    rd_slots_[rd_next_++ % n] = {true, true, false, psn, 1, orig};
    msn_ = net::psn_add(msn_, 1);
    epsn_ = net::psn_add(psn, 1);
    seq_nak_sent_ = false;
    unacked_ = 0;
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
    std::uint8_t* dst = (attrs_.access & IBV_ACCESS_REMOTE_WRITE)
                            ? mrs_.translate_remote(r.rkey, resp_pd_, r.va, 8, kRemoteWrite, attrs_.qpn)
                            : nullptr;
    if (dst == nullptr)
        return responder_fail(RoceRx::remote_access, net::NakCode::remote_access_error, psn,
                              now_ns);
    std::uint64_t v;
    std::memcpy(&v, p.payload.data(), 8); // the payload's bytes, in memory order
    if (reinterpret_cast<std::uintptr_t>(dst) % 8 == 0)
        std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(dst)).store(v);
    else // a host mapping not 8-aligned where the iova is: no atomicity to offer
        std::memcpy(dst, &v, 8);
    const std::uint32_t n = std::clamp<std::uint32_t>(attrs_.max_dest_rd_atomic, 1,
                                                      static_cast<std::uint32_t>(rd_slots_.size()));
    rd_slots_[rd_next_++ % n] = {true, false, true, psn, 1, 0};
    msn_ = net::psn_add(msn_, 1);
    epsn_ = net::psn_add(psn, 1);
    seq_nak_sent_ = false;
    unacked_ = 0;
    send_read_responses(psn, nullptr, 0, now_ns);
    return RoceRx::consumed;
}

} // namespace rdmasim::datapath
