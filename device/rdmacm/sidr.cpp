// UD ids (RDMA_PS_UDP, RDMA_PS_IPOIB): rdma_connect asks the peer's QPN and
// Q_Key with SIDR, rdma_accept answers (device/README.md, "Connection manager").
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "device/qp_transport.hpp"
#include "device/rdmacm/api.hpp"
#include "device/rdmacm/cm_id.hpp"
#include "net/cma_header.hpp"

namespace rdmasim::rdmacm {

namespace {

std::span<const std::uint8_t> user_data(const void* p, std::size_t len) noexcept {
    return p == nullptr ? std::span<const std::uint8_t>{}
                        : std::span<const std::uint8_t>{static_cast<const std::uint8_t*>(p), len};
}

int answer(CmId& id, std::uint16_t status, std::uint32_t qpn,
           std::span<const std::uint8_t> data) noexcept {
    const int err = with_cm(*id.dev, [&](datapath::cm::Agent& cm) {
        const int e = cm.sidr_reply(id.comm_id, status, qpn, kUdpQkey, data);
        id.comm_id = 0;
        return e;
    });
    leave_backlog(id);
    return err != 0 ? fail(err) : 0;
}

} // namespace

int connect_ud(CmId& id, const rdma_conn_param* param) noexcept {
    const std::size_t user = param && param->private_data ? param->private_data_len : 0;
    if (user > net::kCmaSidrReqUserDataSize) return fail(EINVAL);
    try {
        const auto& a = id.id().route.addr;
        const net::CmaIpHeader h = net::CmaIpHeader::ipv4(
            reinterpret_cast<const std::uint8_t*>(&a.src_sin.sin_addr),
            reinterpret_cast<const std::uint8_t*>(&a.dst_sin.sin_addr), ntohs(a.src_sin.sin_port));
        std::vector<std::uint8_t> data(net::kCmaIpHeaderSize);
        h.store(data.data());
        if (user != 0) {
            const auto* p = static_cast<const std::uint8_t*>(param->private_data);
            data.insert(data.end(), p, p + user);
        }
        device::Device& dev = *id.dev;
        id.path = {.local_gid = net::ipv4_mapped_gid(dev.identity.ipv4.data()),
                   .traffic_class = id.tos};
        std::memcpy(id.path.remote_gid.data(), a.addr.ibaddr.dgid.raw, 16);
        const std::uint64_t service = net::cma_service_id(
            static_cast<net::RdmaPortSpace>(id.id().ps), ntohs(a.dst_sin.sin_port));
        const int err = with_cm(dev, [&](datapath::cm::Agent& cm) {
            const int e = cm.sidr_request(id, service, id.path, data, id.comm_id);
            if (e == 0) id.state = IdState::connect;
            return e;
        });
        if (err != 0) return fail(err);
    } catch (...) {
        return fail(ENOMEM);
    }
    return id.own_channel ? complete(id) : 0;
}

int accept_ud(CmId& id, const rdma_conn_param* param) noexcept {
    const std::size_t len = param && param->private_data ? param->private_data_len : 0;
    if (len > net::kCmSidrRepPrivateDataSize) return fail(EINVAL);
    const std::uint32_t qpn = id.id().qp ? id.id().qp->qp_num : (param ? param->qp_num : 0);
    if (qpn == 0) return fail(EINVAL);
    if (answer(id, static_cast<std::uint16_t>(net::SidrStatus::success), qpn,
               user_data(param ? param->private_data : nullptr, len)) != 0)
        return -1;
    id.state = IdState::connected;
    return 0;
}

int reject_ud(CmId& id, const void* private_data, std::uint8_t len) noexcept {
    if (len > net::kCmSidrRepPrivateDataSize) return fail(EINVAL);
    if (answer(id, static_cast<std::uint16_t>(net::SidrStatus::rejected), 0,
               user_data(private_data, len)) != 0)
        return -1;
    id.state = IdState::idle;
    return 0;
}

void on_sidr_reply(CmId& id, const datapath::cm::Event& e) noexcept {
    const bool ok = e.reason == static_cast<std::uint16_t>(net::SidrStatus::success);
    id.comm_id = 0;
    id.state = ok ? IdState::connected : IdState::error;
    EventRec* rec = new_event(id, ok ? RDMA_CM_EVENT_ESTABLISHED : RDMA_CM_EVENT_UNREACHABLE,
                              ok ? 0 : e.reason);
    if (rec == nullptr) return;
    const std::size_t len = std::min(e.private_data.size(), rec->data.size());
    std::memcpy(rec->data.data(), e.private_data.data(), len);
    rdma_ud_param& ud = rec->ev.param.ud;
    ud.private_data = rec->data.data();
    ud.private_data_len = static_cast<std::uint8_t>(len);
    ud.qp_num = e.peer.qpn;
    ud.qkey = e.qkey;
    ud.ah_attr.is_global = 1;
    std::memcpy(ud.ah_attr.grh.dgid.raw, id.path.remote_gid.data(), 16);
    ud.ah_attr.grh.sgid_index = 0;
    ud.ah_attr.grh.hop_limit = 64;
    ud.ah_attr.grh.traffic_class = id.tos;
    ud.ah_attr.port_num = 1;
    post_event(*id.channel, rec);
}

} // namespace rdmasim::rdmacm
