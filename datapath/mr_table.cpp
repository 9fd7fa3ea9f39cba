#include "datapath/mr_table.hpp"

#include <new>

namespace rdmasim::datapath {

void MrTable::reset(std::uint32_t max_entries) {
    std::lock_guard lock(mu_);
    std::free(slots_);
    slots_ = nullptr;
    capacity_ = 0;
    if (max_entries != 0) {
        slots_ = static_cast<Slot*>(std::calloc(max_entries, sizeof(Slot)));
        if (slots_ == nullptr) throw std::bad_alloc();
    }
    capacity_ = max_entries;
    next_free_hint_ = 0;
}

std::uint32_t MrTable::add(const MrEntry& entry) noexcept {
    std::lock_guard lock(mu_);
    for (std::uint32_t n = 0; n < capacity_; ++n) {
        const std::uint32_t i = (next_free_hint_ + n) % capacity_;
        Slot& s = slots_[i];
        if (key_of(s).load(std::memory_order_relaxed) != 0) continue;
        s.entry = entry;
        s.generation = static_cast<std::uint8_t>(s.generation + 1);
        if (s.generation == 0) s.generation = 1; // keep lkey 0 meaning "none"
        const std::uint32_t lkey = (i + 1) << 8 | s.generation;
        key_of(s).store(lkey, std::memory_order_release);
        next_free_hint_ = (i + 1) % capacity_;
        return lkey;
    }
    return 0;
}

void MrTable::remove(std::uint32_t lkey) noexcept {
    std::lock_guard lock(mu_);
    const std::uint32_t i = (lkey >> 8) - 1;
    if ((lkey >> 8) == 0 || i >= capacity_) return;
    std::uint32_t expected = lkey;
    key_of(slots_[i]).compare_exchange_strong(expected, 0, std::memory_order_acq_rel);
}

bool MrTable::replace(std::uint32_t lkey, const MrEntry& entry) noexcept {
    std::lock_guard lock(mu_);
    const std::uint32_t i = (lkey >> 8) - 1;
    if ((lkey >> 8) == 0 || i >= capacity_ || key_of(slots_[i]).load(std::memory_order_relaxed) != lkey)
        return false;
    slots_[i].entry = entry;
    return true;
}

bool MrTable::rekey(std::uint32_t key, std::uint32_t new_key, const MrEntry& entry) noexcept {
    std::lock_guard lock(mu_);
    const std::uint32_t i = (key >> 8) - 1;
    if ((key >> 8) == 0 || (new_key >> 8) != (key >> 8) || i >= capacity_ ||
        key_of(slots_[i]).load(std::memory_order_relaxed) != key)
        return false;
    slots_[i].entry = entry;
    key_of(slots_[i]).store(new_key, std::memory_order_release);
    return true;
}

MrRef MrTable::translate_remote_ref(std::uint32_t rkey, const void* pd, std::uint64_t addr,
                                    std::uint32_t length, std::uint8_t access,
                                    std::uint32_t qpn) const noexcept {
    const MrEntry* e = live(rkey);
    if (e == nullptr || e->pd != pd) return {};
    if (((access & kRemoteRead) && !e->remote_read) ||
        ((access & kRemoteWrite) && !e->remote_write) ||
        ((access & kRemoteAtomic) && !e->remote_atomic) || !covers(*e, addr, length))
        return {};
    if (!e->window) return {reinterpret_cast<std::uint8_t*>(e->host + (addr - e->addr)), e->odp};
    if (!e->bound || (e->qpn != MrEntry::kAnyQp && e->qpn != qpn)) return {};
    // Through the MR the window was bound to, which may have gone or shrunk since.
    const MrEntry* mr = live(e->mr_key);
    const std::uint64_t at = e->base + (addr - e->addr);
    if (mr == nullptr || mr->window || mr->pd != pd || !covers(*mr, at, length)) return {};
    return {reinterpret_cast<std::uint8_t*>(mr->host + (at - mr->addr)), mr->odp};
}

} // namespace rdmasim::datapath
