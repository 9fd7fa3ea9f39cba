#include "device/wq.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>

#include "device/abi_guard.hpp"
#include "device/async_events.hpp"
#include "device/context.hpp"
#include "device/cq.hpp"
#include "device/device.hpp"
#include "device/import.hpp"
#include "device/recv.hpp"
#include "device/verb_faults.hpp"

namespace rdmasim::device {

namespace {

// A known flag whose capability is off (create_rq, kernel drivers/infiniband/hw/mlx5/qp.c).
int validate_create_flags(const Device& dev, std::uint32_t flags) noexcept {
    const Capabilities& c = dev.caps;
    if ((flags & IBV_WQ_FLAGS_CVLAN_STRIPPING) && !c.cvlan_stripping) return EOPNOTSUPP;
    if ((flags & IBV_WQ_FLAGS_SCATTER_FCS) && !c.scatter_fcs) return EOPNOTSUPP;
    if ((flags & IBV_WQ_FLAGS_DELAY_DROP) && !c.delay_drop) return EOPNOTSUPP;
    if ((flags & IBV_WQ_FLAGS_PCI_WRITE_END_PADDING) && !c.pci_write_end_padding) return EOPNOTSUPP;
    return 0;
}

// What a verbs WQ state means to the datapath.
datapath::QueueState rx_state(ibv_wq_state s) noexcept {
    switch (s) {
    case IBV_WQS_RDY:
        return datapath::QueueState::ready;
    case IBV_WQS_ERR:
        return datapath::QueueState::error;
    default:
        return datapath::QueueState::reset;
    }
}

// mlx5_ib_create_wq (kernel drivers/infiniband/hw/mlx5/qp.c) refuses
// IB_WQ_FLAGS_DELAY_DROP with EPERM unless capable(CAP_SYS_RAWIO), before any
// other check of the driver's; the emulator asks the same of the effective set
// under caps.delay_drop_needs_rawio.
bool has_rawio() noexcept {
    // CAP_SYS_RAWIO is capability 17 in the effective set. capable() asks the
    // calling thread's credentials, so this thread's status, not the process's
    // (/proc/self is the main thread's).
    FILE* f = std::fopen("/proc/thread-self/status", "r");
    if (f == nullptr) return false;
    char line[256];
    unsigned long long eff = 0;
    while (std::fgets(line, sizeof line, f))
        if (std::sscanf(line, "CapEff: %llx", &eff) == 1) break;
    std::fclose(f);
    return eff & (1ull << 17);
}

} // namespace

ibv_wq* create_wq(ibv_context* context, ibv_wq_init_attr* attr) noexcept {
    return guard_ptr<ibv_wq>([&]() -> ibv_wq* {
        if (context == nullptr || attr == nullptr) return fail<ibv_wq>(EINVAL);
        Context& ctx = *from_verbs(context);
        Device& dev = *ctx.device;
        if (int e = injected_failure(dev, Verb::create_wq)) return fail<ibv_wq>(e);
        if (attr->comp_mask & ~static_cast<std::uint32_t>(IBV_WQ_INIT_ATTR_RESERVED - 1))
            return fail<ibv_wq>(EINVAL);
        const std::uint32_t flags =
            (attr->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) ? attr->create_flags : 0;
        if (flags & ~static_cast<std::uint32_t>(IBV_WQ_FLAGS_RESERVED - 1))
            return fail<ibv_wq>(EOPNOTSUPP); // libibverbs, before the kernel
        if ((flags & IBV_WQ_FLAGS_DELAY_DROP) && dev.caps.delay_drop_needs_rawio && !has_rawio())
            return fail<ibv_wq>(EPERM); // the driver's first check
        if (int err = validate_create_flags(dev, flags)) return fail<ibv_wq>(err);
        if (raw_enum(attr->wq_type) != IBV_WQT_RQ) return fail<ibv_wq>(EINVAL);
        if (attr->pd == nullptr || attr->pd->context != context || kernel_pd(attr->pd) == nullptr)
            return fail<ibv_wq>(EINVAL);
        if (attr->cq == nullptr || attr->cq->context != context) return fail<ibv_wq>(EINVAL);
        if (attr->max_wr == 0 || attr->max_wr > dev.caps.max_wr) return fail<ibv_wq>(EINVAL);
        const std::uint32_t max_sge = std::max<std::uint32_t>(attr->max_sge, 1);
        if (max_sge > dev.caps.max_sge) return fail<ibv_wq>(EINVAL);

        auto wq = std::make_unique<Wq>();
        std::memset(&wq->ibwq, 0, sizeof wq->ibwq);
        wq->ctx = &ctx;
        wq->cq = from_verbs(attr->cq);
        wq->pd = kernel_pd(attr->pd); // an imported PD: the one it names
        wq->create_flags = flags;
        wq->recv.max_sge = max_sge;
        ibv_wq& w = wq->ibwq;
        w.context = context;
        w.pd = attr->pd;
        w.cq = attr->cq;
        w.wq_num = dev.next_qpn.fetch_add(1);
        wq->index = dev.wqs_created.fetch_add(1);
        w.handle = dev.next_handle.fetch_add(1);
        w.state = IBV_WQS_RESET;
        w.wq_type = IBV_WQT_RQ;
        w.post_recv = post_wq_recv;

        datapath::WqSettings offloads;
        offloads.strip_cvlan = flags & IBV_WQ_FLAGS_CVLAN_STRIPPING;
        offloads.scatter_fcs = flags & IBV_WQ_FLAGS_SCATTER_FCS;
        offloads.delay_drop = flags & IBV_WQ_FLAGS_DELAY_DROP;
        offloads.end_padding = flags & IBV_WQ_FLAGS_PCI_WRITE_END_PADDING;
        if (int err = attach_rx_queue(dev, *wq, attr->max_wr, offloads)) return fail<ibv_wq>(err);
        wq->cq->users.fetch_add(1);
        wq->pd->users.fetch_add(1);
        ctx.live_objects.fetch_add(1);
        // The actual sizes, never below the request: the request itself, as hardware does.
        attr->max_sge = max_sge;
        return &wq.release()->ibwq;
    });
}

int modify_wq(ibv_wq* w, ibv_wq_attr* attr) noexcept {
    return guard_errno([&] {
        if (w == nullptr || attr == nullptr) return EINVAL;
        Wq& wq = *from_verbs(w);
        Device& dev = *wq.ctx->device;
        if (int e = injected_failure(dev, Verb::modify_wq)) return e;
        const std::uint32_t mask = attr->attr_mask;
        if (mask == 0 || (mask & ~static_cast<std::uint32_t>(IBV_WQ_ATTR_RESERVED - 1)))
            return EINVAL;

        // To RDY from RESET mlx5_modify_wq cleans the WQ's old completions out
        // of its CQ under the CQ's lock: the consumer side first (lock order:
        // poll, port, post; device/README.md, "Locking").
        std::optional<CqConsumer> consumer;
        if ((mask & IBV_WQ_ATTR_STATE) && raw_enum(attr->wq_state) == IBV_WQS_RDY)
            consumer.emplace(*wq.cq);
        std::lock_guard port_lock(dev.port.mutex()); // the engine is out while we change state
        std::lock_guard post_lock(wq.recv.post_lock);
        const ibv_wq_state cur = w->state;
        if ((mask & IBV_WQ_ATTR_CURR_STATE) && raw_enum(attr->curr_wq_state) != cur) return EINVAL;
        ibv_wq_state next = cur;
        if (mask & IBV_WQ_ATTR_STATE) {
            const auto target = raw_enum(attr->wq_state);
            if (target < IBV_WQS_RESET || target >= IBV_WQS_UNKNOWN) return EINVAL;
            next = static_cast<ibv_wq_state>(target);
            const bool legal = next == cur || (cur == IBV_WQS_RESET && next == IBV_WQS_RDY) ||
                               (cur == IBV_WQS_RDY && next == IBV_WQS_ERR) ||
                               (cur == IBV_WQS_RDY && next == IBV_WQS_RESET) ||
                               (cur == IBV_WQS_ERR && next == IBV_WQS_RESET);
            if (!legal) return EINVAL;
        }
        if (mask & IBV_WQ_ATTR_FLAGS) {
            const std::uint32_t fm = attr->flags_mask;
            if (fm & ~static_cast<std::uint32_t>(IBV_WQ_FLAGS_RESERVED - 1)) return EOPNOTSUPP;
            if (fm & ~static_cast<std::uint32_t>(IBV_WQ_FLAGS_CVLAN_STRIPPING)) return EOPNOTSUPP;
            if ((fm & IBV_WQ_FLAGS_CVLAN_STRIPPING) && !dev.caps.cvlan_stripping) return EOPNOTSUPP;
        }

        // Validated: apply.
        if (mask & IBV_WQ_ATTR_FLAGS && (attr->flags_mask & IBV_WQ_FLAGS_CVLAN_STRIPPING)) {
            const bool on = attr->flags & IBV_WQ_FLAGS_CVLAN_STRIPPING;
            wq.recv.rx.set_strip_cvlan(on);
            wq.create_flags = on ? (wq.create_flags | IBV_WQ_FLAGS_CVLAN_STRIPPING)
                                 : (wq.create_flags & ~IBV_WQ_FLAGS_CVLAN_STRIPPING);
        }
        if (next != cur) {
            if (next == IBV_WQS_RDY) { // from RESET: what was posted in RESET is gone,
                dev.port.set_queue_state(wq.recv.rx, datapath::QueueState::reset);
                consumer->purge(w->wq_num); // and so is what it completed before
            }
            w->state = next; // first: a protection error during the service below wins
            set_rx_state(dev, wq.recv, rx_state(next));
        }
        return 0;
    });
}

void wq_fatal(Wq& wq) noexcept {
    Device& dev = *wq.ctx->device;
    std::lock_guard port_lock(dev.port.mutex());
    (void)inject_wq_fatal(dev, RxTarget{wq.index, std::nullopt});
}

int destroy_wq(ibv_wq* w) noexcept {
    return guard_errno([&] {
        if (w == nullptr) return EINVAL;
        Wq* wq = from_verbs(w);
        if (int e = injected_failure(*wq->ctx->device, Verb::destroy_wq)) return e;
        if (wq->table_refs.load() != 0) return EBUSY;
        Device& dev = *wq->ctx->device;
        detach_rx_queue(dev, wq->recv);
        purge_completions(dev, *wq->cq, w->wq_num); // as mlx5_destroy_wq cleans its CQ
        // An unread IBV_EVENT_WQ_FATAL goes with the WQ; a read one must be
        // acked first (ib_uverbs_release_uevent, ibv_cmd_destroy_wq).
        forget_async_events(*wq->ctx, w);
        const std::uint32_t reported = wq->events_reported;
        wait_for_acks(w->mutex, w->cond, [&] { return w->events_completed == reported; });
        wq->cq->users.fetch_sub(1);
        wq->pd->users.fetch_sub(1);
        object_destroyed(*wq->ctx);
        delete wq;
        return 0;
    });
}

int post_wq_recv(ibv_wq* w, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    if (w == nullptr || bad_wr == nullptr) return EINVAL;
    Wq& wq = *from_verbs(w);
    if (int e = injected_failure(*wq.ctx->device, Verb::post_wq_recv)) {
        *bad_wr = wr;
        return e;
    }
    return post_receive(*wq.ctx->device, wq.recv, wr, bad_wr);
}

ibv_rwq_ind_table* create_rwq_ind_table(ibv_context* context,
                                        ibv_rwq_ind_table_init_attr* attr) noexcept {
    return guard_ptr<ibv_rwq_ind_table>([&]() -> ibv_rwq_ind_table* {
        if (context == nullptr || attr == nullptr) return fail<ibv_rwq_ind_table>(EINVAL);
        Context& ctx = *from_verbs(context);
        if (int e = injected_failure(*ctx.device, Verb::create_rwq_ind_table))
            return fail<ibv_rwq_ind_table>(e);
        Device& dev = *ctx.device;
        if (attr->comp_mask != 0) return fail<ibv_rwq_ind_table>(EINVAL);
        // The kernel's ceiling (ib_uverbs_ex_create_rwq_ind_table), then the
        // device's (mlx5_ib_create_rwq_ind_table: log_max_rqt_size), both EINVAL.
        if (attr->log_ind_tbl_size > kMaxLogIndTableSize) return fail<ibv_rwq_ind_table>(EINVAL);
        if (attr->ind_tbl == nullptr) return fail<ibv_rwq_ind_table>(EINVAL);
        const std::uint32_t size = 1u << attr->log_ind_tbl_size;
        for (std::uint32_t i = 0; i < size; ++i)
            if (attr->ind_tbl[i] == nullptr || attr->ind_tbl[i]->context != context)
                return fail<ibv_rwq_ind_table>(EINVAL);
        if (size > dev.caps.max_rwq_indirection_table_size) return fail<ibv_rwq_ind_table>(EINVAL);
        auto t = std::make_unique<IndTable>();
        t->log_size = attr->log_ind_tbl_size;
        t->entries.reserve(size);
        for (std::uint32_t i = 0; i < size; ++i) t->entries.push_back(from_verbs(attr->ind_tbl[i]));
        // One table more than max_rwq_indirection_tables: the firmware's "limits
        // exceeded", which the kernel turns into ENOMEM (cmd_status_to_err).
        if (dev.ind_tables.fetch_add(1) >= dev.caps.max_rwq_indirection_tables) {
            dev.ind_tables.fetch_sub(1);
            return fail<ibv_rwq_ind_table>(ENOMEM);
        }
        for (Wq* wq : t->entries) wq->table_refs.fetch_add(1);
        t->ibt.context = context;
        t->ibt.ind_tbl_handle = static_cast<int>(dev.next_handle.fetch_add(1));
        t->ibt.ind_tbl_num = t->ibt.ind_tbl_handle;
        t->ibt.comp_mask = 0;
        ctx.live_objects.fetch_add(1);
        return &t.release()->ibt;
    });
}

int destroy_rwq_ind_table(ibv_rwq_ind_table* table) noexcept {
    if (table == nullptr) return EINVAL;
    IndTable* t = from_verbs(table);
    if (t->qp_refs.load() != 0) return EBUSY;
    for (Wq* wq : t->entries) wq->table_refs.fetch_sub(1);
    Context& ctx = *from_verbs(table->context);
    ctx.device->ind_tables.fetch_sub(1);
    object_destroyed(ctx);
    delete t;
    return 0;
}

} // namespace rdmasim::device
