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
    tm_.skip = 0;
    tm_.sync_req = false;
    tm_.tag = 0;
    tm_.priv = 0;
    const std::uint8_t op = pl.size() >= kTmhSize ? pl[0] : static_cast<std::uint8_t>(IBV_TMH_NO_TAG);
    if (op == IBV_TMH_EAGER || op == IBV_TMH_RNDV) {
        const std::uint64_t tag = load_be(pl.data() + 8, 8);
        // A rendezvous is matched only when its RVH is in a one-packet
        // message (max_rndv_hdr_size is below the smallest MTU).
        const bool matchable = op != IBV_TMH_RNDV || (p.info->position == net::SegmentPosition::only &&
                                                      pl.size() >= kTmhSize + kRvhSize);
        RecvView v;
        if (matchable && host_.match_tag(tag, v)) return tm_take_matched(p, tag, v);
        if (!take_recv_wqe()) return false;
        tm_.msg = TmState::Msg::unexpected;
        tm_.sync_req = host_.unexpected_tag();
        return true;
    }
    // NO_TAG, FIN, any other opcode, or a message shorter than a TMH.
    if (!take_recv_wqe()) return false;
    tm_.msg = TmState::Msg::no_tag;
    return true;
}

// An EAGER's data goes to the tagged buffer `v` (its TMH is not placed); an
// RNDV's RVH says what this QP is to read into it.
bool RoceQp::tm_take_matched(const net::RocePacket& p, std::uint64_t tag, const RecvView& v) noexcept {
    const auto pl = p.payload;
    hold_wqe(v);
    tm_.tag = tag;
    tm_.priv = static_cast<std::uint32_t>(load_be(pl.data() + 4, 4));
    if (pl[0] == IBV_TMH_RNDV) {
        tm_.msg = TmState::Msg::rndv;
        tm_.skip = static_cast<std::uint32_t>(pl.size()); // nothing is placed
        tm_.va = load_be(pl.data() + kTmhSize, 8);
        tm_.rkey = static_cast<std::uint32_t>(load_be(pl.data() + kTmhSize + 8, 4));
        tm_.len = static_cast<std::uint32_t>(load_be(pl.data() + kTmhSize + 12, 4));
    } else {
        tm_.msg = TmState::Msg::eager;
        tm_.skip = kTmhSize;
    }
    return true;
}

std::uint8_t RoceQp::tm_wc_opcode() const noexcept {
    return tm_.msg == TmState::Msg::no_tag ? IBV_WC_TM_NO_TAG : IBV_WC_TM_RECV;
}

std::uint32_t RoceQp::tm_wc_flags() const noexcept {
    switch (tm_.msg) {
    case TmState::Msg::eager:
        return IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID;
    case TmState::Msg::rndv:
        return IBV_WC_TM_MATCH; // the data follows: a second completion
    case TmState::Msg::unexpected:
        return tm_.sync_req ? IBV_WC_TM_SYNC_REQ : 0;
    default:
        return 0;
    }
}

bool RoceQp::post_internal(const SendWr& wr, std::span<const Sge> sges) noexcept {
    if (state_ != TransportState::rts || sq_.head - sq_.tail > sq_.mask) return false;
    std::uint32_t total = 0;
    for (const Sge& g : sges)
        total += g.length;
    fill_head_slot(wr, sges, total);
    ++sq_.head;
    ++sq_.tm_inflight;
    return true;
}

// The matched RNDV's header arrived whole (ACKed): the MATCH completion, then
// the READ of the sender's buffer into the tagged buffer. When this QP
// cannot do it (the RVH's length exceeds the tagged buffer, the QP is not in
// RTS or its rendezvous slots are taken) the one completion says
// IBV_WC_TM_RNDV_INCOMPLETE: software reads the data (mlx5's CONSUMED_SW_RDNV).
void RoceQp::tm_start_rndv(std::uint64_t now_ns) noexcept {
    const bool can = tm_.len <= resp_.wqe_len && state_ == TransportState::rts &&
                     sq_.tm_inflight + 2 <= limits_.tm_reserve && sq_.head - sq_.tail + 2 <= sq_.mask + 1;
    // MATCH in both: the tag matched, whoever reads the data.
    Cqe c = make_cqe(resp_.wqe_id, can ? IBV_WC_SUCCESS : IBV_WC_TM_RNDV_INCOMPLETE, IBV_WC_TM_RECV);
    c.wc_flags = IBV_WC_TM_MATCH;
    c.tm_tag = tm_.tag;
    c.tm_priv = tm_.priv;
    resp_.have_wqe = false;
    push_recv_cqe(c);
    if (!can) return;
    // The tagged buffer's SGEs cut to the RVH's length.
    std::array<Sge, 16> sges{};
    std::uint32_t n = 0, left = tm_.len;
    for (std::uint32_t i = 0; i < resp_.wqe_nsge && left > 0 && n < sges.size(); ++i) {
        sges[n] = resp_.wqe_sges[i];
        sges[n].length = std::min(left, sges[n].length);
        left -= sges[n++].length;
    }
    SendWr w;
    w.op = SendOp::read;
    w.tm = SendWr::Tm::rndv_read;
    w.wr_id = resp_.wqe_id;
    w.compare_add = tm_.tag;
    w.imm = tm_.priv;
    w.remote_addr = tm_.va;
    w.rkey = tm_.rkey;
    (void)post_internal(w, {sges.data(), n});
    pump(now_ns);
}

// A rendezvous WR retired. The READ's end is the tagged buffer's second
// completion (IBV_WC_TM_DATA_VALID, or the READ's error), then the FIN (the
// TMH with the message's tag and app_ctx, opcode FIN).
void RoceQp::tm_send_done(const SendSlot& s, std::uint8_t status) noexcept {
    --sq_.tm_inflight;
    if (s.wr.tm != SendWr::Tm::rndv_read) return; // a FIN completes nowhere
    Cqe c = make_cqe(s.wr.wr_id, status, IBV_WC_TM_RECV);
    c.byte_len = status == IBV_WC_SUCCESS ? s.length : 0;
    c.wc_flags = status == IBV_WC_SUCCESS ? IBV_WC_TM_DATA_VALID : 0;
    push_recv_cqe(c); // no TMH in it (mlx5's TM_EXPECTED CQE): tag and priv 0
    if (status != IBV_WC_SUCCESS) return;
    tm_.fin.fill(0);
    tm_.fin[0] = IBV_TMH_FIN;
    store_be(tm_.fin.data() + 4, s.wr.imm, 4);
    store_be(tm_.fin.data() + 8, s.wr.compare_add, 8);
    SendWr f;
    f.op = SendOp::send;
    f.tm = SendWr::Tm::fin;
    f.inline_data = true;
    const Sge g{reinterpret_cast<std::uintptr_t>(tm_.fin.data()), kTmhSize, 0};
    (void)post_internal(f, {&g, 1}); // sent by the pump that follows every retire
}

} // namespace rdmasim::datapath
