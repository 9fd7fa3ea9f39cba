// Registered memory regions by lkey, and memory windows by rkey, readable by
// the engine without a lock. Registration and deregistration happen on the
// program's side under the table's own mutex; a slot's key is published last
// (release), so a reader that sees the key sees the fields. An MR's lkey =
// (slot + 1) << 8 | generation; a window's rkey = (slot + 1) << 8 | the key
// byte its last bind chose (datapath/README.md, "Memory windows").
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <type_traits>

namespace rdmasim::datapath {

struct MrEntry {
    static constexpr std::uint32_t kAnyQp = 0xffffffff; // a window any QP of the PD may use
    std::uint64_t addr = 0;   // start in the address space SGEs use (the iova)
    std::uint64_t length = 0;
    std::uint64_t host = 0;   // where addr lives in this process
    const void* pd = nullptr; // owner identity, compared by address
    bool local_write = false;
    // Remote access (IBV_ACCESS_REMOTE_READ / _WRITE / _ATOMIC), checked by
    // translate_remote for the RoCE responder. The rkey is the lkey (as mlx5).
    bool remote_read = false;
    bool remote_write = false;
    bool remote_atomic = false;
    // IBV_ACCESS_ON_DEMAND (datapath/README.md, "On-demand paging"): the
    // pages may be unmapped under the MR at any time, so its bytes are only
    // reached through MrRef and mr_copy.hpp, never by plain loads and stores.
    // Implicit ODP is addr 0, length UINT64_MAX, host 0: all of the process.
    bool odp = false;
    // A memory window (ibv_alloc_mw) instead of an MR. It grants remote
    // access only, while bound, through the MR it was bound to: addr and
    // length are the window (the remote side's addresses), `base` the MR
    // address that addr maps to (addr itself unless zero-based). Never an lkey.
    bool window = false;
    bool bound = false;
    std::uint32_t mr_key = 0;      // the MR's lkey (checked live on every access)
    std::uint64_t base = 0;
    std::uint32_t qpn = kAnyQp;    // type 2: the one QP whose requests may use it
};

// Where a checked range lives: its host address (nullptr: the check failed)
// and whether it is ODP memory, to be copied with mr_copy.hpp's fault-safe
// calls instead of memcpy.
struct MrRef {
    std::uint8_t* host = nullptr;
    bool odp = false;
};

// What a remote request needs of an MR (bits, one per request kind).
enum RemoteAccess : std::uint8_t {
    kRemoteRead = 1u << 0,
    kRemoteWrite = 1u << 1,
    kRemoteAtomic = 1u << 2,
};

class MrTable {
public:
    MrTable() = default;
    explicit MrTable(std::uint32_t max_entries) { reset(max_entries); }
    ~MrTable() { std::free(slots_); }
    MrTable(const MrTable&) = delete;
    MrTable& operator=(const MrTable&) = delete;
    // Empties the table and sizes it. Set-up only: no reader may be active.
    void reset(std::uint32_t max_entries);

    // Returns the new lkey, or 0 when the table is full.
    [[nodiscard]] std::uint32_t add(const MrEntry& entry) noexcept;
    void remove(std::uint32_t lkey) noexcept;
    // ibv_rereg_mr: the live MR `lkey` now describes `entry` (same keys);
    // false when `lkey` is not live. Readers must be excluded by the caller
    // (the port lock).
    bool replace(std::uint32_t lkey, const MrEntry& entry) noexcept;
    // A window's bind: the live slot of `key` now holds `entry` and answers
    // to `new_key` (same slot, new key byte); false when `key` is not live or
    // names another slot. Readers excluded by the caller (the port lock).
    bool rekey(std::uint32_t key, std::uint32_t new_key, const MrEntry& entry) noexcept;

    // The MR check (datapath/README.md, "Per-frame order"): lkey names a live MR of `pd` with local
    // write access (or any access, for reads) that covers [addr, addr + length). Returns the host
    // address of `addr` and whether the MR is ODP; host nullptr when the check fails. Inline: the
    // per-frame path calls it for every SGE it writes. The RoCE transport's local SGEs use it.
    [[nodiscard]] MrRef translate_ref(std::uint32_t lkey, const void* pd, std::uint64_t addr,
                                      std::uint32_t length, bool write) const noexcept {
        const MrEntry* e = live(lkey);
        if (e == nullptr || e->window || e->pd != pd || (write && !e->local_write) ||
            !covers(*e, addr, length))
            return {};
        return {reinterpret_cast<std::uint8_t*>(e->host + (addr - e->addr)), e->odp};
    }
    // translate_ref for callers that memcpy (raw-packet queues): an ODP MR
    // fails the check, so nothing but mr_copy.hpp touches ODP memory.
    [[nodiscard]] std::uint8_t* translate(std::uint32_t lkey, const void* pd, std::uint64_t addr,
                                          std::uint32_t length, bool write) const noexcept {
        const MrRef r = translate_ref(lkey, pd, addr, length, write);
        return r.odp ? nullptr : r.host;
    }
    // The rkey check of a remote READ, WRITE or atomic (datapath/README.md,
    // "RoCE transport"): rkey names a live MR of `pd` granting every bit of
    // `access` that covers [addr, addr + length), or a bound window of `pd`
    // doing the same (a type 2 window only for requests arriving on QP
    // `qpn`) whose MR is live and still covers the range. Host address or
    // nullptr. A zero-length request still needs a live key of the PD with
    // the access. The RoCE responder's check; `odp` as translate_ref's.
    [[nodiscard]] MrRef translate_remote_ref(std::uint32_t rkey, const void* pd, std::uint64_t addr,
                                             std::uint32_t length, std::uint8_t access,
                                             std::uint32_t qpn = MrEntry::kAnyQp) const noexcept;
    // translate_remote_ref for callers that memcpy: an ODP MR fails it.
    [[nodiscard]] std::uint8_t*
    translate_remote(std::uint32_t rkey, const void* pd, std::uint64_t addr, std::uint32_t length,
                     std::uint8_t access, std::uint32_t qpn = MrEntry::kAnyQp) const noexcept {
        const MrRef r = translate_remote_ref(rkey, pd, addr, length, access, qpn);
        return r.odp ? nullptr : r.host;
    }
    [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }
    // The MR or window `key` names, or nullptr when it is not live.
    [[nodiscard]] const MrEntry* live(std::uint32_t key) const noexcept {
        const std::uint32_t i = (key >> 8) - 1;
        if ((key >> 8) == 0 || i >= capacity_) return nullptr;
        Slot& s = slots_[i];
        if (key_of(s).load(std::memory_order_acquire) != key) return nullptr;
        return &s.entry;
    }
    // [addr, addr + length) lies inside the region `e` describes.
    [[nodiscard]] static bool covers(const MrEntry& e, std::uint64_t addr, std::uint32_t length) noexcept {
        return addr >= e.addr && length <= e.length && addr - e.addr <= e.length - length;
    }

private:
    // All-zero bytes are a free slot: the table lives in calloc'd memory, so
    // the 16k slots of a device cost no page until an MR lands in one (the
    // table was 1.1 MiB zeroed by every device creation: about 290 page
    // faults, a tenth of a small replay's run). The entry is written whole
    // before its key is published.
    struct Slot {
        MrEntry entry;
        std::uint32_t lkey; // 0 = free; accessed atomically through key_of()
        std::uint8_t generation;
    };
    static_assert(std::is_trivially_copyable_v<Slot> && std::is_trivially_destructible_v<Slot>,
                  "calloc creates the slots (an implicit-lifetime type)");
    static_assert(alignof(std::uint32_t) >= std::atomic_ref<std::uint32_t>::required_alignment);
    [[nodiscard]] static std::atomic_ref<std::uint32_t> key_of(Slot& s) noexcept {
        return std::atomic_ref<std::uint32_t>(s.lkey);
    }
    // Never reallocated while in use (readers index it without a lock). A
    // plain pointer, freed by the destructor: a unique_ptr with a deleter
    // made Device, which holds the table, lose its standard layout under
    // clang (a tuple with an empty base), which device/objects.hpp asserts.
    Slot* slots_ = nullptr;
    std::uint32_t capacity_ = 0;
    std::uint32_t next_free_hint_ = 0;
    std::mutex mu_;
};

} // namespace rdmasim::datapath
