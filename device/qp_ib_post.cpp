// ibv_post_send and ibv_post_recv on RC, UC and UD QPs: validation, then the
// WRs go to the QP's transport (device/README.md, "RC, UC and UD queue
// pairs", "Posting").
#include <algorithm>
#include <cstring>
#include <mutex>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/mw.hpp"
#include "device/qp_ib.hpp"
#include "device/qp_transport.hpp"
#include "device/recv.hpp"

namespace rdmasim::device {

namespace {

bool is_atomic(ibv_wr_opcode op) noexcept {
    return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

// The opcodes each type carries (IB spec 9.4 and 3.6.1; mlx5 builds no
// other; an XRC INI QP what RC does, an XRC TGT QP sends nothing). Window
// binds and local invalidation: RC and UC (mlx5's UD SQ has no UMR); SEND
// with invalidate: RC (UC has no such opcode). ATOMIC WRITE only comes from
// ibv_wr_atomic_write (`extended`): ibv_send_wr has no field for its 8 bytes.
bool opcode_allowed(ibv_qp_type t, ibv_wr_opcode op, bool extended) noexcept {
    if (t == IBV_QPT_XRC_RECV) return false;
    switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        return true;
    case IBV_WR_BIND_MW:
    case IBV_WR_LOCAL_INV:
        return t == IBV_QPT_RC || t == IBV_QPT_UC;
    case IBV_WR_SEND_WITH_INV:
        return t == IBV_QPT_RC;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return t != IBV_QPT_UD;
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return t == IBV_QPT_RC || t == IBV_QPT_XRC_SEND;
    case IBV_WR_ATOMIC_WRITE:
        return t == IBV_QPT_RC && extended;
    default:
        return false;
    }
}

// What the checks of one WR need from the port.
struct Limits {
    std::uint64_t max_msg = 0; // port max_msg_sz
    std::uint32_t mtu = 0;     // active MTU in bytes (a UD message's limit)
};

// One WR's checks; 0 or EINVAL.
int check_send_wr(const IbQp& qp, const ibv_send_wr& wr, const Limits& lim, bool extended) noexcept {
    const ibv_qp_type t = qp.ibqp.qp_type;
    // Read as an integer first: a C caller may pass any value (device/README.md,
    // "Error conventions"); none above ATOMIC_WRITE is allowed on these QPs.
    const std::int64_t raw = raw_enum(wr.opcode);
    if (raw < IBV_WR_RDMA_WRITE || raw > IBV_WR_ATOMIC_WRITE) return EINVAL;
    const auto op = static_cast<ibv_wr_opcode>(raw);
    if (!opcode_allowed(t, op, extended)) return EINVAL;
    if (op == IBV_WR_ATOMIC_WRITE) // 8 bytes to an 8-aligned address, carried by the WR
        return wr.num_sge == 0 && (wr.wr.atomic.remote_addr & 7) == 0 ? 0 : EINVAL;
    // A bind or local invalidate carries no data: its SGE fields are not read.
    if (op == IBV_WR_BIND_MW) return check_bind_wr(qp, wr);
    if (op == IBV_WR_LOCAL_INV) return 0;
    if (wr.num_sge < 0 || static_cast<std::uint32_t>(wr.num_sge) > qp.max_send_sge) return EINVAL;
    if (wr.num_sge > 0 && wr.sg_list == nullptr) return EINVAL;
    std::uint64_t total = 0;
    for (int i = 0; i < wr.num_sge; ++i) total += wr.sg_list[i].length;
    if (wr.send_flags & IBV_SEND_INLINE) {
        if (op == IBV_WR_RDMA_READ || is_atomic(op) || total > qp.max_inline) return EINVAL;
    }
    if (total > lim.max_msg) return EINVAL;
    if (is_atomic(op) && (total != 8 || (wr.wr.atomic.remote_addr & 7) != 0)) return EINVAL;
    if (t == IBV_QPT_UD) {
        const ibv_ah* ah = wr.wr.ud.ah;
        if (ah == nullptr || ah->context != qp.ibqp.context || total > lim.mtu) return EINVAL;
    }
    return 0;
}

Limits port_limits(const IbQp& qp) noexcept {
    ibv_port_attr pa;
    std::memset(&pa, 0, sizeof pa);
    (void)query_port(qp.ibqp.context, 1, &pa, sizeof pa);
    Limits lim;
    lim.max_msg = pa.max_msg_sz;
    lim.mtu = 128u << std::clamp<int>(pa.active_mtu, IBV_MTU_256, IBV_MTU_4096);
    return lim;
}

} // namespace

int post_ib_send(IbQp& qp, ibv_send_wr* wr, ibv_send_wr** bad_wr, bool all_or_nothing) noexcept {
    Device& dev = *qp.ctx->device;
    const Limits lim = port_limits(qp);
    int err = 0;
    bool wake = false;
    {
        // Posting is the transport's, under the port lock (lock order:
        // port, then post); modify changes the state under it too.
        std::lock_guard port_lock(dev.port.mutex());
        // The send queue works from RTS; SQD queues without sending; SQE and
        // ERR take WRs and flush them at once (the transport does).
        const ibv_qp_state state = qp.ibqp.state;
        if (state == IBV_QPS_RESET || state == IBV_QPS_INIT || state == IBV_QPS_RTR) {
            *bad_wr = wr;
            return EINVAL;
        }
        // The reported max_send_wr, which the transport's power-of-two ring may exceed.
        std::uint32_t room = qp.max_send_wr - std::min(qp.max_send_wr, qp.transport->roce().send_queue_size());
        if (all_or_nothing) { // every WR checked, and room for all, before the first is posted
            for (ibv_send_wr* w = wr; w != nullptr; w = w->next, --room) {
                err = room == 0 ? ENOMEM : check_send_wr(qp, *w, lim, true);
                if (err) {
                    *bad_wr = w;
                    return err;
                }
            }
        }
        const std::uint64_t deadline = dev.port.next_deadline_ns();
        for (; wr != nullptr; wr = wr->next) {
            if ((err = all_or_nothing ? 0 : check_send_wr(qp, *wr, lim, false)) == 0) { // checked above
                err = qp.transport->roce().send_queue_size() >= qp.max_send_wr ? ENOMEM
                                                                               : qp.transport->post_send(*wr);
            }
            if (err) {
                *bad_wr = wr;
                break;
            }
        }
        after_transport_call(dev, dev.port.now_ns());
        // Frames the wire could not take wait in its backlog: the engine
        // retries them (datapath/README.md, "Lossless links").
        wake = dev.port.next_deadline_ns() < deadline || dev.port.tx_waiting() > 0 || dev.port.tx_ready();
    }
    if (wake && dev.hooks) dev.hooks->on_post(dev); // the engine's next wake-up is sooner
    return err;
}

int post_work_recv(WorkRecvQueue& rq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    return post_recv_list(rq.ring, rq.max_sge, rq.max_post, wr, bad_wr);
}

int post_ib_recv(IbQp& qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    if (qp.srq != nullptr || qp.ibqp.qp_type == IBV_QPT_XRC_SEND ||
        qp.ibqp.qp_type == IBV_QPT_XRC_RECV) {
        *bad_wr = wr; // its receives come from an SRQ (ibv_post_srq_recv), or none exist
        return EINVAL;
    }
    Device& dev = *qp.ctx->device;
    int err;
    bool in_error;
    {
        std::lock_guard lock(qp.rq.post_lock);
        // The receive queue works from INIT (mlx5's qp_state_max_gs is -1 in RESET).
        if (qp.ibqp.state == IBV_QPS_RESET) {
            *bad_wr = wr;
            return EINVAL;
        }
        err = post_work_recv(qp.rq, wr, bad_wr);
        in_error = qp.ibqp.state == IBV_QPS_ERR;
    }
    if (in_error) {
        std::lock_guard port_lock(dev.port.mutex());
        qp.transport->flush_receives(); // what was posted completes at once
        after_transport_call(dev, dev.port.now_ns());
    }
    return err;
}

} // namespace rdmasim::device
