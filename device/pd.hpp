// Protection domains and memory regions.
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

ibv_pd* alloc_pd(ibv_context* context) noexcept;
int dealloc_pd(ibv_pd* pd) noexcept; // EBUSY while MRs, WQs or QPs use it

// iova is the address SGEs will use for `addr`.
ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) noexcept;
int dereg_mr(ibv_mr* mr) noexcept;

} // namespace rdmasim::device
