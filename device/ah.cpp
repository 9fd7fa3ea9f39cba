// Address handles: ibv_create_ah's checks (mlx5_create_ah on RoCE), and the
// AH of a UD completion's sender from the 40-byte GRH slot of its receive
// buffer, as libibverbs' ibv_init_ah_from_wc reads it (device/README.md,
// "Address handles").
#include "device/ah.hpp"

#include <endian.h>

#include <cstring>
#include <mutex>
#include <memory>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/import.hpp"

namespace rdmasim::device {

namespace {

constexpr std::uint8_t kUdpProto = 17;
constexpr std::uint8_t kIbNextHeader = 0x1b; // RoCE v1: a GRH then the BTH

// The IPv4 header RoCE v2 puts in the last 20 bytes of the GRH slot (the
// first 20 are undefined): version 4, IHL 5, and a checksum that holds.
bool grh_is_ipv4(const std::uint8_t* grh) noexcept {
    const std::uint8_t* ip = grh + 20;
    if ((grh[0] >> 4) != 6) return (ip[0] >> 4) == 4;
    if ((ip[0] & 0x0f) != 5) return false;
    std::uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += static_cast<std::uint32_t>(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return sum == 0xffff; // a valid header sums to all ones, its checksum included
}

ibv_gid v4_mapped(const std::uint8_t* addr) noexcept {
    ibv_gid g;
    std::memset(&g, 0, sizeof g);
    g.raw[10] = 0xff;
    g.raw[11] = 0xff;
    std::memcpy(g.raw + 12, addr, 4);
    return g;
}

// The port's GID index holding `gid` with `type` (ibv_query_gid_ex walks
// the table as ibv_find_gid_index does); -1 with errno when none.
int find_gid(ibv_context* context, std::uint8_t port, const ibv_gid& gid, std::uint32_t type) noexcept {
    for (std::uint32_t i = 0;; ++i) {
        ibv_gid_entry e;
        if (int err = ibv_query_gid_ex(context, port, i, &e, 0)) {
            errno = err;
            return -1;
        }
        if (std::memcmp(&e.gid, &gid, sizeof gid) == 0 && e.gid_type == type)
            return static_cast<int>(i);
    }
}

} // namespace

ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr) noexcept {
    return guard_ptr<ibv_ah>([&]() -> ibv_ah* {
        if (pd == nullptr || attr == nullptr || kernel_pd(pd) == nullptr)
            return fail<ibv_ah>(EINVAL);
        Context& ctx = *from_verbs(pd->context);
        if (attr->port_num != 1) return fail<ibv_ah>(EINVAL);
        if (!attr->is_global) return fail<ibv_ah>(EINVAL); // RoCE addresses are GIDs
        ibv_port_attr pa;
        std::memset(&pa, 0, sizeof pa);
        if (int e = query_port(pd->context, 1, &pa, sizeof pa)) return fail<ibv_ah>(e);
        if (attr->grh.sgid_index >= pa.gid_tbl_len) return fail<ibv_ah>(EINVAL);
        // An empty entry inside the table: ENODATA, as the kernel's rdma_get_gid_attr.
        if (!port_gid(*ctx.device, attr->grh.sgid_index)) return fail<ibv_ah>(ENODATA);
        auto ah = std::make_unique<Ah>();
        std::memset(&ah->ibah, 0, sizeof ah->ibah);
        ah->ibah.context = pd->context;
        ah->ibah.pd = pd;
        ah->ibah.handle = ctx.device->next_handle.fetch_add(1);
        ah->pd = kernel_pd(pd); // an imported PD counts users on the one it names
        ah->attr = *attr;
        // As the kernel resolves the MAC at ibv_create_ah: ARP starts now, so
        // the first datagrams find it known (or waiting briefly in ArpWait).
        const std::uint8_t* d = attr->grh.dgid.raw;
        static constexpr std::uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (std::memcmp(d, mapped, sizeof mapped) == 0 &&
            (d[12] & 0xf0) != 0xe0) { // a group: no ARP
            std::lock_guard lock(ctx.device->port.mutex());
            (void)ctx.device->port.resolve({d[12], d[13], d[14], d[15]});
            ctx.device->port.finish_call(); // the ARP request onto the wire
        }
        ah->pd->users.fetch_add(1);
        ctx.live_objects.fetch_add(1);
        return &ah.release()->ibah;
    });
}

int destroy_ah(ibv_ah* a) noexcept {
    if (a == nullptr) return EINVAL;
    Ah* ah = from_verbs(a);
    ah->pd->users.fetch_sub(1);
    object_destroyed(*from_verbs(a->context));
    delete ah;
    return 0;
}

int init_ah_from_wc(ibv_context* context, uint8_t port_num, const ibv_wc* wc, const ibv_grh* grh,
                    ibv_ah_attr* ah_attr) noexcept {
    if (context == nullptr || wc == nullptr || grh == nullptr || ah_attr == nullptr) {
        errno = EINVAL;
        return -1;
    }
    std::memset(ah_attr, 0, sizeof *ah_attr);
    const std::uint32_t vtf = be32toh(grh->version_tclass_flow);
    ah_attr->grh.flow_label = vtf & 0xfffff;
    ah_attr->dlid = wc->slid;
    ah_attr->sl = wc->sl;
    ah_attr->src_path_bits = wc->dlid_path_bits;
    ah_attr->port_num = port_num;
    if (!(wc->wc_flags & IBV_WC_GRH)) return 0;
    ah_attr->is_global = 1;
    const auto* raw = reinterpret_cast<const std::uint8_t*>(grh);
    int index;
    if (grh_is_ipv4(raw)) {
        const std::uint8_t* ip = raw + 20; // saddr at 12, daddr at 16
        if ((ip[16] & 0xf0) == 0xe0) { // multicast: not in the GID table
            errno = EINVAL;
            return -1;
        }
        index = find_gid(context, port_num, v4_mapped(ip + 16), IBV_GID_TYPE_ROCE_V2);
        if (index < 0) return -1;
        ah_attr->grh.dgid = v4_mapped(ip + 12);
        ah_attr->grh.hop_limit = ip[8];
        ah_attr->grh.traffic_class = ip[1];
    } else if ((raw[0] >> 4) == 6) {
        if (grh->dgid.raw[0] == 0xff) {
            errno = EINVAL;
            return -1;
        }
        std::uint32_t type;
        if (grh->next_hdr == kUdpProto) {
            type = IBV_GID_TYPE_ROCE_V2;
        } else if (grh->next_hdr == kIbNextHeader) {
            type = IBV_GID_TYPE_ROCE_V1;
        } else {
            errno = EPROTONOSUPPORT;
            return -1;
        }
        index = find_gid(context, port_num, grh->dgid, type);
        if (index < 0) return -1;
        ah_attr->grh.dgid = grh->sgid;
        ah_attr->grh.hop_limit = grh->hop_limit;
        ah_attr->grh.traffic_class = static_cast<std::uint8_t>(vtf >> 20);
    } else {
        errno = EPROTONOSUPPORT;
        return -1;
    }
    ah_attr->grh.sgid_index = static_cast<std::uint8_t>(index);
    return 0;
}

ibv_ah* create_ah_from_wc(ibv_pd* pd, const ibv_wc* wc, const ibv_grh* grh, uint8_t port_num) noexcept {
    if (pd == nullptr) return fail<ibv_ah>(EINVAL);
    ibv_ah_attr attr;
    if (init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0) return nullptr;
    return create_ah(pd, &attr);
}

} // namespace rdmasim::device
