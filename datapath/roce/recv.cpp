// The one receive dispatch (rxe_recv.c): a packet the port matched to this
// QP is checked against the QP (transport, state, P_Key) and handed to the
// stage it is for: the completer takes ACKs and responses, the RC, UC or UD
// responder takes requests. Its outcome is counted here, once.
// (datapath/README.md, "RoCE transport")
#include "datapath/roce/qp.hpp"

namespace rdmasim::datapath {

RoceRx RoceQp::receive(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    now_ns_ = now_ns;
    RoceRx r;
    if (const auto refused = check_packet(p)) [[unlikely]] {
        r = *refused;
    } else {
        if (state_ == TransportState::rtr && !resp_.comm_est) {
            resp_.comm_est = true;
            host_.event(TransportEvent::comm_est);
        }
        r = net::is_response(p.info->op) ? to_completer(p, now_ns) : to_responder(p, now_ns);
    }
    count(r);
    return r;
}

// What no stage sees: another transport's opcode, a QP not receiving, a
// P_Key that does not match (every packet, responses and ACKs too: rxe's
// check_keys). nullopt: the packet goes on.
std::optional<RoceRx> RoceQp::check_packet(const net::RocePacket& p) noexcept {
    const auto want = attrs_.xrc                       ? net::RoceTransport::xrc
                      : attrs_.type == QpTransport::rc ? net::RoceTransport::rc
                      : attrs_.type == QpTransport::uc ? net::RoceTransport::uc
                                                       : net::RoceTransport::ud;
    if (p.info->transport != want) return RoceRx::wrong_transport;
    if (state_ != TransportState::rtr && state_ != TransportState::rts &&
        state_ != TransportState::sqd)
        return RoceRx::not_ready;
    if (!net::pkey_match(p.headers.bth.pkey, attrs_.pkey)) return RoceRx::pkey_violation;
    return std::nullopt;
}

RoceRx RoceQp::to_completer(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    if (state_ == TransportState::rtr) return RoceRx::not_ready; // a requester not started yet
    switch (p.info->op) {
    case net::RoceOp::ack:
        return on_ack(p, now_ns);
    case net::RoceOp::atomic_ack:
        return on_atomic_ack(p, now_ns);
    default:
        return on_read_response(p, now_ns);
    }
}

RoceRx RoceQp::to_responder(const net::RocePacket& p, std::uint64_t now_ns) noexcept {
    switch (attrs_.type) {
    case QpTransport::rc:
        return rc_request(p, now_ns);
    case QpTransport::uc:
        return uc_request(p);
    case QpTransport::ud:
        break;
    }
    return ud_request(p);
}

} // namespace rdmasim::datapath
