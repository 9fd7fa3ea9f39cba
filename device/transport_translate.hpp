// From verbs structures to the RoCE transport's (datapath/README.md, "RoCE
// transport"; device/README.md, "The transport"): a send WR, modify_qp's
// attributes and states, the path of an address vector. The device layer
// owns the objects; these only translate, so that datapath/ knows no verbs
// structure of the transport's.
#pragma once

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <optional>

#include "datapath/roce/qp.hpp"

namespace rdmasim::device {

// The operation of an ibv_send_wr opcode; nullopt for those the transport
// does not carry as such (LOCAL_INV and BIND_MW are the device's to carry
// out: it posts them as datapath::SendOp::local; TSO, ...).
[[nodiscard]] std::optional<datapath::SendOp> send_op_from_ibv(ibv_wr_opcode opcode) noexcept;

// The WR's fields (flags, immediate in host order, RDMA / atomic / UD
// fields, the XRC SRQ number; ATOMIC_WRITE's remote address, rkey and 8
// bytes as wr.atomic's remote_addr, rkey and compare_add) with `signaled` from IBV_SEND_SIGNALED or the QP's sq_sig_all.
// UD's ud_path stays empty: the AH's path is the caller's to fill in.
// nullopt when the opcode is not carried (send_op_from_ibv).
[[nodiscard]] std::optional<datapath::SendWr> send_wr_from_ibv(const ibv_send_wr& wr,
                                                     bool sq_sig_all) noexcept;

// The transport state of an ibv_qp_state (SQE, which only UC and UD have,
// is the transport's ERROR).
[[nodiscard]] datapath::TransportState transport_state(ibv_qp_state state) noexcept;

// Copies the QP's stored attributes, all of them, into `t` (DEST_QPN,
// SQ_PSN, RQ_PSN, PATH_MTU when valid, TIMEOUT, RETRY_CNT, RNR_RETRY,
// MIN_RNR_TIMER, MAX_QP_RD_ATOMIC, MAX_DEST_RD_ATOMIC, QKEY, ACCESS_FLAGS):
// ibv_modify_qp stored only what its transition allowed, and RESET clears
// them. IBV_QP_AV's path needs the GID table and the neighbour cache, so it
// is roce_path's. Values were validated by the device.
void apply_qp_attr(datapath::TransportAttrs& t, const ibv_qp_attr& attr) noexcept;

// The frame addressing of an address vector's GRH: destination GID,
// traffic class, hop limit, flow label; the UDP source port from the flow
// label, or, when it is 0, from the label Linux computes from the two QPNs
// (net::roce_flow_label). The source GID and both MACs are the caller's.
[[nodiscard]] net::RocePath roce_path(const ibv_global_route& grh, const net::Gid& sgid,
                                      const std::array<std::uint8_t, 6>& src_mac,
                                      const std::array<std::uint8_t, 6>& dst_mac, std::uint32_t qpn,
                                      std::uint32_t dest_qpn) noexcept;

} // namespace rdmasim::device
