// The QP verbs: the checks every QP shares, then its role's verbs
// (device/qp_roles.hpp: plain raw-packet QPs in qp_raw.cpp, RSS QPs in
// qp_rss.cpp, RC, UC, UD and XRC QPs in qp_ib*.cpp). Other QP types answer
// EOPNOTSUPP.
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) noexcept;
ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr) noexcept;
int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) noexcept;
int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) noexcept;
int destroy_qp(ibv_qp* qp) noexcept; // EBUSY while flows point at it
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) noexcept;
// The frame leaves on the port (EngineHooks::on_transmit) and loops back to
// matching flows of the same port, other than the sender's own.
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr) noexcept;

} // namespace rdmasim::device
