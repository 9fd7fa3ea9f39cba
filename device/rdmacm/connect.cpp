// Connecting, accepting, rejecting, disconnecting (device/README.md,
// "Connection manager"): the program's calls to the port's CM, and the CM's
// events back to the program as rdma_cm events.
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "device/qp_transport.hpp"
#include "device/rdmacm/api.hpp"
#include "device/rdmacm/cm_id.hpp"
#include "net/cm_mad.hpp"
#include "net/cma_header.hpp"

namespace rdmasim::rdmacm {

namespace {

using datapath::cm::EventKind;

// The private data of a REQ: rdma_cm's IP header, then the program's.
std::vector<std::uint8_t> req_private_data(const CmId& id, const rdma_conn_param* param) {
    const auto& a = id.box.id.route.addr;
    const net::CmaIpHeader h = net::CmaIpHeader::ipv4(
        reinterpret_cast<const std::uint8_t*>(&a.src_sin.sin_addr),
        reinterpret_cast<const std::uint8_t*>(&a.dst_sin.sin_addr), ntohs(a.src_sin.sin_port));
    std::vector<std::uint8_t> data(net::kCmaIpHeaderSize);
    h.store(data.data());
    if (param != nullptr && param->private_data != nullptr && param->private_data_len != 0) {
        const auto* p = static_cast<const std::uint8_t*>(param->private_data);
        data.insert(data.end(), p, p + param->private_data_len);
    }
    return data;
}

std::span<const std::uint8_t> user_data(const rdma_conn_param* param) noexcept {
    if (param == nullptr || param->private_data == nullptr) return {};
    return {static_cast<const std::uint8_t*>(param->private_data), param->private_data_len};
}

// librdmacm's clamps: RDMA_MAX_RESP_RES and RDMA_MAX_INIT_DEPTH (0xff) mean the device's maximum.
std::uint8_t clamp_rd_atomic(std::uint8_t v, int max) noexcept {
    return static_cast<std::uint8_t>(std::min<int>(v, max));
}

int device_max_rd_atomic(CmId& id) noexcept {
    ibv_device_attr attr{};
    if (ibv_query_device(id.id().verbs, &attr) != 0) return 16;
    return attr.max_qp_rd_atom;
}

datapath::cm::QpParams own_params(CmId& id, const rdma_conn_param* param) noexcept {
    datapath::cm::QpParams qp;
    qp.qpn = id.id().qp != nullptr ? id.id().qp->qp_num : (param ? param->qp_num & 0xffffff : 0);
    qp.starting_psn = id.own_psn;
    qp.responder_resources = id.responder_resources;
    qp.initiator_depth = id.initiator_depth;
    qp.retry_count = param ? std::min<std::uint8_t>(param->retry_count, 7) : 7;
    qp.rnr_retry_count = param ? std::min<std::uint8_t>(param->rnr_retry_count, 7) : 7;
    qp.srq = id.id().srq != nullptr || (id.id().qp == nullptr && param && param->srq);
    qp.uc = id.id().qp_type == IBV_QPT_UC;
    qp.local_ack_timeout = id.ack_timeout;
    qp.mtu = static_cast<net::PathMtu>(id.path_rec.mtu ? int{id.path_rec.mtu} : int{IBV_MTU_1024});
    return qp;
}

} // namespace

int connect(rdma_cm_id* cm_id, rdma_conn_param* param) noexcept {
    if (cm_id == nullptr) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (id.state != IdState::route_resolved || id.dev == nullptr) return fail(EINVAL);
    if (const int err = injected(*id.dev, device::Verb::rdma_connect)) return fail(err);
    if (id.id().qp_type == IBV_QPT_UD) return connect_ud(id, param);
    const std::size_t user_max = net::kCmReqPrivateDataSize - net::kCmaIpHeaderSize;
    if (param != nullptr && param->private_data_len > user_max) return fail(EINVAL);
    // No parameters, or RDMA_MAX_*: the device's maximum, 7 retries of each kind (librdmacm).
    const int max = device_max_rd_atomic(id);
    const std::uint8_t resp = param ? param->responder_resources : std::uint8_t{RDMA_MAX_RESP_RES};
    const std::uint8_t depth = param ? param->initiator_depth : std::uint8_t{RDMA_MAX_INIT_DEPTH};
    if ((resp != RDMA_MAX_RESP_RES && resp > max) || (depth != RDMA_MAX_INIT_DEPTH && depth > max))
        return fail(EINVAL);
    id.responder_resources = clamp_rd_atomic(resp, max);
    id.initiator_depth = clamp_rd_atomic(depth, max);
    id.retry_count = param ? std::min<std::uint8_t>(param->retry_count, 7) : 7;
    try {
        const std::vector<std::uint8_t> data = req_private_data(id, param);
        device::Device& dev = *id.dev;
        id.path = {.local_gid = net::ipv4_mapped_gid(dev.identity.ipv4.data()),
                   .traffic_class = id.tos};
        std::memcpy(id.path.remote_gid.data(), id.id().route.addr.addr.ibaddr.dgid.raw, 16);
        const std::uint16_t port = ntohs(id.id().route.addr.dst_sin.sin_port);
        const std::uint64_t service =
            net::cma_service_id(static_cast<net::RdmaPortSpace>(id.id().ps), port);
        const int err = with_cm(dev, [&](datapath::cm::Agent& cm) {
            const int e = cm.connect(id, service, id.path, own_params(id, param), data, id.comm_id);
            if (e == 0) id.state = IdState::connect;
            return e;
        });
        if (err != 0) return fail(err);
    } catch (...) {
        return fail(ENOMEM);
    }
    return id.own_channel ? complete(id) : 0;
}

int accept(rdma_cm_id* cm_id, rdma_conn_param* param) noexcept {
    if (cm_id == nullptr) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (id.state != IdState::req_received || id.dev == nullptr) return fail(EINVAL);
    if (const int err = injected(*id.dev, device::Verb::rdma_accept)) return fail(err);
    if (id.id().qp_type == IBV_QPT_UD) return accept_ud(id, param);
    if (param == nullptr && id.id().qp == nullptr) return fail(EINVAL);
    if (param != nullptr && param->private_data_len > net::kCmRepPrivateDataSize) return fail(EINVAL);
    // RDMA_MAX_* or no parameters: what the REQ asked, up to the device's
    // maximum; else the program's (librdmacm's rdma_accept).
    const int max = device_max_rd_atomic(id);
    id.responder_resources = clamp_rd_atomic(
        param && param->responder_resources != RDMA_MAX_RESP_RES ? param->responder_resources
                                                                 : id.responder_resources,
        max);
    id.initiator_depth = clamp_rd_atomic(
        param && param->initiator_depth != RDMA_MAX_INIT_DEPTH ? param->initiator_depth
                                                               : id.initiator_depth,
        max);
    if (param != nullptr) id.rnr_retry_count = std::min<std::uint8_t>(param->rnr_retry_count, 7);
    if (id.id().qp != nullptr) {
        const int err = move_qp_rtr_rts(id, id.responder_resources, id.initiator_depth);
        if (err != 0) {
            (void)reject(cm_id, nullptr, 0);
            return fail(err);
        }
    }
    device::Device& dev = *id.dev;
    datapath::cm::QpParams qp = own_params(id, param);
    qp.rnr_retry_count = id.rnr_retry_count;
    const int err = with_cm(dev, [&](datapath::cm::Agent& cm) {
        const int e = cm.accept(id.comm_id, qp, user_data(param));
        if (e == 0) id.state = IdState::accepting;
        return e;
    });
    leave_backlog(id);
    if (err != 0) return fail(err);
    return id.own_channel ? complete(id) : 0;
}

int reject(rdma_cm_id* cm_id, const void* private_data, uint8_t len) noexcept {
    if (cm_id == nullptr || (len != 0 && private_data == nullptr)) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (id.dev == nullptr || id.comm_id == 0) return fail(EINVAL);
    if (id.id().qp_type == IBV_QPT_UD) return reject_ud(id, private_data, len);
    if (len > net::kCmRejPrivateDataSize) return fail(EINVAL);
    device::Device& dev = *id.dev;
    const int err = with_cm(dev, [&](datapath::cm::Agent& cm) {
        const int e = cm.reject(id.comm_id, static_cast<std::uint16_t>(net::CmRejReason::consumer_reject),
                                {static_cast<const std::uint8_t*>(private_data), len});
        if (e == 0) {
            id.comm_id = 0;
            id.state = IdState::idle;
        }
        return e;
    });
    leave_backlog(id);
    return err != 0 ? fail(err) : 0;
}

int establish(rdma_cm_id* cm_id) noexcept {
    if (cm_id == nullptr) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (id.id().qp != nullptr || id.dev == nullptr || id.comm_id == 0) return fail(EINVAL);
    return send_rtu(id) == 0 ? 0 : -1;
}

int send_rtu(CmId& id) noexcept {
    const int err = with_cm(*id.dev, [&](datapath::cm::Agent& cm) {
        const int e = cm.establish(id.comm_id, {});
        if (e == 0) id.state = IdState::connected;
        return e;
    });
    errno = err;
    return err;
}

int disconnect(rdma_cm_id* cm_id) noexcept {
    if (cm_id == nullptr) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (id.dev == nullptr || id.comm_id == 0) return fail(EINVAL);
    if (id.id().qp != nullptr) move_qp_err(id);
    const int err = with_cm(*id.dev, [&](datapath::cm::Agent& cm) { return cm.disconnect(id.comm_id, {}); });
    return err != 0 ? fail(err) : 0;
}

int notify(rdma_cm_id* cm_id, ibv_event_type event) noexcept {
    if (cm_id == nullptr) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (event != IBV_EVENT_COMM_EST) return fail(EINVAL);
    if (id.dev == nullptr || id.comm_id == 0) return fail(EINVAL);
    // The first packet on the connection stands for the RTU, as on a kernel:
    // the CM establishes a connection whose REP went out.
    std::lock_guard lock(id.dev->port.mutex());
    return id.dev->port.cm().notify_established(id.comm_id) == 0 ? 0 : fail(EINVAL);
}

void forget_connection(CmId& id) noexcept {
    if (id.dev == nullptr && !id.listening_all) return;
    std::vector<device::Device*> devs;
    if (id.listening_all)
        devs = all_devices();
    else
        devs.push_back(id.dev);
    for (device::Device* dev : devs) {
        std::lock_guard lock(dev->port.mutex());
        (void)device::transport_now(*dev);
        datapath::cm::Agent& cm = dev->port.cm();
        if (id.state == IdState::listen) cm.stop_listening(id.service_id);
        if (id.comm_id != 0 && dev == id.dev) cm.release(id.comm_id);
        cm.cancel_resolve(id);
        cm.unwatch(id);
        dev->port.finish_call();
    }
    id.comm_id = 0;
    leave_backlog(id);
}

} // namespace rdmasim::rdmacm
