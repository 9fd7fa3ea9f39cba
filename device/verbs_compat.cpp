// The rest of libibverbs' exported names (SPEC.md section 1): helpers and
// string tables, the emulated sysfs, GID queries, the verbs that are not
// emulated (AH, multicast, SRQ, import, ECE: EOPNOTSUPP), rdma-core's private
// provider interface (IBVERBS_PRIVATE_34: stubs, so that provider libraries
// such as libmlx5.so.1 load), and the hidden pre-1.1 compat versions.
// verbs_exports.cpp holds the verbs the device model implements.
#include <infiniband/sa.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include <endian.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/registry.hpp"

using namespace rdmasim::device;

// verbs.h wraps some exported names in macros; the definitions need the names.
#undef ibv_reg_mr

// Binds `impl` to the hidden (non-default) version `name@node`, as
// `objdump -T` shows `(node) name` for the system library.
// `node` is a string literal: "IBVERBS_1.0" as a bare token does not survive formatting.
#define RDMASIM_COMPAT_SYMVER(impl, name, node) __asm__(".symver " #impl "," #name "@" node)

// Types of rdma-core's private provider interface (libibverbs/driver.h,
// kern-abi.h, cmd_ioctl.h), which libibverbs-dev does not install. The stubs
// below only pass pointers to them, so they stay incomplete.
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

// Private names are declared here so that -Wmissing-declarations stays quiet
// and the definitions below are checked against one prototype.
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

namespace {

constexpr int not_emulated = EOPNOTSUPP;

// ---------------------------------------------------------------------------
// Rates: one row per enum ibv_rate value. `mult` is the multiple of 2.5 Gb/s,
// -1 where the rate is not such a multiple (FDR/EDR/HDR lane rates).
struct RateRow {
    ibv_rate rate;
    int mult;
    int mbps;
};

constexpr std::array<RateRow, 23> rate_table{{
    {IBV_RATE_2_5_GBPS, 1, 2500},       {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},       {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},      {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},      {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},    {IBV_RATE_14_GBPS, -1, 14062},
    {IBV_RATE_56_GBPS, -1, 56250},      {IBV_RATE_112_GBPS, -1, 112500},
    {IBV_RATE_168_GBPS, -1, 168750},    {IBV_RATE_25_GBPS, -1, 25781},
    {IBV_RATE_100_GBPS, -1, 103125},    {IBV_RATE_200_GBPS, -1, 206250},
    {IBV_RATE_300_GBPS, -1, 309375},    {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},      {IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500},   {IBV_RATE_800_GBPS, 320, 850000},
    {IBV_RATE_1200_GBPS, 480, 1275000},
}};

const RateRow* find_rate(ibv_rate rate) noexcept {
    for (const RateRow& r : rate_table)
        if (r.rate == rate) return &r;
    return nullptr;
}

// ---------------------------------------------------------------------------
// The emulated sysfs. Every path under emulated_root belongs to the emulator
// and never reaches the real filesystem: a device's ibdev_path and dev_path
// (device.cpp, make_device) and their sysfs-shaped aliases
// <root>/class/infiniband/<name> and <root>/class/infiniband_verbs/<dev_name>.
constexpr std::string_view emulated_root = "/rdmasim";

// Must match fill_device_attr() in context.cpp (ibv_query_device's fw_ver).
constexpr std::string_view emulated_fw_ver = "rdmasim-0.1.0";

// dir + "/" + file, with runs of '/' collapsed and no trailing '/'.
std::string join_path(std::string_view dir, std::string_view file) {
    std::string joined;
    joined.reserve(dir.size() + file.size() + 1);
    joined.append(dir);
    joined.push_back('/');
    joined.append(file);
    std::string out;
    out.reserve(joined.size());
    for (char c : joined)
        if (c != '/' || out.empty() || out.back() != '/') out.push_back(c);
    while (out.size() > 1 && out.back() == '/')
        out.pop_back();
    return out;
}

bool is_emulated(std::string_view path) noexcept {
    return path == emulated_root ||
           (path.starts_with(emulated_root) && path[emulated_root.size()] == '/');
}

// `path` relative to `dir`, if it lies strictly below it.
std::optional<std::string_view> below(std::string_view path, std::string_view dir) noexcept {
    if (dir.empty() || !path.starts_with(dir) || path.size() <= dir.size() + 1 ||
        path[dir.size()] != '/')
        return std::nullopt;
    return path.substr(dir.size() + 1);
}

std::string guid_text(__be64 guid) {
    const std::uint64_t g = be64toh(guid);
    char text[20];
    std::snprintf(text, sizeof text, "%04x:%04x:%04x:%04x", static_cast<unsigned>(g >> 48 & 0xffff),
                  static_cast<unsigned>(g >> 32 & 0xffff), static_cast<unsigned>(g >> 16 & 0xffff),
                  static_cast<unsigned>(g & 0xffff));
    return text;
}

std::string gid_text(const ibv_gid& gid) {
    std::string text;
    for (int i = 0; i < 16; i += 2) {
        char group[6];
        std::snprintf(group, sizeof group, "%s%02x%02x", i ? ":" : "", gid.raw[i], gid.raw[i + 1]);
        text += group;
    }
    return text;
}

std::string node_desc(const Device& dev) {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    return host[0] ? std::string(host) + " " + dev.ibdev.name : std::string(dev.ibdev.name);
}

// A file under the device's ibdev_path (sysfs class/infiniband/<name>).
std::optional<std::string> ibdev_file(const Device& dev, std::string_view rel) {
    if (rel == "board_id") return "RDMASIM";
    if (rel == "fw_ver") return std::string(emulated_fw_ver);
    if (rel == "hca_type") return "rdmasim";
    if (rel == "node_desc") return node_desc(dev);
    if (rel == "node_guid" || rel == "sys_image_guid") return guid_text(dev.identity.node_guid);
    if (rel == "node_type") return "1: CA";
    if (rel == "ports/1/link_layer") return "Ethernet";
    if (rel == "ports/1/state") return "4: ACTIVE";
    if (rel == "ports/1/phys_state") return "5: LinkUp";
    if (rel == "ports/1/gids/0") return gid_text(port_gid(dev));
    if (rel == "ports/1/pkeys/0") return "0xffff";
    if (rel == "ports/1/gid_attrs/types/0") return "RoCE v2";
    // ports/1/gid_attrs/ndevs/0 names the GID's netdev: the emulated port has
    // none (ndev_ifindex 0), and the kernel fails that read too.
    return std::nullopt;
}

// A file under the device's dev_path (sysfs class/infiniband_verbs/uverbsN).
std::optional<std::string> uverbs_file(const Device& dev, std::string_view rel) {
    if (rel == "ibdev") return std::string(dev.ibdev.name);
    return std::nullopt;
}

// The content of an emulated file, or nullopt (ENOENT).
std::optional<std::string> emulated_file(std::string_view path) {
    std::vector<Device*> devices;
    if (current_devices(devices) != 0) return std::nullopt;
    const std::string class_ib = std::string(emulated_root) + "/class/infiniband/";
    const std::string class_uverbs = std::string(emulated_root) + "/class/infiniband_verbs/";
    for (const Device* dev : devices) {
        for (const std::string& dir :
             {std::string(dev->ibdev.ibdev_path), class_ib + dev->ibdev.name})
            if (auto rel = below(path, dir)) return ibdev_file(*dev, *rel);
        for (const std::string& dir :
             {std::string(dev->ibdev.dev_path), class_uverbs + dev->ibdev.dev_name})
            if (auto rel = below(path, dir)) return uverbs_file(*dev, *rel);
    }
    return std::nullopt;
}

// Copies `text` into buf as a C string; returns its length (truncated to fit).
int copy_out(std::string_view text, char* buf, size_t size) noexcept {
    if (buf == nullptr || size == 0) return 0;
    const size_t n = std::min(text.size(), size - 1);
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
    return static_cast<int>(n);
}

// A real file outside the emulator's tree, read as rdma-core reads sysfs: one
// read, the trailing newline dropped.
int read_real_file(const std::string& path, char* buf, size_t size) noexcept {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const ssize_t len = ::read(fd, buf, size);
    const int saved = errno;
    ::close(fd);
    if (len < 0) {
        errno = saved;
        return -1;
    }
    size_t n = static_cast<size_t>(len);
    if (n > 0 && buf[n - 1] == '\n') --n;
    if (n < size) buf[n] = '\0';
    return static_cast<int>(n);
}

int read_sysfs_path(const std::string& path, char* buf, size_t size) {
    if (!is_emulated(path)) return read_real_file(path, buf, size);
    auto text = emulated_file(path);
    if (!text) {
        errno = ENOENT;
        return -1;
    }
    return copy_out(*text, buf, size);
}

// ---------------------------------------------------------------------------
// GIDs: one entry per port, index 0, RoCE v2, no netdev.
int valid_gid_query(ibv_context* context, uint32_t port_num, uint32_t flags) noexcept {
    if (context == nullptr || flags != 0) return EINVAL;
    if (port_num != 1) return EINVAL;
    return 0;
}

ibv_gid_entry gid_entry(ibv_context* context) noexcept {
    ibv_gid_entry e;
    std::memset(&e, 0, sizeof e);
    e.gid = port_gid(*from_verbs(context)->device);
    e.gid_index = 0;
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

void copy_ah_attr(ibv_ah_attr& dst, const ib_uverbs_ah_attr& src) noexcept {
    std::memcpy(dst.grh.dgid.raw, src.grh.dgid, sizeof dst.grh.dgid.raw);
    dst.grh.flow_label = src.grh.flow_label;
    dst.grh.sgid_index = src.grh.sgid_index;
    dst.grh.hop_limit = src.grh.hop_limit;
    dst.grh.traffic_class = src.grh.traffic_class;
    dst.dlid = src.dlid;
    dst.sl = src.sl;
    dst.src_path_bits = src.src_path_bits;
    dst.static_rate = src.static_rate;
    dst.is_global = src.is_global;
    dst.port_num = src.port_num;
}

} // namespace

extern "C" {

// ---------------------------------------------------------------------------
// Strings and rates (the same text as rdma-core).

const char* ibv_node_type_str(enum ibv_node_type node_type) {
    switch (node_type) {
    case IBV_NODE_CA:
        return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH:
        return "InfiniBand switch";
    case IBV_NODE_ROUTER:
        return "InfiniBand router";
    case IBV_NODE_RNIC:
        return "iWARP NIC";
    case IBV_NODE_USNIC:
        return "usNIC";
    case IBV_NODE_USNIC_UDP:
        return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED:
        return "unspecified";
    default:
        return "unknown";
    }
}

const char* ibv_port_state_str(enum ibv_port_state port_state) {
    switch (port_state) {
    case IBV_PORT_NOP:
        return "no state change (NOP)";
    case IBV_PORT_DOWN:
        return "down";
    case IBV_PORT_INIT:
        return "init";
    case IBV_PORT_ARMED:
        return "armed";
    case IBV_PORT_ACTIVE:
        return "active";
    case IBV_PORT_ACTIVE_DEFER:
        return "active defer";
    default:
        return "unknown";
    }
}

const char* ibv_event_type_str(enum ibv_event_type event) {
    switch (event) {
    case IBV_EVENT_CQ_ERR:
        return "CQ error";
    case IBV_EVENT_QP_FATAL:
        return "local work queue catastrophic error";
    case IBV_EVENT_QP_REQ_ERR:
        return "invalid request local work queue error";
    case IBV_EVENT_QP_ACCESS_ERR:
        return "local access violation work queue error";
    case IBV_EVENT_COMM_EST:
        return "communication established";
    case IBV_EVENT_SQ_DRAINED:
        return "send queue drained";
    case IBV_EVENT_PATH_MIG:
        return "path migrated";
    case IBV_EVENT_PATH_MIG_ERR:
        return "path migration request error";
    case IBV_EVENT_DEVICE_FATAL:
        return "local catastrophic error";
    case IBV_EVENT_PORT_ACTIVE:
        return "port active";
    case IBV_EVENT_PORT_ERR:
        return "port error";
    case IBV_EVENT_LID_CHANGE:
        return "LID change";
    case IBV_EVENT_PKEY_CHANGE:
        return "P_Key change";
    case IBV_EVENT_SM_CHANGE:
        return "SM change";
    case IBV_EVENT_SRQ_ERR:
        return "SRQ catastrophic error";
    case IBV_EVENT_SRQ_LIMIT_REACHED:
        return "SRQ limit reached";
    case IBV_EVENT_QP_LAST_WQE_REACHED:
        return "last WQE reached";
    case IBV_EVENT_CLIENT_REREGISTER:
        return "client reregistration";
    case IBV_EVENT_GID_CHANGE:
        return "GID table change";
    case IBV_EVENT_WQ_FATAL:
        return "WQ fatal";
    default:
        return "unknown";
    }
}

const char* ibv_wc_status_str(enum ibv_wc_status status) {
    switch (status) {
    case IBV_WC_SUCCESS:
        return "success";
    case IBV_WC_LOC_LEN_ERR:
        return "local length error";
    case IBV_WC_LOC_QP_OP_ERR:
        return "local QP operation error";
    case IBV_WC_LOC_EEC_OP_ERR:
        return "local EE context operation error";
    case IBV_WC_LOC_PROT_ERR:
        return "local protection error";
    case IBV_WC_WR_FLUSH_ERR:
        return "Work Request Flushed Error";
    case IBV_WC_MW_BIND_ERR:
        return "memory management operation error";
    case IBV_WC_BAD_RESP_ERR:
        return "bad response error";
    case IBV_WC_LOC_ACCESS_ERR:
        return "local access error";
    case IBV_WC_REM_INV_REQ_ERR:
        return "remote invalid request error";
    case IBV_WC_REM_ACCESS_ERR:
        return "remote access error";
    case IBV_WC_REM_OP_ERR:
        return "remote operation error";
    case IBV_WC_RETRY_EXC_ERR:
        return "transport retry counter exceeded";
    case IBV_WC_RNR_RETRY_EXC_ERR:
        return "RNR retry counter exceeded";
    case IBV_WC_LOC_RDD_VIOL_ERR:
        return "local RDD violation error";
    case IBV_WC_REM_INV_RD_REQ_ERR:
        return "remote invalid RD request";
    case IBV_WC_REM_ABORT_ERR:
        return "aborted error";
    case IBV_WC_INV_EECN_ERR:
        return "invalid EE context number";
    case IBV_WC_INV_EEC_STATE_ERR:
        return "invalid EE context state";
    case IBV_WC_FATAL_ERR:
        return "fatal error";
    case IBV_WC_RESP_TIMEOUT_ERR:
        return "response timeout error";
    case IBV_WC_GENERAL_ERR:
        return "general error";
    case IBV_WC_TM_ERR:
        return "TM error";
    case IBV_WC_TM_RNDV_INCOMPLETE:
        return "TM software rendezvous";
    default:
        return "unknown";
    }
}

int ibv_rate_to_mult(enum ibv_rate rate) {
    const RateRow* r = find_rate(rate);
    return r ? r->mult : -1;
}

enum ibv_rate mult_to_ibv_rate(int mult) {
    if (mult <= 0) return IBV_RATE_MAX;
    for (const RateRow& r : rate_table)
        if (r.mult == mult) return r.rate;
    return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate) {
    const RateRow* r = find_rate(rate);
    return r ? r->mbps : -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps) {
    if (mbps <= 0) return IBV_RATE_MAX;
    for (const RateRow& r : rate_table)
        if (r.mbps == mbps) return r.rate;
    return IBV_RATE_MAX;
}

// ---------------------------------------------------------------------------
// fork(): the emulator pins no pages, so fork needs nothing.

int ibv_fork_init(void) {
    return 0;
}
enum ibv_fork_status ibv_is_fork_initialized(void) {
    return IBV_FORK_UNNEEDED;
}
int ibv_dontfork_range(void*, size_t) {
    return 0;
}
int ibv_dofork_range(void*, size_t) {
    return 0;
}

// ---------------------------------------------------------------------------
// sysfs helpers, answered from the device model for emulated devices.

const char* ibv_get_sysfs_path(void) {
    return "/rdmasim";
}

int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
    if (dir == nullptr || file == nullptr || buf == nullptr) {
        errno = EINVAL;
        return -1;
    }
    try {
        return read_sysfs_path(join_path(dir, file), buf, size);
    } catch (const std::bad_alloc&) {
        errno = ENOMEM;
    } catch (...) {
        errno = EIO;
    }
    return -1;
}

// rdma-core's provider helper: `sysfs_dev` is libibverbs' own record of a
// kernel device. Emulated devices have none (no provider can obtain one for
// them), so there is nothing to read.
int ibv_read_ibdev_sysfs_file(char* buf, size_t size, struct verbs_sysfs_dev*, const char*, ...) {
    if (buf != nullptr && size > 0) buf[0] = '\0';
    errno = ENOENT;
    return -1;
}

// ---------------------------------------------------------------------------
// GIDs and P_Keys.

int ibv_query_gid_type(struct ibv_context* context, uint8_t port_num, unsigned int index,
                       enum ibv_gid_type_sysfs* type) {
    if (context == nullptr || type == nullptr || port_num != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *type = IBV_GID_TYPE_SYSFS_ROCE_V2;
    return 0;
}

int _ibv_query_gid_ex(struct ibv_context* context, uint32_t port_num, uint32_t gid_index,
                      struct ibv_gid_entry* entry, uint32_t flags, size_t entry_size) {
    if (int err = valid_gid_query(context, port_num, flags)) return err;
    if (entry == nullptr || entry_size < sizeof(ibv_gid_entry) || gid_index != 0) return EINVAL;
    store_gid_entry(gid_entry(context), entry, entry_size);
    return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context* context, struct ibv_gid_entry* entries,
                             size_t max_entries, uint32_t flags, size_t entry_size) {
    if (int err = valid_gid_query(context, 1, flags)) return -err;
    if (entries == nullptr || entry_size < sizeof(ibv_gid_entry)) return -EINVAL;
    if (max_entries < 1) return -EINVAL; // the table holds one valid entry
    store_gid_entry(gid_entry(context), entries, entry_size);
    return 1;
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

// ---------------------------------------------------------------------------
// QP extras.

struct ibv_qp_ex* ibv_qp_to_qp_ex(struct ibv_qp*) {
    // No QP is created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS: there is no
    // ibv_qp_ex to hand out.
    return fail<ibv_qp_ex>(not_emulated);
}

int ibv_query_qp_data_in_order(struct ibv_qp*, enum ibv_wr_opcode, uint32_t) {
    return 0;
}
int ibv_query_ece(struct ibv_qp*, struct ibv_ece*) {
    return not_emulated;
}
int ibv_set_ece(struct ibv_qp*, struct ibv_ece*) {
    return not_emulated;
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context*, struct ibv_ah_attr*, uint8_t[ETHERNET_LL_SIZE],
                                uint16_t*) {
    return not_emulated;
}

// ---------------------------------------------------------------------------
// Not emulated: address handles, multicast, SRQs, CQ resize, MR re-registration,
// dma-buf MRs, shared (imported) objects.

struct ibv_ah* ibv_create_ah(struct ibv_pd*, struct ibv_ah_attr*) {
    return fail<ibv_ah>(not_emulated);
}
int ibv_destroy_ah(struct ibv_ah*) {
    return not_emulated;
}
struct ibv_ah* ibv_create_ah_from_wc(struct ibv_pd*, struct ibv_wc*, struct ibv_grh*, uint8_t) {
    return fail<ibv_ah>(not_emulated);
}
int ibv_init_ah_from_wc(struct ibv_context*, uint8_t, struct ibv_wc*, struct ibv_grh*,
                        struct ibv_ah_attr*) {
    return not_emulated;
}

int ibv_attach_mcast(struct ibv_qp*, const union ibv_gid*, uint16_t) {
    return not_emulated;
}
int ibv_detach_mcast(struct ibv_qp*, const union ibv_gid*, uint16_t) {
    return not_emulated;
}

struct ibv_srq* ibv_create_srq(struct ibv_pd*, struct ibv_srq_init_attr*) {
    return fail<ibv_srq>(not_emulated);
}
int ibv_modify_srq(struct ibv_srq*, struct ibv_srq_attr*, int) {
    return not_emulated;
}
int ibv_query_srq(struct ibv_srq*, struct ibv_srq_attr*) {
    return not_emulated;
}
int ibv_destroy_srq(struct ibv_srq*) {
    return not_emulated;
}

int ibv_resize_cq(struct ibv_cq*, int) {
    return not_emulated;
}

int ibv_rereg_mr(struct ibv_mr*, int, struct ibv_pd*, void*, size_t, int) {
    errno = not_emulated;
    return IBV_REREG_MR_ERR_INPUT; // the man page's code: the old MR stays valid
}

struct ibv_mr* ibv_reg_dmabuf_mr(struct ibv_pd*, uint64_t, size_t, uint64_t, int, int) {
    return fail<ibv_mr>(not_emulated);
}

struct ibv_context* ibv_import_device(int) {
    return fail<ibv_context>(not_emulated);
}
struct ibv_pd* ibv_import_pd(struct ibv_context*, uint32_t) {
    return fail<ibv_pd>(not_emulated);
}
struct ibv_mr* ibv_import_mr(struct ibv_pd*, uint32_t) {
    return fail<ibv_mr>(not_emulated);
}
struct ibv_dm* ibv_import_dm(struct ibv_context*, uint32_t) {
    return fail<ibv_dm>(not_emulated);
}
void ibv_unimport_pd(struct ibv_pd*) {}
void ibv_unimport_mr(struct ibv_mr*) {}
void ibv_unimport_dm(struct ibv_dm*) {}

// ---------------------------------------------------------------------------
// Kernel-ABI structure converters (IBVERBS_1.0): plain field copies.

void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr* dst, struct ib_uverbs_ah_attr* src) {
    if (dst && src) copy_ah_attr(*dst, *src);
}

void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr* dst, struct ib_uverbs_qp_attr* src) {
    if (!dst || !src) return;
    dst->qp_state = static_cast<ibv_qp_state>(src->qp_state);
    dst->cur_qp_state = static_cast<ibv_qp_state>(src->cur_qp_state);
    dst->path_mtu = static_cast<ibv_mtu>(src->path_mtu);
    dst->path_mig_state = static_cast<ibv_mig_state>(src->path_mig_state);
    dst->qkey = src->qkey;
    dst->rq_psn = src->rq_psn;
    dst->sq_psn = src->sq_psn;
    dst->dest_qp_num = src->dest_qp_num;
    dst->qp_access_flags = static_cast<unsigned>(src->qp_access_flags);
    dst->cap.max_send_wr = src->max_send_wr;
    dst->cap.max_recv_wr = src->max_recv_wr;
    dst->cap.max_send_sge = src->max_send_sge;
    dst->cap.max_recv_sge = src->max_recv_sge;
    dst->cap.max_inline_data = src->max_inline_data;
    copy_ah_attr(dst->ah_attr, src->ah_attr);
    copy_ah_attr(dst->alt_ah_attr, src->alt_ah_attr);
    dst->pkey_index = src->pkey_index;
    dst->alt_pkey_index = src->alt_pkey_index;
    dst->en_sqd_async_notify = src->en_sqd_async_notify;
    dst->sq_draining = src->sq_draining;
    dst->max_rd_atomic = src->max_rd_atomic;
    dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
    dst->min_rnr_timer = src->min_rnr_timer;
    dst->port_num = src->port_num;
    dst->timeout = src->timeout;
    dst->retry_cnt = src->retry_cnt;
    dst->rnr_retry = src->rnr_retry;
    dst->alt_port_num = src->alt_port_num;
    dst->alt_timeout = src->alt_timeout;
}

void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec* dst, struct ib_user_path_rec* src) {
    if (!dst || !src) return;
    std::memcpy(dst->dgid.raw, src->dgid, sizeof dst->dgid.raw);
    std::memcpy(dst->sgid.raw, src->sgid, sizeof dst->sgid.raw);
    dst->dlid = src->dlid;
    dst->slid = src->slid;
    dst->raw_traffic = static_cast<int>(src->raw_traffic);
    dst->flow_label = src->flow_label;
    dst->hop_limit = src->hop_limit;
    dst->traffic_class = src->traffic_class;
    dst->reversible = static_cast<int>(src->reversible);
    dst->numb_path = src->numb_path;
    dst->pkey = src->pkey;
    dst->sl = src->sl;
    dst->mtu_selector = src->mtu_selector;
    dst->mtu = static_cast<uint8_t>(src->mtu);
    dst->rate_selector = src->rate_selector;
    dst->rate = src->rate;
    dst->packet_life_time_selector = src->packet_life_time_selector;
    dst->packet_life_time = src->packet_life_time;
    dst->preference = src->preference;
}

void ibv_copy_path_rec_to_kern(struct ib_user_path_rec* dst, struct ibv_sa_path_rec* src) {
    if (!dst || !src) return;
    std::memset(dst, 0, sizeof *dst);
    std::memcpy(dst->dgid, src->dgid.raw, sizeof dst->dgid);
    std::memcpy(dst->sgid, src->sgid.raw, sizeof dst->sgid);
    dst->dlid = src->dlid;
    dst->slid = src->slid;
    dst->raw_traffic = static_cast<__u32>(src->raw_traffic);
    dst->flow_label = src->flow_label;
    dst->reversible = static_cast<__u32>(src->reversible);
    dst->mtu = src->mtu;
    dst->pkey = src->pkey;
    dst->hop_limit = src->hop_limit;
    dst->traffic_class = src->traffic_class;
    dst->numb_path = src->numb_path;
    dst->sl = src->sl;
    dst->mtu_selector = src->mtu_selector;
    dst->rate_selector = src->rate_selector;
    dst->rate = src->rate;
    dst->packet_life_time_selector = src->packet_life_time_selector;
    dst->packet_life_time = src->packet_life_time;
    dst->preference = src->preference;
}

} // extern "C"

// ---------------------------------------------------------------------------
// IBVERBS_PRIVATE_34: rdma-core's interface to its provider libraries. The
// emulator is not a kernel device, so none of these has anything to do: they
// exist so that provider libraries (libmlx5.so.1, libefa.so.1, ...) load,
// and answer EOPNOTSUPP if ever called. Prototypes follow driver.h.
extern "C" {

bool verbs_allow_disassociate_destroy = false;

// Provider constructors call this when they are loaded: accept and ignore.
void verbs_register_driver_34(const struct verbs_device_ops*) noexcept {}

// Provider logging: nothing to log to.
void __verbs_log(struct verbs_context*, uint32_t, const char*, ...) noexcept {}

void* _verbs_init_and_alloc_context(struct ibv_device*, int, size_t, struct verbs_context*,
                                    uint32_t) noexcept {
    return fail(not_emulated);
}
struct ibv_context* verbs_open_device(struct ibv_device*, void*) noexcept {
    return fail<ibv_context>(not_emulated);
}
void verbs_uninit_context(struct verbs_context*) noexcept {}
void verbs_set_ops(struct verbs_context*, const struct verbs_context_ops*) noexcept {}

// The generic part of a provider's CQ set-up: fills the public fields.
void verbs_init_cq(struct ibv_cq* cq, struct ibv_context* context, struct ibv_comp_channel* channel,
                   void* cq_context) noexcept {
    if (cq == nullptr) return;
    cq->context = context;
    cq->channel = channel;
    cq->cq_context = cq_context;
    cq->comp_events_completed = 0;
    cq->async_events_completed = 0;
    pthread_mutex_init(&cq->mutex, nullptr);
    pthread_cond_init(&cq->cond, nullptr);
}

unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, struct ibv_command_buffer*) noexcept {
    return num_attrs;
}
int execute_ioctl(struct ibv_context*, struct ibv_command_buffer*) noexcept {
    return not_emulated;
}

int ibv_cmd_get_context(struct verbs_context*, struct ibv_get_context*, size_t,
                        struct ib_uverbs_get_context_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_query_context(struct ibv_context*, struct ibv_command_buffer*) noexcept {
    return not_emulated;
}
int ibv_cmd_query_device_any(struct ibv_context*, const struct ibv_query_device_ex_input*,
                             struct ibv_device_attr_ex*, size_t,
                             struct ib_uverbs_ex_query_device_resp*, size_t*) noexcept {
    return not_emulated;
}
int ibv_cmd_query_port(struct ibv_context*, uint8_t, struct ibv_port_attr*, struct ibv_query_port*,
                       size_t) noexcept {
    return not_emulated;
}

int ibv_cmd_alloc_pd(struct ibv_context*, struct ibv_pd*, struct ibv_alloc_pd*, size_t,
                     struct ib_uverbs_alloc_pd_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_dealloc_pd(struct ibv_pd*) noexcept {
    return not_emulated;
}
int ibv_cmd_open_xrcd(struct ibv_context*, struct verbs_xrcd*, int, struct ibv_xrcd_init_attr*,
                      struct ibv_open_xrcd*, size_t, struct ib_uverbs_open_xrcd_resp*,
                      size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_close_xrcd(struct verbs_xrcd*) noexcept {
    return not_emulated;
}

int ibv_cmd_reg_mr(struct ibv_pd*, void*, size_t, uint64_t, int, struct verbs_mr*,
                   struct ibv_reg_mr*, size_t, struct ib_uverbs_reg_mr_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_rereg_mr(struct verbs_mr*, uint32_t, void*, size_t, uint64_t, int, struct ibv_pd*,
                     struct ibv_rereg_mr*, size_t, struct ib_uverbs_rereg_mr_resp*,
                     size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_dereg_mr(struct verbs_mr*) noexcept {
    return not_emulated;
}
int ibv_cmd_query_mr(struct ibv_pd*, struct verbs_mr*, uint32_t) noexcept {
    return not_emulated;
}
int ibv_cmd_advise_mr(struct ibv_pd*, enum ibv_advise_mr_advice, uint32_t, struct ibv_sge*,
                      uint32_t) noexcept {
    return not_emulated;
}
int ibv_cmd_reg_dmabuf_mr(struct ibv_pd*, uint64_t, size_t, uint64_t, int, int,
                          struct verbs_mr*) noexcept {
    return not_emulated;
}
int ibv_cmd_reg_dm_mr(struct ibv_pd*, struct verbs_dm*, uint64_t, size_t, unsigned int,
                      struct verbs_mr*, struct ibv_command_buffer*) noexcept {
    return not_emulated;
}

int ibv_cmd_alloc_mw(struct ibv_pd*, enum ibv_mw_type, struct ibv_mw*, struct ibv_alloc_mw*, size_t,
                     struct ib_uverbs_alloc_mw_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_dealloc_mw(struct ibv_mw*) noexcept {
    return not_emulated;
}

int ibv_cmd_alloc_dm(struct ibv_context*, const struct ibv_alloc_dm_attr*, struct verbs_dm*,
                     struct ibv_command_buffer*) noexcept {
    return not_emulated;
}
int ibv_cmd_free_dm(struct verbs_dm*) noexcept {
    return not_emulated;
}

int ibv_cmd_create_cq(struct ibv_context*, int, struct ibv_comp_channel*, int, struct ibv_cq*,
                      struct ibv_create_cq*, size_t, struct ib_uverbs_create_cq_resp*,
                      size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_create_cq_ex(struct ibv_context*, const struct ibv_cq_init_attr_ex*, struct verbs_cq*,
                         struct ibv_create_cq_ex*, size_t, struct ib_uverbs_ex_create_cq_resp*,
                         size_t, uint32_t) noexcept {
    return not_emulated;
}
// Returns a completion count: failure is negative.
int ibv_cmd_poll_cq(struct ibv_cq*, int, struct ibv_wc*) noexcept {
    errno = not_emulated;
    return -1;
}
int ibv_cmd_req_notify_cq(struct ibv_cq*, int) noexcept {
    return not_emulated;
}
int ibv_cmd_resize_cq(struct ibv_cq*, int, struct ibv_resize_cq*, size_t,
                      struct ib_uverbs_resize_cq_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_cq(struct ibv_cq*) noexcept {
    return not_emulated;
}
int ibv_cmd_modify_cq(struct ibv_cq*, struct ibv_modify_cq_attr*, struct ibv_modify_cq*,
                      size_t) noexcept {
    return not_emulated;
}

int ibv_cmd_create_srq(struct ibv_pd*, struct ibv_srq*, struct ibv_srq_init_attr*,
                       struct ibv_create_srq*, size_t, struct ib_uverbs_create_srq_resp*,
                       size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_create_srq_ex(struct ibv_context*, struct verbs_srq*, struct ibv_srq_init_attr_ex*,
                          struct ibv_create_xsrq*, size_t, struct ib_uverbs_create_srq_resp*,
                          size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_modify_srq(struct ibv_srq*, struct ibv_srq_attr*, int, struct ibv_modify_srq*,
                       size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_query_srq(struct ibv_srq*, struct ibv_srq_attr*, struct ibv_query_srq*,
                      size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_srq(struct ibv_srq*) noexcept {
    return not_emulated;
}

int ibv_cmd_create_qp(struct ibv_pd*, struct ibv_qp*, struct ibv_qp_init_attr*,
                      struct ibv_create_qp*, size_t, struct ib_uverbs_create_qp_resp*,
                      size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_create_qp_ex(struct ibv_context*, struct verbs_qp*, struct ibv_qp_init_attr_ex*,
                         struct ibv_create_qp*, size_t, struct ib_uverbs_create_qp_resp*,
                         size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_create_qp_ex2(struct ibv_context*, struct verbs_qp*, struct ibv_qp_init_attr_ex*,
                          struct ibv_create_qp_ex*, size_t, struct ib_uverbs_ex_create_qp_resp*,
                          size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_open_qp(struct ibv_context*, struct verbs_qp*, int, struct ibv_qp_open_attr*,
                    struct ibv_open_qp*, size_t, struct ib_uverbs_create_qp_resp*,
                    size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_query_qp(struct ibv_qp*, struct ibv_qp_attr*, int, struct ibv_qp_init_attr*,
                     struct ibv_query_qp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_modify_qp(struct ibv_qp*, struct ibv_qp_attr*, int, struct ibv_modify_qp*,
                      size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_modify_qp_ex(struct ibv_qp*, struct ibv_qp_attr*, int, struct ibv_modify_qp_ex*, size_t,
                         struct ib_uverbs_ex_modify_qp_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_qp(struct ibv_qp*) noexcept {
    return not_emulated;
}

// Post calls name the first work request not posted: here, the first one.
int ibv_cmd_post_send(struct ibv_qp*, struct ibv_send_wr* wr,
                      struct ibv_send_wr** bad_wr) noexcept {
    if (bad_wr) *bad_wr = wr;
    return not_emulated;
}
int ibv_cmd_post_recv(struct ibv_qp*, struct ibv_recv_wr* wr,
                      struct ibv_recv_wr** bad_wr) noexcept {
    if (bad_wr) *bad_wr = wr;
    return not_emulated;
}
int ibv_cmd_post_srq_recv(struct ibv_srq*, struct ibv_recv_wr* wr,
                          struct ibv_recv_wr** bad_wr) noexcept {
    if (bad_wr) *bad_wr = wr;
    return not_emulated;
}

int ibv_cmd_create_ah(struct ibv_pd*, struct ibv_ah*, struct ibv_ah_attr*,
                      struct ib_uverbs_create_ah_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_ah(struct ibv_ah*) noexcept {
    return not_emulated;
}
int ibv_cmd_attach_mcast(struct ibv_qp*, const union ibv_gid*, uint16_t) noexcept {
    return not_emulated;
}
int ibv_cmd_detach_mcast(struct ibv_qp*, const union ibv_gid*, uint16_t) noexcept {
    return not_emulated;
}

int ibv_cmd_create_flow(struct ibv_qp*, struct ibv_flow*, struct ibv_flow_attr*, void*,
                        size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_flow(struct ibv_flow*) noexcept {
    return not_emulated;
}
int ibv_cmd_create_flow_action_esp(struct ibv_context*, struct ibv_flow_action_esp_attr*,
                                   struct verbs_flow_action*, struct ibv_command_buffer*) noexcept {
    return not_emulated;
}
int ibv_cmd_modify_flow_action_esp(struct verbs_flow_action*, struct ibv_flow_action_esp_attr*,
                                   struct ibv_command_buffer*) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_flow_action(struct verbs_flow_action*) noexcept {
    return not_emulated;
}

int ibv_cmd_create_wq(struct ibv_context*, struct ibv_wq_init_attr*, struct ibv_wq*,
                      struct ibv_create_wq*, size_t, struct ib_uverbs_ex_create_wq_resp*,
                      size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_modify_wq(struct ibv_wq*, struct ibv_wq_attr*, struct ibv_modify_wq*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_wq(struct ibv_wq*) noexcept {
    return not_emulated;
}
int ibv_cmd_create_rwq_ind_table(struct ibv_context*, struct ibv_rwq_ind_table_init_attr*,
                                 struct ibv_rwq_ind_table*,
                                 struct ib_uverbs_ex_create_rwq_ind_table_resp*, size_t) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_rwq_ind_table(struct ibv_rwq_ind_table*) noexcept {
    return not_emulated;
}

int ibv_cmd_create_counters(struct ibv_context*, struct ibv_counters_init_attr*,
                            struct verbs_counters*, struct ibv_command_buffer*) noexcept {
    return not_emulated;
}
int ibv_cmd_destroy_counters(struct verbs_counters*) noexcept {
    return not_emulated;
}
int ibv_cmd_read_counters(struct verbs_counters*, uint64_t*, uint32_t, uint32_t,
                          struct ibv_command_buffer*) noexcept {
    return not_emulated;
}

} // extern "C"

// ---------------------------------------------------------------------------
// The pre-1.1 ABI (IBVERBS_1.0, and IBVERBS_1.1's ibv_register_driver):
// hidden versions, bound by .symver so that `objdump -T` lists them in
// parentheses as for the system library. Binaries that old used other
// structure layouts; they are not emulated, every call fails.
namespace {

void* compat_null() noexcept {
    return fail(not_emulated);
}
int compat_errno() noexcept {
    errno = not_emulated;
    return not_emulated;
}
int compat_minus_one() noexcept {
    errno = not_emulated;
    return -1;
}

} // namespace

#define RDMASIM_COMPAT_1_0_PTR(name, ret, ...)                                                     \
    extern "C" ret rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept;                                \
    extern "C" ret rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept {                               \
        return static_cast<ret>(compat_null());                                                    \
    }                                                                                              \
    RDMASIM_COMPAT_SYMVER(rdmasim_compat_1_0_##name, name, "IBVERBS_1.0");

#define RDMASIM_COMPAT_1_0_INT(name, ...)                                                          \
    extern "C" int rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept;                                \
    extern "C" int rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept {                               \
        return compat_errno();                                                                     \
    }                                                                                              \
    RDMASIM_COMPAT_SYMVER(rdmasim_compat_1_0_##name, name, "IBVERBS_1.0");

// Calls whose failure is -1 with errno (event reads).
#define RDMASIM_COMPAT_1_0_NEG(name, ...)                                                          \
    extern "C" int rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept;                                \
    extern "C" int rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept {                               \
        return compat_minus_one();                                                                 \
    }                                                                                              \
    RDMASIM_COMPAT_SYMVER(rdmasim_compat_1_0_##name, name, "IBVERBS_1.0");

#define RDMASIM_COMPAT_1_0_VOID(name, ...)                                                         \
    extern "C" void rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept;                               \
    extern "C" void rdmasim_compat_1_0_##name(__VA_ARGS__) noexcept {}                             \
    RDMASIM_COMPAT_SYMVER(rdmasim_compat_1_0_##name, name, "IBVERBS_1.0");

RDMASIM_COMPAT_1_0_PTR(ibv_get_device_list, ibv_device**, int*)
RDMASIM_COMPAT_1_0_VOID(ibv_free_device_list, ibv_device**)
RDMASIM_COMPAT_1_0_PTR(ibv_get_device_name, const char*, ibv_device*)
RDMASIM_COMPAT_1_0_PTR(ibv_open_device, ibv_context*, ibv_device*)
RDMASIM_COMPAT_1_0_INT(ibv_close_device, ibv_context*)
RDMASIM_COMPAT_1_0_NEG(ibv_get_async_event, ibv_context*, ibv_async_event*)
RDMASIM_COMPAT_1_0_VOID(ibv_ack_async_event, ibv_async_event*)
RDMASIM_COMPAT_1_0_INT(ibv_query_device, ibv_context*, ibv_device_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_query_port, ibv_context*, uint8_t, ibv_port_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_query_gid, ibv_context*, uint8_t, int, ibv_gid*)
RDMASIM_COMPAT_1_0_INT(ibv_query_pkey, ibv_context*, uint8_t, int, __be16*)
RDMASIM_COMPAT_1_0_PTR(ibv_alloc_pd, ibv_pd*, ibv_context*)
RDMASIM_COMPAT_1_0_INT(ibv_dealloc_pd, ibv_pd*)
RDMASIM_COMPAT_1_0_PTR(ibv_reg_mr, ibv_mr*, ibv_pd*, void*, size_t, int)
RDMASIM_COMPAT_1_0_INT(ibv_dereg_mr, ibv_mr*)
RDMASIM_COMPAT_1_0_PTR(ibv_create_cq, ibv_cq*, ibv_context*, int, void*, ibv_comp_channel*, int)
RDMASIM_COMPAT_1_0_INT(ibv_resize_cq, ibv_cq*, int)
RDMASIM_COMPAT_1_0_INT(ibv_destroy_cq, ibv_cq*)
RDMASIM_COMPAT_1_0_NEG(ibv_get_cq_event, ibv_comp_channel*, ibv_cq**, void**)
RDMASIM_COMPAT_1_0_VOID(ibv_ack_cq_events, ibv_cq*, unsigned int)
RDMASIM_COMPAT_1_0_PTR(ibv_create_srq, ibv_srq*, ibv_pd*, ibv_srq_init_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_modify_srq, ibv_srq*, ibv_srq_attr*, int)
RDMASIM_COMPAT_1_0_INT(ibv_query_srq, ibv_srq*, ibv_srq_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_destroy_srq, ibv_srq*)
RDMASIM_COMPAT_1_0_PTR(ibv_create_qp, ibv_qp*, ibv_pd*, ibv_qp_init_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_query_qp, ibv_qp*, ibv_qp_attr*, int, ibv_qp_init_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_modify_qp, ibv_qp*, ibv_qp_attr*, int)
RDMASIM_COMPAT_1_0_INT(ibv_destroy_qp, ibv_qp*)
RDMASIM_COMPAT_1_0_PTR(ibv_create_ah, ibv_ah*, ibv_pd*, ibv_ah_attr*)
RDMASIM_COMPAT_1_0_INT(ibv_destroy_ah, ibv_ah*)
RDMASIM_COMPAT_1_0_INT(ibv_attach_mcast, ibv_qp*, ibv_gid*, uint16_t)
RDMASIM_COMPAT_1_0_INT(ibv_detach_mcast, ibv_qp*, ibv_gid*, uint16_t)

// ibv_get_device_guid@IBVERBS_1.0 returns a GUID: 0 is "none".
extern "C" __be64 rdmasim_compat_1_0_ibv_get_device_guid(ibv_device*) noexcept;
extern "C" __be64 rdmasim_compat_1_0_ibv_get_device_guid(ibv_device*) noexcept {
    errno = not_emulated;
    return 0;
}
RDMASIM_COMPAT_SYMVER(rdmasim_compat_1_0_ibv_get_device_guid, ibv_get_device_guid, "IBVERBS_1.0");

// The 1.1 ABI's provider registration: providers of that era are not loaded.
extern "C" void rdmasim_compat_1_1_ibv_register_driver(const char*, ibv_driver_init_func) noexcept;
extern "C" void rdmasim_compat_1_1_ibv_register_driver(const char*, ibv_driver_init_func) noexcept {
}
RDMASIM_COMPAT_SYMVER(rdmasim_compat_1_1_ibv_register_driver, ibv_register_driver, "IBVERBS_1.1");
