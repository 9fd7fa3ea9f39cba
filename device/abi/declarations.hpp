// What the files of device/abi/ share: the part of rdma-core's private
// provider interface (libibverbs/driver.h, kern-abi.h, cmd_ioctl.h) that
// libibverbs-dev does not install, and the errno of what is not emulated.
#pragma once

#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include <cerrno>

// The stubs only pass pointers to these types, so they stay incomplete.
extern "C" {
struct verbs_device_ops;
struct verbs_context_ops;
struct verbs_sysfs_dev;
struct verbs_mr;
struct verbs_cq;
struct verbs_qp;
struct verbs_srq;
struct verbs_xrcd;
struct verbs_dm;
struct verbs_counters;
struct verbs_flow_action;
struct ibv_command_buffer;
struct ibv_flow_action_esp_attr;
struct ibv_get_context;
struct ibv_query_port;
struct ibv_alloc_pd;
struct ibv_open_xrcd;
struct ibv_reg_mr;
struct ibv_rereg_mr;
struct ibv_alloc_mw;
struct ibv_create_cq;
struct ibv_create_cq_ex;
struct ibv_resize_cq;
struct ibv_modify_cq;
struct ibv_create_srq;
struct ibv_create_xsrq;
struct ibv_modify_srq;
struct ibv_query_srq;
struct ibv_create_qp;
struct ibv_create_qp_ex;
struct ibv_open_qp;
struct ibv_query_qp;
struct ibv_modify_qp;
struct ibv_modify_qp_ex;
struct ibv_create_wq;
struct ibv_modify_wq;

// driver.h's enum ibv_gid_type_sysfs: what ibv_query_gid_type reports. It
// is not verbs.h's enum ibv_gid_type (where RoCE v2 is 2).
enum ibv_gid_type_sysfs {
    IBV_GID_TYPE_SYSFS_IB_ROCE_V1,
    IBV_GID_TYPE_SYSFS_ROCE_V2,
};

// The pre-1.1 ABI's driver registration (IBVERBS_1.1, hidden).
typedef struct ibv_device* (*ibv_driver_init_func)(const char* uverbs_sys_path, int abi_version);

// Private names are declared here, once, so that each definition in
// device/abi/ is checked against one prototype (as driver.h would).
const char* ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
int ibv_read_ibdev_sysfs_file(char* buf, size_t size, struct verbs_sysfs_dev* sysfs_dev,
                              const char* fnfmt, ...) __attribute__((format(printf, 4, 5)));
int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index,
                       enum ibv_gid_type_sysfs* type);
int ibv_dontfork_range(void* base, size_t size);
int ibv_dofork_range(void* base, size_t size);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr* dst, struct ib_uverbs_ah_attr* src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr* dst, struct ib_uverbs_qp_attr* src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec* dst, struct ib_user_path_rec* src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec* dst, struct ibv_sa_path_rec* src);
extern bool verbs_allow_disassociate_destroy;
} // extern "C"

namespace rdmasim::device {

// What every verb the emulator does not model answers
// (device/README.md, "The library seen by a program").
inline constexpr int not_emulated = EOPNOTSUPP;

} // namespace rdmasim::device
