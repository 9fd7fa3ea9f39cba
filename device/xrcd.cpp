// XRC domains: open (per file, shared), close, and the XRC SRQs of each
// (device/README.md, "XRC").
#include "device/xrcd.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "device/abi_guard.hpp"
#include "device/context.hpp"

namespace rdmasim::device {

ibv_xrcd* open_xrcd(ibv_context* context, ibv_xrcd_init_attr* attr) noexcept {
    return guard_ptr<ibv_xrcd>([&]() -> ibv_xrcd* {
        if (context == nullptr || attr == nullptr) return fail<ibv_xrcd>(EINVAL);
        if (attr->comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED) return fail<ibv_xrcd>(EOPNOTSUPP);
        if (!(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
            !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS))
            return fail<ibv_xrcd>(EINVAL);
        struct stat st{};
        if (attr->fd != -1 && ::fstat(attr->fd, &st) != 0) return fail<ibv_xrcd>(EBADF);
        Context& ctx = *from_verbs(context);
        Device& dev = *ctx.device;
        auto x = std::make_unique<Xrcd>();
        x->ibxrcd.context = context;
        x->ctx = &ctx;
        {
            std::lock_guard port_lock(dev.port.mutex());
            XrcDomain* domain = nullptr;
            if (attr->fd != -1)
                for (const auto& d : dev.xrc_domains)
                    if (!d->is_private && d->file_dev == st.st_dev && d->file_ino == st.st_ino)
                        domain = d.get();
            if (domain == nullptr && !(attr->oflags & O_CREAT)) return fail<ibv_xrcd>(EAGAIN);
            if (domain != nullptr && (attr->oflags & O_EXCL)) return fail<ibv_xrcd>(EINVAL);
            if (domain == nullptr) {
                auto d = std::make_unique<XrcDomain>();
                d->is_private = attr->fd == -1;
                d->file_dev = st.st_dev;
                d->file_ino = st.st_ino;
                domain = d.get();
                dev.xrc_domains.push_back(std::move(d));
            }
            ++domain->opens;
            x->domain = domain;
        }
        ctx.live_objects.fetch_add(1);
        return &x.release()->ibxrcd;
    });
}

int close_xrcd(ibv_xrcd* ix) noexcept {
    return guard_errno([&] {
        if (ix == nullptr) return EINVAL;
        Xrcd* x = from_verbs(ix);
        if (x->users.load() != 0) return EBUSY;
        Device& dev = *x->ctx->device;
        {
            std::lock_guard port_lock(dev.port.mutex());
            if (--x->domain->opens == 0)
                std::erase_if(dev.xrc_domains, [&](const auto& d) { return d.get() == x->domain; });
        }
        Context& ctx = *x->ctx;
        delete x;
        object_destroyed(ctx); // may free the context: last
        return 0;
    });
}

int add_xrc_srq(Srq& srq) noexcept {
    std::lock_guard port_lock(srq.ctx->device->port.mutex());
    try {
        srq.xrcd->domain->srqs.push_back(&srq);
    } catch (const std::bad_alloc&) {
        return ENOMEM;
    }
    return 0;
}

void remove_xrc_srq(Srq& srq) noexcept {
    std::lock_guard port_lock(srq.ctx->device->port.mutex());
    std::erase(srq.xrcd->domain->srqs, &srq);
}

Srq* find_xrc_srq(const XrcDomain& domain, std::uint32_t srqn) noexcept {
    for (Srq* s : domain.srqs)
        if (s->srq_num == srqn) return s;
    return nullptr;
}

} // namespace rdmasim::device
