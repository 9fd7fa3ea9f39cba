// Address handles (device/README.md, "Address handles"): a RoCE v2
// destination for UD sends, and building one from a received UD completion.
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr) noexcept;
int destroy_ah(ibv_ah* ah) noexcept;
// ibv_init_ah_from_wc(3): 0, or -1 with errno.
int init_ah_from_wc(ibv_context* context, uint8_t port_num, const ibv_wc* wc, const ibv_grh* grh,
                    ibv_ah_attr* ah_attr) noexcept;
ibv_ah* create_ah_from_wc(ibv_pd* pd, const ibv_wc* wc, const ibv_grh* grh, uint8_t port_num) noexcept;

} // namespace rdmasim::device
