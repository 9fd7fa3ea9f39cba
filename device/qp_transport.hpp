// The RoCE transport of one RC, UC or UD QP as the device hosts it
// (device/README.md, "RC, UC and UD queue pairs", "The transport"): the
// datapath's RoceQp (datapath/README.md, "RoCE transport"), fed from the
// QP's attributes and send WRs, writing into the rings of the QP's CQs and
// sending through the port's RoCE side; the QP's receive queue (or SRQ) and
// its async events are behind its TransportHost.
//
// Every member function, and every host callback, runs under the port lock.
#pragma once

#include <vector>

#include "datapath/roce/port.hpp"
#include "datapath/roce/qp.hpp"
#include "device/objects.hpp"

namespace rdmasim::device {

class QpTransport final : public datapath::TransportHost {
public:
    // Registers with the port's RoCE demultiplexing (allocates: creation only).
    QpTransport(Device& dev, IbQp& qp, const datapath::TransportLimits& limits);
    ~QpTransport() override; // unregisters
    QpTransport(const QpTransport&) = delete;
    QpTransport& operator=(const QpTransport&) = delete;

    // ibv_modify_qp moved the QP to `next` (its attributes are in qp.attr).
    void modify(ibv_qp_state next) noexcept;
    // One WR the device validated: 0, or ENOMEM when the send queue is full
    // (datapath::RoceQp::post_send). A BIND_MW or LOCAL_INV is carried out
    // here (device/mw.hpp) and queued as a local WR for its completion.
    [[nodiscard]] int post_send(const ibv_send_wr& wr) noexcept;
    // A receive WR was posted to a QP in ERR: it is flushed at once.
    void flush_receives() noexcept { roce_.flush_receive_queue(); }
    [[nodiscard]] const datapath::RoceQp& roce() const noexcept { return roce_; }

    // datapath::TransportHost
    bool peek_recv(datapath::RecvView& out) noexcept override;
    void pop_recv() noexcept override;
    void event(datapath::TransportEvent kind) noexcept override;
    const void* select_xrc_srq(std::uint32_t srqn) noexcept override;
    datapath::CqRing* xrc_recv_cq() noexcept override;
    bool invalidate_rkey(std::uint32_t rkey) noexcept override;
    bool tag_matching() noexcept override;
    bool match_tag(std::uint64_t tag, datapath::RecvView& out) noexcept override;
    bool unexpected_tag() noexcept override;

private:
    [[nodiscard]] datapath::TransportAttrs attrs_from_qp() const noexcept;
    // The frame addressing toward `ah`'s GID (the destination MAC is the
    // port's to find: L2Host::send_roce).
    [[nodiscard]] net::RocePath path_to(const ibv_ah_attr& ah, std::uint32_t dest_qpn) const noexcept;
    [[nodiscard]] Srq* receive_srq() const noexcept;

    Device& dev_;
    IbQp& qp_;
    datapath::RoceQp roce_;
    std::vector<datapath::Sge> sges_; // post_send's SGE list (max_send_sge entries)
    std::uint32_t xrc_srqn_ = 0;      // XRC TGT: the SRQ the current request named
};

// The time a verb calls into a transport at: the engine's clock, never
// behind the port's. Port lock held.
[[nodiscard]] std::uint64_t transport_now(Device& dev) noexcept;

// After a verb called into one or more transports (port lock held): the
// frames they looped back to this port are delivered, the port is serviced
// at `now_ns` (CQ notifications, overrun events).
void after_transport_call(Device& dev, std::uint64_t now_ns) noexcept;

} // namespace rdmasim::device
