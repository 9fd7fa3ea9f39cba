// The ops table, one assignment a slot: each slot the device model implements,
// bound to the verb that implements it (context.cpp, cq.cpp, dm.cpp, mw.cpp, odp.cpp, qp.cpp, srq.cpp,
// tm_srq.cpp, wq.cpp, flow.cpp, xrcd.cpp). open_device() installs it into every new context.
#include "device/abi/ops.hpp"

#include "device/context.hpp"
#include "device/cq.hpp"
#include "device/dm.hpp"
#include "device/flow.hpp"
#include "device/mw.hpp"
#include "device/odp.hpp"
#include "device/pd.hpp"
#include "device/qp.hpp"
#include "device/srq.hpp"
#include "device/tm_srq.hpp"
#include "device/wq.hpp"
#include "device/xrcd.hpp"

namespace rdmasim::device {

namespace {

int query_port_op(ibv_context* context, uint8_t port_num, ibv_port_attr* attr, size_t len) {
    return query_port(context, port_num, attr, len);
}

} // namespace

void install_ops(verbs_context& v) noexcept {
    ibv_context_ops& ops = v.context.ops;
    ops.poll_cq = poll_cq;
    ops.req_notify_cq = req_notify_cq;
    ops.post_send = post_send;
    ops.post_recv = post_recv;
    ops.post_srq_recv = post_srq_recv;
    ops.alloc_mw = alloc_mw;
    ops.dealloc_mw = dealloc_mw;
    ops.bind_mw = bind_mw;
    v.query_port = query_port_op;
    v.query_device_ex = query_device_ex;
    v.create_cq_ex = create_cq_ex;
    v.create_wq = create_wq;
    v.modify_wq = modify_wq;
    v.destroy_wq = destroy_wq;
    v.create_rwq_ind_table = create_rwq_ind_table;
    v.destroy_rwq_ind_table = destroy_rwq_ind_table;
    v.create_qp_ex = create_qp_ex;
    v.alloc_parent_domain = alloc_parent_domain;
    v.advise_mr = advise_mr;
    v.alloc_dm = alloc_dm;
    v.free_dm = free_dm;
    v.reg_dm_mr = reg_dm_mr;
    v.create_srq_ex = create_srq_ex;
    v.get_srq_num = get_srq_num;
    v.post_srq_ops = post_srq_ops;
    v.open_xrcd = open_xrcd;
    v.close_xrcd = close_xrcd;
    v.ibv_create_flow = create_flow;
    v.ibv_destroy_flow = destroy_flow;
}

} // namespace rdmasim::device
