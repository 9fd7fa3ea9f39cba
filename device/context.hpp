// Contexts: open / close, device and port queries, GIDs, P_Keys.
#pragma once

#include "device/objects.hpp"

namespace rdmasim::device {

ibv_context* open_device(ibv_device* device) noexcept;
int close_device(ibv_context* context) noexcept; // -1, errno EBUSY while objects live

int query_device(ibv_context* context, ibv_device_attr* attr) noexcept;
int query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size) noexcept;
int query_port(ibv_context* context, uint8_t port_num, ibv_port_attr* attr,
               size_t attr_len) noexcept;
// query_gid / query_pkey: 0, or -1 with errno (as rdma-core).
int query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) noexcept;
int query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) noexcept;
// GID 0 as RoCE v2 derives it from the port MAC (modified EUI-64 link-local).
[[nodiscard]] ibv_gid port_gid(const Device& dev) noexcept;

} // namespace rdmasim::device
