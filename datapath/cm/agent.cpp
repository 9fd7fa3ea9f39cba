// The CM's control side: connections started and answered by the layer
// above, MADs sent and resent, timers (datapath/README.md, "Connection manager").
#include "datapath/cm/agent.hpp"

#include <algorithm>
#include <cerrno>

#include "datapath/l2_host.hpp"
#include "datapath/roce/port.hpp"

namespace rdmasim::datapath::cm {

namespace {

// IBA 12.6: 4.096 us * 2^t, t of 5 bits.
std::uint64_t cm_time_ns(std::uint8_t t) noexcept {
    return 4096ull << std::min<std::uint8_t>(t, 31);
}

template <std::size_t N>
void copy_private(std::array<std::uint8_t, N>& to, std::span<const std::uint8_t> from) noexcept {
    to.fill(0);
    std::copy_n(from.begin(), std::min(from.size(), N), to.begin());
}

} // namespace

const char* event_name(EventKind kind) noexcept {
    static constexpr const char* names[] = {
        "req",          "rep",           "established", "rej",      "mra",      "dreq",
        "disconnected", "timewait_exit", "unreachable", "sidr_req", "sidr_rep", "sidr_timeout",
        "addr_change",  "device_removal"};
    const auto i = static_cast<std::size_t>(kind);
    return i < std::size(names) ? names[i] : "unknown";
}

Agent::Conn* Agent::find(std::uint32_t comm_id) noexcept {
    const auto it = conns_.find(comm_id);
    return it == conns_.end() ? nullptr : &it->second;
}

// Spread over the member's part of the space (datapath/family.hpp: the
// top bits name the family member; 0 for a lone process), never 0, never
// reused while live.
std::uint32_t Agent::new_comm_id() noexcept {
    constexpr std::uint32_t kLow = (1u << kCommIdMemberShift) - 1;
    const std::uint32_t member = next_id_ & ~kLow;
    do {
        next_id_ = member | ((next_id_ * 1103515245u + 12345u) & kLow);
    } while (next_id_ == 0 || conns_.contains(next_id_));
    return next_id_;
}

void Agent::send_to(const net::Gid& remote, const net::Gid& local, std::uint8_t tclass,
                    std::span<const std::uint8_t, net::kMadSize> mad) noexcept {
    net::RocePath path;
    path.src_mac = host_.addresses().mac; // the destination MAC: the L2 host's ARP
    path.sgid = local;
    path.dgid = remote;
    path.traffic_class = tclass;
    path.udp_src_port = net::roce_udp_src_port(net::roce_flow_label(net::kGsiQpn, net::kGsiQpn));
    net::RoceHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(net::RoceOpcode::ud_send_only);
    h.bth.dest_qp = net::kGsiQpn;
    h.bth.psn = gsi_psn_;
    gsi_psn_ = net::psn_add(gsi_psn_, 1);
    h.deth.qkey = net::kGsiQkey;
    h.deth.src_qp = net::kGsiQpn;
    std::array<std::uint8_t, 512> frame;
    const net::RoceBuildResult r = net::build_roce_frame(path, h, mad, frame);
    if (r.error != net::RoceBuildError::none) [[unlikely]]
        return;
    counters_.mads_sent.add();
    roce_.transmit({frame.data(), r.len}, clock_);
}

void Agent::send_mad(Conn& c, bool arm_resend) noexcept {
    c.resend = arm_resend;
    send_to(c.remote_gid, c.local_gid, c.traffic_class, c.last);
}

void Agent::arm(Conn& c, std::uint64_t timeout_ns, std::uint32_t retries) noexcept {
    c.timeout_ns = timeout_ns;
    c.retries_left = retries;
    c.deadline = clock_ + timeout_ns;
    next_deadline_ = std::min(next_deadline_, c.deadline);
}

void Agent::tell(Conn& c, Event& e) noexcept {
    e.agent = this;
    if (c.handler != nullptr) c.handler->cm_event(e);
}

void Agent::watch(Handler& handler) {
    if (std::find(watchers_.begin(), watchers_.end(), &handler) == watchers_.end())
        watchers_.push_back(&handler);
}

void Agent::unwatch(Handler& handler) noexcept {
    std::erase(watchers_, &handler);
}

void Agent::device_event(EventKind kind) noexcept {
    Event e;
    e.kind = kind;
    e.agent = this;
    for (Handler* h : watchers_) h->cm_event(e); // they only queue: the list stays as it is
}

bool Agent::listen(std::uint64_t service_id, Handler& handler) {
    if (!listeners_.emplace(service_id, &handler).second) return false;
    if (Family* f = roce_.family()) f->listen(service_id, true);
    return true;
}

void Agent::stop_listening(std::uint64_t service_id) noexcept {
    if (listeners_.erase(service_id) != 0)
        if (Family* f = roce_.family()) f->listen(service_id, false);
}

void Agent::join_family(bool keep_listeners) noexcept {
    Family* f = roce_.family();
    if (f == nullptr) return;
    if (!keep_listeners) listeners_.clear(); // a forked child's copies: the parent listens
    for (const auto& [service_id, handler] : listeners_)
        f->listen(service_id, true);
    next_id_ = (next_id_ & ((1u << kCommIdMemberShift) - 1)) | f->member() << kCommIdMemberShift;
}

void Agent::adopt(std::uint32_t comm_id, Handler& handler) noexcept {
    if (Conn* c = find(comm_id)) c->handler = &handler;
}

int Agent::connect(Handler& handler, std::uint64_t service_id, const Path& path, const QpParams& qp,
                   std::span<const std::uint8_t> private_data, std::uint32_t& comm_id) {
    if (private_data.size() > net::kCmReqPrivateDataSize) return EINVAL;
    const std::uint32_t id = new_comm_id();
    Conn& c = conns_[id]; // may throw: the caller's control path
    c = Conn{.state = State::req_sent,
             .handler = &handler,
             .service_id = service_id,
             .tid = next_tid_++,
             .remote_gid = path.remote_gid,
             .local_gid = path.local_gid,
             .traffic_class = path.traffic_class,
             .hop_limit = path.hop_limit,
             .peer_response_timeout = response_timeout_, // the peer's are not known: ours
             .peer_max_retries = max_retries_};
    net::CmReq m;
    m.local_comm_id = id;
    m.service_id = service_id;
    m.local_ca_guid = ca_guid_;
    m.local_qpn = qp.qpn;
    m.responder_resources = qp.responder_resources;
    m.initiator_depth = qp.initiator_depth;
    m.remote_cm_response_timeout = response_timeout_;
    m.transport = qp.uc ? net::CmTransport::uc : net::CmTransport::rc;
    m.end_to_end_flow_control = true;
    m.starting_psn = qp.starting_psn;
    m.local_cm_response_timeout = response_timeout_;
    m.retry_count = qp.retry_count;
    m.pkey = net::kDefaultPkey;
    m.path_mtu = qp.mtu;
    m.rnr_retry_count = qp.rnr_retry_count;
    m.max_cm_retries = max_retries_;
    m.srq = qp.srq;
    m.primary = {.local_lid = 0xffff,
                 .remote_lid = 0xffff,
                 .local_gid = path.local_gid,
                 .remote_gid = path.remote_gid,
                 .flow_label = path.flow_label,
                 .packet_rate = 7,
                 .traffic_class = path.traffic_class,
                 .hop_limit = path.hop_limit,
                 .local_ack_timeout = qp.local_ack_timeout};
    copy_private(m.private_data, private_data);
    net::encode_cm_mad(net::cm_mad_header(net::CmAttr::req, c.tid), m, c.last);
    arm(c, 2 * cm_time_ns(response_timeout_), max_retries_);
    send_mad(c, true);
    comm_id = id;
    return 0;
}

int Agent::accept(std::uint32_t comm_id, const QpParams& qp,
                  std::span<const std::uint8_t> private_data) noexcept {
    Conn* c = find(comm_id);
    if (c == nullptr || c->state != State::req_rcvd) return EINVAL;
    if (private_data.size() > net::kCmRepPrivateDataSize) return EINVAL;
    net::CmRep m;
    m.local_comm_id = comm_id;
    m.remote_comm_id = c->remote_id;
    m.local_qpn = qp.qpn;
    m.starting_psn = qp.starting_psn;
    m.responder_resources = qp.responder_resources;
    m.initiator_depth = qp.initiator_depth;
    m.target_ack_delay = 0;
    m.failover_accepted = 2; // rejected: no alternate path
    m.end_to_end_flow_control = true;
    m.rnr_retry_count = qp.rnr_retry_count;
    m.srq = qp.srq;
    m.local_ca_guid = ca_guid_;
    copy_private(m.private_data, private_data);
    net::encode_cm_mad(net::cm_mad_header(net::CmAttr::rep, c->tid), m, c->last);
    c->state = State::rep_sent;
    arm(*c, 2 * cm_time_ns(c->peer_response_timeout), c->peer_max_retries);
    send_mad(*c, true);
    return 0;
}

int Agent::establish(std::uint32_t comm_id, std::span<const std::uint8_t> private_data) noexcept {
    Conn* c = find(comm_id);
    if (c == nullptr || c->state != State::rep_rcvd) return EINVAL;
    if (private_data.size() > net::kCmRtuPrivateDataSize) return EINVAL;
    net::CmRtu m;
    m.local_comm_id = comm_id;
    m.remote_comm_id = c->remote_id;
    copy_private(m.private_data, private_data);
    net::encode_cm_mad(net::cm_mad_header(net::CmAttr::rtu, c->tid), m, c->last);
    c->state = State::established;
    c->deadline = UINT64_MAX;
    send_mad(*c, false); // a lost RTU: the REP comes again and is answered again
    return 0;
}

int Agent::notify_established(std::uint32_t comm_id) noexcept {
    Conn* c = find(comm_id);
    if (c == nullptr) return EINVAL;
    if (c->state != State::rep_sent) return c->state == State::established ? 0 : EINVAL;
    c->state = State::established;
    c->deadline = UINT64_MAX;
    c->resend = false;
    Event e;
    e.kind = EventKind::established;
    e.comm_id = comm_id;
    tell(*c, e);
    return 0;
}

int Agent::reject(std::uint32_t comm_id, std::uint16_t reason,
                  std::span<const std::uint8_t> private_data) noexcept {
    Conn* c = find(comm_id);
    if (c == nullptr || (c->state != State::req_rcvd && c->state != State::rep_rcvd)) return EINVAL;
    if (private_data.size() > net::kCmRejPrivateDataSize) return EINVAL;
    net::CmRej m;
    m.local_comm_id = comm_id;
    m.remote_comm_id = c->remote_id;
    m.message_rejected =
        c->state == State::req_rcvd ? net::CmRejectedMsg::req : net::CmRejectedMsg::rep;
    m.reason = static_cast<net::CmRejReason>(reason);
    copy_private(m.private_data, private_data);
    net::encode_cm_mad(net::cm_mad_header(net::CmAttr::rej, c->tid), m, c->last);
    send_mad(*c, false);
    conns_.erase(comm_id);
    return 0;
}

int Agent::disconnect(std::uint32_t comm_id, std::span<const std::uint8_t> private_data) noexcept {
    Conn* c = find(comm_id);
    if (c == nullptr) return EINVAL;
    if (c->state == State::dreq_rcvd || c->state == State::dreq_sent || c->state == State::timewait)
        return 0; // the DREP went with the DREQ's arrival; or ours is under way
    if (c->state != State::established && c->state != State::rep_sent) return EINVAL;
    if (private_data.size() > net::kCmDreqPrivateDataSize) return EINVAL;
    net::CmDreq m;
    m.local_comm_id = comm_id;
    m.remote_comm_id = c->remote_id;
    m.remote_qpn_eecn = c->remote_qpn;
    copy_private(m.private_data, private_data);
    c->tid = next_tid_++;
    net::encode_cm_mad(net::cm_mad_header(net::CmAttr::dreq, c->tid), m, c->last);
    c->state = State::dreq_sent;
    arm(*c, 2 * cm_time_ns(c->peer_response_timeout), c->peer_max_retries);
    send_mad(*c, true);
    return 0;
}

void Agent::release(std::uint32_t comm_id) noexcept {
    Conn* c = find(comm_id);
    if (c == nullptr) return;
    c->handler = nullptr;
    switch (c->state) {
    case State::req_rcvd:
        (void)reject(comm_id, static_cast<std::uint16_t>(net::CmRejReason::consumer_reject), {});
        return;
    case State::established:
    case State::rep_sent:
        (void)disconnect(comm_id, {}); // DREQ resent without a handler; then time-wait
        return;
    case State::dreq_sent:
    case State::timewait:
        return; // ends by itself
    default:
        conns_.erase(comm_id);
        return;
    }
}

void Agent::enter_timewait(std::uint32_t comm_id, Conn& c) noexcept {
    (void)comm_id;
    c.state = State::timewait;
    c.resend = false;
    c.retries_left = 0;
    // IBA 12.9.8.6: the packet lifetime twice plus the ACK delay; rdma_cm's
    // RoCE packet lifetime (16) makes it about half a second.
    c.deadline = clock_ + 2 * cm_time_ns(16);
    next_deadline_ = std::min(next_deadline_, c.deadline);
}

void Agent::service(std::uint64_t now_ns) noexcept {
    if (now_ns < next_deadline_) return;
    next_deadline_ = UINT64_MAX;
    std::vector<Pending> told; // taken off first: a handler may resolve again
    for (auto it = pending_.begin(); it != pending_.end();) {
        if (it->deadline <= now_ns) {
            told.push_back(*it);
            it = pending_.erase(it);
        } else {
            next_deadline_ = std::min(next_deadline_, it->deadline);
            ++it;
        }
    }
    for (const Pending& q : told) {
        if (q.known)
            q.handler->address_resolved(q.token, q.mac);
        else
            q.handler->address_failed(q.token);
    }
    std::vector<std::uint32_t> due;
    for (auto& [id, c] : conns_) {
        if (c.deadline <= now_ns)
            due.push_back(id);
        else
            next_deadline_ = std::min(next_deadline_, c.deadline);
    }
    for (std::uint32_t id : due)
        if (Conn* c = find(id)) expire(id, *c);
}

void Agent::expire(std::uint32_t comm_id, Conn& c) noexcept {
    if (c.state == State::timewait) {
        Handler* h = c.handler;
        conns_.erase(comm_id);
        Event e;
        e.kind = EventKind::timewait_exit;
        e.comm_id = comm_id;
        e.agent = this;
        if (h != nullptr) h->cm_event(e);
        return;
    }
    if (c.resend && c.retries_left > 0) {
        --c.retries_left;
        counters_.mads_resent.add();
        arm(c, c.timeout_ns, c.retries_left);
        send_mad(c, true);
        return;
    }
    const State s = c.state;
    Event e;
    e.comm_id = comm_id;
    if (s == State::dreq_sent) { // no DREP: disconnected all the same
        e.kind = EventKind::disconnected;
        tell(c, e);
        enter_timewait(comm_id, c);
        return;
    }
    if (s == State::sidr_sent) {
        e.kind = EventKind::sidr_timeout;
        tell(c, e);
        conns_.erase(comm_id);
        return;
    }
    if (s == State::req_sent || s == State::rep_sent) { // IBA 12.9.5: REJ with reason timeout
        net::CmRej m;
        m.local_comm_id = comm_id;
        m.remote_comm_id = c.remote_id;
        m.message_rejected =
            s == State::req_sent ? net::CmRejectedMsg::req : net::CmRejectedMsg::rep;
        m.reason = net::CmRejReason::timeout;
        net::encode_cm_mad(net::cm_mad_header(net::CmAttr::rej, c.tid), m, c.last);
        send_mad(c, false);
        e.kind = EventKind::unreachable;
        tell(c, e);
    }
    conns_.erase(comm_id);
}

} // namespace rdmasim::datapath::cm
