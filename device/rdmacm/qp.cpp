// QPs on rdma_cm ids (device/README.md, "Connection manager"): created
// with public verbs and moved as librdmacm moves them, with the attributes
// the kernel's rdma_cm and ib_cm compute (rdma_init_qp_attr).
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "device/rdmacm/api.hpp"
#include "device/rdmacm/cm_id.hpp"

namespace rdmasim::rdmacm {

namespace {

bool connected_type(const CmId& id) noexcept {
    return id.box.id.qp_type == IBV_QPT_RC || id.box.id.qp_type == IBV_QPT_UC;
}

void rtr_attr(CmId& id, ibv_qp_attr& a, int& mask) noexcept {
    a.path_mtu = static_cast<ibv_mtu>(std::min<int>(
        id.path_rec.mtu ? int{id.path_rec.mtu} : int{IBV_MTU_1024}, static_cast<int>(id.peer.mtu)));
    a.dest_qp_num = id.peer.qpn;
    a.rq_psn = id.peer.starting_psn;
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, id.path.remote_gid.data(), 16);
    a.ah_attr.grh.sgid_index = 0; // the IPv4 RoCE v2 GID
    a.ah_attr.grh.hop_limit = id.path.hop_limit;
    a.ah_attr.grh.traffic_class = id.path.traffic_class;
    a.ah_attr.grh.flow_label = id.path.flow_label;
    a.ah_attr.port_num = 1;
    mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (id.box.id.qp_type == IBV_QPT_RC) {
        a.max_dest_rd_atomic = id.responder_resources;
        a.min_rnr_timer = 0; // ib_cm's value: 655.36 ms
        mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    }
}

void rts_attr(CmId& id, ibv_qp_attr& a, int& mask) noexcept {
    a.sq_psn = id.own_psn;
    mask |= IBV_QP_SQ_PSN;
    if (id.box.id.qp_type == IBV_QPT_RC) {
        a.timeout = id.ack_timeout;
        a.retry_cnt = id.retry_count;
        a.rnr_retry = id.rnr_retry_count;
        a.max_rd_atomic = id.initiator_depth;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
}

int modify(CmId& id, ibv_qp_state state, int resp_res = RDMA_MAX_RESP_RES,
           int init_depth = RDMA_MAX_INIT_DEPTH) noexcept {
    ibv_qp_attr a{};
    a.qp_state = state;
    int mask = 0;
    if (init_qp_attr(id, a, mask) != 0) return errno;
    if (state == IBV_QPS_RTR && resp_res != RDMA_MAX_RESP_RES)
        a.max_dest_rd_atomic = static_cast<std::uint8_t>(resp_res);
    if (state == IBV_QPS_RTS && init_depth != RDMA_MAX_INIT_DEPTH)
        a.max_rd_atomic = static_cast<std::uint8_t>(init_depth);
    return ibv_modify_qp(id.box.id.qp, &a, mask);
}

} // namespace

int init_qp_attr(CmId& id, ibv_qp_attr& a, int& mask) noexcept {
    a.pkey_index = 0;
    a.port_num = 1;
    mask = IBV_QP_STATE;
    switch (a.qp_state) {
    case IBV_QPS_INIT:
        mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
        if (!connected_type(id)) {
            a.qkey = kUdpQkey;
            mask |= IBV_QP_QKEY;
        } else {
            // Before a REQ or REP: no remote access yet (rdma_cm); after: ib_cm's.
            a.qp_access_flags = 0;
            if (id.comm_id != 0) {
                a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
                if (id.responder_resources != 0)
                    a.qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
            }
            mask |= IBV_QP_ACCESS_FLAGS;
        }
        return 0;
    case IBV_QPS_RTR:
        if (!connected_type(id)) return 0;
        if (id.comm_id == 0) return fail(EINVAL);
        rtr_attr(id, a, mask);
        return 0;
    case IBV_QPS_RTS:
        if (!connected_type(id)) {
            a.sq_psn = id.own_psn;
            mask |= IBV_QP_SQ_PSN;
            return 0;
        }
        if (id.comm_id == 0) return fail(EINVAL);
        rts_attr(id, a, mask);
        return 0;
    default:
        return fail(EINVAL);
    }
}

int init_qp_attr(rdma_cm_id* id, ibv_qp_attr* attr, int* mask) noexcept {
    if (id == nullptr || attr == nullptr || mask == nullptr) return fail(EINVAL);
    CmId& cm = *from_cm(id);
    if (cm.dev == nullptr) return fail(EINVAL);
    std::lock_guard lock(cm.dev->port.mutex());
    return init_qp_attr(cm, *attr, *mask);
}

int move_qp_rtr_rts(CmId& id, int resp_res, int init_depth) noexcept {
    ibv_qp_attr cur{};
    ibv_qp_init_attr init{};
    if (ibv_query_qp(id.box.id.qp, &cur, IBV_QP_STATE, &init) != 0) return errno ? errno : EINVAL;
    if (cur.qp_state == IBV_QPS_INIT) // the access flags follow the responder resources
        if (const int err = modify(id, IBV_QPS_INIT); err != 0) return err;
    if (const int err = modify(id, IBV_QPS_RTR, resp_res); err != 0) return err;
    return modify(id, IBV_QPS_RTS, RDMA_MAX_RESP_RES, init_depth);
}

void move_qp_err(CmId& id) noexcept {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_ERR;
    (void)ibv_modify_qp(id.box.id.qp, &a, IBV_QP_STATE);
}

namespace {

// The QP's first moves: INIT for RC and UC (RTR and RTS come with the
// connection); INIT, RTR, RTS at once for UD.
int first_moves(CmId& id) noexcept {
    if (const int err = modify(id, IBV_QPS_INIT); err != 0) return err;
    if (connected_type(id)) return 0;
    if (const int err = modify(id, IBV_QPS_RTR); err != 0) return err;
    return modify(id, IBV_QPS_RTS);
}

// librdmacm's ucma_create_cqs: an id whose QP names no CQ gets one for
// each direction, each with a completion channel (rdma_verbs.h's
// rdma_get_send_comp / rdma_get_recv_comp wait on them).
int make_cqs(rdma_cm_id& id, const ibv_qp_init_attr_ex& attr) noexcept {
    auto make = [&](ibv_comp_channel*& channel, ibv_cq*& cq, std::uint32_t entries) {
        if (cq != nullptr) return 0;
        channel = ibv_create_comp_channel(id.verbs);
        if (channel == nullptr) return errno;
        cq = ibv_create_cq(id.verbs, static_cast<int>(std::max<std::uint32_t>(entries, 1)), &id,
                           channel, 0);
        if (cq != nullptr) return 0;
        const int err = errno;
        (void)ibv_destroy_comp_channel(channel);
        channel = nullptr;
        return err;
    };
    if (attr.send_cq == nullptr)
        if (const int err = make(id.send_cq_channel, id.send_cq, attr.cap.max_send_wr); err != 0) return err;
    if (attr.recv_cq == nullptr && attr.srq == nullptr)
        if (const int err = make(id.recv_cq_channel, id.recv_cq, attr.cap.max_recv_wr); err != 0) return err;
    return 0;
}

void drop_cqs(rdma_cm_id& id) noexcept {
    auto drop = [](ibv_comp_channel*& channel, ibv_cq*& cq) {
        if (channel == nullptr) return; // the program's own CQ: not ours to destroy
        (void)ibv_destroy_cq(cq);
        (void)ibv_destroy_comp_channel(channel);
        cq = nullptr;
        channel = nullptr;
    };
    drop(id.send_cq_channel, id.send_cq);
    drop(id.recv_cq_channel, id.recv_cq);
}

} // namespace

int create_qp_ex(rdma_cm_id* cm_id, ibv_qp_init_attr_ex* attr) noexcept {
    if (cm_id == nullptr || attr == nullptr) return fail(EINVAL);
    CmId& id = *from_cm(cm_id);
    if (cm_id->verbs == nullptr || cm_id->qp != nullptr) return fail(EINVAL);
    if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == nullptr) {
        attr->pd = cm_id->pd;
        attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
    }
    if (attr->pd == nullptr || attr->pd->context != cm_id->verbs) return fail(EINVAL);
    if (id.dev != nullptr)
        if (const int err = injected(*id.dev, device::Verb::rdma_create_qp)) return fail(err);
    if (attr->qp_type != cm_id->qp_type &&
        !(cm_id->qp_type == IBV_QPT_RC && attr->qp_type == IBV_QPT_UC))
        return fail(EINVAL);
    if (attr->srq == nullptr) attr->srq = cm_id->srq;
    if (const int err = make_cqs(*cm_id, *attr); err != 0) {
        drop_cqs(*cm_id);
        return fail(err);
    }
    if (attr->send_cq == nullptr) attr->send_cq = cm_id->send_cq;
    if (attr->recv_cq == nullptr) attr->recv_cq = attr->srq ? cm_id->send_cq : cm_id->recv_cq;
    ibv_qp* qp = ibv_create_qp_ex(cm_id->verbs, attr);
    if (qp == nullptr) {
        const int err = errno;
        drop_cqs(*cm_id);
        return fail(err);
    }
    cm_id->qp = qp;
    cm_id->qp_type = attr->qp_type;
    if (const int err = first_moves(id); err != 0) {
        (void)ibv_destroy_qp(qp);
        cm_id->qp = nullptr;
        drop_cqs(*cm_id);
        return fail(err);
    }
    return 0;
}

int create_qp(rdma_cm_id* cm_id, ibv_pd* pd, ibv_qp_init_attr* attr) noexcept {
    if (cm_id == nullptr || attr == nullptr) return fail(EINVAL);
    ibv_qp_init_attr_ex ex{};
    std::memcpy(&ex, attr, sizeof *attr);
    ex.comp_mask = IBV_QP_INIT_ATTR_PD;
    ex.pd = pd != nullptr ? pd : cm_id->pd;
    if (create_qp_ex(cm_id, &ex) != 0) return -1;
    attr->cap = ex.cap; // what the QP got, as ibv_create_qp reports it
    attr->send_cq = ex.send_cq;
    attr->recv_cq = ex.recv_cq;
    return 0;
}

void destroy_qp(rdma_cm_id* cm_id) noexcept {
    if (cm_id == nullptr || cm_id->qp == nullptr) return;
    (void)ibv_destroy_qp(cm_id->qp);
    cm_id->qp = nullptr;
    drop_cqs(*cm_id);
}

} // namespace rdmasim::rdmacm
