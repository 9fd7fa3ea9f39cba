// The QP verbs: the checks every QP type shares, then the role's own verbs
// (device/qp_roles.hpp) through Qp::ops; and what the roles share.
#include "device/qp.hpp"

#include <cstring>

#include "device/abi_guard.hpp"
#include "device/async_events.hpp"
#include "device/context.hpp"
#include "device/import.hpp"
#include "device/qp_roles.hpp"
#include "device/qp_state.hpp"
#include "device/verb_faults.hpp"

namespace rdmasim::device {

namespace {

constexpr std::uint32_t kKnownInitAttrs =
    IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_IND_TABLE |
    IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_XRCD;
constexpr std::uint32_t kRssInitAttrs = IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;

bool is_ib_type(std::int64_t type) noexcept {
    return type == IBV_QPT_RC || type == IBV_QPT_UC || type == IBV_QPT_UD ||
           type == IBV_QPT_XRC_SEND || type == IBV_QPT_XRC_RECV;
}

// A raw-packet QP's create flags (plain or RSS): each must be known, and
// its capability on.
int check_create_flags(const Device& dev, const ibv_qp_init_attr_ex& attr) noexcept {
    if (!(attr.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS)) return 0;
    const std::uint32_t flags = attr.create_flags;
    const std::uint32_t supported = IBV_QP_CREATE_SCATTER_FCS | IBV_QP_CREATE_CVLAN_STRIPPING |
                                    IBV_QP_CREATE_PCI_WRITE_END_PADDING;
    if (flags & ~supported) return EOPNOTSUPP;
    if (((flags & IBV_QP_CREATE_SCATTER_FCS) && !dev.caps.scatter_fcs) ||
        ((flags & IBV_QP_CREATE_CVLAN_STRIPPING) && !dev.caps.cvlan_stripping) ||
        ((flags & IBV_QP_CREATE_PCI_WRITE_END_PADDING) && !dev.caps.pci_write_end_padding))
        return EOPNOTSUPP;
    return 0;
}

// An XRC TGT QP belongs to a domain, not a PD.
ibv_qp* create_xrc_tgt(Context& ctx, ibv_qp_init_attr_ex& attr) noexcept {
    if (attr.comp_mask & kRssInitAttrs) return fail<ibv_qp>(EOPNOTSUPP); // RSS: raw-packet QPs only
    if (!(attr.comp_mask & IBV_QP_INIT_ATTR_XRCD) || attr.xrcd == nullptr ||
        attr.xrcd->context != &ctx.vctx.context)
        return fail<ibv_qp>(EINVAL);
    return create_ib_qp(ctx, attr);
}

// create_qp_ex's work, for both create verbs (each counts its own call):
// the checks every type shares, then the role's create.
ibv_qp* make_qp(ibv_context* context, ibv_qp_init_attr_ex* attr) noexcept {
    return guard_ptr<ibv_qp>([&]() -> ibv_qp* {
        if (context == nullptr || attr == nullptr) return fail<ibv_qp>(EINVAL);
        Context& ctx = *from_verbs(context);
        if (attr->comp_mask & ~kKnownInitAttrs) return fail<ibv_qp>(EOPNOTSUPP);
        const auto type = raw_enum(attr->qp_type);
        if (type != IBV_QPT_RAW_PACKET && !is_ib_type(type)) return fail<ibv_qp>(EOPNOTSUPP);
        if (type == IBV_QPT_XRC_RECV) return create_xrc_tgt(ctx, *attr);
        if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == nullptr ||
            attr->pd->context != context || kernel_pd(attr->pd) == nullptr)
            return fail<ibv_qp>(EINVAL);
        if (is_ib_type(type)) return create_ib_qp(ctx, *attr); // RC, UC, UD, XRC INI
        if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) return fail<ibv_qp>(EOPNOTSUPP);
        if (int err = check_create_flags(*ctx.device, *attr)) return fail<ibv_qp>(err);
        return attr->comp_mask & kRssInitAttrs ? create_rss_qp(ctx, *attr)
                                               : create_raw_qp(ctx, *attr);
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
        if (int e = injected_failure(*qp.ctx->device, Verb::modify_qp)) return e;
        return qp.ops->modify(qp, *attr, mask);
    });
}

int query_qp(ibv_qp* q, ibv_qp_attr* attr, int /*attr_mask*/, ibv_qp_init_attr* init) noexcept {
    if (q == nullptr || attr == nullptr || init == nullptr) return EINVAL;
    Qp& qp = *from_verbs(q);
    qp.ops->query(qp, *attr, *init);
    return 0;
}

int destroy_qp(ibv_qp* q) noexcept {
    return guard_errno([&] {
        if (q == nullptr) return EINVAL;
        Qp& qp = *from_verbs(q);
        if (qp.flows.load() != 0) return EBUSY;
        return qp.ops->destroy(qp);
    });
}

int post_recv(ibv_qp* q, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    if (q == nullptr || bad_wr == nullptr) return EINVAL;
    Qp& qp = *from_verbs(q);
    if (int e = injected_failure(*qp.ctx->device, Verb::post_recv)) {
        *bad_wr = wr;
        return e;
    }
    return qp.ops->post_recv(qp, wr, bad_wr);
}

int post_send(ibv_qp* q, ibv_send_wr* wr, ibv_send_wr** bad_wr) noexcept {
    if (q == nullptr || bad_wr == nullptr) return EINVAL;
    Qp& qp = *from_verbs(q);
    if (int e = injected_failure(*qp.ctx->device, Verb::post_send)) {
        *bad_wr = wr;
        return e;
    }
    return qp.ops->post_send(qp, wr, bad_wr);
}

void init_qp(Qp& qp, Context& ctx, const ibv_qp_init_attr_ex& attr, ibv_qp_type type,
             const QpOps& ops) noexcept {
    Device& dev = *ctx.device;
    std::memset(&qp.qpx, 0, sizeof qp.qpx);
    qp.ops = &ops;
    qp.ctx = &ctx;
    qp.pd = attr.pd ? kernel_pd(attr.pd) : nullptr; // an imported PD: the one it names
    ibv_qp& q = qp.ibqp;
    q.context = &ctx.vctx.context;
    q.qp_context = attr.qp_context;
    q.pd = attr.pd;
    q.handle = dev.next_handle.fetch_add(1);
    q.qp_num = dev.next_qpn.fetch_add(1);
    q.state = IBV_QPS_RESET;
    q.qp_type = type;
    pthread_mutex_init(&q.mutex, nullptr);
    pthread_cond_init(&q.cond, nullptr);
    qp.attr.qp_state = IBV_QPS_RESET;
    qp.attr.cur_qp_state = IBV_QPS_RESET;
    qp.attr.port_num = 1;
}

void fill_query(const Qp& qp, const ibv_qp_attr& attr, bool sq_sig_all, ibv_qp_attr& out,
                ibv_qp_init_attr& init) noexcept {
    out = attr;
    std::memset(&init, 0, sizeof init);
    init.qp_context = qp.ibqp.qp_context;
    init.send_cq = qp.ibqp.send_cq;
    init.recv_cq = qp.ibqp.recv_cq;
    init.srq = qp.ibqp.srq;
    init.cap = attr.cap;
    init.qp_type = qp.ibqp.qp_type;
    init.sq_sig_all = sq_sig_all;
}

void wait_for_qp_events(Qp& qp) noexcept {
    ibv_qp* q = &qp.ibqp;
    forget_async_events(*qp.ctx, q);
    const std::uint32_t reported = qp.events_reported;
    wait_for_acks(q->mutex, q->cond, [&] { return q->events_completed == reported; });
}

void end_qp(Qp& qp) noexcept {
    object_destroyed(*qp.ctx);
    pthread_cond_destroy(&qp.ibqp.cond);
    pthread_mutex_destroy(&qp.ibqp.mutex);
}

int packet_qp_transition(const Qp& qp, const ibv_qp_attr& attr, int mask,
                         ibv_qp_state& next) noexcept {
    const ibv_qp_state cur = qp.ibqp.state;
    if ((mask & IBV_QP_CUR_STATE) && raw_enum(attr.cur_qp_state) != cur) return EINVAL;
    if ((mask & IBV_QP_PORT) && attr.port_num != 1) return EINVAL;
    next = cur;
    if (!(mask & IBV_QP_STATE)) return 0;
    const auto target = raw_enum(attr.qp_state);
    if (target < IBV_QPS_RESET || target > IBV_QPS_ERR) return EINVAL;
    next = static_cast<ibv_qp_state>(target);
    const bool legal = next == IBV_QPS_RESET || next == IBV_QPS_ERR ||
                       (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) ||
                       (cur == IBV_QPS_INIT && (next == IBV_QPS_INIT || next == IBV_QPS_RTR)) ||
                       (cur == IBV_QPS_RTR && next == IBV_QPS_RTS) ||
                       (cur == IBV_QPS_RTS && next == IBV_QPS_RTS);
    return legal ? 0 : EINVAL;
}

void store_packet_qp(Qp& qp, const ibv_qp_attr& attr, int mask, ibv_qp_state next) noexcept {
    qp.ibqp.state = next;
    qp.attr.qp_state = next;
    qp.attr.cur_qp_state = next;
    store_qp_attrs(qp.attr, attr, mask & (IBV_QP_PKEY_INDEX | IBV_QP_QKEY));
}

} // namespace rdmasim::device
