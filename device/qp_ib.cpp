// RC, UC, UD and XRC QPs: ibv_modify_qp (device/qp_state.hpp's table, then
// the range checks), ibv_query_qp, ibv_destroy_qp, what a state change does
// to the queues, and the role's verbs table (device/README.md, "RC, UC and
// UD queue pairs"). Creation: qp_ib_create.cpp; posting: qp_ib_post.cpp.
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

namespace rdmasim::device {

namespace {

// The range checks of ibv_modify_qp after the table (mlx5_ib_modify_qp,
// ib_uverbs_modify_qp, the IB field widths).
int check_attr_values(const Qp& qp, const ibv_qp_attr& a, int mask) noexcept {
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
        // ON_DEMAND is an MR's bit; mlx5 ignores it here (rdma-core's ODP
        // tests pass their MR access flags to the QP).
        const unsigned allowed = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                 IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_ON_DEMAND;
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
void write_state(IbQp& qp, ibv_qp_state next) noexcept {
    std::lock_guard recv_lock(qp.rq.post_lock);
    qp.ibqp.state = next;
    qp.attr.qp_state = next;
    qp.attr.cur_qp_state = next;
}

// Sets the state and applies it: RESET forgets the posted receives; the
// transport does the rest (flushes, drain events, its PSNs and timers).
// Port lock held; the transport is called with no post lock held, as it
// may call back (hca_set_qp_state).
void set_state(IbQp& qp, ibv_qp_state next) noexcept {
    const ibv_qp_state cur = qp.ibqp.state;
    write_state(qp, next);
    if (next == IBV_QPS_RESET && cur != IBV_QPS_RESET) {
        std::lock_guard recv_lock(qp.rq.post_lock);
        qp.rq.ring.reset();
    }
    qp.transport->modify(next);
}

// The QP's completions leave both its CQs (mlx5_modify_qp after a move to
// RESET, mlx5_destroy_qp); XRC TGT QPs have none. Locks: poll, then port
// (CqConsumer).
void purge_both(IbQp& qp) noexcept {
    if (qp.send_cq == nullptr) return;
    Device& dev = *qp.ctx->device;
    purge_completions(dev, *qp.recv_cq, qp.ibqp.qp_num);
    if (qp.send_cq != qp.recv_cq) purge_completions(dev, *qp.send_cq, qp.ibqp.qp_num);
}

} // namespace

void raise_qp_event(Qp& qp, ibv_event_type type) noexcept {
    ibv_async_event ev{};
    ev.element.qp = &qp.ibqp;
    ev.event_type = type;
    raise_async_event(*qp.ctx, ev);
}

int modify_ib_qp(IbQp& qp, ibv_qp_attr& attr, int mask) noexcept {
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
    // both CQs.
    if (to_reset) purge_both(qp);
    return 0;
}

void query_ib_qp(IbQp& qp, ibv_qp_attr& attr, ibv_qp_init_attr& init) noexcept {
    ibv_qp_attr stored;
    {
        std::lock_guard port_lock(qp.ctx->device->port.mutex());
        stored = qp.attr;
    }
    fill_query(qp, stored, qp.sq_sig_all, attr, init);
}

int destroy_ib_qp(IbQp& qp) noexcept {
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
    purge_both(qp);
    wait_for_qp_events(qp);
    if (qp.send_cq) qp.send_cq->users.fetch_sub(1);
    if (qp.recv_cq) qp.recv_cq->users.fetch_sub(1);
    if (qp.srq) qp.srq->qps.fetch_sub(1);
    if (qp.pd) qp.pd->users.fetch_sub(1);
    if (qp.xrcd) qp.xrcd->users.fetch_sub(1);
    end_qp(qp);
    delete qp.wr_builder;
    delete &qp;
    return 0;
}

void hca_set_qp_state(IbQp& qp, ibv_qp_state state) noexcept { write_state(qp, state); }

const QpOps kIbQpOps{
    [](Qp& qp, ibv_qp_attr& attr, int mask) noexcept { return modify_ib_qp(ib_qp(qp), attr, mask); },
    [](Qp& qp, ibv_qp_attr& attr, ibv_qp_init_attr& init) noexcept {
        query_ib_qp(ib_qp(qp), attr, init);
    },
    [](Qp& qp) noexcept { return destroy_ib_qp(ib_qp(qp)); },
    [](Qp& qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) noexcept {
        return post_ib_send(ib_qp(qp), wr, bad_wr);
    },
    [](Qp& qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
        return post_ib_recv(ib_qp(qp), wr, bad_wr);
    },
    nullptr, // flows steer frames to raw-packet QPs only
};

} // namespace rdmasim::device
