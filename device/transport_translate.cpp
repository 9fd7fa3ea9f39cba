#include "device/transport_translate.hpp"

#include <endian.h>

#include <cstring>

namespace rdmasim::device {

using datapath::SendOp;
using datapath::SendWr;
using datapath::TransportAttrs;
using datapath::TransportState;

std::optional<SendOp> send_op_from_ibv(ibv_wr_opcode opcode) noexcept {
    switch (opcode) {
    case IBV_WR_SEND:
        return SendOp::send;
    case IBV_WR_SEND_WITH_IMM:
        return SendOp::send_imm;
    case IBV_WR_SEND_WITH_INV:
        return SendOp::send_inv;
    case IBV_WR_RDMA_WRITE:
        return SendOp::write;
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return SendOp::write_imm;
    case IBV_WR_RDMA_READ:
        return SendOp::read;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return SendOp::cmp_swp;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return SendOp::fetch_add;
    case IBV_WR_ATOMIC_WRITE:
        return SendOp::atomic_write;
    default:
        return std::nullopt;
    }
}

std::optional<SendWr> send_wr_from_ibv(const ibv_send_wr& wr, bool sq_sig_all) noexcept {
    const auto op = send_op_from_ibv(wr.opcode);
    if (!op) return std::nullopt;
    SendWr w;
    w.wr_id = wr.wr_id;
    w.op = *op;
    w.signaled = sq_sig_all || (wr.send_flags & IBV_SEND_SIGNALED);
    w.solicited = (wr.send_flags & IBV_SEND_SOLICITED) != 0;
    w.fence = (wr.send_flags & IBV_SEND_FENCE) != 0;
    w.inline_data = (wr.send_flags & IBV_SEND_INLINE) != 0;
    if (*op == SendOp::send_imm || *op == SendOp::write_imm) w.imm = be32toh(wr.imm_data);
    switch (*op) {
    case SendOp::write:
    case SendOp::write_imm:
    case SendOp::read:
        w.remote_addr = wr.wr.rdma.remote_addr;
        w.rkey = wr.wr.rdma.rkey;
        break;
    case SendOp::cmp_swp:
    case SendOp::fetch_add:
    case SendOp::atomic_write: // its 8 bytes in compare_add (device/qp_ex.cpp)
        w.remote_addr = wr.wr.atomic.remote_addr;
        w.rkey = wr.wr.atomic.rkey;
        w.compare_add = wr.wr.atomic.compare_add;
        w.swap = wr.wr.atomic.swap;
        break;
    case SendOp::send_inv:
        w.rkey = wr.invalidate_rkey;
        break;
    case SendOp::local: // never from send_op_from_ibv
        break;
    case SendOp::send:
    case SendOp::send_imm:
        // UD's fields share the union with the others: read only for UD (the caller knows).
        w.remote_qpn = wr.wr.ud.remote_qpn;
        w.remote_qkey = wr.wr.ud.remote_qkey;
        break;
    }
    w.xrc_srqn = wr.qp_type.xrc.remote_srqn & 0xffffff; // read by XRC INI QPs only
    return w;
}

TransportState transport_state(ibv_qp_state state) noexcept {
    switch (state) {
    case IBV_QPS_RESET:
        return TransportState::reset;
    case IBV_QPS_INIT:
        return TransportState::init;
    case IBV_QPS_RTR:
        return TransportState::rtr;
    case IBV_QPS_RTS:
        return TransportState::rts;
    case IBV_QPS_SQD:
        return TransportState::sqd;
    default:
        return TransportState::error; // SQE, ERR
    }
}

void apply_qp_attr(TransportAttrs& t, const ibv_qp_attr& a) noexcept {
    t.dest_qpn = a.dest_qp_num & 0xffffff;
    t.sq_psn = a.sq_psn & net::kPsnMask;
    t.rq_psn = a.rq_psn & net::kPsnMask;
    if (const auto m = net::path_mtu_from_enum(a.path_mtu)) t.mtu = *m;
    t.timeout = a.timeout;
    t.retry_cnt = a.retry_cnt;
    t.rnr_retry = a.rnr_retry;
    t.min_rnr_timer = a.min_rnr_timer;
    t.max_rd_atomic = a.max_rd_atomic;
    t.max_dest_rd_atomic = a.max_dest_rd_atomic;
    t.qkey = a.qkey;
    t.access = a.qp_access_flags;
}

net::RocePath roce_path(const ibv_global_route& grh, const net::Gid& sgid,
                        const std::array<std::uint8_t, 6>& src_mac,
                        const std::array<std::uint8_t, 6>& dst_mac, std::uint32_t qpn,
                        std::uint32_t dest_qpn) noexcept {
    net::RocePath p;
    p.src_mac = src_mac;
    p.dst_mac = dst_mac;
    p.sgid = sgid;
    std::memcpy(p.dgid.data(), grh.dgid.raw, 16);
    p.traffic_class = grh.traffic_class;
    p.hop_limit = grh.hop_limit;
    p.flow_label = grh.flow_label & 0xfffff;
    p.udp_src_port = net::roce_udp_src_port(
        p.flow_label != 0 ? p.flow_label : net::roce_flow_label(qpn, dest_qpn));
    return p;
}

} // namespace rdmasim::device
