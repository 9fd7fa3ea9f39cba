#include "device/qp_transport.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <mutex>

#include "device/async_events.hpp"
#include "device/context.hpp"
#include "device/device.hpp"
#include "device/mw.hpp"
#include "device/qp_ib.hpp"
#include "device/srq.hpp"
#include "device/tm_srq.hpp"
#include "device/transport_translate.hpp"
#include "device/xrcd.hpp"

namespace rdmasim::device {

namespace {

datapath::QpTransport transport_type(ibv_qp_type t) noexcept {
    return t == IBV_QPT_RC || t == IBV_QPT_XRC_SEND || t == IBV_QPT_XRC_RECV
               ? datapath::QpTransport::rc
         : t == IBV_QPT_UC ? datapath::QpTransport::uc
                           : datapath::QpTransport::ud;
}


} // namespace

QpTransport::QpTransport(Device& dev, IbQp& qp, const datapath::TransportLimits& limits)
    : dev_(dev), qp_(qp),
      roce_(*this, dev.port.roce(), dev.mrs, limits,
            {qp.send_cq ? &qp.send_cq->ring : nullptr,
             qp.xrcd == nullptr && qp.recv_cq ? &qp.recv_cq->ring : nullptr}),
      sges_(std::max<std::uint32_t>(limits.max_send_sge, 1)) {
    roce_.modify(attrs_from_qp(), datapath::TransportState::reset, transport_now(dev));
    if (!dev.port.roce().attach(roce_)) throw std::bad_alloc(); // QP numbers are unique per device
}

QpTransport::~QpTransport() { dev_.port.roce().detach(roce_.attrs().qpn); }

datapath::TransportAttrs QpTransport::attrs_from_qp() const noexcept {
    datapath::TransportAttrs t;
    t.type = transport_type(qp_.ibqp.qp_type);
    t.qpn = qp_.ibqp.qp_num;
    t.pd = protection_domain(qp_.pd);
    t.srq = qp_.srq != nullptr || qp_.xrcd != nullptr;
    t.xrc = qp_.ibqp.qp_type == IBV_QPT_XRC_SEND || qp_.ibqp.qp_type == IBV_QPT_XRC_RECV;
    t.block_self_mcast = qp_.block_self_mcast;
    apply_qp_attr(t, qp_.attr);
    // UD has no path MTU attribute: its messages are limited by the port's active MTU.
    if (t.type == datapath::QpTransport::ud)
        if (const auto m = net::path_mtu_from_enum(std::countr_zero(dev_.identity.mtu) - 7)) t.mtu = *m;
    if (t.type != datapath::QpTransport::ud && qp_.attr.ah_attr.is_global)
        t.path = path_to(qp_.attr.ah_attr, t.dest_qpn);
    return t;
}

net::RocePath QpTransport::path_to(const ibv_ah_attr& ah, std::uint32_t dest_qpn) const noexcept {
    net::Gid sgid{};
    if (const auto g = port_gid(dev_, ah.grh.sgid_index)) std::memcpy(sgid.data(), g->raw, sgid.size());
    return roce_path(ah.grh, sgid, dev_.identity.mac, net::MacAddress{}, qp_.ibqp.qp_num, dest_qpn);
}

void QpTransport::modify(ibv_qp_state next) noexcept {
    const datapath::TransportAttrs t = attrs_from_qp();
    const std::uint64_t now = transport_now(dev_);
    // Into RTR the peer's MAC is looked up, as the kernel resolves it at
    // modify_qp: ARP is under way before the first packet.
    if (next == IBV_QPS_RTR && t.type != datapath::QpTransport::ud) {
        const net::Gid& d = t.path.dgid;
        static constexpr std::array<std::uint8_t, 12> mapped{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (std::equal(mapped.begin(), mapped.end(), d.begin()))
            (void)dev_.port.resolve({d[12], d[13], d[14], d[15]});
    }
    roce_.modify(t, transport_state(next), now);
}

int QpTransport::post_send(const ibv_send_wr& wr) noexcept {
    if (wr.opcode == IBV_WR_BIND_MW || wr.opcode == IBV_WR_LOCAL_INV) {
        // Carried out now, completed in order (datapath/README.md, "Memory
        // windows"); a QP in ERR flushes it without carrying it out.
        datapath::SendWr w;
        w.wr_id = wr.wr_id;
        w.op = datapath::SendOp::local;
        w.signaled = qp_.sq_sig_all || (wr.send_flags & IBV_SEND_SIGNALED);
        w.local_opcode = wr.opcode == IBV_WR_BIND_MW ? IBV_WC_BIND_MW : IBV_WC_LOCAL_INV;
        w.local_status = roce_.state() == datapath::TransportState::error
                             ? static_cast<std::uint8_t>(IBV_WC_SUCCESS)
                             : execute_window_wr(qp_, wr);
        return roce_.post_send(w, {}, transport_now(dev_));
    }
    auto w = send_wr_from_ibv(wr, qp_.sq_sig_all);
    if (!w) return EINVAL;
    if (qp_.ibqp.qp_type == IBV_QPT_UD) w->ud_path = path_to(from_verbs(wr.wr.ud.ah)->attr, w->remote_qpn);
    const auto n = static_cast<std::size_t>(std::max(wr.num_sge, 0));
    if (n > sges_.size()) return EINVAL;
    for (std::size_t i = 0; i < n; ++i) {
        const ibv_sge& s = wr.sg_list[i];
        sges_[i] = {s.addr, s.length, s.lkey};
    }
    return roce_.post_send(*w, {sges_.data(), n}, transport_now(dev_));
}

// The SRQ this QP's receives come from: its own SRQ; for an XRC TGT QP the
// one its current request named (looked up each time: an SRQ may be
// destroyed between the packets of a message); nullptr for its own RQ.
Srq* QpTransport::receive_srq() const noexcept {
    if (qp_.xrcd != nullptr) return find_xrc_srq(*qp_.xrcd->domain, xrc_srqn_);
    return qp_.srq;
}

const void* QpTransport::select_xrc_srq(std::uint32_t srqn) noexcept {
    if (qp_.xrcd == nullptr) return nullptr; // only an XRC TGT QP receives XRC requests
    xrc_srqn_ = srqn;
    const Srq* s = receive_srq();
    return s ? protection_domain(s->pd) : nullptr;
}

bool QpTransport::peek_recv(datapath::RecvView& out) noexcept {
    Srq* srq = receive_srq();
    if (srq == nullptr && qp_.xrcd != nullptr) return false;
    const datapath::RecvRing& ring = srq ? srq->rq.ring : qp_.rq.ring;
    if (ring.empty()) return false;
    out.wqe = &ring.front();
    out.sges = ring.front_sges();
    return true;
}

void QpTransport::pop_recv() noexcept {
    if (Srq* srq = receive_srq()) pop_srq_wqe(*srq);
    else if (qp_.xrcd == nullptr) qp_.rq.ring.pop();
}

// An XRC SRQ's receives complete on its CQ; one destroyed since its WQE was
// taken loses the completion (its WQEs went with it).
datapath::CqRing* QpTransport::xrc_recv_cq() noexcept {
    Srq* srq = receive_srq();
    return srq != nullptr ? &srq->cq->ring : nullptr;
}

bool QpTransport::invalidate_rkey(std::uint32_t rkey) noexcept { return invalidate_window(qp_, rkey); }

// Tag matching: an RC QP on a tag-matching SRQ (device/tm_srq.hpp).
bool QpTransport::tag_matching() noexcept {
    return qp_.srq != nullptr && qp_.srq->tm != nullptr && qp_.ibqp.qp_type == IBV_QPT_RC;
}

bool QpTransport::match_tag(std::uint64_t tag, datapath::RecvView& out) noexcept {
    return device::match_tag(*qp_.srq->tm, tag, out.wqe, out.sges);
}

bool QpTransport::unexpected_tag() noexcept { return count_unexpected(*qp_.srq->tm); }

void QpTransport::event(datapath::TransportEvent kind) noexcept {
    using E = datapath::TransportEvent;
    switch (kind) {
    case E::comm_est:
        raise_qp_event(qp_, IBV_EVENT_COMM_EST);
        break;
    case E::last_wqe_reached:
        raise_qp_event(qp_, IBV_EVENT_QP_LAST_WQE_REACHED);
        break;
    case E::qp_fatal:
        raise_qp_event(qp_, IBV_EVENT_QP_FATAL);
        break;
    case E::qp_req_err:
        raise_qp_event(qp_, IBV_EVENT_QP_REQ_ERR);
        break;
    case E::qp_access_err:
        raise_qp_event(qp_, IBV_EVENT_QP_ACCESS_ERR);
        break;
    case E::sq_drained:
        if (qp_.attr.en_sqd_async_notify) raise_qp_event(qp_, IBV_EVENT_SQ_DRAINED);
        break;
    case E::entered_error:
        // The transport flushed already; the verbs state follows. (UC and UD
        // go to ERR too, not to the spec's SQE: the transport has no SQE,
        // device/README.md, "Differences from mlx5".)
        hca_set_qp_state(qp_, IBV_QPS_ERR);
        break;
    }
}

std::uint64_t transport_now(Device& dev) noexcept {
    const std::uint64_t engine = dev.hooks ? dev.hooks->clock_ns() : 0;
    dev.port.advance_clock(engine);
    return dev.port.now_ns();
}

void after_transport_call(Device& dev, std::uint64_t now_ns) noexcept {
    dev.port.finish_call();
    service(dev, now_ns);
}

} // namespace rdmasim::device
