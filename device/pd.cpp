#include "device/pd.hpp"

#include <cstring>
#include <mutex>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/dm.hpp"
#include "device/import.hpp"
#include "device/odp.hpp"
#include "device/verb_faults.hpp"

namespace rdmasim::device {

ibv_pd* alloc_pd(ibv_context* context) noexcept {
    return guard_ptr<ibv_pd>([&]() -> ibv_pd* {
        if (context == nullptr) return fail<ibv_pd>(EINVAL);
        Context& ctx = *from_verbs(context);
        if (int e = injected_failure(*ctx.device, Verb::alloc_pd)) return fail<ibv_pd>(e);
        auto pd = std::make_unique<Pd>();
        pd->ibpd.context = context;
        pd->ibpd.handle = ctx.device->next_handle.fetch_add(1);
        add_handle(ctx, *pd);
        ctx.live_objects.fetch_add(1);
        return &pd.release()->ibpd;
    });
}

ibv_pd* alloc_parent_domain(ibv_context* context, ibv_parent_domain_init_attr* attr) noexcept {
    return guard_ptr<ibv_pd>([&]() -> ibv_pd* {
        if (context == nullptr || attr == nullptr || attr->pd == nullptr || attr->pd->context != context)
            return fail<ibv_pd>(EINVAL);
        const std::uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
                                    IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
        if (attr->comp_mask & ~known) return fail<ibv_pd>(EINVAL);
        // No thread domains (ibv_alloc_td is EOPNOTSUPP): a td cannot be valid.
        if (attr->td != nullptr) return fail<ibv_pd>(EINVAL);
        if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
            (attr->alloc == nullptr || attr->free == nullptr))
            return fail<ibv_pd>(EINVAL);
        Pd* protection = kernel_pd(attr->pd); // an imported PD: the one it names
        if (protection == nullptr) return fail<ibv_pd>(EINVAL);
        if (protection->protection != nullptr) return fail<ibv_pd>(EINVAL); // a parent of a parent
        Context& ctx = *from_verbs(context);
        auto pd = std::make_unique<Pd>();
        pd->ibpd.context = context;
        pd->ibpd.handle = protection->ibpd.handle;
        pd->protection = protection;
        pd->parent = *attr;
        protection->users.fetch_add(1);
        ctx.live_objects.fetch_add(1);
        return &pd.release()->ibpd;
    });
}

int dealloc_pd(ibv_pd* p) noexcept {
    if (p == nullptr) return EINVAL;
    Pd* pd = from_verbs(p);
    Context& ctx = *from_verbs(p->context);
    // A PD, allocated or imported: its kernel object goes, through whichever
    // name (device/import.hpp).
    if (pd->protection == nullptr) return destroy_pd_name(ctx, *pd);
    if (pd->users.load() != 0) return EBUSY;
    pd->protection->users.fetch_sub(1);
    object_destroyed(ctx);
    delete pd;
    return 0;
}

namespace {

// 0 or EINVAL (unknown bits; remote write or atomic without local write, the
// verbs rule).
int check_access(unsigned access) noexcept {
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE))
        return EINVAL;
    const unsigned known =
        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
        IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_HUGETLB |
        IBV_ACCESS_RELAXED_ORDERING | IBV_ACCESS_OPTIONAL_RANGE | IBV_ACCESS_ON_DEMAND;
    return (access & ~known) ? EINVAL : 0;
}

void set_access(datapath::MrEntry& entry, const Pd* pd, unsigned access) noexcept {
    entry.pd = protection_domain(pd);
    entry.local_write = access & IBV_ACCESS_LOCAL_WRITE;
    entry.remote_read = access & IBV_ACCESS_REMOTE_READ;
    entry.remote_write = access & IBV_ACCESS_REMOTE_WRITE;
    entry.remote_atomic = access & IBV_ACCESS_REMOTE_ATOMIC;
    entry.odp = access & IBV_ACCESS_ON_DEMAND;
}

// An implicit ODP MR covers every address: it must stay ODP, or the engine
// would memcpy wherever a peer points it.
bool implicit_entry(const datapath::MrEntry& e) noexcept {
    return e.addr == 0 && e.host == 0 && e.length == UINT64_MAX;
}

} // namespace

ibv_mr* reg_mr(ibv_pd* p, void* addr, size_t length, uint64_t iova, unsigned int access) noexcept {
    return guard_ptr<ibv_mr>([&]() -> ibv_mr* {
        // Implicit ODP: iova 0 as well (mlx5's create_user_odp_mr), no size limit.
        const bool implicit = is_implicit_odp(addr, length, access);
        if (p == nullptr || (addr == nullptr && !implicit) || length == 0 ||
            (implicit && iova != 0))
            return fail<ibv_mr>(EINVAL);
        Pd* pd = kernel_pd(p);
        if (pd == nullptr) return fail<ibv_mr>(EINVAL);
        Device& dev = *from_verbs(p->context)->device;
        if (int e = injected_failure(dev, Verb::reg_mr)) return fail<ibv_mr>(e);
        if (length > dev.caps.max_mr_size && !implicit) return fail<ibv_mr>(EINVAL);
        if (int e = check_access(access)) return fail<ibv_mr>(e);
        auto mr = std::make_unique<Mr>();
        datapath::MrEntry entry;
        entry.addr = iova;
        entry.length = implicit ? UINT64_MAX : length;
        entry.host = reinterpret_cast<std::uint64_t>(addr);
        set_access(entry, pd, access);
        const std::uint32_t key = dev.mrs.add(entry);
        if (key == 0) return fail<ibv_mr>(ENOMEM);
        mr->access = static_cast<int>(access);
        mr->pd = pd;
        ibv_mr& m = mr->ibmr;
        m.context = p->context;
        m.pd = p;
        m.addr = addr;
        m.length = length;
        m.handle = dev.next_handle.fetch_add(1);
        m.lkey = key;
        m.rkey = key;
        add_handle(*from_verbs(p->context), *mr);
        pd->users.fetch_add(1);
        return &mr.release()->ibmr;
    });
}

int rereg_mr(ibv_mr* m, int flags, ibv_pd* p, void* addr, size_t length, int access) noexcept {
    const int supported = IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS;
    const auto input_error = [](int e) {
        errno = e;
        return IBV_REREG_MR_ERR_INPUT; // the MR stays as it was
    };
    if (m == nullptr || flags == 0 || (flags & ~supported)) return input_error(EINVAL);
    if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (addr == nullptr || length == 0))
        return input_error(EINVAL);
    if ((flags & IBV_REREG_MR_CHANGE_PD) && (p == nullptr || p->context != m->context))
        return input_error(EINVAL);
    Mr& mr = *from_verbs(m);
    if (mr.dm != nullptr) return input_error(EINVAL); // ib_uverbs_rereg_mr: not an MR on DM
    const unsigned new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS) ? static_cast<unsigned>(access)
                                                                     : static_cast<unsigned>(mr.access);
    if (int e = check_access(new_access)) return input_error(e);
    Device& dev = *from_verbs(m->context)->device;
    if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && length > dev.caps.max_mr_size) return input_error(EINVAL);
    Mr& k = kernel_mr(mr); // an imported MR changes the one it names
    Pd* old_pd = k.pd;
    Pd* new_pd = (flags & IBV_REREG_MR_CHANGE_PD) ? kernel_pd(p) : old_pd;
    if (new_pd == nullptr) return input_error(EINVAL);
    {
        // The engine and the transports read MRs under the port lock.
        std::lock_guard lock(dev.port.mutex());
        const datapath::MrEntry* live = dev.mrs.live(m->lkey);
        if (live == nullptr) return input_error(EINVAL);
        datapath::MrEntry entry = *live;
        if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
            entry.addr = entry.host = reinterpret_cast<std::uint64_t>(addr);
            entry.length = length;
        }
        set_access(entry, new_pd, new_access);
        if (implicit_entry(entry) && !entry.odp) return input_error(EINVAL);
        (void)dev.mrs.replace(m->lkey, entry);
    }
    if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
        m->addr = addr;
        m->length = length;
    }
    if (new_pd != old_pd) {
        new_pd->users.fetch_add(1);
        old_pd->users.fetch_sub(1);
        k.pd = new_pd;
    }
    if (flags & IBV_REREG_MR_CHANGE_PD) m->pd = p;
    mr.access = k.access = static_cast<int>(new_access);
    return 0;
}

int dereg_mr(ibv_mr* m) noexcept {
    if (m == nullptr) return EINVAL;
    Context& ctx = *from_verbs(m->context);
    Device& dev = *ctx.device;
    // The kernel object goes, through whichever name (device/import.hpp).
    return destroy_mr_name(ctx, *from_verbs(m), [&](Mr& k) {
        {
            // The engine and the transports read MRs under the port lock: once
            // it is released here, no frame in progress still holds a pointer
            // into the region, and every later one finds the key gone.
            std::lock_guard lock(dev.port.mutex());
            dev.mrs.remove(k.ibmr.lkey);
        }
        k.pd->users.fetch_sub(1);
        if (k.dm != nullptr) k.dm->users.fetch_sub(1); // an MR on device memory
    });
}

} // namespace rdmasim::device
