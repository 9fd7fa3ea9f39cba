// The port's CM events as rdma_cm events (device/README.md, "Connection
// manager"). Handlers run under the port lock: they fill ids and queue;
// the one step that moves a QP (a REP for an id with a QP) is left to
// rdma_get_cm_event, in the program's thread, as librdmacm does it.
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "device/rdmacm/api.hpp"
#include "device/rdmacm/cm_id.hpp"
#include "net/cma_header.hpp"

namespace rdmasim::rdmacm {

namespace {

using datapath::cm::Event;
using datapath::cm::EventKind;

// Copies the MAD's private data (all of the field, as the kernel reports
// it) into the event, `skip` bytes in (a REQ's rdma_cm header).
void set_private(EventRec& rec, const Event& e, std::size_t skip, bool ud) noexcept {
    const std::size_t len = e.private_data.size() > skip ? e.private_data.size() - skip : 0;
    std::copy_n(e.private_data.begin() + static_cast<std::ptrdiff_t>(skip),
                std::min(len, rec.data.size()), rec.data.begin());
    if (ud) {
        rec.ev.param.ud.private_data = rec.data.data();
        rec.ev.param.ud.private_data_len =
            static_cast<std::uint8_t>(std::min<std::size_t>(len, 255));
    } else {
        rec.ev.param.conn.private_data = rec.data.data();
        rec.ev.param.conn.private_data_len =
            static_cast<std::uint8_t>(std::min<std::size_t>(len, 255));
    }
}

device::Device* device_of(const datapath::cm::Agent* agent) noexcept {
    for (device::Device* dev : all_devices())
        if (&dev->port.cm() == agent) return dev;
    return nullptr;
}

void fill_addresses(CmId& child, const CmId& listener, const net::CmaIpHeader& h) noexcept {
    rdma_addr& a = child.id().route.addr;
    a.src_sin.sin_family = AF_INET;
    a.src_sin.sin_port = listener.box.id.route.addr.src_sin.sin_port;
    std::memcpy(&a.src_sin.sin_addr, h.dst_addr.data() + 12, 4);
    a.dst_sin.sin_family = AF_INET;
    a.dst_sin.sin_port = htons(h.port);
    std::memcpy(&a.dst_sin.sin_addr, h.src_addr.data() + 12, 4);
    std::memcpy(a.addr.ibaddr.sgid.raw, child.path.local_gid.data(), 16);
    std::memcpy(a.addr.ibaddr.dgid.raw, child.path.remote_gid.data(), 16);
    a.addr.ibaddr.pkey = htons(0xffff);
    ibv_sa_path_rec& p = child.path_rec;
    p.sgid = a.addr.ibaddr.sgid;
    p.dgid = a.addr.ibaddr.dgid;
    p.hop_limit = child.path.hop_limit;
    p.traffic_class = child.path.traffic_class;
    p.reversible = htonl(0x80000000);
    p.numb_path = 1;
    p.pkey = htons(0xffff);
    p.mtu_selector = 2;
    p.mtu = static_cast<std::uint8_t>(child.peer.mtu);
    p.packet_life_time = 16;
    child.id().route.path_rec = &child.path_rec;
    child.id().route.num_paths = 1;
}

// A REQ or SIDR_REQ on a listening id: a new id for it, told as CONNECT_REQUEST.
void on_request(CmId& listener, const Event& e) noexcept {
    if (*listener.pending_requests >= listener.backlog) return; // not adopted: the CM rejects
    if (e.private_data.size() < net::kCmaIpHeaderSize) return;
    const net::CmaIpHeader h = net::CmaIpHeader::load(e.private_data.data());
    if (net::check_cma_ip_header(h) != net::CmaHeaderError::none || h.ip_version != 4) return;
    device::Device* dev = device_of(e.agent);
    if (dev == nullptr) return;
    rdma_cm_id* out = nullptr;
    if (create_id(&listener.channel->ch, &out, listener.box.id.context, listener.box.id.ps) != 0)
        return;
    CmId& child = *from_cm(out);
    const bool ud = e.kind == EventKind::sidr_req;
    if (attach_device(child, *dev, true) != 0) { // opened at listen: no verbs call here
        (void)destroy_id(out);
        return;
    }
    child.comm_id = e.comm_id;
    child.peer = e.peer;
    child.path = e.path;
    child.tos = e.path.traffic_class;
    child.responder_resources = e.peer.initiator_depth; // ib_cm: the passive side's view
    child.initiator_depth = e.peer.responder_resources;
    child.retry_count = e.peer.retry_count;
    child.ack_timeout = e.peer.local_ack_timeout ? e.peer.local_ack_timeout : child.ack_timeout;
    if (e.peer.uc) child.id().qp_type = IBV_QPT_UC;
    fill_addresses(child, listener, h);
    EventRec* rec = new_event(child, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
    if (rec == nullptr) {
        child.dev = nullptr; // under the port lock: nothing of the CM to release yet
        child.comm_id = 0;
        (void)destroy_id(out);
        return;
    }
    rec->ev.listen_id = &listener.id();
    set_private(*rec, e, net::kCmaIpHeaderSize, ud);
    if (!ud) {
        rdma_conn_param& c = rec->ev.param.conn;
        c.responder_resources = child.responder_resources;
        c.initiator_depth = child.initiator_depth;
        c.flow_control = 1;
        c.retry_count = e.peer.retry_count;
        c.rnr_retry_count = e.peer.rnr_retry_count;
        c.srq = e.peer.srq;
        c.qp_num = e.peer.qpn;
    }
    child.state = IdState::req_received;
    ++*listener.pending_requests;
    child.counted_in = listener.pending_requests;
    e.agent->adopt(e.comm_id, child);
    post_event(*listener.channel, rec);
}

} // namespace

void CmId::cm_event(const Event& e) noexcept {
    switch (e.kind) {
    case EventKind::req:
    case EventKind::sidr_req:
        on_request(*this, e);
        return;
    case EventKind::rep: {
        peer.qpn = e.peer.qpn;
        peer.starting_psn = e.peer.starting_psn;
        peer.srq = e.peer.srq;
        responder_resources = e.peer.initiator_depth; // what the peer will issue to us
        initiator_depth = e.peer.responder_resources;
        rnr_retry_count = e.peer.rnr_retry_count;
        EventRec* rec = new_event(*this, RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
        if (rec == nullptr) return;
        rec->conn_response = true;
        set_private(*rec, e, 0, false);
        rdma_conn_param& c = rec->ev.param.conn;
        c.responder_resources = responder_resources;
        c.initiator_depth = initiator_depth;
        c.flow_control = 1;
        c.rnr_retry_count = e.peer.rnr_retry_count;
        c.srq = e.peer.srq;
        c.qp_num = e.peer.qpn;
        post_event(*channel, rec);
        return;
    }
    default:
        break;
    }
    on_other_event(*this, e);
}

void on_other_event(CmId& id, const Event& e) noexcept {
    rdma_cm_event_type type;
    int status = 0;
    switch (e.kind) {
    case EventKind::established:
        id.state = IdState::connected;
        type = RDMA_CM_EVENT_ESTABLISHED;
        break;
    case EventKind::rej:
        id.state = IdState::error;
        id.comm_id = 0;
        type = RDMA_CM_EVENT_REJECTED;
        status = e.reason;
        break;
    case EventKind::dreq:
    case EventKind::disconnected:
        id.state = IdState::disconnected;
        type = RDMA_CM_EVENT_DISCONNECTED;
        break;
    case EventKind::timewait_exit:
        id.comm_id = 0;
        type = RDMA_CM_EVENT_TIMEWAIT_EXIT;
        break;
    case EventKind::unreachable:
    case EventKind::sidr_timeout:
        id.state = IdState::error;
        id.comm_id = 0;
        type = RDMA_CM_EVENT_UNREACHABLE;
        status = -ETIMEDOUT;
        break;
    case EventKind::sidr_rep:
        on_sidr_reply(id, e);
        return;
    case EventKind::addr_change:
        type = RDMA_CM_EVENT_ADDR_CHANGE;
        break;
    case EventKind::device_removal:
        type = RDMA_CM_EVENT_DEVICE_REMOVAL;
        break;
    default:
        return; // mra: the CM's own business
    }
    EventRec* rec = new_event(id, type, status);
    if (rec == nullptr) return;
    if (!e.private_data.empty()) set_private(*rec, e, 0, false);
    post_event(*id.channel, rec);
}

bool process_conn_response(EventRec& rec) noexcept {
    CmId& id = *rec.owner;
    if (id.id().qp == nullptr) return true; // the program moves its QP and calls rdma_establish
    int err = move_qp_rtr_rts(id, RDMA_MAX_RESP_RES, RDMA_MAX_INIT_DEPTH);
    if (err == 0) err = send_rtu(id);
    if (err == 0) {
        rec.ev.event = RDMA_CM_EVENT_ESTABLISHED;
        return true;
    }
    rec.ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
    rec.ev.status = -err;
    std::lock_guard lock(id.dev->port.mutex());
    (void)id.dev->port.cm().reject(
        id.comm_id, static_cast<std::uint16_t>(net::CmRejReason::consumer_reject), {});
    id.comm_id = 0;
    return true;
}

} // namespace rdmasim::rdmacm
