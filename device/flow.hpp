// Flow steering rules (device/README.md, "Flow steering").
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

ibv_flow* create_flow(ibv_qp* qp, ibv_flow_attr* attr) noexcept;
int destroy_flow(ibv_flow* flow) noexcept;

} // namespace rdmasim::device
