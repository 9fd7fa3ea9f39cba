// Shared contexts (device/README.md, "Shared contexts"): each context's cmd_fd
// is a descriptor of its ContextFile, the kernel's uverbs file as rdmasim
// models it; ibv_import_device makes a second context on the file of a
// descriptor of this process, and ibv_import_pd / ibv_import_mr /
// ibv_import_dm name the file's PDs, MRs and DMs from it: the same kernel
// object (handle, keys, users, device memory) behind a second user-space
// object, which ibv_unimport_* frees alone. The DM's part is import_dm.cpp.
#pragma once

#include <cerrno>
#include <mutex>

#include "device/context.hpp"
#include "device/objects.hpp"

namespace rdmasim::device {

// A new file and its first descriptor (memfd, O_CLOEXEC) in `cmd_fd`, with
// one context's reference (contexts = 1) for the caller. nullptr with errno
// set on failure.
[[nodiscard]] ContextFile* open_context_file(int& cmd_fd) noexcept;
// A context's reference on `file` goes (the context was freed, or never
// made); the file goes with the last.
void release_context_file(ContextFile* file) noexcept;

// The handle of a PD, MR or DM allocated on `ctx` enters, and leaves with
// its destroy, the table the import verbs look handles up in.
void add_handle(Context& ctx, Pd& pd);
void add_handle(Context& ctx, Mr& mr);
void add_handle(Context& ctx, Dm& dm);

// The PD whose kernel object `pd` names (itself, or an imported PD's
// origin), where a verb counts its users; nullptr once that object was
// destroyed (through another name), for which verbs answer EINVAL as the
// kernel's handle lookup does. A parent domain is its own.
[[nodiscard]] Pd* kernel_pd(ibv_pd* pd) noexcept;
[[nodiscard]] inline Mr& kernel_mr(Mr& mr) noexcept {
    return mr.origin ? *mr.origin : mr;
}

// ibv_dealloc_pd of a PD (not a parent domain) / the kernel part of
// ibv_dereg_mr, through any name of the object: EBUSY while a PD has users;
// ENOENT when the object was destroyed already (through another name), an
// import then staying for ibv_unimport_*, as on mlx5; else the object is
// destroyed and leaves the table (`on_destroy` runs then, for an MR, with
// the file locked). The name goes (freed, its memory with the last name),
// and with it its count in ctx.live_objects (for an MR: an import's).
[[nodiscard]] int destroy_pd_name(Context& ctx, Pd& pd) noexcept;
template <class F> [[nodiscard]] int destroy_mr_name(Context& ctx, Mr& mr, F&& on_destroy) noexcept;
// ibv_free_dm through any name of the DM, as destroy_pd_name: EBUSY while
// MRs on it live; ENOENT when freed already (an import then stays for
// ibv_unimport_dm); else the DM leaves the table. The name goes; the memory
// and the BAR pages with the last name, as mlx5's MEMIC with its last mapping.
[[nodiscard]] int destroy_dm_name(Dm& dm) noexcept;
// ibv_reg_dm_mr's hold on `dm`: the DM holding the memory, with a user taken
// under the file's lock; nullptr once freed (through any name), for which
// the kernel's lookup of the DM handle answers ENOENT.
[[nodiscard]] Dm* take_dm_user(Dm& dm) noexcept;

// ibv_import_device(3) and the import verbs: NULL with errno on failure.
// ibv_import_device takes `cmd_fd` for the new context (ibv_close_device
// closes it) only when it succeeds.
ibv_context* import_device(int cmd_fd) noexcept;
ibv_pd* import_pd(ibv_context* context, std::uint32_t pd_handle) noexcept;
ibv_mr* import_mr(ibv_pd* pd, std::uint32_t mr_handle) noexcept;
ibv_dm* import_dm(ibv_context* context, std::uint32_t dm_handle) noexcept;
// Frees the user-space object alone; one that was not imported is left as is.
void unimport_pd(ibv_pd* pd) noexcept;
void unimport_mr(ibv_mr* mr) noexcept;
void unimport_dm(ibv_dm* dm) noexcept;

namespace detail {
// Drops `obj`'s name of its kernel object; the file's lock held.
void drop_name(Mr& mr) noexcept;
void drop_name(Dm& dm) noexcept;
// The kernel's lookup of a `handle` no object of the wanted type has in
// `file`: EINVAL when an object of another type has it, else ENOENT. The
// file's lock held.
[[nodiscard]] int missing_handle_errno(const ContextFile& file, std::uint32_t handle) noexcept;
} // namespace detail

template <class F> int destroy_mr_name(Context& ctx, Mr& mr, F&& on_destroy) noexcept {
    Mr& k = kernel_mr(mr);
    const bool imported = mr.origin != nullptr;
    int e = 0;
    {
        std::lock_guard lock(ctx.file->lock);
        if (k.kernel.destroyed.exchange(true)) {
            if (imported) return ENOENT;
            e = ENOENT;
        } else {
            ctx.file->mrs.erase(k.ibmr.handle);
            on_destroy(k);
        }
        detail::drop_name(mr);
    }
    if (imported) object_destroyed(ctx); // after the lock: the context may go, and its file
    return e;
}

} // namespace rdmasim::device
