// Shared contexts, device memory: the DMs of the file's handle table,
// ibv_import_dm, ibv_unimport_dm and ibv_free_dm through any name
// (device/import.hpp; device/README.md, "Shared contexts"). As mlx5: an
// imported DM maps the same MEMIC pages (mlx5_import_dm: DM_QUERY, then an
// mmap of the page index); the pages stay while any name maps them.
#include <cerrno>
#include <memory>
#include <mutex>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/dm.hpp"
#include "device/import.hpp"

namespace rdmasim::device {

void add_handle(Context& ctx, Dm& dm) {
    std::lock_guard lock(ctx.file->lock);
    ctx.file->dms[dm.ibdm.handle] = &dm;
}

Dm* take_dm_user(Dm& dm) noexcept {
    Dm& k = kernel_dm(dm);
    Context& ctx = *from_verbs(dm.ibdm.context);
    std::lock_guard lock(ctx.file->lock);
    if (k.kernel.destroyed.load()) return nullptr;
    k.users.fetch_add(1);
    return &k;
}

int destroy_dm_name(Dm& dm) noexcept {
    Context& ctx = *from_verbs(dm.ibdm.context);
    Dm& k = kernel_dm(dm);
    int e = 0;
    {
        std::lock_guard lock(ctx.file->lock);
        // uverbs_free_dm: the usecnt is the kernel object's, whichever name
        // registered the MRs.
        if (k.users.load() != 0 && !k.kernel.destroyed.load()) return EBUSY;
        // Freed already: the kernel's lookup fails (ENOENT) and mlx5_free_dm
        // keeps its object; an import stays for ibv_unimport_dm, the DM
        // allocated has no other way out, so its name goes.
        if (k.kernel.destroyed.exchange(true)) {
            if (dm.origin != nullptr) return ENOENT;
            e = ENOENT;
        } else {
            ctx.file->dms.erase(k.ibdm.handle);
        }
        detail::drop_name(dm);
    }
    object_destroyed(ctx); // after the file's lock: the context may go, and its file
    return e;
}

ibv_dm* import_dm(ibv_context* context, std::uint32_t dm_handle) noexcept {
    return guard_ptr<ibv_dm>([&]() -> ibv_dm* {
        if (context == nullptr) return fail<ibv_dm>(EINVAL);
        Context& ctx = *from_verbs(context);
        auto dm = std::make_unique<Dm>();
        std::lock_guard lock(ctx.file->lock);
        const auto it = ctx.file->dms.find(dm_handle);
        if (it == ctx.file->dms.end())
            return fail<ibv_dm>(detail::missing_handle_errno(*ctx.file, dm_handle));
        Dm& k = *it->second;
        ++k.kernel.names;
        // What MLX5_IB_METHOD_DM_QUERY tells mlx5_import_dm: the pages and
        // the length requested; the memcpy ops are the same.
        ibv_dm& d = dm->ibdm;
        d.context = context;
        d.memcpy_to_dm = k.ibdm.memcpy_to_dm;
        d.memcpy_from_dm = k.ibdm.memcpy_from_dm;
        d.comp_mask = IBV_DM_MASK_HANDLE;
        d.handle = dm_handle;
        dm->length = k.length;
        dm->origin = &k;
        ctx.live_objects.fetch_add(1);
        return &dm.release()->ibdm;
    });
}

void unimport_dm(ibv_dm* d) noexcept {
    if (d == nullptr || from_verbs(d)->origin == nullptr) return;
    Context& ctx = *from_verbs(d->context);
    {
        std::lock_guard lock(ctx.file->lock);
        detail::drop_name(*from_verbs(d));
    }
    object_destroyed(ctx);
}

} // namespace rdmasim::device
