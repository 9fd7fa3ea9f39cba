// The file behind a shm:// wire (net/README.md, "Shared-memory wire"): its
// layout, its mapping, the host slots programs claim in it and the learning
// switch's MAC table. Every program on the wire maps the same file
// MAP_SHARED; nothing in it is trusted (a peer may write anything there), so
// every index read from it is bounds-checked before use.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "net/result.hpp"

namespace rdmasim::net::shm {

inline constexpr std::uint64_t kMagic = 0x31'57'4d'48'53'53'44'52; // "RDSSHMW1", little-endian
inline constexpr std::uint32_t kVersion = 2;                       // 2: HostHeader on three lines
inline constexpr std::uint32_t kHostSlots = 16;   // programs on one wire at most
inline constexpr std::uint32_t kRingSlots = 256;  // frames per receive ring (a power of two)
inline constexpr std::uint32_t kMaxFrame = 9216 + 14 + 4; // = VdeWire::kMaxFrame
inline constexpr std::uint32_t kSlotHeader = 16;  // stamp (8), length (4), unused (4)
inline constexpr std::uint32_t kSlotBytes = (kSlotHeader + kMaxFrame + 63) / 64 * 64;
inline constexpr std::uint32_t kMacEntries = 256; // the switch's table (a power of two)
inline constexpr std::uint32_t kMacProbe = 8;     // entries a MAC may lie from its hash

// One host slot's shared state, on three lines by who writes them and how
// often: the producers' (every frame), the reader's `consumer` (every
// pull), and the rarely written words producers read every frame, which
// therefore stay in their caches.
struct alignas(64) HostHeader {
    std::uint64_t reserve;    // producers: positions claimed (CAS), ever increasing
    std::uint8_t pad0[56];
    std::uint64_t consumer;   // the reader: positions released (for producers only)
    std::uint8_t pad1[56];
    std::uint32_t sleeping;   // the reader: 1 while it may sleep on its doorbell
    std::uint32_t generation; // bumped by each program that takes the slot
    std::uint8_t pad2[56];
};

struct alignas(64) SegmentHeader {
    std::uint64_t magic; // kMagic, stored last (release) by the creator
    std::uint32_t version;
    std::uint32_t host_slots;
    std::uint32_t ring_slots;
    std::uint32_t slot_bytes;
    std::uint64_t size; // of the whole file
    std::uint8_t pad[32];
    // MAC (low 48 bits) | (host slot + 1) << 48; 0: free.
    std::uint64_t macs[kMacEntries];
    HostHeader hosts[kHostSlots];
};

inline constexpr std::size_t kRingsOffset = (sizeof(SegmentHeader) + 4095) / 4096 * 4096;
inline constexpr std::size_t kRingBytes = std::size_t{kRingSlots} * kSlotBytes;
inline constexpr std::size_t kSegmentBytes = kRingsOffset + std::size_t{kHostSlots} * kRingBytes;

// An atomic view of a word of the mapping (the file holds plain integers).
template <class T> std::atomic_ref<T> word(T& w) noexcept { return std::atomic_ref<T>(w); }

// The mapped segment and the host slot this program holds in it.
class Segment {
public:
    // Opens or creates the file at `path` (`url` names it in errors) with
    // `mode`, maps it and claims a free host slot, whose ring it maps
    // (prefault_ring) unless `prefault` is false. Errors: the directory's
    // (check_socket_directory), EINVAL for a file that is not a segment of
    // this version and size, EBUSY when every host slot is taken.
    static Result<Segment> open(const std::string& url, const std::string& path, std::uint32_t mode,
                                bool prefault = true);
    Segment(Segment&& o) noexcept;
    Segment& operator=(Segment&&) = delete;
    ~Segment(); // forgets this host's MACs, gives the slot back (closing the file drops the lock)

    [[nodiscard]] std::uint32_t host() const noexcept { return host_; }
    [[nodiscard]] SegmentHeader& header() const noexcept { return *reinterpret_cast<SegmentHeader*>(base_); }
    [[nodiscard]] HostHeader& host_header(std::uint32_t h) const noexcept { return header().hosts[h]; }
    // The first byte of slot `i` (masked) of host `h`'s ring.
    [[nodiscard]] std::uint8_t* slot(std::uint32_t h, std::uint64_t i) const noexcept {
        return base_ + kRingsOffset + h * kRingBytes + (i & (kRingSlots - 1)) * kSlotBytes;
    }

    // True while a program holds host slot `h` (its lock is held): one
    // fcntl(F_OFD_GETLK). Own slot: true.
    [[nodiscard]] bool alive(std::uint32_t h) const noexcept;

    // The learning switch. learn() records that `mac` is behind this host
    // (no write when the table says so already); lookup() is the host slot
    // of `mac`, or -1 (unknown, or a table entry out of range); forget()
    // drops every entry naming host `h`.
    void learn(const std::uint8_t* mac) noexcept;
    [[nodiscard]] int lookup(const std::uint8_t* mac) const noexcept;
    void forget(std::uint32_t h) noexcept;

    // Maps host `h`'s ring into this program's page tables now, writable,
    // and touches each page. Without it, the first 256 frames through a
    // ring each cost its writer and its reader a fault: 30 us of each of a
    // ping-pong's first 128 round trips here, the p99 of 5,000.
    void prefault_ring(std::uint32_t h) const noexcept;

    // The doorbell FIFO of host slot `h`: "PATH.bell.H".
    [[nodiscard]] std::string bell_path(std::uint32_t h) const;
    [[nodiscard]] int fd() const noexcept { return fd_; }

private:
    Segment() = default;
    Result<void> map_new(const std::string& url, std::uint32_t mode);
    Result<void> map_existing(const std::string& url);
    Result<void> claim(const std::string& url, bool prefault);

    std::string path_;
    int fd_ = -1;
    std::uint8_t* base_ = nullptr;
    std::uint32_t host_ = 0;
};

// The 48-bit key of a MAC (6 bytes, network order).
[[nodiscard]] inline std::uint64_t mac_key(const std::uint8_t* mac) noexcept {
    std::uint64_t k = 0;
    for (int i = 0; i < 6; ++i) k = k << 8 | mac[i];
    return k;
}

} // namespace rdmasim::net::shm
