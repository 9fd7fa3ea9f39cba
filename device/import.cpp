// Shared contexts: the file behind cmd_fd, its handle table, the names of a
// kernel object, and the import verbs of PDs and MRs (device/import.hpp;
// DMs are import_dm.cpp's).
#include "device/import.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/dm.hpp"
#include "device/registry.hpp"

namespace rdmasim::device {

ContextFile* open_context_file(int& cmd_fd) noexcept {
    return guard_ptr<ContextFile>([&]() -> ContextFile* {
        // A memfd per file: dup() of it keeps (st_dev, st_ino), which is how
        // ibv_import_device finds the file (anonymous inodes would all match).
        const int fd = ::memfd_create("rdmasim-context", MFD_CLOEXEC);
        if (fd < 0) return nullptr;
        struct stat st;
        const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (own < 0 || ::fstat(fd, &st) != 0) {
            const int e = errno;
            ::close(fd);
            if (own >= 0) ::close(own);
            return fail<ContextFile>(e);
        }
        auto file = std::make_unique<ContextFile>();
        file->contexts.store(1);
        file->file_dev = st.st_dev;
        file->file_ino = st.st_ino;
        file->own_fd = own;
        cmd_fd = fd;
        return file.release();
    });
}

void release_context_file(ContextFile* file) noexcept {
    if (file == nullptr || file->contexts.fetch_sub(1) != 1) return;
    ::close(file->own_fd);
    delete file;
}

void add_handle(Context& ctx, Pd& pd) {
    std::lock_guard lock(ctx.file->lock);
    ctx.file->pds[pd.ibpd.handle] = &pd;
}

void add_handle(Context& ctx, Mr& mr) {
    std::lock_guard lock(ctx.file->lock);
    ctx.file->mrs[mr.ibmr.handle] = &mr;
}

Pd* kernel_pd(ibv_pd* p) noexcept {
    Pd* pd = from_verbs(p);
    Pd* k = pd->origin != nullptr ? pd->origin : pd;
    return k->kernel.destroyed.load() ? nullptr : k;
}

namespace {

// Drops `obj`'s name of the kernel object it names (the file's lock held):
// an import is freed; the object allocated stays while imports name it.
template <class T> void drop(T& obj) noexcept {
    T* k = obj.origin != nullptr ? obj.origin : &obj;
    if (obj.origin != nullptr) delete &obj;
    if (--k->kernel.names == 0) delete k;
}

} // namespace

void detail::drop_name(Mr& mr) noexcept {
    drop(mr);
}

void detail::drop_name(Dm& dm) noexcept {
    drop(dm);
}

int detail::missing_handle_errno(const ContextFile& file, std::uint32_t handle) noexcept {
    const bool other =
        file.pds.contains(handle) || file.mrs.contains(handle) || file.dms.contains(handle);
    return other ? EINVAL : ENOENT;
}

int destroy_pd_name(Context& ctx, Pd& pd) noexcept {
    Pd& k = pd.origin != nullptr ? *pd.origin : pd;
    int e = 0;
    {
        std::lock_guard lock(ctx.file->lock);
        if (k.users.load() != 0 && !k.kernel.destroyed.load()) return EBUSY;
        // Destroyed already (through an import): ENOENT. An import stays
        // for ibv_unimport_pd, as on mlx5; the PD allocated has no other
        // way out, so its name goes.
        if (k.kernel.destroyed.exchange(true)) {
            if (pd.origin != nullptr) return ENOENT;
            e = ENOENT;
        } else {
            ctx.file->pds.erase(k.ibpd.handle);
        }
        drop(pd);
    }
    object_destroyed(ctx); // after the file's lock: the context may go, and its file
    return e;
}

namespace {

// The file a descriptor of this process stands for: the one of a live
// context whose memfd it is, with a context's reference taken for the
// caller; nullptr for any other descriptor.
ContextFile* find_file(const struct stat& st, Device*& owner) {
    std::vector<Device*> devs;
    if (current_devices(devs) != 0) return nullptr;
    for (Device* dev : devs) {
        std::lock_guard lock(dev->port.mutex());
        for (Context* ctx : dev->contexts) {
            if (ctx->file->file_dev != st.st_dev || ctx->file->file_ino != st.st_ino) continue;
            owner = dev;
            ctx->file->contexts.fetch_add(1); // under the port lock: the context cannot go
            return ctx->file;
        }
    }
    return nullptr;
}

} // namespace

ibv_context* import_device(int cmd_fd) noexcept {
    return guard_ptr<ibv_context>([&]() -> ibv_context* {
        // As libibverbs: EINVAL for a descriptor that is not open or not a
        // character device, ENODEV for a character device no device owns.
        // Here every cmd_fd is a memfd: a file that is no context of this
        // process (another process's cmd_fd among them) is EINVAL.
        struct stat st;
        if (::fstat(cmd_fd, &st) != 0) return fail<ibv_context>(EINVAL);
        if (S_ISCHR(st.st_mode)) return fail<ibv_context>(ENODEV);
        Device* dev = nullptr;
        ContextFile* file = find_file(st, dev);
        if (file == nullptr) return fail<ibv_context>(EINVAL);
        ibv_context* context = make_context(*dev, file, cmd_fd);
        if (context == nullptr) release_context_file(file);
        return context;
    });
}

ibv_pd* import_pd(ibv_context* context, std::uint32_t pd_handle) noexcept {
    return guard_ptr<ibv_pd>([&]() -> ibv_pd* {
        if (context == nullptr) return fail<ibv_pd>(EINVAL);
        Context& ctx = *from_verbs(context);
        auto pd = std::make_unique<Pd>();
        std::lock_guard lock(ctx.file->lock);
        const auto it = ctx.file->pds.find(pd_handle);
        // The kernel's lookup: ENOENT for no object, EINVAL for another type.
        if (it == ctx.file->pds.end())
            return fail<ibv_pd>(detail::missing_handle_errno(*ctx.file, pd_handle));
        Pd& k = *it->second;
        ++k.kernel.names;
        pd->ibpd.context = context;
        pd->ibpd.handle = pd_handle;
        pd->origin = &k;
        ctx.live_objects.fetch_add(1);
        return &pd.release()->ibpd;
    });
}

ibv_mr* import_mr(ibv_pd* p, std::uint32_t mr_handle) noexcept {
    return guard_ptr<ibv_mr>([&]() -> ibv_mr* {
        if (p == nullptr) return fail<ibv_mr>(EINVAL);
        Context& ctx = *from_verbs(p->context);
        auto mr = std::make_unique<Mr>();
        std::lock_guard lock(ctx.file->lock);
        const auto it = ctx.file->mrs.find(mr_handle);
        if (it == ctx.file->mrs.end())
            return fail<ibv_mr>(detail::missing_handle_errno(*ctx.file, mr_handle));
        Mr& k = *it->second;
        ++k.kernel.names;
        // What the kernel's QUERY_MR reports: keys and length; the address
        // is NULL, as libibverbs leaves it (ibv_import_mr(3)).
        ibv_mr& m = mr->ibmr;
        m.context = p->context;
        m.pd = p;
        m.handle = mr_handle;
        m.lkey = k.ibmr.lkey;
        m.rkey = k.ibmr.rkey;
        m.length = k.ibmr.length;
        mr->access = k.access;
        mr->origin = &k;
        ctx.live_objects.fetch_add(1);
        return &mr.release()->ibmr;
    });
}

void unimport_pd(ibv_pd* p) noexcept {
    if (p == nullptr || from_verbs(p)->origin == nullptr) return;
    Context& ctx = *from_verbs(p->context);
    {
        std::lock_guard lock(ctx.file->lock);
        drop(*from_verbs(p));
    }
    object_destroyed(ctx);
}

void unimport_mr(ibv_mr* m) noexcept {
    if (m == nullptr || from_verbs(m)->origin == nullptr) return;
    Context& ctx = *from_verbs(m->context);
    {
        std::lock_guard lock(ctx.file->lock);
        drop(*from_verbs(m));
    }
    object_destroyed(ctx);
}

} // namespace rdmasim::device
