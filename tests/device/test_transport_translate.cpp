// From verbs structures to the transport's (device/transport_translate.hpp).
#include <catch2/catch.hpp>

#include <endian.h>
#include <infiniband/verbs.h>

#include <cstring>

#include "device/transport_translate.hpp"

using namespace rdmasim;
using datapath::SendOp;
using datapath::TransportState;

TEST_CASE("roce verbs: send WRs: opcodes, flags, immediate in host order, RDMA and atomic fields",
          "[device][roce]") {
    CHECK(device::send_op_from_ibv(IBV_WR_SEND) == SendOp::send);
    CHECK(device::send_op_from_ibv(IBV_WR_RDMA_WRITE_WITH_IMM) == SendOp::write_imm);
    CHECK(device::send_op_from_ibv(IBV_WR_ATOMIC_FETCH_AND_ADD) == SendOp::fetch_add);
    CHECK_FALSE(device::send_op_from_ibv(IBV_WR_LOCAL_INV).has_value());
    CHECK_FALSE(device::send_op_from_ibv(IBV_WR_BIND_MW).has_value());
    CHECK(device::send_op_from_ibv(IBV_WR_SEND_WITH_INV) == SendOp::send_inv);

    ibv_send_wr wr{};
    wr.wr_id = 42;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SOLICITED | IBV_SEND_INLINE;
    wr.imm_data = htobe32(0x11223344);
    wr.wr.rdma.remote_addr = 0x1000;
    wr.wr.rdma.rkey = 0x77;
    auto w = device::send_wr_from_ibv(wr, false);
    REQUIRE(w);
    CHECK(w->wr_id == 42);
    CHECK(w->op == SendOp::write_imm);
    CHECK_FALSE(w->signaled);
    CHECK(w->solicited);
    CHECK(w->inline_data);
    CHECK_FALSE(w->fence);
    CHECK(w->imm == 0x11223344);
    CHECK(w->remote_addr == 0x1000);
    CHECK(w->rkey == 0x77);
    CHECK(device::send_wr_from_ibv(wr, true)->signaled); // sq_sig_all

    wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
    wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
    wr.wr.atomic.remote_addr = 0x2000;
    wr.wr.atomic.rkey = 5;
    wr.wr.atomic.compare_add = 9;
    wr.wr.atomic.swap = 10;
    w = device::send_wr_from_ibv(wr, false);
    REQUIRE(w);
    CHECK(w->signaled);
    CHECK(w->fence);
    CHECK(w->imm == 0);
    CHECK(w->remote_addr == 0x2000);
    CHECK(w->compare_add == 9);
    CHECK(w->swap == 10);
    wr.opcode = IBV_WR_BIND_MW;
    CHECK_FALSE(device::send_wr_from_ibv(wr, false).has_value());
}

TEST_CASE("roce verbs: a QP's stored attributes, states, the path of a GRH",
          "[device][roce]") {
    datapath::TransportAttrs t;
    ibv_qp_attr a{};
    a.dest_qp_num = 0x123456;
    a.rq_psn = 0x1abcdef; // 24 bits kept
    a.path_mtu = IBV_MTU_4096;
    a.min_rnr_timer = 12;
    a.max_dest_rd_atomic = 16;
    a.sq_psn = 7;
    a.timeout = 14;
    device::apply_qp_attr(t, a);
    CHECK(t.dest_qpn == 0x123456);
    CHECK(t.rq_psn == 0xabcdef);
    CHECK(t.mtu == net::PathMtu::mtu4096);
    CHECK(t.min_rnr_timer == 12);
    CHECK(t.max_dest_rd_atomic == 16);
    CHECK(t.sq_psn == 7);   // the whole stored attribute set
    CHECK(t.timeout == 14);
    CHECK(device::transport_state(IBV_QPS_RTR) == TransportState::rtr);
    CHECK(device::transport_state(IBV_QPS_SQE) == TransportState::error);
    CHECK(device::transport_state(IBV_QPS_ERR) == TransportState::error);

    ibv_global_route grh{};
    const std::uint8_t ip[4] = {192, 0, 2, 2};
    const net::Gid d = net::ipv4_mapped_gid(ip);
    std::memcpy(grh.dgid.raw, d.data(), 16);
    grh.traffic_class = 0x68;
    grh.hop_limit = 7;
    const net::Gid s{};
    auto p = device::roce_path(grh, s, {2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}, 0x11, 0x22);
    CHECK(p.dgid == d);
    CHECK(p.traffic_class == 0x68);
    CHECK(p.hop_limit == 7);
    CHECK(p.dst_mac[5] == 2);
    CHECK(p.udp_src_port == net::roce_udp_src_port(net::roce_flow_label(0x11, 0x22)));
    grh.flow_label = 0xabcde;
    p = device::roce_path(grh, s, {}, {}, 0x11, 0x22);
    CHECK(p.flow_label == 0xabcde);
    CHECK(p.udp_src_port == net::roce_udp_src_port(0xabcde));
    CHECK(p.udp_src_port >= 0xc000);
}
