// The CM's receive side: each MAD that reaches QP1, by message
// (datapath/README.md, "Connection manager"). A MAD that matches nothing
// is counted, never trusted: comm IDs are looked up, never followed.
#include <algorithm>
#include <variant>

#include "datapath/cm/agent.hpp"
#include "datapath/l2_host.hpp"
#include "datapath/neighbours.hpp"

namespace rdmasim::datapath::cm {

namespace {

template <std::size_t N>
std::span<const std::uint8_t> view(const std::array<std::uint8_t, N>& a) noexcept {
    return {a.data(), a.size()};
}

} // namespace

Agent::Conn* Agent::find_remote(std::uint32_t remote_id, const net::Gid& remote_gid) noexcept {
    for (auto& [id, c] : conns_)
        if (c.remote_id == remote_id && c.remote_gid == remote_gid) return &c;
    return nullptr;
}

void Agent::receive(const net::RocePacket& p) noexcept {
    counters_.mads_received.add();
    net::ParsedCmMad mad;
    if (p.headers.deth.qkey != net::kGsiQkey ||
        net::parse_cm_mad(p.payload, mad) != net::CmMadError::none) {
        counters_.mads_refused.add();
        return;
    }
    const net::MadHeader& h = mad.header;
    std::visit(
        [&](const auto& m) {
            using M = std::decay_t<decltype(m)>;
            if constexpr (std::is_same_v<M, net::CmReq>)
                on_req(p, h, m);
            else if constexpr (std::is_same_v<M, net::CmRep>)
                on_rep(h, m);
            else if constexpr (std::is_same_v<M, net::CmRtu>)
                on_rtu(m);
            else if constexpr (std::is_same_v<M, net::CmRej>)
                on_rej(m);
            else if constexpr (std::is_same_v<M, net::CmMra>)
                on_mra(m);
            else if constexpr (std::is_same_v<M, net::CmDreq>)
                on_dreq(p, h, m);
            else if constexpr (std::is_same_v<M, net::CmDrep>)
                on_drep(m);
            else if constexpr (std::is_same_v<M, net::CmSidrReq>)
                on_sidr_req(p, h, m);
            else if constexpr (std::is_same_v<M, net::CmSidrRep>)
                on_sidr_rep(m);
        },
        mad.message);
}

void Agent::reply_invalid_service(const net::RocePacket& p, const net::MadHeader& h,
                                  std::uint32_t remote_id) noexcept {
    counters_.rej_no_listener.add();
    net::CmRej m;
    m.remote_comm_id = remote_id;
    m.message_rejected = net::CmRejectedMsg::req;
    m.reason = net::CmRejReason::invalid_service_id;
    std::array<std::uint8_t, net::kMadSize> mad;
    net::encode_cm_mad(net::cm_mad_header(net::CmAttr::rej, h.transaction_id), m, mad);
    reply(p, mad);
}

void Agent::on_req(const net::RocePacket& p, const net::MadHeader& h,
                   const net::CmReq& m) noexcept {
    if (Conn* dup = find_remote(m.local_comm_id, p.sgid)) { // a resent REQ: our REP was lost
        if (dup->state == State::rep_sent) send_mad(*dup, true);
        return;
    }
    const auto l = listeners_.find(m.service_id);
    if (l == listeners_.end()) {
        reply_invalid_service(p, h, m.local_comm_id);
        return;
    }
    std::uint32_t id = 0;
    try {
        id = new_comm_id();
        conns_[id] = Conn{.state = State::req_rcvd,
                          .remote_id = m.local_comm_id,
                          .remote_qpn = m.local_qpn,
                          .service_id = m.service_id,
                          .tid = h.transaction_id,
                          .remote_gid = p.sgid,
                          .local_gid = p.dgid,
                          .traffic_class = m.primary.traffic_class,
                          .hop_limit = m.primary.hop_limit ? m.primary.hop_limit : std::uint8_t{64},
                          .peer_response_timeout = m.local_cm_response_timeout,
                          .peer_max_retries = m.max_cm_retries};
    } catch (...) {
        return; // no memory: as a lost REQ, the peer sends it again
    }
    Event e;
    e.kind = EventKind::req;
    e.comm_id = id;
    e.agent = this;
    e.service_id = m.service_id;
    e.peer = {.qpn = m.local_qpn,
              .starting_psn = m.starting_psn,
              .responder_resources = m.responder_resources,
              .initiator_depth = m.initiator_depth,
              .retry_count = m.retry_count,
              .rnr_retry_count = m.rnr_retry_count,
              .srq = m.srq,
              .uc = m.transport == net::CmTransport::uc,
              .local_ack_timeout = m.primary.local_ack_timeout,
              .mtu = m.path_mtu};
    e.path = {.local_gid = p.dgid,
              .remote_gid = p.sgid,
              .traffic_class = m.primary.traffic_class,
              .hop_limit = conns_[id].hop_limit,
              .flow_label = m.primary.flow_label};
    e.private_data = view(m.private_data);
    l->second->cm_event(e);
    Conn* c = find(id);
    if (c != nullptr && c->handler == nullptr) // not adopted: the listener could not take it
        (void)reject(id, static_cast<std::uint16_t>(net::CmRejReason::consumer_reject), {});
}

void Agent::on_rep(const net::MadHeader& h, const net::CmRep& m) noexcept {
    (void)h;
    Conn* c = find(m.remote_comm_id);
    if (c == nullptr) {
        counters_.mads_unmatched.add();
        return;
    }
    if (c->state == State::established && c->remote_id == m.local_comm_id) {
        send_mad(*c, false); // our RTU was lost: it goes again
        return;
    }
    if (c->state != State::req_sent) {
        counters_.mads_unmatched.add();
        return;
    }
    c->remote_id = m.local_comm_id;
    c->remote_qpn = m.local_qpn;
    c->state = State::rep_rcvd;
    c->resend = false;
    c->deadline = UINT64_MAX;
    Event e;
    e.kind = EventKind::rep;
    e.comm_id = m.remote_comm_id;
    e.peer = {.qpn = m.local_qpn,
              .starting_psn = m.starting_psn,
              .responder_resources = m.responder_resources,
              .initiator_depth = m.initiator_depth,
              .rnr_retry_count = m.rnr_retry_count,
              .srq = m.srq};
    e.private_data = view(m.private_data);
    tell(*c, e);
}

void Agent::on_rtu(const net::CmRtu& m) noexcept {
    Conn* c = find(m.remote_comm_id);
    if (c == nullptr || c->state != State::rep_sent || c->remote_id != m.local_comm_id) {
        if (c == nullptr || c->state != State::established) counters_.mads_unmatched.add();
        return;
    }
    c->state = State::established;
    c->resend = false;
    c->deadline = UINT64_MAX;
    Event e;
    e.kind = EventKind::established;
    e.comm_id = m.remote_comm_id;
    e.private_data = view(m.private_data);
    tell(*c, e);
}

void Agent::on_rej(const net::CmRej& m) noexcept {
    Conn* c = find(m.remote_comm_id);
    if (c == nullptr || c->state == State::established || c->state == State::timewait ||
        c->state == State::dreq_sent || c->state == State::dreq_rcvd) {
        counters_.mads_unmatched.add();
        return;
    }
    Event e;
    e.kind = EventKind::rej;
    e.comm_id = m.remote_comm_id;
    e.reason = static_cast<std::uint16_t>(m.reason);
    e.private_data = view(m.private_data);
    tell(*c, e);
    conns_.erase(m.remote_comm_id);
}

void Agent::on_mra(const net::CmMra& m) noexcept {
    Conn* c = find(m.remote_comm_id);
    if (c == nullptr || (c->state != State::req_sent && c->state != State::rep_sent)) {
        counters_.mads_unmatched.add();
        return;
    }
    // The peer needs `service_timeout` more: one wait that long, then the
    // resends start over (IBA 12.6.6).
    c->deadline =
        clock_ + (4096ull << std::min<std::uint8_t>(m.service_timeout, 31)) + c->timeout_ns;
    next_deadline_ = std::min(next_deadline_, c->deadline);
    Event e;
    e.kind = EventKind::mra;
    e.comm_id = m.remote_comm_id;
    tell(*c, e);
}

void Agent::send_drep(const net::RocePacket& p, const net::MadHeader& h,
                      const net::CmDreq& m) noexcept {
    net::CmDrep r;
    r.local_comm_id = m.remote_comm_id;
    r.remote_comm_id = m.local_comm_id;
    std::array<std::uint8_t, net::kMadSize> mad;
    net::encode_cm_mad(net::cm_mad_header(net::CmAttr::drep, h.transaction_id), r, mad);
    reply(p, mad);
}

void Agent::on_dreq(const net::RocePacket& p, const net::MadHeader& h,
                    const net::CmDreq& m) noexcept {
    send_drep(p, h, m); // always, even for a connection gone (IBA 12.9.8.3.1)
    Conn* c = find(m.remote_comm_id);
    if (c == nullptr || c->remote_id != m.local_comm_id) {
        counters_.mads_unmatched.add();
        return;
    }
    const State s = c->state;
    if (s == State::timewait || s == State::dreq_rcvd) return; // a resent DREQ: answered above
    if (s != State::established && s != State::rep_sent && s != State::dreq_sent) {
        counters_.mads_unmatched.add();
        return;
    }
    Event e;
    e.kind = s == State::dreq_sent ? EventKind::disconnected : EventKind::dreq;
    e.comm_id = m.remote_comm_id;
    e.private_data = view(m.private_data);
    tell(*c, e);
    if (Conn* still = find(m.remote_comm_id)) enter_timewait(m.remote_comm_id, *still);
}

void Agent::on_drep(const net::CmDrep& m) noexcept {
    Conn* c = find(m.remote_comm_id);
    if (c == nullptr || c->state != State::dreq_sent) {
        counters_.mads_unmatched.add();
        return;
    }
    Event e;
    e.kind = EventKind::disconnected;
    e.comm_id = m.remote_comm_id;
    e.private_data = view(m.private_data);
    tell(*c, e);
    if (Conn* still = find(m.remote_comm_id)) enter_timewait(m.remote_comm_id, *still);
}

// --- addresses ---

void Agent::resolve(const net::Ipv4Address& ip, std::uint64_t timeout_ns, AddressHandler& handler,
                    std::uint64_t token) {
    const Resolution r = host_.resolve(ip);
    if (r.state == ResolveState::resolved) {
        defer(handler, token, r.mac);
        return;
    }
    // Failed: due at once, told as a timeout is.
    const std::uint64_t due = r.state == ResolveState::failed ? clock_ : clock_ + timeout_ns;
    pending_.push_back({.ip = ip, .deadline = due, .handler = &handler, .token = token});
    next_deadline_ = std::min(next_deadline_, due);
}

void Agent::defer(AddressHandler& handler, std::uint64_t token, const net::MacAddress& mac) {
    pending_.push_back(
        {.deadline = clock_, .handler = &handler, .token = token, .known = true, .mac = mac});
    next_deadline_ = std::min(next_deadline_, clock_);
}

void Agent::cancel_resolve(AddressHandler& handler) noexcept {
    std::erase_if(pending_, [&](const Pending& q) { return q.handler == &handler; });
}

// Takes every pending resolve of `ip` off the list, then tells each with `tell(pending)`.
template <class F> void Agent::finish_resolves(const net::Ipv4Address& ip, F tell) noexcept {
    for (auto it = pending_.begin(); it != pending_.end();) {
        if (it->known || it->ip != ip) {
            ++it;
            continue;
        }
        const Pending q = *it;
        it = pending_.erase(it);
        tell(q);
    }
}

void Agent::resolved(const net::Ipv4Address& ip, const net::MacAddress& mac) noexcept {
    finish_resolves(ip, [&](const Pending& q) { q.handler->address_resolved(q.token, mac); });
}

void Agent::unreachable(const net::Ipv4Address& ip) noexcept {
    finish_resolves(ip, [](const Pending& q) { q.handler->address_failed(q.token); });
}

} // namespace rdmasim::datapath::cm
