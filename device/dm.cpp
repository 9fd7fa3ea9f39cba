#include "device/dm.hpp"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>

#include "device/abi_guard.hpp"
#include "device/context.hpp"
#include "device/import.hpp"

namespace rdmasim::device {

namespace {

[[nodiscard]] constexpr std::uint64_t run_mask(std::uint32_t first, std::uint32_t n) noexcept {
    return (n >= 64 ? ~0ull : (1ull << n) - 1) << first;
}

// Claims the first run of `n` free pages of the device's BAR (first fit, as
// mlx5_cmd_alloc_memic's bitmap search); its first page, or none.
std::optional<std::uint32_t> claim_pages(std::atomic<std::uint64_t>& map,
                                         std::uint32_t n) noexcept {
    std::uint64_t used = map.load();
    for (;;) {
        std::optional<std::uint32_t> first;
        for (std::uint32_t p = 0; p + n <= kDmPages && !first; ++p)
            if ((used & run_mask(p, n)) == 0) first = p;
        if (!first) return std::nullopt;
        if (map.compare_exchange_weak(used, used | run_mask(*first, n))) return first;
    }
}

// mlx5_access_dm: the range must lie in the DM (EFAULT), offset and length
// be multiples of 4 bytes (EINVAL: the BAR is written in 32-bit words).
int check_dm_range(const Dm& dm, std::uint64_t offset, std::size_t length,
                   const void* host) noexcept {
    if (offset > dm.length || length > dm.length - offset) return EFAULT;
    if ((length & 3) || (offset & 3)) return EINVAL;
    if (host == nullptr && length != 0) return EFAULT;
    return 0;
}

// Through any name of the DM: the memory is the one allocated, which stays
// while a name does (an import after ibv_free_dm, as mlx5's mapping).
int memcpy_to_dm(ibv_dm* d, uint64_t dm_offset, const void* host_addr, size_t length) {
    if (d == nullptr) return EINVAL;
    Dm& dm = kernel_dm(*from_verbs(d));
    if (int e = check_dm_range(dm, dm_offset, length, host_addr)) return e;
    if (length != 0) std::memcpy(dm.mem + dm_offset, host_addr, length);
    return 0;
}

int memcpy_from_dm(void* host_addr, ibv_dm* d, uint64_t dm_offset, size_t length) {
    if (d == nullptr) return EINVAL;
    Dm& dm = kernel_dm(*from_verbs(d));
    if (int e = check_dm_range(dm, dm_offset, length, host_addr)) return e;
    if (length != 0) std::memcpy(host_addr, dm.mem + dm_offset, length);
    return 0;
}

// The checks of ibv_alloc_dm, in mlx5's order: the provider's (comp_mask,
// max_dm_size), then the kernel's (mlx5_cmd_alloc_memic: size, alignment).
int check_alloc(const ibv_alloc_dm_attr& attr) noexcept {
    if (attr.comp_mask != 0) return EINVAL;
    if (attr.length > kMaxDmSize) return EINVAL;
    if (attr.length == 0) return EINVAL;
    if (attr.log_align_req > kDmMaxLogAlign) return EINVAL;
    return 0;
}

} // namespace

Dm::~Dm() {
    if (device != nullptr && pages != 0) device->dm_pages.fetch_and(~run_mask(first_page, pages));
    std::free(mem);
}

ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr) noexcept {
    return guard_ptr<ibv_dm>([&]() -> ibv_dm* {
        if (context == nullptr || attr == nullptr) return fail<ibv_dm>(EINVAL);
        if (int e = check_alloc(*attr)) return fail<ibv_dm>(e);
        Context& ctx = *from_verbs(context);
        Device& dev = *ctx.device;
        const std::uint64_t size = (attr->length + kDmBaseSize - 1) / kDmBaseSize * kDmBaseSize;
        const auto pages = static_cast<std::uint32_t>((size + kDmPageSize - 1) / kDmPageSize);
        auto dm = std::make_unique<Dm>(); // its destructor undoes what is done below
        dm->mem = static_cast<std::uint8_t*>(std::aligned_alloc(kDmPageSize, pages * kDmPageSize));
        if (dm->mem == nullptr) return fail<ibv_dm>(ENOMEM);
        const auto first = claim_pages(dev.dm_pages, pages);
        if (!first) return fail<ibv_dm>(ENOMEM);
        std::memset(dm->mem, 0, pages * kDmPageSize);
        dm->device = &dev;
        dm->length = attr->length;
        dm->first_page = *first;
        dm->pages = pages;
        ibv_dm& d = dm->ibdm;
        d.context = context;
        d.memcpy_to_dm = memcpy_to_dm;
        d.memcpy_from_dm = memcpy_from_dm;
        d.comp_mask = IBV_DM_MASK_HANDLE;
        d.handle = dev.next_handle.fetch_add(1);
        add_handle(ctx, *dm); // importable (device/import.hpp) until freed
        ctx.live_objects.fetch_add(1);
        return &dm.release()->ibdm;
    });
}

int free_dm(ibv_dm* d) noexcept {
    if (d == nullptr) return EINVAL;
    return destroy_dm_name(*from_verbs(d)); // through whichever name (device/import.hpp)
}

namespace {

// mlx5_reg_dm_mr's access bits (MLX5_DM_ALLOWED_ACCESS); the optional range
// is accepted and, as everywhere here, ignored.
constexpr unsigned kDmAllowedAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
                                      IBV_ACCESS_ZERO_BASED | IBV_ACCESS_OPTIONAL_RANGE;

// In the order a call meets them: the provider's access mask, libibverbs'
// ZERO_BASED rule (ibv_cmd_reg_dm_mr), the kernel's ib_check_mr_access and
// range check (UVERBS_METHOD_DM_MR_REG). All EINVAL.
int check_dm_mr(const ibv_pd* pd, const Dm& dm, std::uint64_t offset, std::size_t length,
                unsigned access) noexcept {
    if (access & ~kDmAllowedAccess) return EINVAL;
    if (!(access & IBV_ACCESS_ZERO_BASED)) return EINVAL;
    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
        !(access & IBV_ACCESS_LOCAL_WRITE))
        return EINVAL;
    // The DM's handle is looked up in the file of the PD's context.
    if (from_verbs(dm.ibdm.context)->file != from_verbs(pd->context)->file) return EINVAL;
    if (offset > dm.length || length > dm.length || length > dm.length - offset) return EINVAL;
    return 0;
}

} // namespace

ibv_mr* reg_dm_mr(ibv_pd* p, ibv_dm* d, uint64_t dm_offset, size_t length,
                  unsigned int access) noexcept {
    return guard_ptr<ibv_mr>([&]() -> ibv_mr* {
        if (p == nullptr || d == nullptr) return fail<ibv_mr>(EINVAL);
        if (int e = check_dm_mr(p, *from_verbs(d), dm_offset, length, access))
            return fail<ibv_mr>(e);
        Pd* pd = kernel_pd(p); // an imported PD: the one it names (device/import.hpp)
        if (pd == nullptr) return fail<ibv_mr>(EINVAL);
        auto mr = std::make_unique<Mr>();
        Dm* k = take_dm_user(*from_verbs(d)); // an imported DM: the one it names
        if (k == nullptr) return fail<ibv_mr>(ENOENT);
        Dm& dm = *k;
        Device& dev = *from_verbs(p->context)->device;
        datapath::MrEntry entry;
        entry.addr = 0; // zero-based: SGEs and rkeys address the MR from 0
        entry.length = length;
        entry.host = reinterpret_cast<std::uint64_t>(dm.mem + dm_offset);
        entry.pd = protection_domain(pd);
        entry.local_write = access & IBV_ACCESS_LOCAL_WRITE;
        entry.remote_read = access & IBV_ACCESS_REMOTE_READ;
        entry.remote_write = access & IBV_ACCESS_REMOTE_WRITE;
        entry.remote_atomic = access & IBV_ACCESS_REMOTE_ATOMIC;
        const std::uint32_t key = dev.mrs.add(entry);
        if (key == 0) {
            dm.users.fetch_sub(1);
            return fail<ibv_mr>(ENOMEM);
        }
        mr->access = static_cast<int>(access);
        mr->dm = &dm;
        mr->pd = pd;
        ibv_mr& m = mr->ibmr;
        m.context = p->context;
        m.pd = p;
        m.addr = nullptr; // as ibv_cmd_reg_dm_mr: the BAR's address is not the program's
        m.length = length;
        m.handle = dev.next_handle.fetch_add(1);
        m.lkey = key;
        m.rkey = key;
        add_handle(*from_verbs(p->context), *mr);
        pd->users.fetch_add(1);
        return &mr.release()->ibmr;
    });
}

} // namespace rdmasim::device
