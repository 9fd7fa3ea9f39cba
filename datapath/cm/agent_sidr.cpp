// SIDR: a UD service's QPN and Q_Key, asked for and answered (IBA 12.11;
// datapath/README.md, "Connection manager").
#include <algorithm>

#include "datapath/cm/agent.hpp"

namespace rdmasim::datapath::cm {

int Agent::sidr_request(Handler& handler, std::uint64_t service_id, const Path& path,
                        std::span<const std::uint8_t> private_data, std::uint32_t& request_id) {
    if (private_data.size() > net::kCmSidrReqPrivateDataSize) return EINVAL;
    const std::uint32_t id = new_comm_id();
    Conn& c = conns_[id];
    c = Conn{.state = State::sidr_sent,
             .handler = &handler,
             .service_id = service_id,
             .tid = next_tid_++,
             .remote_gid = path.remote_gid,
             .local_gid = path.local_gid,
             .traffic_class = path.traffic_class,
             .hop_limit = path.hop_limit};
    net::CmSidrReq m;
    m.request_id = id;
    m.pkey = net::kDefaultPkey;
    m.service_id = service_id;
    std::copy(private_data.begin(), private_data.end(), m.private_data.begin());
    net::encode_cm_mad(net::cm_mad_header(net::CmAttr::sidr_req, c.tid), m, c.last);
    arm(c, 2 * (4096ull << response_timeout_), max_retries_);
    send_mad(c, true);
    request_id = id;
    return 0;
}

int Agent::sidr_reply(std::uint32_t request_id, std::uint16_t status, std::uint32_t qpn,
                      std::uint32_t qkey, std::span<const std::uint8_t> private_data) noexcept {
    Conn* c = find(request_id);
    if (c == nullptr || c->state != State::sidr_rcvd) return EINVAL;
    if (private_data.size() > net::kCmSidrRepPrivateDataSize) return EINVAL;
    net::CmSidrRep m;
    m.request_id = c->remote_id;
    m.status = static_cast<net::SidrStatus>(status);
    m.qpn = qpn;
    m.service_id = c->service_id;
    m.qkey = qkey;
    std::copy(private_data.begin(), private_data.end(), m.private_data.begin());
    net::encode_cm_mad(net::cm_mad_header(net::CmAttr::sidr_rep, c->tid), m, c->last);
    send_mad(*c, false);
    conns_.erase(request_id);
    return 0;
}

void Agent::on_sidr_req(const net::RocePacket& p, const net::MadHeader& h,
                        const net::CmSidrReq& m) noexcept {
    if (find_remote(m.request_id, p.sgid) != nullptr) return; // a resend; the answer is coming
    const auto l = listeners_.find(m.service_id);
    if (l == listeners_.end()) {
        counters_.rej_no_listener.add();
        net::CmSidrRep r;
        r.request_id = m.request_id;
        r.status = net::SidrStatus::service_id_not_supported;
        r.service_id = m.service_id;
        std::array<std::uint8_t, net::kMadSize> mad;
        net::encode_cm_mad(net::cm_mad_header(net::CmAttr::sidr_rep, h.transaction_id), r, mad);
        reply(p, mad);
        return;
    }
    std::uint32_t id = 0;
    try {
        id = new_comm_id();
        conns_[id] = Conn{.state = State::sidr_rcvd,
                          .remote_id = m.request_id,
                          .service_id = m.service_id,
                          .tid = h.transaction_id,
                          .remote_gid = p.sgid,
                          .local_gid = p.dgid,
                          .traffic_class = p.traffic_class};
    } catch (...) {
        return;
    }
    Event e;
    e.kind = EventKind::sidr_req;
    e.comm_id = id;
    e.agent = this;
    e.service_id = m.service_id;
    e.path = {.local_gid = p.dgid,
              .remote_gid = p.sgid,
              .traffic_class = p.traffic_class,
              .hop_limit = p.hop_limit};
    e.private_data = {m.private_data.data(), m.private_data.size()};
    l->second->cm_event(e);
    Conn* c = find(id);
    if (c != nullptr && c->handler == nullptr)
        (void)sidr_reply(id, static_cast<std::uint16_t>(net::SidrStatus::rejected), 0, 0, {});
}

void Agent::on_sidr_rep(const net::CmSidrRep& m) noexcept {
    Conn* c = find(m.request_id);
    if (c == nullptr || c->state != State::sidr_sent) {
        counters_.mads_unmatched.add();
        return;
    }
    Event e;
    e.kind = EventKind::sidr_rep;
    e.comm_id = m.request_id;
    e.reason = static_cast<std::uint16_t>(m.status);
    e.qkey = m.qkey;
    e.peer.qpn = m.qpn;
    e.private_data = {m.private_data.data(), m.private_data.size()};
    tell(*c, e);
    conns_.erase(m.request_id);
}

} // namespace rdmasim::datapath::cm
