// The endpoint calls (rdma_create_ep, rdma_get_request, rdma_destroy_ep):
// synchronous ids built from rdma_getaddrinfo's answer, as librdmacm
// builds them (device/README.md, "Connection manager").
#include <cerrno>
#include <cstring>

#include "device/rdmacm/api.hpp"
#include "device/rdmacm/cm_id.hpp"

namespace rdmasim::rdmacm {

int create_ep(rdma_cm_id** out, rdma_addrinfo* res, ibv_pd* pd,
              ibv_qp_init_attr* qp_attr) noexcept {
    if (out == nullptr || res == nullptr) return fail(EINVAL);
    rdma_cm_id* cm_id = nullptr;
    if (create_id(nullptr, &cm_id, nullptr, static_cast<rdma_port_space>(res->ai_port_space)) != 0)
        return -1;
    CmId& id = *from_cm(cm_id);
    if (qp_attr != nullptr) qp_attr->qp_type = static_cast<ibv_qp_type>(res->ai_qp_type); // as librdmacm
    int rc;
    if (res->ai_flags & RAI_PASSIVE) {
        rc = bind_addr(cm_id, res->ai_src_addr);
        if (rc == 0 && qp_attr != nullptr) { // each rdma_get_request makes one like it
            id.ep_qp_attr = *qp_attr;
            id.ep_has_qp = true;
        }
        if (rc == 0 && pd != nullptr) cm_id->pd = pd;
    } else {
        rc = resolve_addr(cm_id, res->ai_src_addr, res->ai_dst_addr, 2000);
        if (rc == 0) rc = resolve_route(cm_id, 2000);
        if (rc == 0 && qp_attr != nullptr) rc = create_qp(cm_id, pd, qp_attr);
    }
    if (rc != 0) {
        const int err = errno;
        (void)destroy_id(cm_id);
        return fail(err);
    }
    *out = cm_id;
    return 0;
}

void destroy_ep(rdma_cm_id* id) noexcept {
    if (id == nullptr) return;
    destroy_qp(id);
    (void)destroy_id(id);
}

int get_request(rdma_cm_id* listen, rdma_cm_id** out) noexcept {
    if (listen == nullptr || out == nullptr) return fail(EINVAL);
    CmId& l = *from_cm(listen);
    if (!l.own_channel || l.state != IdState::listen) return fail(EINVAL);
    rdma_cm_event* event = nullptr;
    for (;;) {
        if (get_cm_event(listen->channel, &event) != 0) return -1;
        if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) break;
        (void)ack_cm_event(event); // anything else on a listening id is the CM's
    }
    rdma_cm_id* child = event->id;
    CmId& c = *from_cm(child);
    // The new id is synchronous too: a channel of its own from now on.
    rdma_event_channel* own = create_event_channel();
    if (own == nullptr) {
        const int err = errno;
        (void)ack_cm_event(event);
        (void)reject(child, nullptr, 0);
        (void)destroy_id(child);
        return fail(err);
    }
    {
        std::lock_guard lock(c.dev->port.mutex()); // no event for it slips in between
        c.channel = from_cm(own);
        c.own_channel = true;
        child->channel = own;
    }
    child->event = event; // the request, acked by the id's next call (complete)
    if (l.ep_has_qp) {
        ibv_qp_init_attr attr = l.ep_qp_attr;
        if (create_qp(child, listen->pd, &attr) != 0) {
            const int err = errno;
            (void)reject(child, nullptr, 0);
            (void)destroy_id(child);
            return fail(err);
        }
    }
    *out = child;
    return 0;
}

} // namespace rdmasim::rdmacm
