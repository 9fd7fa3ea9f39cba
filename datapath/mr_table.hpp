// Registered memory regions by lkey, readable by the engine without a lock.
// Registration and deregistration happen on the program's side under the
// table's own mutex; a slot's key is published last (release), so a reader
// that sees the key sees the fields. lkey = slot << 8 | generation.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace rdmasim::datapath {

struct MrEntry {
    std::uint64_t addr = 0;   // start in the address space SGEs use (the iova)
    std::uint64_t length = 0;
    std::uint64_t host = 0;   // where addr lives in this process
    const void* pd = nullptr; // owner identity, compared by address
    bool local_write = false;
};

class MrTable {
public:
    MrTable() = default;
    explicit MrTable(std::uint32_t max_entries) { reset(max_entries); }
    // Empties the table and sizes it. Set-up only: no reader may be active.
    void reset(std::uint32_t max_entries);

    // Returns the new lkey, or 0 when the table is full.
    [[nodiscard]] std::uint32_t add(const MrEntry& entry) noexcept;
    void remove(std::uint32_t lkey) noexcept;

    // The MR check (datapath/README.md, "Per-frame order"): lkey names a live MR of `pd` with local write
    // access (or any access, for reads) that covers [addr, addr + length).
    // Returns the host address of `addr`, or nullptr when the check fails.
    [[nodiscard]] std::uint8_t* translate(std::uint32_t lkey, const void* pd, std::uint64_t addr,
                                          std::uint32_t length, bool write) const noexcept;
    [[nodiscard]] std::uint32_t capacity() const noexcept { return capacity_; }

private:
    struct Slot {
        MrEntry entry;
        std::atomic<std::uint32_t> lkey{0}; // 0 = free
        std::uint8_t generation = 0;
    };
    std::vector<Slot> slots_; // never resized while in use (readers index it without a lock)
    std::uint32_t capacity_ = 0;
    std::uint32_t next_free_hint_ = 0;
    std::mutex mu_;
};

} // namespace rdmasim::datapath
