// Device memory: ibv_alloc_dm, ibv_free_dm, the DM's memcpy ops and
// ibv_reg_dm_mr (device/README.md, "Device memory"). The memory is a
// ConnectX's MEMIC: a BAR of kMaxDmSize bytes per device, handed out in 4 KiB
// pages; an MR on it is zero-based and lives in the device's MrTable like any
// other, so SGEs and a peer's rkey reach it through the same checks.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "device/objects.hpp"

namespace rdmasim::device {

// One allocation (ibv_alloc_dm): `pages` 4 KiB pages of the
// device's MEMIC BAR from `first_page`, held in `mem` (zeroed at allocation).
// An imported DM (ibv_import_dm) is a second name of one: `origin` holds the
// memory, the users and the kernel names (device/import.hpp).
struct Dm {
    ibv_dm ibdm;
    Device* device = nullptr;    // whose BAR the pages are of
    std::uint8_t* mem = nullptr; // pages * 4 KiB, page aligned; owned
    std::uint64_t length = 0;    // as requested: memcpy and reg_dm_mr bounds
    std::uint32_t first_page = 0;
    std::uint32_t pages = 0;
    std::atomic<std::uint32_t> users{0}; // MRs on it: ibv_free_dm is EBUSY
    Dm* origin = nullptr;                // an imported DM: the DM it names
    KernelNames kernel;
    Dm() = default;
    Dm(const Dm&) = delete;
    Dm& operator=(const Dm&) = delete;
    ~Dm(); // the pages free again, the memory freed (the DM allocated)
};
static_assert(std::is_standard_layout_v<Dm>);
inline Dm* from_verbs(ibv_dm* d) noexcept {
    return reinterpret_cast<Dm*>(d);
}
// The DM holding the memory `dm` names: itself, or an import's origin.
[[nodiscard]] inline Dm& kernel_dm(Dm& dm) noexcept {
    return dm.origin != nullptr ? *dm.origin : dm;
}

// max_dm_size: a ConnectX-5/6's MEMIC BAR (memic_bar_size), 128 KiB.
inline constexpr std::uint64_t kMaxDmSize = 128 * 1024;
// The BAR is allocated in pages (mlx5_cmd_alloc_memic: DIV_ROUND_UP(length,
// PAGE_SIZE) pages of a bitmap), a DM's size first rounded up to 64 bytes
// (MLX5_MEMIC_BASE_SIZE).
inline constexpr std::uint64_t kDmPageSize = 4096;
inline constexpr std::uint32_t kDmPages = kMaxDmSize / kDmPageSize;
inline constexpr std::uint64_t kDmBaseSize = 64;
// The largest log_align_req: the kernel takes log_align_req - 6 up to the
// device's log_max_memic_addr_alignment; rdmasim's is 6, so a DM may ask for
// up to page alignment, which every DM has (it starts a page).
inline constexpr std::uint32_t kDmMaxLogAlign = 12;
static_assert(kDmPages <= 64, "Device::dm_pages is a 64-bit map");

// ibv_alloc_dm(3): NULL with errno EINVAL (comp_mask, length 0 or above
// kMaxDmSize, log_align_req above kDmMaxLogAlign) or ENOMEM (no run of free
// pages long enough in the BAR).
ibv_dm* alloc_dm(ibv_context* context, ibv_alloc_dm_attr* attr) noexcept;
// ibv_free_dm(3), through any name of the DM (device/import.hpp,
// destroy_dm_name): 0; EBUSY while MRs on it live; ENOENT once freed through
// another name; EINVAL for NULL.
int free_dm(ibv_dm* dm) noexcept;
// ibv_reg_dm_mr(3): a zero-based MR on [dm_offset, dm_offset + length) of
// the DM; NULL with errno EINVAL for bad access bits, no ZERO_BASED, a range
// outside the DM or a DM of another file than the PD's context; ENOENT for a
// DM freed through another name; ENOMEM when the table is full.
ibv_mr* reg_dm_mr(ibv_pd* pd, ibv_dm* dm, uint64_t dm_offset, size_t length,
                  unsigned int access) noexcept;

} // namespace rdmasim::device
