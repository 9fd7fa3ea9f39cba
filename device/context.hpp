// Contexts: open / close, device and port queries, GIDs, P_Keys.
#pragma once

#include <optional>

#include "device/objects.hpp"

namespace rdmasim::device {

ibv_context* open_device(ibv_device* device) noexcept;
// A new context of `dev` on `file` (taking over the caller's reference on it)
// whose cmd_fd is `cmd_fd`: open_device's, and ibv_import_device's. NULL
// with errno on failure (the reference and the fd stay the caller's).
ibv_context* make_context(Device& dev, ContextFile* file, int cmd_fd) noexcept;
// Succeeds with objects alive (as mlx5); the context is freed with the last.
int close_device(ibv_context* context) noexcept;
// An object of `ctx` was destroyed (the pair of ctx.live_objects.fetch_add):
// frees a closed context with its last object.
void object_destroyed(Context& ctx) noexcept;

int query_device(ibv_context* context, ibv_device_attr* attr) noexcept;
int query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size) noexcept;
int query_port(ibv_context* context, uint8_t port_num, ibv_port_attr* attr,
               size_t attr_len) noexcept;
// query_gid / query_pkey: 0, or -1 with errno (as rdma-core).
int query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) noexcept;
int query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) noexcept;
// The port's GID table (device/README.md, "Device and port"): gid_tbl_len
// entries, a ConnectX's RoCE table size, of which the first kGidsValid hold
// GIDs: index 0 the IPv4-mapped RoCE v2 GID, 1 the IPv6 one (both RoCE v2, no
// netdev). The others are empty, as on a port with one address of each kind.
inline constexpr int kGidTableLen = 256;
inline constexpr int kGidsValid = 2;
// GID `index` of port 1; nullopt for an empty entry or one outside the table.
[[nodiscard]] std::optional<ibv_gid> port_gid(const Device& dev, int index) noexcept;

} // namespace rdmasim::device
