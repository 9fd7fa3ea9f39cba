// Extended RC, UC and UD QPs (device/README.md, "Extended QPs"): a QP
// created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS is also an ibv_qp_ex whose
// ibv_wr_* operations build work requests between ibv_wr_start and
// ibv_wr_complete; ibv_wr_complete posts them all, or none (as mlx5 rolls
// its send queue back), through ibv_post_send's checks and path.
#pragma once

#include <cstdint>
#include <vector>

#include "device/qp_roles.hpp"

namespace rdmasim::device {

// The WRs of one wr_start .. wr_complete, in storage allocated at creation
// (max_send_wr WRs, their SGEs and inline bytes). Used by the thread that
// called wr_start, as the verbs require.
struct WrBuilder {
    std::vector<ibv_send_wr> wrs;       // size = the WRs built so far; capacity fixed
    std::vector<ibv_sge> sges;          // max_send_sge per WR
    std::vector<std::uint8_t> inline_bytes; // max_inline per WR
    std::uint32_t max_sge = 1;
    std::uint32_t max_inline = 0;
    int err = 0;        // the first error since wr_start: wr_complete returns it
    bool open = false;  // between wr_start and wr_complete / wr_abort
};

// For create_ib_qp: 0, EOPNOTSUPP (an operation the QP type or rdmasim does
// not carry) or EINVAL (no operation at all); on 0 `qp` is extended.
int make_extended(IbQp& qp, std::uint64_t send_ops_flags) noexcept;

// ibv_qp_to_qp_ex: the QP's ibv_qp_ex, or nullptr when it was not created
// extended.
ibv_qp_ex* qp_to_qp_ex(ibv_qp* qp) noexcept;

} // namespace rdmasim::device
