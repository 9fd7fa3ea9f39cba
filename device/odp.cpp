#include "device/odp.hpp"

#include <mutex>
#include <vector>

#include "datapath/mr_copy.hpp"
#include "device/abi_guard.hpp"

namespace rdmasim::device {

void fill_odp_caps(ibv_device_attr_ex& a) noexcept {
    constexpr std::uint32_t kRc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
                                  IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
                                  IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV;
    a.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
    a.odp_caps.per_transport_caps.rc_odp_caps = kRc;
    a.odp_caps.per_transport_caps.uc_odp_caps = 0; // mlx5 reports none for UC
    a.odp_caps.per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND;
    a.xrc_odp_caps = kRc & ~IBV_ODP_SUPPORT_RECV; // XRC receives through SRQs only
}

namespace {

struct Prefetch {
    const void* host;
    std::size_t length;
};

// mlx5's get_prefetchable_mr: a live ODP MR of the PD; PREFETCH_WRITE needs
// a writable one. Then (sync only) the range inside it, else EFAULT. Reads
// the table under the port lock, as the engine does.
int collect(Device& dev, const void* pd, ibv_advise_mr_advice advice, bool sync, const ibv_sge* sg,
            uint32_t n, std::vector<Prefetch>& out) {
    std::lock_guard lock(dev.port.mutex());
    for (uint32_t i = 0; i < n; ++i) {
        const datapath::MrEntry* e = dev.mrs.live(sg[i].lkey);
        if (e == nullptr || e->window || !e->odp || e->pd != pd ||
            (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE && !e->local_write))
            return sync ? ENOENT : EINVAL;
        if (!sync) continue; // the kernel's work item checks ranges later, silently
        if (!datapath::MrTable::covers(*e, sg[i].addr, sg[i].length)) return EFAULT;
        out.push_back(
            {reinterpret_cast<const void*>(e->host + (sg[i].addr - e->addr)), sg[i].length});
    }
    return 0;
}

} // namespace

int advise_mr(ibv_pd* p, ibv_advise_mr_advice advice, uint32_t flags, ibv_sge* sg_list,
              uint32_t num_sge) noexcept {
    return guard_errno([&]() -> int {
        if (p == nullptr) return EINVAL;
        if (flags & ~static_cast<uint32_t>(IBV_ADVISE_MR_FLAG_FLUSH)) return EINVAL;
        if (sg_list == nullptr || num_sge == 0) return EINVAL; // the SGE list is mandatory
        const auto a = raw_enum(advice);
        if (a != IBV_ADVISE_MR_ADVICE_PREFETCH && a != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
            a != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
            return EOPNOTSUPP;
        Device& dev = *from_verbs(p->context)->device;
        const bool sync = flags & IBV_ADVISE_MR_FLAG_FLUSH;
        std::vector<Prefetch> ranges;
        if (int e = collect(dev, protection_domain(from_verbs(p)), advice, sync, sg_list, num_sge,
                            ranges))
            return e;
        // A synchronous prefetch faults the pages in by reading them: one
        // that is not mapped is EFAULT, as hmm_range_fault. NO_FAULT only
        // snapshots what is there, so it never fails on a hole.
        if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
            for (const Prefetch& r : ranges)
                if (!datapath::odp_readable(r.host, r.length)) return EFAULT;
        return 0;
    });
}

} // namespace rdmasim::device
