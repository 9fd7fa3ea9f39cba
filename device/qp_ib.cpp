// RC, UC and UD QPs: creation (caps sized as mlx5 sizes them), ibv_modify_qp
// (device/qp_state.hpp's table, then the range checks), ibv_query_qp,
// ibv_destroy_qp, and what a state change does to the queues
// (device/README.md, "RC, UC and UD queue pairs").
#include "device/qp_ib.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "device/abi_guard.hpp"
#include "device/async_events.hpp"
#include "device/context.hpp"
#include "device/cq.hpp"
#include "device/device.hpp"
#include "device/qp_ex.hpp"
#include "device/qp_state.hpp"
#include "device/qp_transport.hpp"
#include "device/srq.hpp"

namespace rdmasim::device {

namespace {

// The send WQE layout mlx5 sizes queues with (providers/mlx5/verbs.c,
// mlx5_calc_send_wqe; kernel hw/mlx5/qp.c, calc_send_wqe): 64-byte basic
// blocks, 16-byte segments, a WQE at most kMaxSqDesc bytes.
constexpr std::uint32_t kSendWqeBb = 64;
constexpr std::uint32_t kSeg = 16;
constexpr std::uint32_t kInlineHeader = 4;
constexpr std::uint32_t kMaxSqDesc = 1024;

// Control segment, then what the type carries before the data: remote
// address and atomic segments (RC), remote address (UC), the datagram
// segment (UD).
std::uint32_t sq_overhead(ibv_qp_type t) noexcept {
    switch (t) {
    case IBV_QPT_RC:
        return kSeg + kSeg + kSeg;
    case IBV_QPT_UC:
        return kSeg + kSeg;
    case IBV_QPT_XRC_SEND: // RC's, and the XRC segment (the remote SRQ number)
        return kSeg + kSeg + kSeg + kSeg;
    default:
        return kSeg + 3 * kSeg;
    }
}

// XRC INI QPs have no receive queue, XRC TGT QPs no queue at all (their
// receives are the XRC SRQs'): what they are asked for is ignored, and 0 reported.
bool has_rq(const ibv_qp_init_attr_ex& a) noexcept {
    return a.srq == nullptr && a.qp_type != IBV_QPT_XRC_SEND && a.qp_type != IBV_QPT_XRC_RECV;
}

std::uint32_t round_up(std::uint32_t v, std::uint32_t to) noexcept { return (v + to - 1) / to * to; }
std::uint64_t pow2_at_least(std::uint64_t v) noexcept {
    std::uint64_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

struct Sizes {
    std::uint32_t send_wr = 0, send_sge = 0, inline_data = 0;
    std::uint32_t recv_wr = 0, recv_sge = 0, recv_ring = 1;
};

// Validates the caps against the device (EINVAL, as mlx5's create_qp) and
// computes what the QP really has, which is written back into attr.cap.
int size_queues(const Device& dev, const ibv_qp_init_attr_ex& a, Sizes& out) noexcept {
    if (a.qp_type == IBV_QPT_XRC_RECV) return 0;
    const ibv_qp_cap& c = a.cap;
    const Capabilities& caps = dev.caps;
    const std::uint32_t max_wr = std::min(caps.max_qp_wr, caps.max_wr);
    if (c.max_send_wr > max_wr || c.max_send_sge > caps.max_sge) return EINVAL;
    if (has_rq(a) && (c.max_recv_wr > max_wr || c.max_recv_sge > caps.max_sge))
        return EINVAL;
    const std::uint32_t overhead = sq_overhead(a.qp_type);
    std::uint32_t wqe = overhead + std::max<std::uint32_t>(c.max_send_sge, 1) * kSeg;
    if (c.max_inline_data > kMaxSqDesc) return EINVAL;
    if (c.max_inline_data > 0)
        wqe = std::max(wqe, overhead + round_up(kInlineHeader + c.max_inline_data, kSeg));
    wqe = round_up(wqe, kSendWqeBb);
    if (wqe > kMaxSqDesc) return EINVAL;
    out.inline_data = wqe - overhead - kInlineHeader;
    out.send_sge = std::min((wqe - overhead) / kSeg, caps.max_sge);
    if (c.max_send_wr > 0) {
        const std::uint64_t bytes = pow2_at_least(std::uint64_t{c.max_send_wr} * wqe);
        out.send_wr = static_cast<std::uint32_t>(bytes / wqe);
    }
    if (has_rq(a)) {
        // mlx5_calc_rq_size: a power-of-two WQE of 16-byte data segments,
        // a power-of-two count.
        out.recv_sge = static_cast<std::uint32_t>(
            pow2_at_least(std::max<std::uint32_t>(c.max_recv_sge, 1) * kSeg) / kSeg);
        out.recv_sge = std::min(out.recv_sge, caps.max_sge);
        out.recv_wr = c.max_recv_wr == 0 ? 0 : static_cast<std::uint32_t>(pow2_at_least(c.max_recv_wr));
        out.recv_ring = std::max<std::uint32_t>(out.recv_wr, 1);
    }
    return 0;
}

// The range checks of ibv_modify_qp after the table (mlx5_ib_modify_qp,
// ib_uverbs_modify_qp, the IB field widths).
int check_attr_values(Qp& qp, const ibv_qp_attr& a, int mask) noexcept {
    ibv_context* context = qp.ibqp.context;
    ibv_device_attr dattr;
    (void)query_device(context, &dattr);
    ibv_port_attr pattr;
    std::memset(&pattr, 0, sizeof pattr);
    if (query_port(context, 1, &pattr, sizeof pattr) != 0) return EINVAL;
    if ((mask & IBV_QP_PORT) && a.port_num != 1) return EINVAL;
    if ((mask & IBV_QP_PKEY_INDEX) && a.pkey_index >= pattr.pkey_tbl_len) return EINVAL;
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a.max_rd_atomic > dattr.max_qp_init_rd_atom) return EINVAL;
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a.max_dest_rd_atomic > dattr.max_qp_rd_atom)
        return EINVAL;
    if (mask & IBV_QP_PATH_MTU) {
        const auto mtu = raw_enum(a.path_mtu);
        if (mtu < IBV_MTU_256 || mtu > raw_enum(pattr.active_mtu)) return EINVAL;
    }
    if ((mask & IBV_QP_TIMEOUT) && a.timeout > 31) return EINVAL;
    if ((mask & IBV_QP_RETRY_CNT) && a.retry_cnt > 7) return EINVAL;
    if ((mask & IBV_QP_RNR_RETRY) && a.rnr_retry > 7) return EINVAL;
    if ((mask & IBV_QP_MIN_RNR_TIMER) && a.min_rnr_timer > 31) return EINVAL;
    if (mask & IBV_QP_AV) {
        // RoCE needs the GRH (its addresses are GIDs); the LID is ignored.
        const ibv_ah_attr& ah = a.ah_attr;
        if (!ah.is_global || ah.port_num != 1 || ah.grh.sgid_index >= pattr.gid_tbl_len)
            return EINVAL;
        // An empty entry inside the table: ENODATA, as the kernel's rdma_get_gid_attr.
        if (!port_gid(*qp.ctx->device, ah.grh.sgid_index)) return ENODATA;
    }
    if (mask & IBV_QP_ALT_PATH) return EINVAL; // no alternate paths on RoCE (_ib_modify_qp)
    if (mask & IBV_QP_ACCESS_FLAGS) {
        const unsigned allowed = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                 IBV_ACCESS_RELAXED_ORDERING;
        if (a.qp_access_flags & ~allowed) return EINVAL;
    }
    if (mask & IBV_QP_PATH_MIG_STATE) {
        const auto m = raw_enum(a.path_mig_state);
        if (m < IBV_MIG_MIGRATED || m > IBV_MIG_ARMED) return EINVAL;
    }
    return 0;
}

// The verbs state only (ibv_qp.state, what ibv_query_qp reports). Port
// lock held; takes the receive post lock (post_ib_recv reads the state under it).
void write_state(Qp& qp, ibv_qp_state next) noexcept {
    std::lock_guard recv_lock(qp.rq.post_lock);
    qp.ibqp.state = next;
    qp.attr.qp_state = next;
    qp.attr.cur_qp_state = next;
}

// Sets the state and applies it: RESET forgets the posted receives; the
// transport does the rest (flushes, drain events, its PSNs and timers).
// Port lock held; the transport is called with no post lock held, as it
// may call back (hca_set_qp_state).
void set_state(Qp& qp, ibv_qp_state next) noexcept {
    const ibv_qp_state cur = qp.ibqp.state;
    write_state(qp, next);
    if (next == IBV_QPS_RESET && cur != IBV_QPS_RESET) {
        std::lock_guard recv_lock(qp.rq.post_lock);
        qp.rq.ring.reset();
    }
    qp.transport->modify(next);
}

} // namespace

void raise_qp_event(Qp& qp, ibv_event_type type) noexcept {
    ibv_async_event ev{};
    ev.element.qp = &qp.ibqp;
    ev.event_type = type;
    raise_async_event(*qp.ctx, ev);
}

ibv_qp* create_ib_qp(Context& ctx, ibv_qp_init_attr_ex& attr) noexcept {
    return guard_ptr<ibv_qp>([&]() -> ibv_qp* {
        Device& dev = *ctx.device;
        ibv_context* context = &ctx.vctx.context;
        // RSS is for raw-packet QPs only (mlx5's create_qp: EOPNOTSUPP).
        if (attr.comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH))
            return fail<ibv_qp>(EOPNOTSUPP);
        if ((attr.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr.create_flags != 0)
            return fail<ibv_qp>(EOPNOTSUPP);
        const bool xrc_tgt = attr.qp_type == IBV_QPT_XRC_RECV;
        const bool xrc_ini = attr.qp_type == IBV_QPT_XRC_SEND;
        if (xrc_tgt) { // no CQs, no SRQ, no PD of its own
            attr.send_cq = attr.recv_cq = nullptr;
            attr.srq = nullptr;
            attr.pd = nullptr;
        } else {
            if (xrc_ini && attr.recv_cq == nullptr) attr.recv_cq = attr.send_cq; // never used
            if (attr.send_cq == nullptr || attr.recv_cq == nullptr ||
                attr.send_cq->context != context || attr.recv_cq->context != context)
                return fail<ibv_qp>(EINVAL);
            if (xrc_ini && attr.srq != nullptr) return fail<ibv_qp>(EINVAL);
        }
        if (attr.srq != nullptr && attr.srq->context != context) return fail<ibv_qp>(EINVAL);
        if (!xrc_tgt && (attr.comp_mask & IBV_QP_INIT_ATTR_XRCD)) attr.xrcd = nullptr;
        Sizes sz;
        if (int err = size_queues(dev, attr, sz)) return fail<ibv_qp>(err);

        auto qp = std::make_unique<Qp>();
        std::memset(&qp->qpx, 0, sizeof qp->qpx);
        qp->ctx = &ctx;
        qp->pd = attr.pd ? from_verbs(attr.pd) : nullptr;
        qp->ib = true;
        qp->xrcd = xrc_tgt ? from_verbs(attr.xrcd) : nullptr;
        qp->send_cq = attr.send_cq ? from_verbs(attr.send_cq) : nullptr;
        qp->recv_cq = attr.recv_cq ? from_verbs(attr.recv_cq) : nullptr;
        qp->srq = attr.srq ? from_verbs(attr.srq) : nullptr;
        qp->sq_sig_all = attr.sq_sig_all;
        qp->max_send_wr = sz.send_wr;
        qp->max_send_sge = sz.send_sge;
        qp->max_inline = sz.inline_data;
        qp->rq.ring.init(sz.recv_ring, std::max<std::uint32_t>(sz.recv_sge, 1));
        qp->rq.max_sge = sz.recv_sge;
        qp->rq.max_post = sz.recv_wr;
        ibv_qp& q = qp->ibqp;
        q.context = context;
        q.qp_context = attr.qp_context;
        q.pd = attr.pd;
        q.send_cq = attr.send_cq;
        q.recv_cq = attr.recv_cq;
        q.srq = attr.srq;
        q.handle = dev.next_handle.fetch_add(1);
        q.qp_num = dev.next_qpn.fetch_add(1) & 0xffffff;
        q.state = IBV_QPS_RESET;
        q.qp_type = attr.qp_type;
        pthread_mutex_init(&q.mutex, nullptr);
        pthread_cond_init(&q.cond, nullptr);

        attr.cap.max_send_wr = sz.send_wr;
        attr.cap.max_send_sge = sz.send_sge;
        attr.cap.max_inline_data = sz.inline_data;
        attr.cap.max_recv_wr = sz.recv_wr;
        attr.cap.max_recv_sge = sz.recv_sge;
        qp->attr.qp_state = IBV_QPS_RESET;
        qp->attr.cur_qp_state = IBV_QPS_RESET;
        qp->attr.cap = attr.cap;
        qp->attr.port_num = 1;

        datapath::TransportLimits limits;
        limits.max_send_wr = std::max<std::uint32_t>(sz.send_wr, 1);
        limits.max_send_sge = sz.send_sge;
        limits.max_inline = sz.inline_data;
        limits.max_recv_sge = xrc_tgt   ? dev.caps.max_srq_sge // any XRC SRQ of its domain
                              : qp->srq ? qp->srq->rq.max_sge
                                        : std::max<std::uint32_t>(sz.recv_sge, 1);
        // A tag-matching SRQ's rendezvous: READ and FIN slots of the QP's own
        // (datapath/README.md, "Tag matching"), 8 rendezvous at a time.
        if (qp->srq != nullptr && qp->srq->tm != nullptr) limits.tm_reserve = 16;
        if (attr.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
            if (int err = make_extended(*qp, attr.send_ops_flags)) return fail<ibv_qp>(err);
        {
            std::lock_guard port_lock(dev.port.mutex()); // the port's RoCE side learns its number
            qp->transport = new QpTransport(dev, *qp, limits);
        }

        if (qp->send_cq) qp->send_cq->users.fetch_add(1);
        if (qp->recv_cq) qp->recv_cq->users.fetch_add(1);
        if (qp->srq) qp->srq->qps.fetch_add(1);
        if (qp->pd) qp->pd->users.fetch_add(1);
        if (qp->xrcd) qp->xrcd->users.fetch_add(1);
        ctx.live_objects.fetch_add(1);
        return &qp.release()->ibqp;
    });
}

int modify_ib_qp(Qp& qp, ibv_qp_attr& attr, int mask) noexcept {
    Device& dev = *qp.ctx->device;
    if (mask & ~kQpAttrBits) return EINVAL;
    if (int err = check_attr_values(qp, attr, mask)) return err;
    bool to_reset = false;
    ibv_qp_state cur;
    ibv_qp_state next;
    bool wake = false;
    {
        std::lock_guard port_lock(dev.port.mutex());
        cur = qp.ibqp.state;
        // The kernel trusts cur_qp_state; the HCA then refuses to move a QP
        // from a state it is not in.
        if ((mask & IBV_QP_CUR_STATE) && raw_enum(attr.cur_qp_state) != cur) return EINVAL;
        next = cur;
        if (mask & IBV_QP_STATE) {
            const auto target = raw_enum(attr.qp_state);
            if (target < IBV_QPS_RESET || target > IBV_QPS_ERR) return EINVAL;
            next = static_cast<ibv_qp_state>(target);
        }
        if (!modify_is_ok(cur, next, qp.ibqp.qp_type, mask)) return EINVAL;
        if (next == IBV_QPS_RESET) {
            // RESET forgets the attributes the QP had (the caps stay).
            const ibv_qp_cap cap = qp.attr.cap;
            std::memset(&qp.attr, 0, sizeof qp.attr);
            qp.attr.cap = cap;
            qp.attr.port_num = 1;
        }
        // The drain notification is asked for per RTS -> SQD transition.
        if (cur == IBV_QPS_RTS && next == IBV_QPS_SQD) qp.attr.en_sqd_async_notify = 0;
        store_qp_attrs(qp.attr, attr, mask); // what the transition allowed
        const std::uint64_t deadline = dev.port.next_deadline_ns();
        set_state(qp, next);
        after_transport_call(dev, dev.port.now_ns());
        wake = dev.port.next_deadline_ns() < deadline;
        to_reset = next == IBV_QPS_RESET;
    }
    if (dev.hooks) {
        if (next == IBV_QPS_RTR && cur != IBV_QPS_RTR) dev.hooks->on_receiver_ready(dev);
        if (wake) dev.hooks->on_post(dev);
    }
    // As mlx5_modify_qp: after a move to RESET the QP's completions leave
    // both CQs. Locks: poll, then port (CqConsumer).
    if (to_reset && qp.send_cq != nullptr) { // XRC TGT QPs have none
        purge_completions(dev, *qp.recv_cq, qp.ibqp.qp_num);
        if (qp.send_cq != qp.recv_cq) purge_completions(dev, *qp.send_cq, qp.ibqp.qp_num);
    }
    return 0;
}

void query_ib_qp(Qp& qp, ibv_qp_attr& attr, ibv_qp_init_attr& init) noexcept {
    {
        std::lock_guard port_lock(qp.ctx->device->port.mutex());
        attr = qp.attr;
    }
    std::memset(&init, 0, sizeof init);
    init.qp_context = qp.ibqp.qp_context;
    init.send_cq = qp.ibqp.send_cq;
    init.recv_cq = qp.ibqp.recv_cq;
    init.srq = qp.ibqp.srq;
    init.cap = attr.cap;
    init.qp_type = qp.ibqp.qp_type;
    init.sq_sig_all = qp.sq_sig_all;
}

int destroy_ib_qp(Qp& qp) noexcept {
    Device& dev = *qp.ctx->device;
    ibv_qp* q = &qp.ibqp;
    {
        // The transport goes: no packet reaches the QP, no WQE of it is
        // taken from here on.
        std::lock_guard port_lock(dev.port.mutex());
        delete qp.transport;
        qp.transport = nullptr;
        std::lock_guard recv_lock(qp.rq.post_lock);
        qp.rq.ring.reset();
        q->state = IBV_QPS_RESET;
    }
    if (qp.send_cq != nullptr) {
        purge_completions(dev, *qp.recv_cq, q->qp_num);
        if (qp.send_cq != qp.recv_cq) purge_completions(dev, *qp.send_cq, q->qp_num);
    }
    forget_async_events(*qp.ctx, q);
    const std::uint32_t reported = qp.events_reported;
    wait_for_acks(q->mutex, q->cond, [&] { return q->events_completed == reported; });
    if (qp.send_cq) qp.send_cq->users.fetch_sub(1);
    if (qp.recv_cq) qp.recv_cq->users.fetch_sub(1);
    if (qp.srq) qp.srq->qps.fetch_sub(1);
    if (qp.pd) qp.pd->users.fetch_sub(1);
    if (qp.xrcd) qp.xrcd->users.fetch_sub(1);
    object_destroyed(*qp.ctx);
    pthread_cond_destroy(&q->cond);
    pthread_mutex_destroy(&q->mutex);
    delete qp.wr_builder;
    delete &qp;
    return 0;
}

void hca_set_qp_state(Qp& qp, ibv_qp_state state) noexcept { write_state(qp, state); }

} // namespace rdmasim::device
