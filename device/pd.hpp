// Protection domains and memory regions.
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

ibv_pd* alloc_pd(ibv_context* context) noexcept;
// EBUSY while MRs, MWs, AHs, WQs, QPs, SRQs or parent domains use it, or (a
// parent domain) CQs created with it.
int dealloc_pd(ibv_pd* pd) noexcept;
// ibv_alloc_parent_domain(3): a PD standing for attr->pd wherever a PD is
// taken (device/README.md, "Protection domains and memory regions").
ibv_pd* alloc_parent_domain(ibv_context* context, ibv_parent_domain_init_attr* attr) noexcept;

// iova is the address SGEs will use for `addr`.
ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) noexcept;
int dereg_mr(ibv_mr* mr) noexcept;
// ibv_rereg_mr(3): translation, PD and access change in place, the keys
// stay; 0 or IBV_REREG_MR_ERR_INPUT with errno (the MR unchanged).
int rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) noexcept;

} // namespace rdmasim::device
