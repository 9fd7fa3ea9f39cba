// Tag matching on the RC responder (datapath/README.md, "Tag matching"): a
// SEND on a QP whose SRQ matches tags starts with an ibv_tmh; EAGER data goes
// to the matched tagged buffer, RNDV makes this QP read the sender's buffer
// (its RVH) and answer with a FIN; NO_TAG and unmatched messages take the
// SRQ's ordinary WQEs, header included. What mlx5's CQEs report for each is
// in device/README.md, "Tag matching".
#include <infiniband/tm_types.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstring>

#include "datapath/roce/qp.hpp"

namespace rdmasim::datapath {

namespace {

constexpr std::uint32_t kTmhSize = sizeof(ibv_tmh); // 16
constexpr std::uint32_t kRvhSize = sizeof(ibv_rvh); // 16

std::uint64_t load_be(const std::uint8_t* p, int n) noexcept {
    std::uint64_t v = 0;
    for (int i = 0; i < n; ++i)
        v = (v << 8) | p[i];
    return v;
}

void store_be(std::uint8_t* p, std::uint64_t v, int n) noexcept {
    for (int i = n - 1; i >= 0; --i, v >>= 8)
        p[i] = static_cast<std::uint8_t>(v);
}

} // namespace

bool RoceQp::tm_take(const net::RocePacket& p) noexcept {
    const auto pl = p.payload;
    tm_skip_ = 0;
    tm_sync_req_ = false;
    tm_tag_ = 0;
    tm_priv_ = 0;
    const std::uint8_t op = pl.size() >= kTmhSize ? pl[0] : static_cast<std::uint8_t>(IBV_TMH_NO_TAG);
    if (op == IBV_TMH_EAGER || op == IBV_TMH_RNDV) {
        const std::uint64_t tag = load_be(pl.data() + 8, 8);
        // A rendezvous is matched only when its RVH is in a one-packet
        // message (max_rndv_hdr_size is below the smallest MTU).
        const bool rndv = op == IBV_TMH_RNDV;
        const bool matchable = !rndv || (p.info->position == net::SegmentPosition::only &&
                                         pl.size() >= kTmhSize + kRvhSize);
        RecvView v;
        if (matchable && host_.match_tag(tag, v)) {
            rwqe_id_ = v.wqe->wr_id;
            rwqe_len_ = v.wqe->total_len;
            rwqe_nsge_ = std::min(v.wqe->num_sge, limits_.max_recv_sge);
            std::copy(v.sges, v.sges + rwqe_nsge_, rwqe_sges_.begin());
            have_wqe_ = true;
            tm_tag_ = tag;
            tm_priv_ = static_cast<std::uint32_t>(load_be(pl.data() + 4, 4));
            if (rndv) {
                tm_msg_ = TmMsg::rndv;
                tm_skip_ = static_cast<std::uint32_t>(pl.size()); // nothing is placed
                tm_va_ = load_be(pl.data() + kTmhSize, 8);
                tm_rkey_ = static_cast<std::uint32_t>(load_be(pl.data() + kTmhSize + 8, 4));
                tm_len_ = static_cast<std::uint32_t>(load_be(pl.data() + kTmhSize + 12, 4));
            } else {
                tm_msg_ = TmMsg::eager;
                tm_skip_ = kTmhSize;
            }
            return true;
        }
        if (!take_recv_wqe()) return false;
        tm_msg_ = TmMsg::unexpected;
        tm_sync_req_ = host_.unexpected_tag();
        return true;
    }
    // NO_TAG, FIN, any other opcode, or a message shorter than a TMH.
    if (!take_recv_wqe()) return false;
    tm_msg_ = TmMsg::no_tag;
    return true;
}

std::uint8_t RoceQp::tm_wc_opcode() const noexcept {
    return tm_msg_ == TmMsg::no_tag ? IBV_WC_TM_NO_TAG : IBV_WC_TM_RECV;
}

std::uint32_t RoceQp::tm_wc_flags() const noexcept {
    switch (tm_msg_) {
    case TmMsg::eager:
        return IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID;
    case TmMsg::rndv:
        return IBV_WC_TM_MATCH; // the data follows: a second completion
    case TmMsg::unexpected:
        return tm_sync_req_ ? IBV_WC_TM_SYNC_REQ : 0;
    default:
        return 0;
    }
}

bool RoceQp::post_internal(const SendWr& wr, std::span<const Sge> sges) noexcept {
    if (state_ != TransportState::rts || sq_head_ - sq_tail_ > sq_mask_) return false;
    std::uint32_t total = 0;
    for (const Sge& g : sges)
        total += g.length;
    fill_head_slot(wr, sges, total);
    ++sq_head_;
    ++tm_inflight_;
    return true;
}

// The matched RNDV's header arrived whole (ACKed): the MATCH completion, then
// the READ of the sender's buffer into the tagged buffer. When this QP
// cannot do it (the RVH's length exceeds the tagged buffer, the QP is not in
// RTS or its rendezvous slots are taken) the one completion says
// IBV_WC_TM_RNDV_INCOMPLETE: software reads the data (mlx5's CONSUMED_SW_RDNV).
void RoceQp::tm_start_rndv(std::uint64_t now_ns) noexcept {
    const bool can = tm_len_ <= rwqe_len_ && state_ == TransportState::rts &&
                     tm_inflight_ + 2 <= limits_.tm_reserve && sq_head_ - sq_tail_ + 2 <= sq_mask_ + 1;
    // MATCH in both: the tag matched, whoever reads the data.
    Cqe c = make_cqe(rwqe_id_, can ? IBV_WC_SUCCESS : IBV_WC_TM_RNDV_INCOMPLETE, IBV_WC_TM_RECV);
    c.wc_flags = IBV_WC_TM_MATCH;
    c.tm_tag = tm_tag_;
    c.tm_priv = tm_priv_;
    have_wqe_ = false;
    host_.complete_recv(c);
    if (!can) return;
    // The tagged buffer's SGEs cut to the RVH's length.
    std::array<Sge, 16> sges{};
    std::uint32_t n = 0, left = tm_len_;
    for (std::uint32_t i = 0; i < rwqe_nsge_ && left > 0 && n < sges.size(); ++i) {
        sges[n] = rwqe_sges_[i];
        sges[n].length = std::min(left, sges[n].length);
        left -= sges[n++].length;
    }
    SendWr w;
    w.op = SendOp::read;
    w.tm = SendWr::Tm::rndv_read;
    w.wr_id = rwqe_id_;
    w.compare_add = tm_tag_;
    w.imm = tm_priv_;
    w.remote_addr = tm_va_;
    w.rkey = tm_rkey_;
    (void)post_internal(w, {sges.data(), n});
    pump(now_ns);
}

// A rendezvous WR retired. The READ's end is the tagged buffer's second
// completion (IBV_WC_TM_DATA_VALID, or the READ's error), then the FIN (the
// TMH with the message's tag and app_ctx, opcode FIN).
void RoceQp::tm_send_done(const SendSlot& s, std::uint8_t status) noexcept {
    --tm_inflight_;
    if (s.wr.tm != SendWr::Tm::rndv_read) return; // a FIN completes nowhere
    Cqe c = make_cqe(s.wr.wr_id, status, IBV_WC_TM_RECV);
    c.byte_len = status == IBV_WC_SUCCESS ? s.length : 0;
    c.wc_flags = status == IBV_WC_SUCCESS ? IBV_WC_TM_DATA_VALID : 0;
    host_.complete_recv(c); // no TMH in it (mlx5's TM_EXPECTED CQE): tag and priv 0
    if (status != IBV_WC_SUCCESS) return;
    tm_fin_.fill(0);
    tm_fin_[0] = IBV_TMH_FIN;
    store_be(tm_fin_.data() + 4, s.wr.imm, 4);
    store_be(tm_fin_.data() + 8, s.wr.compare_add, 8);
    SendWr f;
    f.op = SendOp::send;
    f.tm = SendWr::Tm::fin;
    f.inline_data = true;
    const Sge g{reinterpret_cast<std::uintptr_t>(tm_fin_.data()), kTmhSize, 0};
    (void)post_internal(f, {&g, 1}); // sent by the pump that follows every retire
}

} // namespace rdmasim::datapath
