// Private libibverbs names (rdma-core's driver.h, not installed by
// libibverbs-dev), declared as ibv_devinfo and providers see them; the
// drop-in library exports them.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>

extern "C" {
enum ibv_gid_type_sysfs {
    IBV_GID_TYPE_SYSFS_IB_ROCE_V1,
    IBV_GID_TYPE_SYSFS_ROCE_V2,
};
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index,
                       enum ibv_gid_type_sysfs* type);
}
