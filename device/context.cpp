// Contexts: open and close (the ops table comes from abi/ops.cpp), device and
// port queries, the GID table and P_Key 0 (device/README.md, "Device and port").
#include "device/context.hpp"
#include "device/odp.hpp"

#include <endian.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

#include "device/abi/ops.hpp"
#include "device/abi/sysfs.hpp"
#include "device/abi_guard.hpp"
#include "device/dm.hpp"
#include "device/import.hpp"
#include "device/tm_srq.hpp"
#include "device/verb_faults.hpp"

namespace rdmasim::device {

namespace {

void fill_device_attr(const Device& dev, ibv_device_attr& a) noexcept {
    const Capabilities& c = dev.caps;
    std::memset(&a, 0, sizeof a);
    std::snprintf(a.fw_ver, sizeof a.fw_ver, "%s", firmware_version);
    a.node_guid = dev.identity.node_guid;
    a.sys_image_guid = dev.identity.node_guid;
    a.max_mr_size = c.max_mr_size;
    a.page_size_cap = 0xfffff000;
    a.vendor_id = dev.identity.vendor_id;
    a.vendor_part_id = dev.identity.vendor_part_id;
    a.hw_ver = 1;
    a.max_qp = static_cast<int>(c.max_qp);
    // One field sizes both QPs and WQs (DPDK sizes its WQs from it): report
    // the smaller limit, so that every size the query allows is accepted.
    a.max_qp_wr = static_cast<int>(std::min(c.max_qp_wr, c.max_wr));
    // XRC, and memory windows of both types, type 2 bound to a QP (2B), as
    // mlx5 reports them (mlx5_ib_query_device); windows and MRs share one key
    // space, so max_mw = max_mr (both 1 << log_max_mkey on mlx5).
    a.device_cap_flags = IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_XRC | IBV_DEVICE_RAW_IP_CSUM * c.ip_csum |
                         IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
    a.max_sge = static_cast<int>(c.max_sge);
    a.max_sge_rd = 1;
    a.max_cq = static_cast<int>(c.max_cq);
    a.max_cqe = static_cast<int>(c.max_cqe);
    a.max_mr = static_cast<int>(c.max_mr);
    a.max_pd = static_cast<int>(c.max_pd);
    // RDMA reads and atomics outstanding per QP, as mlx5 reports them
    // (1 << log_max_ra_res_qp = 16; max_res_rd_atom = max_qp_rd_atom *
    // max_qp, mlx5_ib_query_device), and atomics across the HCA. Multicast as
    // a ConnectX-5 (datapath::McastGroups); EE contexts: limits reported
    // non-zero as the specification asks.
    a.max_qp_rd_atom = 16;
    a.max_qp_init_rd_atom = 16;
    a.max_res_rd_atom = 16 * a.max_qp;
    a.max_ee_rd_atom = 1;
    a.max_ee_init_rd_atom = 1;
    a.atomic_cap = IBV_ATOMIC_HCA;
    a.max_ee = 1;
    a.max_rdd = 1;
    a.max_mw = static_cast<int>(c.max_mr);
    a.max_raw_ipv6_qp = 1;
    a.max_raw_ethy_qp = static_cast<int>(c.max_qp);
    a.max_mcast_grp = static_cast<int>(datapath::McastGroups::kMaxGroups);
    a.max_mcast_qp_attach = static_cast<int>(datapath::McastGroups::kMaxQpsPerGroup);
    a.max_total_mcast_qp_attach = a.max_mcast_grp * a.max_mcast_qp_attach;
    a.max_ah = 0x7fffffff; // as mlx5: no limit of its own
    a.max_fmr = 1;
    a.max_map_per_fmr = 1;
    a.max_srq = static_cast<int>(c.max_srq);
    a.max_srq_wr = static_cast<int>(c.max_srq_wr);
    a.max_srq_sge = static_cast<int>(c.max_srq_sge);
    a.max_pkeys = 1;
    a.local_ca_ack_delay = 16;
    a.phys_port_cnt = 1;
}

// The active_mtu enum for a byte count `mtu` (one of the five; config checked it).
ibv_mtu mtu_enum(std::uint32_t mtu) noexcept {
    switch (mtu) {
    case 256: return IBV_MTU_256;
    case 512: return IBV_MTU_512;
    case 2048: return IBV_MTU_2048;
    case 4096: return IBV_MTU_4096;
    default: return IBV_MTU_1024;
    }
}

} // namespace

ibv_context* make_context(Device& dev, ContextFile* file, int cmd_fd) noexcept {
    return guard_ptr<ibv_context>([&]() -> ibv_context* {
        int fds[2];
        if (::pipe2(fds, O_CLOEXEC) != 0) return nullptr;
        auto ctx = std::make_unique<Context>();
        std::memset(&ctx->vctx, 0, sizeof ctx->vctx);
        ctx->device = &dev;
        ctx->file = file;
        ctx->events.read_fd = fds[0];
        ctx->events.write_fd = fds[1];
        verbs_context& v = ctx->vctx;
        v.sz = sizeof(verbs_context);
        ibv_context& c = v.context;
        c.device = &dev.ibdev;
        c.cmd_fd = cmd_fd;
        c.async_fd = fds[0];
        c.num_comp_vectors = static_cast<int>(dev.caps.num_comp_vectors);
        c.abi_compat = __VERBS_ABI_IS_EXTENDED;
        pthread_mutex_init(&c.mutex, nullptr);
        install_ops(v);
        dev.live_contexts.fetch_add(1);
        {
            std::lock_guard lock(dev.port.mutex());
            dev.contexts.push_back(ctx.get());
        }
        return &ctx.release()->vctx.context;
    });
}

ibv_context* open_device(ibv_device* device) noexcept {
    if (device == nullptr) return fail<ibv_context>(EINVAL);
    Device& dev = *from_verbs(device);
    if (int e = injected_failure(dev, Verb::open_device)) return fail<ibv_context>(e);
    int cmd_fd = -1;
    ContextFile* file = open_context_file(cmd_fd);
    if (file == nullptr) return nullptr;
    ibv_context* context = make_context(dev, file, cmd_fd);
    if (context == nullptr) {
        const int e = errno;
        ::close(cmd_fd);
        release_context_file(file);
        errno = e;
    }
    return context;
}

namespace {

void free_context(Context* ctx) noexcept {
    if (ctx->freeing.exchange(true)) return; // a close and a last destroy racing: one frees
    {
        std::lock_guard lock(ctx->device->port.mutex());
        std::erase(ctx->device->contexts, ctx);
    }
    ::close(ctx->events.read_fd);
    ::close(ctx->events.write_fd);
    pthread_mutex_destroy(&ctx->vctx.context.mutex);
    release_context_file(ctx->file);
    delete ctx;
}

} // namespace

void object_destroyed(Context& ctx) noexcept {
    if (ctx.live_objects.fetch_sub(1) == 1 && ctx.closed.load()) free_context(&ctx);
}

// ibv_close_device(3): 0 on success, -1 (errno set) on failure.
int close_device(ibv_context* context) noexcept {
    if (context == nullptr) {
        errno = EINVAL;
        return -1;
    }
    Context* ctx = from_verbs(context);
    ctx->device->live_contexts.fetch_sub(1);
    // Objects the program did not destroy: the close still succeeds, as on
    // mlx5, where the kernel reclaims them (perftest leaves an AH). Here
    // they stay usable, and the context lives until the last one goes.
    // The descriptor goes now, as libibverbs closes cmd_fd (an imported
    // context's too: it owns the one it was given); the file stays while a
    // context uses it.
    ::close(std::exchange(context->cmd_fd, -1));
    ctx->closed.store(true);
    if (ctx->live_objects.load() == 0) free_context(ctx);
    return 0;
}

int query_device(ibv_context* context, ibv_device_attr* attr) noexcept {
    if (context == nullptr || attr == nullptr) return EINVAL;
    fill_device_attr(*from_verbs(context)->device, *attr);
    return 0;
}

int query_device_ex(ibv_context* context, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size) noexcept {
    if (context == nullptr || attr == nullptr) return EINVAL;
    if (input != nullptr && input->comp_mask != 0) return EINVAL;
    if (attr_size < sizeof(ibv_device_attr)) return EINVAL;
    const Device& dev = *from_verbs(context)->device;
    const Capabilities& c = dev.caps;
    ibv_device_attr_ex a;
    std::memset(&a, 0, sizeof a);
    fill_device_attr(dev, a.orig_attr);
    a.completion_timestamp_mask = ~0ull;
    a.hca_core_clock = 1'000'000; // kHz: completion timestamps are nanoseconds
    a.device_cap_flags_ex = a.orig_attr.device_cap_flags;
    if (c.pci_write_end_padding) a.device_cap_flags_ex |= IBV_DEVICE_PCI_WRITE_END_PADDING;
    if (c.scatter_fcs) a.device_cap_flags_ex |= IBV_DEVICE_RAW_SCATTER_FCS;
    a.rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
    a.rss_caps.max_rwq_indirection_tables = c.max_rwq_indirection_tables;
    a.rss_caps.max_rwq_indirection_table_size = c.max_rwq_indirection_table_size;
    a.rss_caps.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
                                     IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
                                     IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |
                                     IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;
    a.rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
    a.max_wq_type_rq = c.max_wq;
    fill_odp_caps(a);
    a.raw_packet_caps = (c.cvlan_stripping ? IBV_RAW_PACKET_CAP_CVLAN_STRIPPING : 0) |
                        (c.scatter_fcs ? IBV_RAW_PACKET_CAP_SCATTER_FCS : 0) |
                        (c.ip_csum ? IBV_RAW_PACKET_CAP_IP_CSUM : 0) |
                        (c.delay_drop ? IBV_RAW_PACKET_CAP_DELAY_DROP : 0);
    a.phys_port_cnt_ex = 1;
    a.max_dm_size = kMaxDmSize;                  // device/dm.hpp
    a.tm_caps.max_rndv_hdr_size = kTmMaxRndvHdr; // mlx5's (device/tm_srq.hpp)
    a.tm_caps.max_num_tags = kTmMaxNumTags;
    a.tm_caps.flags = IBV_TM_CAP_RC;
    a.tm_caps.max_ops = std::min(kTmMaxOps, c.max_qp_wr);
    a.tm_caps.max_sge = kTmMaxSge;
    std::memcpy(attr, &a, std::min(attr_size, sizeof a));
    return 0;
}

int query_port(ibv_context* context, uint8_t port_num, ibv_port_attr* attr,
               size_t attr_len) noexcept {
    if (context == nullptr || attr == nullptr) return EINVAL;
    if (port_num != 1) return EINVAL;
    if (from_verbs(context)->device->fatal.load()) return EIO; // a dead device answers nothing
    ibv_port_attr a;
    std::memset(&a, 0, sizeof a);
    const bool up = from_verbs(context)->device->port_state.load() == IBV_PORT_ACTIVE;
    a.state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
    a.max_mtu = IBV_MTU_4096;
    a.active_mtu = mtu_enum(from_verbs(context)->device->identity.mtu);
    a.gid_tbl_len = kGidTableLen;
    a.port_cap_flags = 0;
    a.max_msg_sz = 1u << 30;
    a.pkey_tbl_len = 1;
    a.max_vl_num = 1;
    a.active_width = 2;  // 4x
    a.active_speed = 32; // 25 Gb/s (EDR lane)
    a.phys_state = up ? 5 : 3; // LinkUp, or Disabled
    a.link_layer = IBV_LINK_LAYER_ETHERNET;
    std::memcpy(attr, &a, std::min(attr_len, sizeof a));
    return 0;
}

std::optional<ibv_gid> port_gid(const Device& dev, int index) noexcept {
    if (index < 0 || index >= kGidsValid) return std::nullopt;
    const net::Ipv6Address addr = index == 0 ? net::ipv4_mapped(dev.identity.ipv4) : dev.identity.ipv6;
    ibv_gid gid;
    std::memcpy(gid.raw, addr.data(), sizeof gid.raw);
    return gid;
}

// ibv_query_gid(3) and ibv_query_pkey(3): 0 on success, -1 (errno set) on error.
int query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) noexcept {
    if (context == nullptr || gid == nullptr || port_num != 1 || index < 0 || index >= kGidTableLen) {
        errno = EINVAL;
        return -1;
    }
    // An empty entry reads as the zero GID, as rdma-core keeps it for
    // ibv_query_gid (ibv_query_gid_ex says ENODATA).
    const auto g = port_gid(*from_verbs(context)->device, index);
    if (g) *gid = *g;
    else std::memset(gid, 0, sizeof *gid);
    return 0;
}

int query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) noexcept {
    if (context == nullptr || pkey == nullptr || port_num != 1 || index != 0) {
        errno = EINVAL;
        return -1;
    }
    *pkey = htobe16(0xffff);
    return 0;
}

} // namespace rdmasim::device
