// Shared receive queues: create (sizes as mlx5_create_srq rounds them),
// modify (arm the limit; no resize), query, destroy, post, and the limit
// event when the transport takes a WQE (device/README.md, "Shared receive
// queues").
#include "device/srq.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "device/abi_guard.hpp"
#include "device/async_events.hpp"
#include "device/context.hpp"
#include "device/import.hpp"
#include "device/qp_ib.hpp"
#include "device/tm_srq.hpp"
#include "device/xrcd.hpp"

namespace rdmasim::device {

namespace {

std::uint32_t pow2_at_least(std::uint64_t v) noexcept {
    std::uint64_t p = 1;
    while (p < v) p <<= 1;
    return static_cast<std::uint32_t>(p);
}

// What an SRQ other than a basic one has besides its attributes.
struct SrqKind {
    Xrcd* xrcd = nullptr; // an XRC SRQ's domain ...
    Cq* cq = nullptr;     // ... and completion queue (both or neither)
    const ibv_srq_init_attr_ex* tm = nullptr; // a tag-matching SRQ's attributes (device/tm_srq.hpp)
};

ibv_srq* make_srq(ibv_pd* pd, void* srq_context, ibv_srq_attr& a, const SrqKind& kind = {}) {
    Xrcd* const xrcd = kind.xrcd;
    Cq* const cq = kind.cq;
    const ibv_srq_init_attr_ex* const tm = kind.tm;
    Context& ctx = *from_verbs(pd->context);
    const Capabilities& caps = ctx.device->caps;
    if (a.max_wr > caps.max_srq_wr || a.max_sge > caps.max_srq_sge) return fail<ibv_srq>(EINVAL);
    if (ctx.device->srqs.fetch_add(1) >= caps.max_srq) {
        ctx.device->srqs.fetch_sub(1);
        return fail<ibv_srq>(ENOMEM);
    }
    struct Release { // gives the slot back unless the SRQ is made
        Device* dev;
        ~Release() { if (dev) dev->srqs.fetch_sub(1); }
    } release{ctx.device};
    // mlx5_create_srq: a ring of roundup_pow_of_two(max_wr + 1) WQEs, one
    // kept empty; WQEs of a 16-byte header and 16-byte data segments,
    // rounded up to a power of two.
    const std::uint32_t ring = pow2_at_least(std::uint64_t{a.max_wr} + 1);
    const std::uint32_t wqe = pow2_at_least(16 + 16ull * std::max<std::uint32_t>(a.max_sge, 1));
    auto srq = std::make_unique<Srq>();
    std::memset(&srq->ibsrq, 0, sizeof srq->ibsrq);
    srq->ctx = &ctx;
    srq->pd = kernel_pd(pd); // an imported PD: the one it names
    srq->rq.max_sge = std::min((wqe - 16) / 16, caps.max_srq_sge);
    srq->rq.max_post = ring - 1;
    srq->rq.ring.init(ring, srq->rq.max_sge);
    srq->srq_num = ctx.device->next_qpn.fetch_add(1) & 0xffffff;
    ibv_srq& s = srq->ibsrq;
    s.context = pd->context;
    s.srq_context = srq_context;
    s.pd = pd;
    s.handle = ctx.device->next_handle.fetch_add(1);
    pthread_mutex_init(&s.mutex, nullptr);
    pthread_cond_init(&s.cond, nullptr);
    if (tm != nullptr) {
        if (int err = make_tag_list(*srq, *tm, srq->tm)) return fail<ibv_srq>(err);
        srq->cq = from_verbs(tm->cq);
        srq->cq->users.fetch_add(1);
    }
    a.max_wr = srq->rq.max_post;
    a.max_sge = srq->rq.max_sge;
    if (xrcd != nullptr) {
        srq->xrcd = xrcd;
        srq->cq = cq;
        if (int err = add_xrc_srq(*srq)) return fail<ibv_srq>(err);
        xrcd->users.fetch_add(1);
        cq->users.fetch_add(1);
    }
    srq->pd->users.fetch_add(1);
    ctx.live_objects.fetch_add(1);
    release.dev = nullptr;
    return &srq.release()->ibsrq;
}

} // namespace

ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) noexcept {
    return guard_ptr<ibv_srq>([&]() -> ibv_srq* {
        if (pd == nullptr || attr == nullptr || kernel_pd(pd) == nullptr)
            return fail<ibv_srq>(EINVAL);
        return make_srq(pd, attr->srq_context, attr->attr);
    });
}

ibv_srq* create_srq_ex(ibv_context* context, ibv_srq_init_attr_ex* attr) noexcept {
    return guard_ptr<ibv_srq>([&]() -> ibv_srq* {
        if (context == nullptr || attr == nullptr) return fail<ibv_srq>(EINVAL);
        if (attr->comp_mask >= IBV_SRQ_INIT_ATTR_RESERVED) return fail<ibv_srq>(EINVAL);
        const std::int64_t type =
            (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? raw_enum(attr->srq_type) : std::int64_t{IBV_SRQT_BASIC};
        if (type != IBV_SRQT_BASIC && type != IBV_SRQT_XRC && type != IBV_SRQT_TM)
            return fail<ibv_srq>(EINVAL); // mlx5_create_srq_ex
        if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || attr->pd == nullptr ||
            attr->pd->context != context || kernel_pd(attr->pd) == nullptr)
            return fail<ibv_srq>(EINVAL);
        if (type == IBV_SRQT_BASIC) return make_srq(attr->pd, attr->srq_context, attr->attr);
        if (type == IBV_SRQT_TM) // tm_cap and an extended CQ (device/tm_srq.cpp)
            return make_srq(attr->pd, attr->srq_context, attr->attr, SrqKind{.tm = attr});
        // XRC (ibv_create_srq_ex(3)): a domain and a CQ of this context.
        const unsigned xrc_mask = IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
        if ((attr->comp_mask & xrc_mask) != xrc_mask || attr->xrcd == nullptr ||
            attr->cq == nullptr || attr->xrcd->context != context || attr->cq->context != context)
            return fail<ibv_srq>(EINVAL);
        return make_srq(attr->pd, attr->srq_context, attr->attr,
                        SrqKind{.xrcd = from_verbs(attr->xrcd), .cq = from_verbs(attr->cq)});
    });
}

int modify_srq(ibv_srq* s, ibv_srq_attr* attr, int mask) noexcept {
    if (s == nullptr || attr == nullptr) return EINVAL;
    Srq& srq = *from_verbs(s);
    // mlx5_ib_modify_srq: no resize (IBV_SRQ_MAX_WR is EINVAL); the limit
    // must be below the ring's size.
    if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)) return EINVAL;
    if (mask & IBV_SRQ_MAX_WR) return EINVAL;
    if (mask & IBV_SRQ_LIMIT) {
        if (attr->srq_limit > srq.rq.max_post) return EINVAL;
        std::lock_guard port_lock(srq.ctx->device->port.mutex());
        srq.limit = attr->srq_limit;
    }
    return 0;
}

int query_srq(ibv_srq* s, ibv_srq_attr* attr) noexcept {
    if (s == nullptr || attr == nullptr) return EINVAL;
    Srq& srq = *from_verbs(s);
    std::lock_guard port_lock(srq.ctx->device->port.mutex());
    attr->max_wr = srq.rq.max_post;
    attr->max_sge = srq.rq.max_sge;
    attr->srq_limit = srq.limit;
    return 0;
}

int destroy_srq(ibv_srq* s) noexcept {
    return guard_errno([&] {
        if (s == nullptr) return EINVAL;
        Srq* srq = from_verbs(s);
        if (srq->qps.load() != 0) return EBUSY;
        {
            std::lock_guard port_lock(srq->ctx->device->port.mutex());
            srq->limit = 0; // nothing raises another event for it
        }
        if (srq->xrcd != nullptr) { // no request finds it from here on
            remove_xrc_srq(*srq);
            srq->xrcd->users.fetch_sub(1);
            srq->cq->users.fetch_sub(1);
        }
        if (srq->tm != nullptr) {
            srq->cq->users.fetch_sub(1);
            delete srq->tm;
        }
        forget_async_events(*srq->ctx, s);
        const std::uint32_t reported = srq->events_reported;
        wait_for_acks(s->mutex, s->cond, [&] { return s->events_completed == reported; });
        srq->pd->users.fetch_sub(1);
        srq->ctx->device->srqs.fetch_sub(1);
        object_destroyed(*srq->ctx); // may free the context: last
        pthread_cond_destroy(&s->cond);
        pthread_mutex_destroy(&s->mutex);
        delete srq;
        return 0;
    });
}

int post_srq_recv(ibv_srq* s, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    if (s == nullptr || bad_wr == nullptr) return EINVAL;
    Srq& srq = *from_verbs(s);
    std::lock_guard lock(srq.rq.post_lock);
    return post_work_recv(srq.rq, wr, bad_wr);
}

int get_srq_num(ibv_srq* s, uint32_t* srq_num) noexcept {
    if (s == nullptr || srq_num == nullptr) return EINVAL;
    *srq_num = from_verbs(s)->srq_num;
    return 0;
}

void pop_srq_wqe(Srq& srq) noexcept {
    datapath::RecvRing& ring = srq.rq.ring;
    ring.pop();
    if (srq.limit != 0 && ring.size() < srq.limit) {
        srq.limit = 0;
        ibv_async_event ev{};
        ev.element.srq = &srq.ibsrq;
        ev.event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
        raise_async_event(*srq.ctx, ev);
    }
}

} // namespace rdmasim::device
