// On-demand paging (device/README.md, "On-demand paging"): the odp_caps of
// ibv_query_device_ex, implicit ODP registration, ibv_advise_mr.
#pragma once

#include <cstddef>
#include <cstdint>

#include "device/objects.hpp"

namespace rdmasim::device {

// general_caps, per-transport and XRC caps, as mlx5_ib_internal_fill_odp_caps
// reports them for a ConnectX-5.
void fill_odp_caps(ibv_device_attr_ex& attr) noexcept;

// ibv_reg_mr(pd, NULL, SIZE_MAX, IBV_ACCESS_ON_DEMAND | ...): the whole
// address space (mlx5's create_user_odp_mr test: start 0, length U64_MAX).
[[nodiscard]] inline bool is_implicit_odp(const void* addr, std::size_t length,
                                          unsigned access) noexcept {
    return addr == nullptr && length == SIZE_MAX && (access & IBV_ACCESS_ON_DEMAND);
}

// The verbs_context advise_mr op (ibv_advise_mr(3)); errnos as mlx5 and the
// kernel's ib_uverbs give them.
int advise_mr(ibv_pd* pd, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg_list,
              uint32_t num_sge) noexcept;

} // namespace rdmasim::device
