#include "device/cq.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <mutex>
#include <thread>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/async_events.hpp"
#include "device/verb_faults.hpp"
#include "device/trace.hpp"

namespace rdmasim::device {

namespace {

// What make_cq builds, as each creation verb asks for it.
struct CqSpec {
    int cqe = 0;
    void* cq_context = nullptr;
    ibv_comp_channel* channel = nullptr;
    int comp_vector = 0;
    std::uint64_t wc_flags = IBV_WC_STANDARD_FLAGS;
    bool extended = false;       // by ibv_create_cq_ex: the read_* accessors work
    bool ignore_overrun = false; // IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN
};

Cq* cq_of(ibv_cq_ex* c) { return from_verbs(c); }

void pump(Cq& cq) noexcept {
    if (cq.device->hooks) cq.device->hooks->on_poll(*cq.device);
}

// Takes the poll lock with a completion to poll (true), or finds none even
// after pumping (false, the lock not held). A poll pumps only when it would
// otherwise find nothing: frames arrive when the program waits for them, so
// one that drains its CQ one completion at a time is not flooded
// (device/README.md, "Completion queues and events"). Emptiness is the
// consumer's poll_empty(), which reads the producer's index only once the
// completions seen there are used up: a poll of a CQ known to hold some
// reads nothing of the engine's. The pump runs outside the poll lock.
bool lock_with_completion(Cq& cq) noexcept {
    cq.poll_lock.lock();
    if (!cq.ring.poll_empty()) return true;
    cq.poll_lock.unlock();
    pump(cq);
    cq.poll_lock.lock();
    if (!cq.ring.poll_empty()) return true;
    cq.poll_lock.unlock();
    return false;
}

// ibv_cq_ex read_* accessors over the entry start_poll / next_poll exposes
// (outside a poll, which the verbs do not allow, an empty entry: zeros).
const datapath::Cqe& exposed(ibv_cq_ex* c) noexcept {
    static const datapath::Cqe kNone{};
    const datapath::Cqe* e = cq_of(c)->current;
    return e != nullptr ? *e : kNone;
}
ibv_wc_opcode read_opcode(ibv_cq_ex* c) { return static_cast<ibv_wc_opcode>(exposed(c).opcode); }
uint32_t read_vendor_err(ibv_cq_ex* c) { return exposed(c).vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* c) { return exposed(c).byte_len; }
__be32 read_imm_data(ibv_cq_ex* c) { return exposed(c).imm_data; }
uint32_t read_qp_num(ibv_cq_ex* c) { return exposed(c).qp_num; }
uint32_t read_src_qp(ibv_cq_ex* c) { return exposed(c).src_qp; }
unsigned int read_wc_flags(ibv_cq_ex* c) { return exposed(c).wc_flags; }
uint32_t read_slid(ibv_cq_ex*) { return 0; }
uint8_t read_sl(ibv_cq_ex* c) {
    return exposed(c).sl;
}
uint8_t read_dlid_path_bits(ibv_cq_ex*) { return 0; }
uint64_t read_completion_ts(ibv_cq_ex* c) { return exposed(c).timestamp_ns; }
uint16_t read_cvlan(ibv_cq_ex* c) { return exposed(c).cvlan; }
uint32_t read_flow_tag(ibv_cq_ex*) { return 0; }
void read_tm_info(ibv_cq_ex* c, ibv_wc_tm_info* info) {
    info->tag = exposed(c).tm_tag;
    info->priv = exposed(c).tm_priv;
}
uint64_t read_wallclock_ns(ibv_cq_ex* c) { return exposed(c).timestamp_ns; }

void trace_completion(const Cq& cq, const datapath::Cqe& e) noexcept {
    if (TraceHook* t = cq.ctx->device->trace) [[unlikely]]
        t->completion(cq.cqx.handle, e);
}

void expose(Cq& cq) noexcept {
    cq.current = &cq.ring.front(); // read in place: the slot is ours until popped
    trace_completion(cq, *cq.current);
    cq.cqx.wr_id = cq.current->wr_id;
    cq.cqx.status = static_cast<ibv_wc_status>(cq.current->status);
}

int start_poll(ibv_cq_ex* c, ibv_poll_cq_attr* attr) noexcept {
    if (attr == nullptr || attr->comp_mask != 0) return EINVAL;
    Cq& cq = *cq_of(c);
    if (!lock_with_completion(cq)) return ENOENT; // held until end_poll, as rdma-core providers do
    cq.poll_owner.store(std::this_thread::get_id(), std::memory_order_relaxed);
    expose(cq);
    return 0;
}

int next_poll(ibv_cq_ex* c) noexcept {
    Cq& cq = *cq_of(c);
    if (cq.current != nullptr) {
        cq.ring.pop();
        cq.current = nullptr;
    }
    if (cq.ring.poll_empty()) return ENOENT;
    expose(cq);
    return 0;
}

void end_poll(ibv_cq_ex* c) noexcept {
    Cq& cq = *cq_of(c);
    if (cq.current != nullptr) {
        cq.ring.pop();
        cq.current = nullptr;
    }
    cq.poll_owner.store(std::thread::id{}, std::memory_order_relaxed);
    cq.poll_lock.unlock();
}

void install_readers(Cq& cq) noexcept {
    ibv_cq_ex& x = cq.cqx;
    const auto f = cq.wc_flags;
    x.start_poll = start_poll;
    x.next_poll = next_poll;
    x.end_poll = end_poll;
    x.read_opcode = read_opcode;
    x.read_vendor_err = read_vendor_err;
    x.read_byte_len = (f & IBV_WC_EX_WITH_BYTE_LEN) ? read_byte_len : nullptr;
    x.read_imm_data = (f & IBV_WC_EX_WITH_IMM) ? read_imm_data : nullptr;
    x.read_qp_num = (f & IBV_WC_EX_WITH_QP_NUM) ? read_qp_num : nullptr;
    x.read_src_qp = (f & IBV_WC_EX_WITH_SRC_QP) ? read_src_qp : nullptr;
    x.read_wc_flags = read_wc_flags; // always available: verbs has no flag for it
    x.read_slid = (f & IBV_WC_EX_WITH_SLID) ? read_slid : nullptr;
    x.read_sl = (f & IBV_WC_EX_WITH_SL) ? read_sl : nullptr;
    x.read_dlid_path_bits = (f & IBV_WC_EX_WITH_DLID_PATH_BITS) ? read_dlid_path_bits : nullptr;
    x.read_completion_ts = (f & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP) ? read_completion_ts : nullptr;
    x.read_cvlan = (f & IBV_WC_EX_WITH_CVLAN) ? read_cvlan : nullptr;
    x.read_flow_tag = (f & IBV_WC_EX_WITH_FLOW_TAG) ? read_flow_tag : nullptr;
    x.read_tm_info = (f & IBV_WC_EX_WITH_TM_INFO) ? read_tm_info : nullptr;
    x.read_completion_wallclock_ns =
        (f & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) ? read_wallclock_ns : nullptr;
}

// Shared by both creation paths. NULL + errno on failure.
Cq* make_cq(ibv_context* context, const CqSpec& spec) {
    if (context == nullptr) return fail<Cq>(EINVAL);
    Context& ctx = *from_verbs(context);
    Device& dev = *ctx.device;
    const int cqe = spec.cqe;
    ibv_comp_channel* const channel = spec.channel;
    if (cqe < 1 || static_cast<std::uint32_t>(cqe) > dev.caps.max_cqe) return fail<Cq>(EINVAL);
    if (spec.comp_vector < 0 ||
        static_cast<std::uint32_t>(spec.comp_vector) >= dev.caps.num_comp_vectors)
        return fail<Cq>(EINVAL);
    if (channel != nullptr && channel->context != context) return fail<Cq>(EINVAL);

    auto cq = std::make_unique<Cq>();
    std::memset(&cq->cqx, 0, sizeof cq->cqx);
    cq->device = &dev;
    cq->ctx = &ctx;
    cq->ring.init(std::bit_ceil(static_cast<std::uint32_t>(cqe)));
    cq->wc_flags = spec.wc_flags;
    cq->extended = spec.extended;
    cq->ignore_overrun = spec.ignore_overrun;
    ibv_cq_ex& x = cq->cqx;
    x.context = context;
    x.channel = channel;
    x.cq_context = spec.cq_context;
    x.handle = dev.next_handle.fetch_add(1);
    x.cqe = static_cast<int>(cq->ring.capacity());
    pthread_mutex_init(&x.mutex, nullptr);
    pthread_cond_init(&x.cond, nullptr);
    install_readers(*cq);
    if (channel != nullptr) {
        cq->channel = from_verbs(channel);
        cq->channel->cqs.fetch_add(1);
    }
    {
        std::lock_guard lock(dev.port.mutex());
        dev.cqs.push_back(cq.get());
    }
    ctx.live_objects.fetch_add(1);
    return cq.release();
}


} // namespace

ibv_cq* create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel,
                  int comp_vector) noexcept {
    return guard_ptr<ibv_cq>([&]() -> ibv_cq* {
        if (context != nullptr)
            if (int e = injected_failure(*from_verbs(context)->device, Verb::create_cq))
                return fail<ibv_cq>(e);
        CqSpec spec;
        spec.cqe = cqe;
        spec.cq_context = cq_context;
        spec.channel = channel;
        spec.comp_vector = comp_vector;
        Cq* cq = make_cq(context, spec);
        return cq ? to_verbs_cq(cq) : nullptr;
    });
}

ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) noexcept {
    return guard_ptr<ibv_cq_ex>([&]() -> ibv_cq_ex* {
        if (attr == nullptr) return fail<ibv_cq_ex>(EINVAL);
        if (context != nullptr)
            if (int e = injected_failure(*from_verbs(context)->device, Verb::create_cq_ex))
                return fail<ibv_cq_ex>(e);
        if (attr->comp_mask & ~static_cast<std::uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS |
                                                           IBV_CQ_INIT_ATTR_MASK_PD))
            return fail<ibv_cq_ex>(EINVAL);
        if (attr->wc_flags & ~static_cast<std::uint64_t>(IBV_CREATE_CQ_SUP_WC_FLAGS))
            return fail<ibv_cq_ex>(EOPNOTSUPP);
        if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
            (attr->flags & ~static_cast<std::uint32_t>(IBV_CREATE_CQ_ATTR_SINGLE_THREADED |
                                                      IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)))
            return fail<ibv_cq_ex>(EOPNOTSUPP);
        // The PD must be a parent domain (mlx5_create_cq_ex).
        if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
            (attr->parent_domain == nullptr || attr->parent_domain->context != context ||
             from_verbs(attr->parent_domain)->protection == nullptr))
            return fail<ibv_cq_ex>(EINVAL);
        const bool ignore_overrun = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
                                    (attr->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN);
        CqSpec spec;
        spec.cqe = static_cast<int>(std::min<std::uint32_t>(attr->cqe, 1u << 30));
        spec.cq_context = attr->cq_context;
        spec.channel = attr->channel;
        spec.comp_vector = static_cast<int>(attr->comp_vector);
        spec.wc_flags = attr->wc_flags;
        spec.extended = true;
        spec.ignore_overrun = ignore_overrun;
        Cq* cq = make_cq(context, spec);
        if (cq == nullptr) return nullptr;
        if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
            cq->parent_domain = from_verbs(attr->parent_domain);
            cq->parent_domain->users.fetch_add(1);
        }
        return &cq->cqx;
    });
}

int destroy_cq(ibv_cq* c) noexcept {
    return guard_errno([&] {
        if (c == nullptr) return EINVAL;
        Cq* cq = from_verbs(c);
        if (cq->users.load() != 0) return EBUSY;
        Device& dev = *cq->device;
        {
            // From here on no burst notifies it or raises IBV_EVENT_CQ_ERR for it.
            std::lock_guard lock(dev.port.mutex());
            std::erase(dev.cqs, cq);
        }
        // Events not read yet go with the CQ (ib_uverbs_release_ucq); events
        // read must be acked before it is freed (ibv_cmd_destroy_cq).
        std::uint32_t comp_reported = 0;
        if (cq->channel) {
            CompChannel& ch = *cq->channel;
            std::lock_guard lock(ch.lock);
            for (auto n = std::erase(ch.fired, cq); n > 0; --n)
                take_channel_token(ch);
            comp_reported = cq->comp_events_reported;
            ch.cqs.fetch_sub(1);
        }
        forget_async_events(*cq->ctx, c);
        const std::uint32_t async_reported = cq->async_events_reported;
        wait_for_acks(c->mutex, c->cond, [&] {
            return c->comp_events_completed == comp_reported &&
                   c->async_events_completed == async_reported;
        });
        if (cq->parent_domain != nullptr) cq->parent_domain->users.fetch_sub(1);
        object_destroyed(*cq->ctx);
        pthread_cond_destroy(&cq->cqx.cond);
        pthread_mutex_destroy(&cq->cqx.mutex);
        delete cq;
        return 0;
    });
}

int poll_cq(ibv_cq* c, int num_entries, ibv_wc* wc) noexcept {
    if (c == nullptr || num_entries < 0 || (num_entries > 0 && wc == nullptr)) return -EINVAL;
    Cq& cq = *from_verbs(c);
    if (!lock_with_completion(cq)) return 0;
    std::lock_guard lock(cq.poll_lock, std::adopt_lock);
    int n = 0;
    for (; n < num_entries && !cq.ring.poll_empty(); ++n) {
        const datapath::Cqe& e = cq.ring.front();
        trace_completion(cq, e);
        ibv_wc& w = wc[n];
        std::memset(&w, 0, sizeof w);
        w.wr_id = e.wr_id;
        w.status = static_cast<ibv_wc_status>(e.status);
        w.opcode = static_cast<ibv_wc_opcode>(e.opcode);
        w.vendor_err = e.vendor_err;
        w.byte_len = e.byte_len;
        w.qp_num = e.qp_num;
        w.wc_flags = e.wc_flags;
        w.imm_data = e.imm_data;
        w.src_qp = e.src_qp;
        w.sl = e.sl;
        cq.ring.pop();
    }
    return n;
}

int resize_cq(ibv_cq* c, int cqe) noexcept {
    if (c == nullptr) return EINVAL;
    Cq& cq = *from_verbs(c);
    Device& dev = *cq.device;
    if (cqe < 1 || static_cast<std::uint32_t>(cqe) > dev.caps.max_cqe) return EINVAL;
    return guard_errno([&]() -> int {
        // Lock order: poll, then port (CqConsumer's).
        std::lock_guard poll_lock(cq.poll_lock);
        std::lock_guard port_lock(dev.port.mutex());
        // Fewer entries than are waiting: EINVAL, as mlx5_resize_cq.
        if (!cq.ring.resize(std::bit_ceil(static_cast<std::uint32_t>(cqe)))) return EINVAL;
        cq.cqx.cqe = static_cast<int>(cq.ring.capacity());
        return 0;
    });
}

CqConsumer::CqConsumer(Cq& cq) noexcept
    // Only the thread that stored its id can read it back: relaxed suffices.
    : cq_(cq),
      locked_(cq.poll_owner.load(std::memory_order_relaxed) != std::this_thread::get_id()) {
    if (locked_) cq_.poll_lock.lock();
}

CqConsumer::~CqConsumer() {
    if (locked_) cq_.poll_lock.unlock();
}

std::uint32_t CqConsumer::purge(std::uint32_t qp_num) noexcept {
    // With the lock free of any poll, nothing is exposed (end_poll clears it).
    return cq_.ring.purge(qp_num, cq_.current != nullptr ? 1 : 0);
}

void purge_completions(Device& dev, Cq& cq, std::uint32_t qp_num) noexcept {
    CqConsumer consumer(cq);
    std::lock_guard port_lock(dev.port.mutex());
    consumer.purge(qp_num);
}

} // namespace rdmasim::device
