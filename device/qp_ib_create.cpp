// Creating RC, UC, UD and XRC QPs (device/qp_roles.hpp, IbQp): the checks
// after qp.cpp's, caps sized as mlx5 sizes them, and the transport
// (device/README.md, "RC, UC and UD queue pairs", "Creation").
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/qp_ex.hpp"
#include "device/qp_ib.hpp"
#include "device/qp_transport.hpp"

namespace rdmasim::device {

namespace {

// The send WQE layout mlx5 sizes queues with (providers/mlx5/verbs.c,
// mlx5_calc_send_wqe; kernel hw/mlx5/qp.c, calc_send_wqe): 64-byte basic
// blocks, 16-byte segments, a WQE at most kMaxSqDesc bytes.
constexpr std::uint32_t kSendWqeBb = 64;
constexpr std::uint32_t kSeg = 16;
constexpr std::uint32_t kInlineHeader = 4;
constexpr std::uint32_t kMaxSqDesc = 1024;

// What mlx5's sq_overhead reserves before the data: the largest WQE the
// QP's operations need, then the transport's segment. RC, UC and XRC can
// post every operation by default, MW binds and local invalidates too (a
// UMR: control, UMR control, mkey context and a 64-byte KLM area, 192
// bytes); with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS only the asked ones count.
// UD: control and datagram segments.
std::uint32_t sq_overhead(const ibv_qp_init_attr_ex& a) noexcept {
    constexpr std::uint32_t ctrl = kSeg, raddr = kSeg, atomic = kSeg, umr = 48 + 64 + 64;
    if (a.qp_type == IBV_QPT_UD) return ctrl + 3 * kSeg;
    if (a.qp_type != IBV_QPT_RC && a.qp_type != IBV_QPT_UC && a.qp_type != IBV_QPT_XRC_SEND)
        return ctrl + 3 * kSeg;
    std::uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                        IBV_QP_EX_WITH_BIND_MW;
    if (a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) ops = a.send_ops_flags;
    std::uint32_t size = ctrl;
    if (ops & (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ))
        size = std::max(size, ctrl + raddr);
    if (ops & (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD))
        size = std::max(size, ctrl + raddr + atomic);
    if (ops & (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV)) size = std::max(size, ctrl + umr);
    return a.qp_type == IBV_QPT_XRC_SEND ? size + kSeg : size; // XRC: the remote SRQ number
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
    const std::uint32_t overhead = sq_overhead(a);
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

// The attributes, after qp.cpp's checks: no RSS, no create flag but
// IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (as mlx5's create_qp), CQs and
// an SRQ of the context. What the type cannot have is dropped: an XRC TGT
// QP has no CQs, SRQ or PD; an XRC INI QP no receive CQ of its own (its
// send CQ stands in, never used); only XRC TGT QPs keep an XRC domain.
int check_ib_attr(const Context& ctx, ibv_qp_init_attr_ex& attr) noexcept {
    const ibv_context* context = &ctx.vctx.context;
    // RSS is for raw-packet QPs only (mlx5's create_qp: EOPNOTSUPP).
    if (attr.comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH)) return EOPNOTSUPP;
    if ((attr.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
        (attr.create_flags & ~std::uint32_t{IBV_QP_CREATE_BLOCK_SELF_MCAST_LB}) != 0)
        return EOPNOTSUPP;
    const bool xrc_tgt = attr.qp_type == IBV_QPT_XRC_RECV;
    const bool xrc_ini = attr.qp_type == IBV_QPT_XRC_SEND;
    if (xrc_tgt) {
        attr.send_cq = attr.recv_cq = nullptr;
        attr.srq = nullptr;
        attr.pd = nullptr;
    } else {
        if (xrc_ini && attr.recv_cq == nullptr) attr.recv_cq = attr.send_cq;
        if (attr.send_cq == nullptr || attr.recv_cq == nullptr ||
            attr.send_cq->context != context || attr.recv_cq->context != context)
            return EINVAL;
        if (xrc_ini && attr.srq != nullptr) return EINVAL;
    }
    if (attr.srq != nullptr && attr.srq->context != context) return EINVAL;
    if (!xrc_tgt && (attr.comp_mask & IBV_QP_INIT_ATTR_XRCD)) attr.xrcd = nullptr;
    return 0;
}

// The objects the QP works with, its queues as sized, and the caps it
// really has, written back into attr.cap.
void set_up_queues(IbQp& qp, ibv_qp_init_attr_ex& attr, const Sizes& sz) noexcept {
    qp.xrcd = attr.qp_type == IBV_QPT_XRC_RECV ? from_verbs(attr.xrcd) : nullptr;
    qp.send_cq = attr.send_cq ? from_verbs(attr.send_cq) : nullptr;
    qp.recv_cq = attr.recv_cq ? from_verbs(attr.recv_cq) : nullptr;
    qp.srq = attr.srq ? from_verbs(attr.srq) : nullptr;
    qp.ibqp.send_cq = attr.send_cq;
    qp.ibqp.recv_cq = attr.recv_cq;
    qp.ibqp.srq = attr.srq;
    qp.sq_sig_all = attr.sq_sig_all;
    qp.block_self_mcast = (attr.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
                          (attr.create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
    qp.max_send_wr = sz.send_wr;
    qp.max_send_sge = sz.send_sge;
    qp.max_inline = sz.inline_data;
    qp.rq.ring.init(sz.recv_ring, std::max<std::uint32_t>(sz.recv_sge, 1));
    qp.rq.max_sge = sz.recv_sge;
    qp.rq.max_post = sz.recv_wr;
    attr.cap.max_send_wr = sz.send_wr;
    attr.cap.max_send_sge = sz.send_sge;
    attr.cap.max_inline_data = sz.inline_data;
    attr.cap.max_recv_wr = sz.recv_wr;
    attr.cap.max_recv_sge = sz.recv_sge;
    qp.attr.cap = attr.cap;
}

// What the transport's rings hold.
datapath::TransportLimits transport_limits(const Device& dev, const IbQp& qp,
                                           const Sizes& sz) noexcept {
    datapath::TransportLimits limits;
    limits.max_send_wr = std::max<std::uint32_t>(sz.send_wr, 1);
    limits.max_send_sge = sz.send_sge;
    limits.max_inline = sz.inline_data;
    limits.max_recv_sge = qp.xrcd != nullptr ? dev.caps.max_srq_sge // any XRC SRQ of its domain
                          : qp.srq != nullptr ? qp.srq->rq.max_sge
                                              : std::max<std::uint32_t>(sz.recv_sge, 1);
    // A tag-matching SRQ's rendezvous: READ and FIN slots of the QP's own
    // (datapath/README.md, "Tag matching"), 8 rendezvous at a time.
    if (qp.srq != nullptr && qp.srq->tm != nullptr) limits.tm_reserve = 16;
    return limits;
}

// The QP holds its CQs, SRQ, PD and domain (EBUSY on their destroy).
void hold_objects(IbQp& qp) noexcept {
    if (qp.send_cq) qp.send_cq->users.fetch_add(1);
    if (qp.recv_cq) qp.recv_cq->users.fetch_add(1);
    if (qp.srq) qp.srq->qps.fetch_add(1);
    if (qp.pd) qp.pd->users.fetch_add(1);
    if (qp.xrcd) qp.xrcd->users.fetch_add(1);
}

} // namespace

ibv_qp* create_ib_qp(Context& ctx, ibv_qp_init_attr_ex& attr) noexcept {
    return guard_ptr<ibv_qp>([&]() -> ibv_qp* {
        Device& dev = *ctx.device;
        if (int err = check_ib_attr(ctx, attr)) return fail<ibv_qp>(err);
        Sizes sz;
        if (int err = size_queues(dev, attr, sz)) return fail<ibv_qp>(err);
        auto qp = std::make_unique<IbQp>();
        init_qp(*qp, ctx, attr, attr.qp_type, kIbQpOps);
        qp->ibqp.qp_num &= 0xffffff;
        set_up_queues(*qp, attr, sz);
        const datapath::TransportLimits limits = transport_limits(dev, *qp, sz);
        if (attr.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
            if (int err = make_extended(*qp, attr.send_ops_flags)) return fail<ibv_qp>(err);
        {
            std::lock_guard port_lock(dev.port.mutex()); // the port's RoCE side learns its number
            qp->transport = new QpTransport(dev, *qp, limits);
        }
        hold_objects(*qp);
        ctx.live_objects.fetch_add(1);
        return &qp.release()->ibqp;
    });
}

} // namespace rdmasim::device
