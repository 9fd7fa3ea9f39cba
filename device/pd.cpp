#include "device/pd.hpp"

#include <cstring>

#include "device/abi_guard.hpp"
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
        ctx.live_objects.fetch_add(1);
        return &pd.release()->ibpd;
    });
}

int dealloc_pd(ibv_pd* p) noexcept {
    if (p == nullptr) return EINVAL;
    Pd* pd = from_verbs(p);
    if (pd->users.load() != 0) return EBUSY;
    from_verbs(p->context)->live_objects.fetch_sub(1);
    delete pd;
    return 0;
}

ibv_mr* reg_mr(ibv_pd* p, void* addr, size_t length, uint64_t iova, unsigned int access) noexcept {
    return guard_ptr<ibv_mr>([&]() -> ibv_mr* {
        if (p == nullptr || addr == nullptr || length == 0) return fail<ibv_mr>(EINVAL);
        Pd* pd = from_verbs(p);
        Device& dev = *from_verbs(p->context)->device;
        if (int e = injected_failure(dev, Verb::reg_mr)) return fail<ibv_mr>(e);
        if (length > dev.caps.max_mr_size) return fail<ibv_mr>(EINVAL);
        // Remote write or atomic access requires local write (verbs rule).
        if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
            !(access & IBV_ACCESS_LOCAL_WRITE))
            return fail<ibv_mr>(EINVAL);
        const unsigned known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                               IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
                               IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING |
                               IBV_ACCESS_OPTIONAL_RANGE;
        if (access & IBV_ACCESS_ON_DEMAND) return fail<ibv_mr>(EOPNOTSUPP);
        if (access & ~known) return fail<ibv_mr>(EINVAL);
        auto mr = std::make_unique<Mr>();
        datapath::MrEntry entry;
        entry.addr = iova;
        entry.length = length;
        entry.host = reinterpret_cast<std::uint64_t>(addr);
        entry.pd = pd;
        entry.local_write = access & IBV_ACCESS_LOCAL_WRITE;
        entry.remote_read = access & IBV_ACCESS_REMOTE_READ;
        entry.remote_write = access & IBV_ACCESS_REMOTE_WRITE;
        entry.remote_atomic = access & IBV_ACCESS_REMOTE_ATOMIC;
        const std::uint32_t key = dev.mrs.add(entry);
        if (key == 0) return fail<ibv_mr>(ENOMEM);
        mr->access = static_cast<int>(access);
        ibv_mr& m = mr->ibmr;
        m.context = p->context;
        m.pd = p;
        m.addr = addr;
        m.length = length;
        m.handle = dev.next_handle.fetch_add(1);
        m.lkey = key;
        m.rkey = key;
        pd->users.fetch_add(1);
        return &mr.release()->ibmr;
    });
}

int dereg_mr(ibv_mr* m) noexcept {
    if (m == nullptr) return EINVAL;
    Mr* mr = from_verbs(m);
    from_verbs(m->context)->device->mrs.remove(m->lkey);
    from_verbs(m->pd)->users.fetch_sub(1);
    delete mr;
    return 0;
}

} // namespace rdmasim::device
