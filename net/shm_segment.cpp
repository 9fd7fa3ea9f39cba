#include "net/shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "net/socket_dir.hpp"

namespace rdmasim::net::shm {

static_assert(sizeof(HostHeader) == 192);
static_assert((kRingSlots & (kRingSlots - 1)) == 0 && (kMacEntries & (kMacEntries - 1)) == 0);
static_assert(kSlotBytes % 64 == 0 && kRingBytes % 4096 == 0);
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free);

namespace {

constexpr std::uint64_t kMacMask = (std::uint64_t{1} << 48) - 1;
constexpr auto kCreatorWait = std::chrono::seconds(2); // for the first opener to lay the file out

Error sys_error(const std::string& url, const char* what) {
    const int err = errno;
    return make_error(err, fmt::format("wire {}: {}: {}", url, what, std::strerror(err)));
}

Error bad_segment(const std::string& url, const std::string& path, const std::string& why) {
    return make_error(EINVAL, fmt::format("wire {}: {} is not a shm:// wire segment of this rdmasim ({}); "
                                          "remove it if no program uses it", url, path, why));
}

std::uint32_t mac_hash(std::uint64_t key) noexcept {
    return static_cast<std::uint32_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & (kMacEntries - 1);
}

} // namespace

Segment::Segment(Segment&& o) noexcept
    : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)), base_(std::exchange(o.base_, nullptr)),
      host_(o.host_) {}

Segment::~Segment() {
    if (base_ != nullptr) {
        forget(host_);
        word(host_header(host_).sleeping).store(0, std::memory_order_relaxed);
        ::munmap(base_, kSegmentBytes);
    }
    if (fd_ >= 0) ::close(fd_); // drops the slot's lock
}

Result<Segment> Segment::open(const std::string& url, const std::string& path, std::uint32_t mode,
                              bool prefault) {
    if (auto dir = check_socket_directory(socket_directory(path)); !dir) return dir.error();
    Segment s;
    s.path_ = path;
    s.fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 0777);
    if (s.fd_ >= 0) {
        if (auto r = s.map_new(url, mode); !r) {
            ::unlink(path.c_str());
            return r.error();
        }
    } else if (errno == EEXIST) {
        s.fd_ = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (s.fd_ < 0) return sys_error(url, "cannot open the segment");
        if (auto r = s.map_existing(url); !r) return r.error();
    } else {
        return sys_error(url, "cannot create the segment");
    }
    if (auto r = s.claim(url, prefault); !r) return r.error();
    return s;
}

Result<void> Segment::map_new(const std::string& url, std::uint32_t mode) {
    // The mode whatever the umask.
    if (::fchmod(fd_, static_cast<mode_t>(mode & 0777)) != 0 || ::ftruncate(fd_, kSegmentBytes) != 0)
        return sys_error(url, "cannot size the segment");
    void* p = ::mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) return sys_error(url, "cannot map the segment");
    base_ = static_cast<std::uint8_t*>(p);
    SegmentHeader& h = header(); // the file is zeros: every ring empty, every MAC entry free
    h.version = kVersion;
    h.host_slots = kHostSlots;
    h.ring_slots = kRingSlots;
    h.slot_bytes = kSlotBytes;
    h.size = kSegmentBytes;
    word(h.magic).store(kMagic, std::memory_order_release);
    return {};
}

Result<void> Segment::map_existing(const std::string& url) {
    // The creator may still be laying it out: wait for its size, then its magic.
    const auto deadline = std::chrono::steady_clock::now() + kCreatorWait;
    struct stat st{};
    for (;;) {
        if (::fstat(fd_, &st) != 0) return sys_error(url, "cannot examine the segment");
        if (!S_ISREG(st.st_mode)) return bad_segment(url, path_, "not a regular file");
        if (st.st_uid != ::geteuid()) return make_error(EPERM, fmt::format("wire {}: {} belongs to uid {}, not to you",
                                                                           url, path_, st.st_uid));
        if (st.st_size == static_cast<off_t>(kSegmentBytes)) break;
        if (st.st_size > static_cast<off_t>(kSegmentBytes) || std::chrono::steady_clock::now() > deadline)
            return bad_segment(url, path_, fmt::format("{} bytes, not {}", st.st_size, kSegmentBytes));
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    void* p = ::mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (p == MAP_FAILED) return sys_error(url, "cannot map the segment");
    base_ = static_cast<std::uint8_t*>(p);
    SegmentHeader& h = header();
    while (word(h.magic).load(std::memory_order_acquire) != kMagic) {
        if (std::chrono::steady_clock::now() > deadline) return bad_segment(url, path_, "bad magic");
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (h.version != kVersion || h.host_slots != kHostSlots || h.ring_slots != kRingSlots ||
        h.slot_bytes != kSlotBytes || h.size != kSegmentBytes)
        return bad_segment(url, path_, fmt::format("version {}, {} hosts, {} x {}-byte slots", h.version,
                                                   h.host_slots, h.ring_slots, h.slot_bytes));
    return {};
}

Result<void> Segment::claim(const std::string& url, bool prefault) {
    for (std::uint32_t h = 0; h < kHostSlots; ++h) {
        struct flock l{};
        l.l_type = F_WRLCK;
        l.l_whence = SEEK_SET;
        l.l_start = h;
        l.l_len = 1;
        if (::fcntl(fd_, F_OFD_SETLK, &l) != 0) {
            if (errno == EAGAIN || errno == EACCES) continue;
            return sys_error(url, "cannot lock a host slot");
        }
        host_ = h;
        HostHeader& me = host_header(h);
        forget(h); // the last holder's MACs
        // Frames left by the last holder are not ours: start at the producers' index.
        const std::uint64_t start = word(me.reserve).load(std::memory_order_acquire);
        word(me.consumer).store(start, std::memory_order_release);
        word(me.sleeping).store(0, std::memory_order_relaxed);
        word(me.generation).fetch_add(1, std::memory_order_release);
        if (prefault) prefault_ring(h);
        return {};
    }
    return make_error(EBUSY, fmt::format("wire {}: all {} host slots are taken", url, kHostSlots));
}

void Segment::prefault_ring(std::uint32_t h) const noexcept {
    std::uint8_t* ring = slot(h, 0);
#ifdef MADV_POPULATE_WRITE
    // EINVAL before Linux 5.14: the loop below faults them.
    (void)::madvise(ring, kRingBytes, MADV_POPULATE_WRITE);
#endif
    // Then a write access to every page, changing nothing (an atomic OR of
    // 0: a peer may be writing the same word): a hypervisor that shadows
    // page tables builds its entries at the first access, not at the
    // guest's fault (here 20 us a frame through the first lap after
    // MADV_POPULATE_WRITE alone).
    for (std::size_t off = 0; off < kRingBytes; off += 4096)
        word(*reinterpret_cast<std::uint32_t*>(ring + off)).fetch_or(0, std::memory_order_relaxed);
}

bool Segment::alive(std::uint32_t h) const noexcept {
    if (h == host_) return true;
    struct flock l{};
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    l.l_start = h;
    l.l_len = 1;
    if (::fcntl(fd_, F_OFD_GETLK, &l) != 0) return false;
    return l.l_type != F_UNLCK;
}

void Segment::learn(const std::uint8_t* mac) noexcept {
    const std::uint64_t key = mac_key(mac);
    const std::uint64_t want = key | (std::uint64_t{host_} + 1) << 48;
    const std::uint32_t first = mac_hash(key);
    std::uint64_t* free_entry = nullptr;
    for (std::uint32_t i = 0; i < kMacProbe; ++i) {
        std::uint64_t& e = header().macs[(first + i) & (kMacEntries - 1)];
        std::uint64_t v = word(e).load(std::memory_order_relaxed);
        if (v != 0 && (v & kMacMask) == key) {
            if (v != want) word(e).compare_exchange_strong(v, want, std::memory_order_relaxed);
            return;
        }
        if (v == 0 && free_entry == nullptr) free_entry = &e;
    }
    // Not there: a free entry in its window, or the first one (evicted).
    std::uint64_t& e = free_entry != nullptr ? *free_entry : header().macs[first];
    word(e).store(want, std::memory_order_relaxed);
}

int Segment::lookup(const std::uint8_t* mac) const noexcept {
    const std::uint64_t key = mac_key(mac);
    const std::uint32_t first = mac_hash(key);
    for (std::uint32_t i = 0; i < kMacProbe; ++i) {
        const std::uint64_t v = word(header().macs[(first + i) & (kMacEntries - 1)]).load(std::memory_order_relaxed);
        if (v == 0 || (v & kMacMask) != key) continue;
        const std::uint64_t h = (v >> 48) - 1; // an entry is untrusted: in range or unknown
        return h < kHostSlots ? static_cast<int>(h) : -1;
    }
    return -1;
}

void Segment::forget(std::uint32_t h) noexcept {
    for (std::uint64_t& e : header().macs) {
        std::uint64_t v = word(e).load(std::memory_order_relaxed);
        if (v != 0 && (v >> 48) == std::uint64_t{h} + 1)
            word(e).compare_exchange_strong(v, 0, std::memory_order_relaxed);
    }
}

std::string Segment::bell_path(std::uint32_t h) const { return fmt::format("{}.bell.{}", path_, h); }

} // namespace rdmasim::net::shm
