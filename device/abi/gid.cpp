// GID and P_Key queries beyond ibv_query_gid/ibv_query_pkey (context.cpp):
// each port's GID table has two GIDs (index 0 IPv4-mapped, 1 IPv6; both RoCE
// v2, no netdev) and empty entries up to gid_tbl_len; one P_Key, 0xffff
// (device/README.md, "Device and port").
#include <endian.h>

#include <cerrno>
#include <cstring>

#include "device/abi/declarations.hpp"
#include "device/context.hpp"

using namespace rdmasim::device;

namespace {

constexpr unsigned kEntries = kGidTableLen;
constexpr unsigned kValid = kGidsValid;

int valid_gid_query(ibv_context* context, uint32_t port_num, uint32_t flags) noexcept {
    if (context == nullptr || flags != 0) return EINVAL;
    if (port_num != 1) return EINVAL;
    return 0;
}

// Entry `index` (inside the table).
ibv_gid_entry gid_entry(ibv_context* context, int index) noexcept {
    ibv_gid_entry e;
    std::memset(&e, 0, sizeof e);
    e.gid = *port_gid(*from_verbs(context)->device, index);
    e.gid_index = static_cast<uint32_t>(index);
    e.port_num = 1;
    e.gid_type = IBV_GID_TYPE_ROCE_V2;
    e.ndev_ifindex = 0;
    return e;
}

// Writes one entry of the caller's size (at least the 1.11 layout; any tail zeroed).
void store_gid_entry(const ibv_gid_entry& e, void* out, size_t entry_size) noexcept {
    std::memcpy(out, &e, sizeof e);
    if (entry_size > sizeof e)
        std::memset(static_cast<char*>(out) + sizeof e, 0, entry_size - sizeof e);
}

} // namespace

extern "C" {

int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index,
                       enum ibv_gid_type_sysfs* type) {
    if (context == nullptr || type == nullptr || port_num != 1 || index >= kEntries) {
        errno = EINVAL;
        return -1;
    }
    // An empty entry: IB/RoCE v1, as rdma-core answers for one.
    *type = index < kValid ? IBV_GID_TYPE_SYSFS_ROCE_V2 : IBV_GID_TYPE_SYSFS_IB_ROCE_V1;
    return 0;
}

int _ibv_query_gid_ex(struct ibv_context* context, uint32_t port_num, uint32_t gid_index,
                      struct ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
    if (int err = valid_gid_query(context, port_num, flags)) return err;
    if (entry == nullptr || entry_size < sizeof(ibv_gid_entry) || gid_index >= kEntries) return EINVAL;
    if (gid_index >= kValid) return ENODATA; // an empty entry
    store_gid_entry(gid_entry(context, static_cast<int>(gid_index)), entry, entry_size);
    return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context* context, struct ibv_gid_entry* entries,
                             size_t max_entries, uint32_t flags, size_t entry_size) {
    if (int err = valid_gid_query(context, 1, flags)) return -err;
    if (entries == nullptr || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
    // Every valid entry or none: a table that does not fit is -EINVAL.
    if (max_entries < kValid) return -EINVAL;
    for (unsigned i = 0; i < kValid; ++i)
        store_gid_entry(gid_entry(context, static_cast<int>(i)), reinterpret_cast<char*>(entries) + i * entry_size,
                        entry_size);
    return kGidsValid;
}

int ibv_get_pkey_index(struct ibv_context* context, uint8_t port_num, __be16 pkey) {
    if (context == nullptr || port_num != 1) {
        errno = EINVAL;
        return -1;
    }
    if (pkey == htobe16(0xffff)) return 0;
    errno = ENOENT;
    return -1;
}

} // extern "C"
