// Memory windows (device/README.md, "Memory windows"): ibv_alloc_mw,
// ibv_dealloc_mw, ibv_bind_mw, and what a send queue does with
// IBV_WR_BIND_MW and IBV_WR_LOCAL_INV, and a receive queue with a SEND with
// invalidate. A window's keys are MR keys (the device's MrTable): rkey =
// (slot + 1) << 8 | key byte, the key byte chosen by each bind.
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

// The ops-table slots.
ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) noexcept;
int dealloc_mw(ibv_mw* mw) noexcept;
// A type 1 bind posted on `qp` (mlx5_bind_mw): mw->rkey becomes the new
// rkey once the WR is posted; 0 or a positive errno (nothing posted).
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mw_bind) noexcept;

// What ibv_post_send refuses in a BIND_MW WR (0 or EINVAL / EOPNOTSUPP):
// no window, a window of another context, unknown access bits, a range over 2 GiB.
[[nodiscard]] int check_bind_wr(const Qp& qp, const ibv_send_wr& wr) noexcept;

// Carries out a BIND_MW or LOCAL_INV WR posted to `qp` (port lock held) and
// returns its completion status: IBV_WC_SUCCESS, or IBV_WC_MW_BIND_ERR with
// nothing changed (the transport then fails the WR and moves the QP to ERR).
[[nodiscard]] std::uint8_t execute_window_wr(Qp& qp, const ibv_send_wr& wr) noexcept;

// Invalidates the type 2 window `rkey` names if it is bound to `qp` (a LOCAL_INV,
// a received SEND with invalidate); false when it is not (port lock held).
bool invalidate_window(Qp& qp, std::uint32_t rkey) noexcept;

} // namespace rdmasim::device
