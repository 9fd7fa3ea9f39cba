// Plain raw-packet QPs (device/qp_roles.hpp, RawQp): their own receive
// queue, and a send queue whose WRs leave on the port as frames
// (device/README.md, "Raw-packet QPs").
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

#include "device/abi_guard.hpp"
#include "device/cq.hpp"
#include "device/device.hpp"
#include "device/qp_roles.hpp"
#include "device/recv.hpp"

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

int validate_plain(const Device& dev, const ibv_qp_init_attr_ex& a, ibv_context* context) {
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

// The receive offloads the create flags (checked by qp.cpp) ask for.
datapath::WqSettings offloads_of(const ibv_qp_init_attr_ex& attr) noexcept {
    const std::uint32_t flags =
        (attr.comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) ? attr.create_flags : 0;
    datapath::WqSettings offloads;
    offloads.strip_cvlan = flags & IBV_QP_CREATE_CVLAN_STRIPPING;
    offloads.scatter_fcs = flags & IBV_QP_CREATE_SCATTER_FCS;
    offloads.end_padding = flags & IBV_QP_CREATE_PCI_WRITE_END_PADDING;
    return offloads;
}

// Both completion queues lose the QP's completions (as mlx5's modify to
// RESET and destroy clean them, __mlx5_cq_clean). Locks: poll, then port.
void purge_both(RawQp& qp) noexcept {
    Device& dev = *qp.ctx->device;
    purge_completions(dev, *qp.recv_cq, qp.ibqp.qp_num);
    if (qp.send_cq != qp.recv_cq) purge_completions(dev, *qp.send_cq, qp.ibqp.qp_num);
}

int modify(Qp& base, ibv_qp_attr& attr, int mask) noexcept {
    RawQp& qp = raw_qp(base);
    Device& dev = *qp.ctx->device;
    if (mask & ~kPacketQpAttrBits) return EINVAL;
    bool to_reset = false;
    {
        std::lock_guard port_lock(dev.port.mutex());
        std::lock_guard post_lock(qp.recv.post_lock);
        const ibv_qp_state cur = qp.ibqp.state;
        ibv_qp_state next;
        if (int err = packet_qp_transition(qp, attr, mask, next)) return err;
        if (next != cur) set_rx_state(dev, qp.recv, rx_state(next));
        store_packet_qp(qp, attr, mask, next);
        to_reset = (mask & IBV_QP_STATE) && next == IBV_QPS_RESET;
    }
    // After a move to RESET (RESET -> RESET too) mlx5_modify_qp cleans the
    // QP's completions out of both its CQs, one CQ at a time; in RESET the
    // QP completes nothing more.
    if (to_reset) purge_both(qp);
    return 0;
}

void query(Qp& qp, ibv_qp_attr& attr, ibv_qp_init_attr& init) noexcept {
    fill_query(qp, qp.attr, raw_qp(qp).sq_sig_all, attr, init);
}

int destroy(Qp& base) noexcept {
    RawQp& qp = raw_qp(base);
    detach_rx_queue(*qp.ctx->device, qp.recv);
    purge_both(qp);
    wait_for_qp_events(qp);
    qp.send_cq->users.fetch_sub(1);
    qp.recv_cq->users.fetch_sub(1);
    qp.pd->users.fetch_sub(1);
    end_qp(qp);
    delete &qp;
    return 0;
}

int post_recv(Qp& qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept {
    return post_receive(*qp.ctx->device, raw_qp(qp).recv, wr, bad_wr);
}

datapath::Target flow_target(Qp& qp) noexcept {
    datapath::Target t;
    t.queue = &raw_qp(qp).recv.rx;
    return t;
}

// One WR's frame, gathered into the send buffer.
struct Gathered {
    std::size_t len = 0;
    ibv_wc_status status = IBV_WC_SUCCESS; // LOC_PROT_ERR: an SGE's key failed, nothing sent
};

// The WR's own fields: a SEND, an SGE count within max_send_sge, a list.
bool wr_ok(const RawQp& qp, const ibv_send_wr& wr) noexcept {
    return wr.opcode == IBV_WR_SEND && wr.num_sge >= 0 &&
           static_cast<std::uint32_t>(wr.num_sge) <= qp.max_send_sge &&
           (wr.num_sge == 0 || wr.sg_list != nullptr);
}

// Copies the WR's SGEs (inline: from the program's memory; otherwise
// through the MR table) into the send buffer. EINVAL when the frame would
// not fit the buffer, or inline data max_inline.
int gather(RawQp& qp, const ibv_send_wr& wr, Gathered& out) noexcept {
    Device& dev = *qp.ctx->device;
    const bool inl = wr.send_flags & IBV_SEND_INLINE;
    std::uint8_t* const frame = qp.send_buf.data();
    for (int i = 0; i < wr.num_sge; ++i) {
        const ibv_sge& s = wr.sg_list[i];
        if (out.len + s.length > qp.send_buf.size() || (inl && out.len + s.length > qp.max_inline))
            return EINVAL;
        const std::uint8_t* src = inl ? reinterpret_cast<const std::uint8_t*>(s.addr)
                                      : dev.mrs.translate(s.lkey, qp.pd, s.addr, s.length, false);
        if (src == nullptr) {
            out.status = IBV_WC_LOC_PROT_ERR;
            return 0;
        }
        if (s.length != 0) std::memcpy(frame + out.len, src, s.length);
        out.len += s.length;
    }
    return 0;
}

// Under the port lock: the frame enters the port at its clock (looping back
// to flows, then to the port's sinks), the completion follows when asked
// for or failed, and the port is serviced.
void send_frame(RawQp& qp, const ibv_send_wr& wr, const Gathered& g) noexcept {
    Device& dev = *qp.ctx->device;
    std::lock_guard lock(dev.port.mutex());
    const std::uint64_t now = dev.port.now_ns();
    if (g.status == IBV_WC_SUCCESS) {
        net::Frame f;
        f.data = qp.send_buf.data();
        f.len = f.wire_len = static_cast<std::uint32_t>(g.len);
        f.ts_ns = now;
        dev.port.transmit(f, static_cast<const Qp*>(&qp));
    }
    if (qp.sq_sig_all || (wr.send_flags & IBV_SEND_SIGNALED) || g.status != IBV_WC_SUCCESS) {
        datapath::Cqe cqe;
        cqe.wr_id = wr.wr_id;
        cqe.status = static_cast<std::uint8_t>(g.status);
        cqe.opcode = IBV_WC_SEND;
        cqe.qp_num = qp.ibqp.qp_num;
        cqe.byte_len = static_cast<std::uint32_t>(g.len);
        cqe.timestamp_ns = now;
        (void)qp.send_cq->ring.push(cqe);
    }
    service(dev, now);
}

int post_send(Qp& base, ibv_send_wr* wr, ibv_send_wr** bad_wr) noexcept {
    RawQp& qp = raw_qp(base);
    ibv_qp_state state;
    {
        std::lock_guard lock(qp.recv.post_lock); // modify_qp changes the state under it
        state = qp.ibqp.state;
    }
    if (state != IBV_QPS_RTS) {
        *bad_wr = wr;
        return EINVAL;
    }
    std::lock_guard send_lock(qp.send_lock);
    for (; wr != nullptr; wr = wr->next) {
        Gathered g;
        if (!wr_ok(qp, *wr) || gather(qp, *wr, g) != 0) {
            *bad_wr = wr;
            return EINVAL;
        }
        send_frame(qp, *wr, g);
    }
    return 0;
}

constexpr QpOps kOps{modify, query, destroy, post_send, post_recv, flow_target};

// The QP's queues from the (validated) caps; the receive queue joins the port.
int set_up_queues(RawQp& qp, ibv_qp_init_attr_ex& attr) {
    Device& dev = *qp.ctx->device;
    qp.send_cq = from_verbs(attr.send_cq);
    qp.recv_cq = from_verbs(attr.recv_cq);
    qp.ibqp.send_cq = attr.send_cq;
    qp.ibqp.recv_cq = attr.recv_cq;
    qp.recv.max_sge = std::max<std::uint32_t>(attr.cap.max_recv_sge, 1);
    qp.max_send_wr = attr.cap.max_send_wr;
    qp.max_send_sge = std::max<std::uint32_t>(attr.cap.max_send_sge, 1);
    qp.max_inline = attr.cap.max_inline_data;
    qp.sq_sig_all = attr.sq_sig_all;
    qp.send_buf.resize(dev.caps.max_raw_frame);
    return attach_rx_queue(dev, qp, std::max<std::uint32_t>(attr.cap.max_recv_wr, 1),
                           offloads_of(attr));
}

} // namespace

ibv_qp* create_raw_qp(Context& ctx, ibv_qp_init_attr_ex& attr) noexcept {
    return guard_ptr<ibv_qp>([&]() -> ibv_qp* {
        Device& dev = *ctx.device;
        if (int err = validate_plain(dev, attr, &ctx.vctx.context)) return fail<ibv_qp>(err);
        auto qp = std::make_unique<RawQp>();
        init_qp(*qp, ctx, attr, IBV_QPT_RAW_PACKET, kOps);
        if (int err = set_up_queues(*qp, attr)) return fail<ibv_qp>(err);
        qp->send_cq->users.fetch_add(1);
        qp->recv_cq->users.fetch_add(1);
        attr.cap.max_recv_sge = qp->recv.max_sge;
        attr.cap.max_send_sge = qp->max_send_sge;
        qp->attr.cap = attr.cap;
        qp->pd->users.fetch_add(1);
        ctx.live_objects.fetch_add(1);
        return &qp.release()->ibqp;
    });
}

} // namespace rdmasim::device
