// ibv_attach_mcast and ibv_detach_mcast (device/README.md, "Multicast"): a
// UD QP joins or leaves a multicast group of its port; datagrams to the
// group reach it (datapath/README.md, "Multicast").
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

// 0 or a positive errno. `lid` is ignored, as on every RoCE port.
int attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) noexcept;
int detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) noexcept;

} // namespace rdmasim::device
