#include "device/qp.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/async_events.hpp"
#include "device/cq.hpp"
#include "device/device.hpp"
#include "device/qp_ib.hpp"
#include "device/recv.hpp"
#include "device/verb_faults.hpp"

namespace rdmasim::device {

namespace {

constexpr std::uint32_t kMaxInline = 256;

// What a verbs QP state means to a raw-packet QP's receive queue.
datapath::QueueState rx_state(ibv_qp_state s) noexcept {
    switch (s) {
    case IBV_QPS_RESET:
        return datapath::QueueState::reset;
    case IBV_QPS_ERR:
        return datapath::QueueState::error;
    case IBV_QPS_RTR:
    case IBV_QPS_RTS:
        return datapath::QueueState::ready;
    default:
        return datapath::QueueState::stopped;
    }
}

int validate_rss(const Device& dev, const ibv_qp_init_attr_ex& a, ibv_context* context) {
    if (!(a.comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) || !(a.comp_mask & IBV_QP_INIT_ATTR_RX_HASH))
        return EINVAL;
    if (a.rwq_ind_tbl == nullptr || a.rwq_ind_tbl->context != context) return EINVAL;
    const ibv_rx_hash_conf& h = a.rx_hash_conf;
    if (h.rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ) return EOPNOTSUPP;
    if (h.rx_hash_key_len != datapath::Toeplitz::kKeyLen || h.rx_hash_key == nullptr) return EINVAL;
    const std::uint64_t f = h.rx_hash_fields_mask;
    if (f & ~datapath::kRssKnownFields) return EOPNOTSUPP;
    if (f == 0 && from_verbs(a.rwq_ind_tbl)->log_size != 0) return EINVAL;
    if ((f & datapath::kRssIpv4Fields) && (f & datapath::kRssIpv6Fields)) return EINVAL;
    if ((f & datapath::kRssTcpFields) && (f & datapath::kRssUdpFields)) return EINVAL;
    (void)dev;
    return 0;
}

int validate_plain(const Device& dev, const ibv_qp_init_attr_ex& a, ibv_context* context) {
    if (a.comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH)) return EINVAL;
    if (a.send_cq == nullptr || a.recv_cq == nullptr || a.send_cq->context != context ||
        a.recv_cq->context != context)
        return EINVAL;
    if (a.srq != nullptr) return EOPNOTSUPP;
    const ibv_qp_cap& c = a.cap;
    if (c.max_send_wr > dev.caps.max_qp_wr || c.max_recv_wr > dev.caps.max_qp_wr ||
        c.max_send_sge > dev.caps.max_sge || c.max_recv_sge > dev.caps.max_sge ||
        c.max_inline_data > kMaxInline)
        return EINVAL;
    return 0;
}

// create_qp_ex's work, for both create verbs (each counts its own call).
ibv_qp* make_qp(ibv_context* context, ibv_qp_init_attr_ex* attr) noexcept {
    return guard_ptr<ibv_qp>([&]() -> ibv_qp* {
        if (context == nullptr || attr == nullptr) return fail<ibv_qp>(EINVAL);
        Context& ctx = *from_verbs(context);
        Device& dev = *ctx.device;
        const std::uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
                                    IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH |
                                    IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_XRCD;
        if (attr->comp_mask & ~known) return fail<ibv_qp>(EOPNOTSUPP);
        const auto type = raw_enum(attr->qp_type);
        const bool ib = type == IBV_QPT_RC || type == IBV_QPT_UC || type == IBV_QPT_UD ||
                        type == IBV_QPT_XRC_SEND || type == IBV_QPT_XRC_RECV;
        if (type != IBV_QPT_RAW_PACKET && !ib) return fail<ibv_qp>(EOPNOTSUPP);
        if (type == IBV_QPT_XRC_RECV) { // an XRC TGT QP belongs to a domain, not a PD
            if (attr->comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH))
                return fail<ibv_qp>(EOPNOTSUPP); // RSS: raw-packet QPs only
            if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || attr->xrcd == nullptr ||
                attr->xrcd->context != context)
                return fail<ibv_qp>(EINVAL);
            return create_ib_qp(ctx, *attr);
        }
        if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == nullptr ||
            attr->pd->context != context)
            return fail<ibv_qp>(EINVAL);
        if (ib) return create_ib_qp(ctx, *attr); // RC, UC, UD: qp_ib.cpp
        if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) return fail<ibv_qp>(EOPNOTSUPP);
        std::uint32_t create_flags = 0;
        if (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) {
            create_flags = attr->create_flags;
            const std::uint32_t supported = IBV_QP_CREATE_SCATTER_FCS |
                                            IBV_QP_CREATE_CVLAN_STRIPPING |
                                            IBV_QP_CREATE_PCI_WRITE_END_PADDING;
            if (create_flags & ~supported) return fail<ibv_qp>(EOPNOTSUPP);
            if (((create_flags & IBV_QP_CREATE_SCATTER_FCS) && !dev.caps.scatter_fcs) ||
                ((create_flags & IBV_QP_CREATE_CVLAN_STRIPPING) && !dev.caps.cvlan_stripping) ||
                ((create_flags & IBV_QP_CREATE_PCI_WRITE_END_PADDING) &&
                 !dev.caps.pci_write_end_padding))
                return fail<ibv_qp>(EOPNOTSUPP);
        }
        const bool rss = attr->comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH);
        if (int err = rss ? validate_rss(dev, *attr, context) : validate_plain(dev, *attr, context))
            return fail<ibv_qp>(err);

        auto qp = std::make_unique<Qp>();
        std::memset(&qp->ibqp, 0, sizeof qp->ibqp);
        qp->ctx = &ctx;
        qp->pd = from_verbs(attr->pd);
        qp->rss = rss;
        ibv_qp& q = qp->ibqp;
        q.context = context;
        q.qp_context = attr->qp_context;
        q.pd = attr->pd;
        q.handle = dev.next_handle.fetch_add(1);
        q.qp_num = dev.next_qpn.fetch_add(1);
        q.state = IBV_QPS_RESET;
        q.qp_type = IBV_QPT_RAW_PACKET;
        pthread_mutex_init(&q.mutex, nullptr);
        pthread_cond_init(&q.cond, nullptr);
        if (rss) {
            qp->table = from_verbs(attr->rwq_ind_tbl);
            datapath::RssGroup& g = qp->rss_group;
            g.configure(std::span<const std::uint8_t, datapath::Toeplitz::kKeyLen>(
                            attr->rx_hash_conf.rx_hash_key, datapath::Toeplitz::kKeyLen),
                        attr->rx_hash_conf.rx_hash_fields_mask, qp->table->log_size);
            g.table.reserve(qp->table->entries.size());
            for (Wq* wq : qp->table->entries) g.table.push_back(&wq->recv.rx);
            qp->table->qp_refs.fetch_add(1);
        } else {
            qp->send_cq = from_verbs(attr->send_cq);
            qp->recv_cq = from_verbs(attr->recv_cq);
            q.send_cq = attr->send_cq;
            q.recv_cq = attr->recv_cq;
            qp->recv.max_sge = std::max<std::uint32_t>(attr->cap.max_recv_sge, 1);
            qp->max_send_wr = attr->cap.max_send_wr;
            qp->max_send_sge = std::max<std::uint32_t>(attr->cap.max_send_sge, 1);
            qp->max_inline = attr->cap.max_inline_data;
            qp->sq_sig_all = attr->sq_sig_all;
            qp->send_buf.resize(dev.caps.max_raw_frame);
            datapath::WqSettings offloads;
            offloads.strip_cvlan = create_flags & IBV_QP_CREATE_CVLAN_STRIPPING;
            offloads.scatter_fcs = create_flags & IBV_QP_CREATE_SCATTER_FCS;
            offloads.end_padding = create_flags & IBV_QP_CREATE_PCI_WRITE_END_PADDING;
            if (int err = attach_rx_queue(dev, *qp,
                                          std::max<std::uint32_t>(attr->cap.max_recv_wr, 1),
                                          offloads))
                return fail<ibv_qp>(err);
            qp->send_cq->users.fetch_add(1);
            qp->recv_cq->users.fetch_add(1);
            attr->cap.max_recv_sge = qp->recv.max_sge;
            attr->cap.max_send_sge = qp->max_send_sge;
        }
        qp->attr.qp_state = IBV_QPS_RESET;
        qp->attr.cur_qp_state = IBV_QPS_RESET;
        qp->attr.cap = attr->cap;
        qp->attr.port_num = 1;
        qp->pd->users.fetch_add(1);
        ctx.live_objects.fetch_add(1);
        return &qp.release()->ibqp;
    });
}

} // namespace

ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) noexcept {
    if (context != nullptr && attr != nullptr)
        if (int e = injected_failure(*from_verbs(context)->device, Verb::create_qp_ex))
            return fail<ibv_qp>(e);
    return make_qp(context, attr);
}

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) noexcept {
    if (pd == nullptr || attr == nullptr) return fail<ibv_qp>(EINVAL);
    if (int e = injected_failure(*from_verbs(pd->context)->device, Verb::create_qp))
        return fail<ibv_qp>(e);
    ibv_qp_init_attr_ex ex;
    std::memset(&ex, 0, sizeof ex);
    ex.qp_context = attr->qp_context;
    ex.send_cq = attr->send_cq;
    ex.recv_cq = attr->recv_cq;
    ex.srq = attr->srq;
    ex.cap = attr->cap;
    ex.qp_type = attr->qp_type;
    ex.sq_sig_all = attr->sq_sig_all;
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd;
    ibv_qp* qp = make_qp(pd->context, &ex);
    if (qp) attr->cap = ex.cap;
    return qp;
}

int modify_qp(ibv_qp* q, ibv_qp_attr* attr, int mask) noexcept {
    return guard_errno([&] {
        if (q == nullptr || attr == nullptr) return EINVAL;
        Qp& qp = *from_verbs(q);
        Device& dev = *qp.ctx->device;
        if (int e = injected_failure(dev, Verb::modify_qp)) return e;
        if (qp.ib) return modify_ib_qp(qp, *attr, mask);
        const int known = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX |
                          IBV_QP_QKEY | IBV_QP_RATE_LIMIT;
        if (mask & ~known) return EINVAL;
        bool to_reset = false;
        {
            std::lock_guard port_lock(dev.port.mutex());
            std::lock_guard post_lock(qp.recv.post_lock);
            const ibv_qp_state cur = q->state;
            if ((mask & IBV_QP_CUR_STATE) && raw_enum(attr->cur_qp_state) != cur) return EINVAL;
            if ((mask & IBV_QP_PORT) && attr->port_num != 1) return EINVAL;
            ibv_qp_state next = cur;
            if (mask & IBV_QP_STATE) {
                const auto target = raw_enum(attr->qp_state);
                if (target < IBV_QPS_RESET || target > IBV_QPS_ERR) return EINVAL;
                next = static_cast<ibv_qp_state>(target);
                const bool legal =
                    next == IBV_QPS_RESET || next == IBV_QPS_ERR ||
                    (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) ||
                    (cur == IBV_QPS_INIT && (next == IBV_QPS_INIT || next == IBV_QPS_RTR)) ||
                    (cur == IBV_QPS_RTR && next == IBV_QPS_RTS) ||
                    (cur == IBV_QPS_RTS && next == IBV_QPS_RTS);
                if (!legal) return EINVAL;
                to_reset = next == IBV_QPS_RESET && !qp.rss;
            }
            if (next != cur && !qp.rss) set_rx_state(dev, qp.recv, rx_state(next));
            q->state = next;
            qp.attr.qp_state = next;
            qp.attr.cur_qp_state = next;
            if (mask & IBV_QP_PKEY_INDEX) qp.attr.pkey_index = attr->pkey_index;
            if (mask & IBV_QP_QKEY) qp.attr.qkey = attr->qkey;
        }
        // After a move to RESET (RESET -> RESET too) mlx5_modify_qp cleans the
        // QP's completions out of both its CQs, one CQ at a time; in RESET the
        // QP completes nothing more. Locks: poll, then port (CqConsumer).
        if (to_reset) {
            purge_completions(dev, *qp.recv_cq, q->qp_num);
            if (qp.send_cq != qp.recv_cq) purge_completions(dev, *qp.send_cq, q->qp_num);
        }
        return 0;
    });
}

int query_qp(ibv_qp* q, ibv_qp_attr* attr, int /*attr_mask*/, ibv_qp_init_attr* init) noexcept {
    if (q == nullptr || attr == nullptr || init == nullptr) return EINVAL;
    Qp& qp = *from_verbs(q);
    if (qp.ib) {
        query_ib_qp(qp, *attr, *init);
        return 0;
    }
    *attr = qp.attr;
    std::memset(init, 0, sizeof *init);
    init->qp_context = q->qp_context;
    init->send_cq = q->send_cq;
    init->recv_cq = q->recv_cq;
    init->cap = qp.attr.cap;
    init->qp_type = q->qp_type;
    init->sq_sig_all = qp.sq_sig_all;
    return 0;
}

int destroy_qp(ibv_qp* q) noexcept {
    return guard_errno([&] {
        if (q == nullptr) return EINVAL;
        Qp* qp = from_verbs(q);
        if (qp->flows.load() != 0) return EBUSY;
        if (qp->ib) return destroy_ib_qp(*qp);
        Device& dev = *qp->ctx->device;
        if (!qp->rss) {
            // As mlx5_destroy_qp cleans both CQs (__mlx5_cq_clean).
            detach_rx_queue(dev, qp->recv);
            purge_completions(dev, *qp->recv_cq, q->qp_num);
            if (qp->send_cq != qp->recv_cq) purge_completions(dev, *qp->send_cq, q->qp_num);
        }
        // An unread event of the QP goes with it; a read one must be acked
        // first (ib_uverbs_release_uevent, ibv_cmd_destroy_qp).
        forget_async_events(*qp->ctx, q);
        const std::uint32_t reported = qp->events_reported;
        wait_for_acks(q->mutex, q->cond, [&] { return q->events_completed == reported; });
        if (qp->rss) {
            qp->table->qp_refs.fetch_sub(1);
        } else {
            qp->send_cq->users.fetch_sub(1);
            qp->recv_cq->users.fetch_sub(1);
        }
        qp->pd->users.fetch_sub(1);
        object_destroyed(*qp->ctx);
        pthread_cond_destroy(&q->cond);
        pthread_mutex_destroy(&q->mutex);
        delete qp;
        return 0;
    });
}

int post_recv(ibv_qp* q, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    if (q == nullptr || bad_wr == nullptr) return EINVAL;
    Qp& qp = *from_verbs(q);
    if (int e = injected_failure(*qp.ctx->device, Verb::post_recv)) {
        *bad_wr = wr;
        return e;
    }
    if (qp.ib) return post_ib_recv(qp, wr, bad_wr);
    if (qp.rss) {
        *bad_wr = wr;
        return EINVAL; // an RSS QP receives through its WQs
    }
    return post_receive(*qp.ctx->device, qp.recv, wr, bad_wr);
}

int post_send(ibv_qp* q, ibv_send_wr* wr, ibv_send_wr** bad_wr) noexcept {
    if (q == nullptr || bad_wr == nullptr) return EINVAL;
    Qp& qp = *from_verbs(q);
    Device& dev = *qp.ctx->device;
    if (int e = injected_failure(dev, Verb::post_send)) {
        *bad_wr = wr;
        return e;
    }
    if (qp.ib) return post_ib_send(qp, wr, bad_wr);
    ibv_qp_state state;
    {
        std::lock_guard lock(qp.recv.post_lock); // modify_qp changes the state under it
        state = q->state;
    }
    if (qp.rss || state != IBV_QPS_RTS) {
        *bad_wr = wr;
        return EINVAL;
    }
    std::lock_guard send_lock(qp.send_lock);
    std::uint8_t* const frame = qp.send_buf.data();
    for (; wr != nullptr; wr = wr->next) {
        if (wr->opcode != IBV_WR_SEND || wr->num_sge < 0 ||
            static_cast<std::uint32_t>(wr->num_sge) > qp.max_send_sge ||
            (wr->num_sge > 0 && wr->sg_list == nullptr)) {
            *bad_wr = wr;
            return EINVAL;
        }
        const bool inl = wr->send_flags & IBV_SEND_INLINE;
        std::size_t len = 0;
        ibv_wc_status status = IBV_WC_SUCCESS;
        for (int i = 0; i < wr->num_sge; ++i) {
            const ibv_sge& s = wr->sg_list[i];
            if (len + s.length > qp.send_buf.size() || (inl && len + s.length > qp.max_inline)) {
                *bad_wr = wr;
                return EINVAL;
            }
            const std::uint8_t* src =
                inl ? reinterpret_cast<const std::uint8_t*>(s.addr)
                    : dev.mrs.translate(s.lkey, qp.pd, s.addr, s.length, false);
            if (src == nullptr) {
                status = IBV_WC_LOC_PROT_ERR;
                break;
            }
            if (s.length != 0) std::memcpy(frame + len, src, s.length);
            len += s.length;
        }
        {
            std::lock_guard lock(dev.port.mutex());
            const std::uint64_t now = dev.port.now_ns();
            if (status == IBV_WC_SUCCESS) {
                net::Frame f;
                f.data = frame;
                f.len = f.wire_len = static_cast<std::uint32_t>(len);
                f.ts_ns = now;
                dev.port.transmit(f, &qp); // loops back to flows, then to the port's sinks
            }
            if (qp.sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED) || status != IBV_WC_SUCCESS) {
                datapath::Cqe cqe;
                cqe.wr_id = wr->wr_id;
                cqe.status = static_cast<std::uint8_t>(status);
                cqe.opcode = IBV_WC_SEND;
                cqe.qp_num = q->qp_num;
                cqe.byte_len = static_cast<std::uint32_t>(len);
                cqe.timestamp_ns = now;
                (void)qp.send_cq->ring.push(cqe);
            }
            service(dev, now);
        }
    }
    return 0;
}

} // namespace rdmasim::device
