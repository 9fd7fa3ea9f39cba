// Tag-matching SRQs: the tag list, ibv_post_srq_ops (ADD, DEL, SYNC carried
// out at once and completed on the SRQ's CQ), and the matching and phase
// counting the RC responder asks for (device/README.md, "Tag matching").
#include "device/tm_srq.hpp"

#include <algorithm>
#include <mutex>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/device.hpp"
#include "device/qp_transport.hpp"

namespace rdmasim::device {

namespace {

// Software reported `count` unexpected messages: when that is all of them,
// every entry may match again (the phase is in sync).
void sync_to(TagList& l, std::uint32_t count) noexcept {
    l.sw_unexpected = count;
    if (l.sw_unexpected != l.hw_unexpected) return;
    for (TagEntry& e : l.entries)
        e.in_sync = true;
}

void complete_op(Srq& srq, const ibv_ops_wr& wr, std::uint8_t opcode, std::uint8_t status,
                 std::uint32_t flags, std::uint64_t now_ns) noexcept {
    datapath::Cqe c;
    c.wr_id = wr.wr_id;
    c.timestamp_ns = now_ns;
    c.qp_num = srq.srq_num;
    c.status = status;
    c.opcode = opcode;
    c.wc_flags = status == IBV_WC_SUCCESS ? flags : 0;
    (void)srq.cq->ring.push(c); // a full CQ loses it and reports the overrun
    if (status != IBV_WC_SUCCESS) srq.cq->ring.note_solicited();
}

// One operation, checked as mlx5_post_srq_ops checks it; 0 or the errno.
int apply_op(Srq& srq, TagList& l, ibv_ops_wr& wr, std::uint64_t now_ns) noexcept {
    const bool signaled = (wr.flags & IBV_OPS_SIGNALED) != 0;
    switch (raw_enum(wr.opcode)) { // as an integer: a C caller may pass any value
    case IBV_WR_TAG_ADD: {
        if (wr.tm.add.num_sge < 0 || static_cast<std::uint32_t>(wr.tm.add.num_sge) > kTmMaxSge ||
            (wr.tm.add.num_sge > 0 && wr.tm.add.sg_list == nullptr))
            return EINVAL;
        TagEntry* e = nullptr;
        for (TagEntry& x : l.entries)
            if (!x.posted) {
                e = &x;
                break;
            }
        if (e == nullptr) return ENOMEM; // the list is full
        if (wr.flags & IBV_OPS_TM_SYNC) sync_to(l, wr.tm.unexpected_cnt);
        *e = TagEntry{};
        e->posted = true;
        e->in_sync = l.sw_unexpected == l.hw_unexpected;
        e->seq = l.next_seq++;
        e->tag = wr.tm.add.tag;
        e->mask = wr.tm.add.mask;
        e->wqe.wr_id = wr.tm.add.recv_wr_id;
        if (wr.tm.add.num_sge > 0 && wr.tm.add.sg_list[0].length > 0) { // may be empty
            const ibv_sge& g = wr.tm.add.sg_list[0];
            e->sge = {g.addr, g.length, g.lkey};
            e->wqe.num_sge = 1;
            e->wqe.total_len = g.length;
        }
        wr.tm.handle = static_cast<std::uint32_t>(e - l.entries.data());
        // mlx5: an entry added out of phase asks for a sync.
        if (signaled) complete_op(srq, wr, IBV_WC_TM_ADD, IBV_WC_SUCCESS, e->in_sync ? 0 : IBV_WC_TM_SYNC_REQ, now_ns);
        return 0;
    }
    case IBV_WR_TAG_DEL: {
        if (wr.tm.handle >= l.entries.size()) return EINVAL;
        if (wr.flags & IBV_OPS_TM_SYNC) sync_to(l, wr.tm.unexpected_cnt);
        TagEntry& e = l.entries[wr.tm.handle];
        // A tag a message consumed meanwhile cannot be removed (ibv_post_srq_ops(3)).
        const std::uint8_t status = e.posted ? IBV_WC_SUCCESS : IBV_WC_TM_ERR;
        const bool in_sync = e.in_sync;
        e.posted = false;
        if (signaled)
            complete_op(srq, wr, IBV_WC_TM_DEL, status, in_sync ? 0 : IBV_WC_TM_SYNC_REQ, now_ns);
        return 0;
    }
    case IBV_WR_TAG_SYNC:
        if (wr.flags & IBV_OPS_TM_SYNC) sync_to(l, wr.tm.unexpected_cnt);
        if (signaled) complete_op(srq, wr, IBV_WC_TM_SYNC, IBV_WC_SUCCESS, 0, now_ns);
        return 0;
    default:
        return EINVAL;
    }
}

} // namespace

int make_tag_list(Srq& srq, const ibv_srq_init_attr_ex& attr, TagList*& out) {
    const Capabilities& caps = srq.ctx->device->caps;
    // mlx5_create_srq_ex: an extended CQ to read the TM information from;
    // mlx5_ib_create_srq: a list of at most 2^log_tag_matching_list_sz - 1
    // tags; the command QP: max_ops send WRs.
    if (attr.cq == nullptr || attr.cq->context != srq.ibsrq.context || !from_verbs(attr.cq)->extended)
        return EINVAL;
    if (attr.tm_cap.max_num_tags == 0 || attr.tm_cap.max_num_tags > kTmMaxNumTags ||
        attr.tm_cap.max_ops > std::min(kTmMaxOps, caps.max_qp_wr))
        return EINVAL;
    auto* l = new TagList;
    l->entries.resize(attr.tm_cap.max_num_tags);
    l->max_ops = attr.tm_cap.max_ops;
    out = l;
    return 0;
}

int post_srq_ops(ibv_srq* s, ibv_ops_wr* wr, ibv_ops_wr** bad_wr) noexcept {
    if (s == nullptr || bad_wr == nullptr) return EINVAL;
    Srq& srq = *from_verbs(s);
    if (srq.tm == nullptr) { // mlx5: no command QP
        *bad_wr = wr;
        return EINVAL;
    }
    Device& dev = *srq.ctx->device;
    int err = 0;
    std::lock_guard port_lock(dev.port.mutex());
    const std::uint64_t now = transport_now(dev);
    for (; wr != nullptr; wr = wr->next)
        if ((err = apply_op(srq, *srq.tm, *wr, now)) != 0) {
            *bad_wr = wr;
            break;
        }
    after_transport_call(dev, now); // CQ notifications
    return err;
}

bool match_tag(TagList& l, std::uint64_t tag, const datapath::Wqe*& wqe,
               const datapath::Sge*& sge) noexcept {
    TagEntry* best = nullptr;
    for (TagEntry& e : l.entries)
        if (e.posted && e.in_sync && (tag & e.mask) == e.tag &&
            (best == nullptr || e.seq < best->seq))
            best = &e;
    if (best == nullptr) return false;
    best->posted = false;
    wqe = &best->wqe;
    sge = &best->sge;
    return true;
}

bool count_unexpected(TagList& l) noexcept {
    ++l.hw_unexpected;
    return l.hw_unexpected - l.sw_unexpected > kTmMaxSyncDiff;
}

} // namespace rdmasim::device
