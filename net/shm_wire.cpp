#include "net/shm_wire.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <utility>

#include <fmt/format.h>

namespace rdmasim::net {

namespace {

constexpr std::string_view kScheme = "shm://";
constexpr std::size_t kMacHeader = 14; // destination, source, ether type

std::uint64_t realtime_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// Opens (creating it if need be) the FIFO at `path`, O_RDWR|O_NONBLOCK: a
// reader's doorbell, or a writer's end of a peer's (read-write too, so a
// write never raises SIGPIPE when the peer is gone). -1 and errno on failure.
int open_bell(const std::string& path, std::uint32_t mode, bool create) noexcept {
    if (create) {
        if (::mkfifo(path.c_str(), static_cast<mode_t>(mode & 0777)) == 0)
            (void)::chmod(path.c_str(), static_cast<mode_t>(mode & 0777)); // whatever the umask
        else if (errno != EEXIST)
            return -1;
    }
    const int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return -1;
    struct stat st{};
    if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_uid != ::geteuid()) {
        ::close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

bool multicast(const std::uint8_t* mac) noexcept { return (mac[0] & 1) != 0; } // broadcast too

} // namespace

Result<std::unique_ptr<ShmWire>> ShmWire::open(const std::string& url, const ShmWireOptions& options) {
    if (!url.starts_with(kScheme) || url.size() == kScheme.size())
        return make_error(EINVAL, fmt::format("wire {}: expected shm://PATH", url));
    if ((options.mode & 0600) != 0600)
        return make_error(EINVAL, fmt::format("wire {}: mode {:04o} lacks owner read and write", url, options.mode));
    const std::string path = url.substr(kScheme.size());
    auto seg = shm::Segment::open(url, path, options.mode, options.prefault);
    if (!seg) return seg.error();
    std::unique_ptr<ShmWire> wire(new ShmWire(url, std::move(seg.value()), options));
    wire->bell_fd_ = open_bell(wire->seg_.bell_path(wire->host()), options.mode, true);
    if (wire->bell_fd_ < 0) {
        const int err = errno;
        return make_error(err, fmt::format("wire {}: doorbell {}: {}", url, wire->seg_.bell_path(wire->host()),
                                           std::strerror(err)));
    }
    wire->refresh_peers();
    return wire;
}

ShmWire::ShmWire(std::string url, shm::Segment seg, ShmWireOptions options) noexcept
    : url_(std::move(url)), seg_(std::move(seg)), route_(std::move(options.route)),
      prefault_(options.prefault), reader_(seg_, wire_.rx_corrupt) {
    peer_bells_.fill(-1);
}

ShmWire::~ShmWire() {
    ring_bells(); // what was published since the last flush()
    for (const int fd : peer_bells_)
        if (fd >= 0) ::close(fd);
    if (bell_fd_ >= 0) ::close(bell_fd_);
}

std::string ShmWire::describe() const { return fmt::format("wire {} (host slot {}, no FCS)", url_, host()); }

// --- receiving ---

void ShmWire::hand_over(Frame& out, const std::uint8_t* data, std::uint32_t len, std::uint64_t ts) noexcept {
    out = Frame{};
    out.data = data;
    out.len = len;
    out.wire_len = len;
    out.fcs_len = 0;
    out.ts_ns = ts;
    ++counters_.frames;
    counters_.bytes += len;
}

bool ShmWire::pull(const std::uint8_t*& data, std::uint32_t& len) noexcept {
    // No doorbell here: an empty pull is a program's poll as often as an
    // engine about to sleep, and the engine arms it (prepare_wait).
    return reader_.pull(data, len);
}

bool ShmWire::next(Frame& out) noexcept {
    reader_.release(); // the frame handed over last time is done with
    const std::uint8_t* data = nullptr;
    std::uint32_t len = 0;
    if (!pull(data, len)) return false;
    hand_over(out, data, len, realtime_ns());
    return true;
}

std::uint32_t ShmWire::next_burst(std::span<Frame> out) noexcept {
    reader_.release();
    const std::uint8_t* data = nullptr;
    std::uint32_t len = 0;
    std::uint32_t n = 0;
    const std::uint64_t ts = realtime_ns();
    while (n < out.size() && pull(data, len)) hand_over(out[n++], data, len, ts);
    return n;
}

bool ShmWire::prepare_wait() noexcept {
    return arm(); // the frames handed over stay valid: released at the next pull
}

bool ShmWire::arm() noexcept {
    // Drain the doorbell: its bytes are wake-ups already taken (a late one
    // from a writer that cleared the flag as this reader looked is harmless:
    // the next wait wakes at once, finds nothing, and drains it).
    char sink[64];
    while (::read(bell_fd_, sink, sizeof sink) > 0) {
    }
    return reader_.arm();
}

// --- sending ---

void ShmWire::send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept {
    // In order: while frames wait, a new one goes behind them.
    if ((backlog_.empty() || flush() == 0) && deliver(frame) == Delivery::done) return;
    (void)backlog_.push(frame, ts_ns);
}

std::size_t ShmWire::flush() noexcept {
    const std::size_t waiting =
        backlog_.flush([this](std::span<const std::uint8_t> f, std::uint64_t) {
            return deliver(f) == Delivery::done;
        });
    ring_bells();
    return waiting;
}

std::span<std::uint8_t> ShmWire::claim(std::size_t size, const std::uint8_t* dst_mac) noexcept {
    // send()'s rules: never past waiting frames; what is not plain unicast
    // to a live peer (floods, drops) goes through send().
    if (size < kMacHeader || size > kMaxFrame || multicast(dst_mac)) return {};
    if (!backlog_.empty() && flush() != 0) return {};
    if (std::chrono::steady_clock::now() - peers_checked_ >= kPeerRefresh) refresh_peers();
    const int h = seg_.lookup(dst_mac);
    if (h < 0 || static_cast<std::uint32_t>(h) == host() || !peer_alive(static_cast<std::uint32_t>(h)))
        return {};
    std::uint8_t* slot =
        shm::ring_claim(seg_, static_cast<std::uint32_t>(h), claimed_.pos, consumer_seen_[h]);
    if (slot == nullptr) return {};
    claimed_.slot = slot;
    claimed_.host = static_cast<std::uint32_t>(h);
    return {shm::slot_frame(slot), size};
}

void ShmWire::commit(std::size_t len, std::uint64_t) noexcept {
    if (claimed_.slot == nullptr || len < kMacHeader || len > kMaxFrame) [[unlikely]]
        return; // outside the contract (a claim left unpublished: the reader skips it)
    std::uint8_t src[6]; // read once: a peer may rewrite the slot
    std::memcpy(src, shm::slot_frame(claimed_.slot) + 6, sizeof src);
    if (!multicast(src)) seg_.learn(src);
    shm::ring_publish(claimed_.slot, claimed_.pos, static_cast<std::uint32_t>(len));
    claimed_.slot = nullptr;
    published(claimed_.host);
    wire_.sent(len);
}

ShmWire::Delivery ShmWire::deliver(std::span<const std::uint8_t> frame) noexcept {
    if (frame.size() < kMacHeader || frame.size() > kMaxFrame) [[unlikely]] {
        wire_.tx_dropped.fetch_add(1, std::memory_order_relaxed);
        return Delivery::done;
    }
    if (std::chrono::steady_clock::now() - peers_checked_ >= kPeerRefresh) refresh_peers();
    if (route_) return routed(frame);
    const std::uint8_t* dst = frame.data();
    const std::uint8_t* src = frame.data() + 6;
    if (!multicast(src)) seg_.learn(src);
    const int h = multicast(dst) ? -1 : seg_.lookup(dst);
    if (h < 0) return flood(frame);
    if (static_cast<std::uint32_t>(h) == host()) { // a switch never sends a frame back out its port
        wire_.tx_dropped.fetch_add(1, std::memory_order_relaxed);
        return Delivery::done;
    }
    return unicast(static_cast<std::uint32_t>(h), frame);
}

ShmWire::Delivery ShmWire::routed(std::span<const std::uint8_t> frame) noexcept {
    const int h = route_(frame);
    if (h == kRouteFlood) return flood(frame);
    if (h < 0 || h >= static_cast<int>(shm::kHostSlots) ||
        static_cast<std::uint32_t>(h) == host()) {
        wire_.tx_dropped.fetch_add(1, std::memory_order_relaxed);
        return Delivery::done;
    }
    return unicast(static_cast<std::uint32_t>(h), frame);
}

ShmWire::Delivery ShmWire::unicast(std::uint32_t h, std::span<const std::uint8_t> frame) noexcept {
    if (!peer_alive(h)) { // the table names a host gone: forget it there too
        seg_.forget(h);
        wire_.tx_no_peer.fetch_add(1, std::memory_order_relaxed);
        return Delivery::done;
    }
    if (!shm::ring_push(seg_, h, frame, consumer_seen_[h])) return Delivery::wait;
    published(h);
    wire_.sent(frame.size());
    return Delivery::done;
}

ShmWire::Delivery ShmWire::flood(std::span<const std::uint8_t> frame) noexcept {
    // All or nothing: the frame waits until every live host's ring has room.
    std::uint32_t targets = 0;
    for (std::uint32_t h = 0; h < shm::kHostSlots; ++h) {
        if (h == host() || !peer_alive(h)) continue;
        shm::HostHeader& hh = seg_.host_header(h);
        const std::uint64_t t = shm::word(hh.reserve).load(std::memory_order_acquire);
        const std::uint64_t c = shm::word(hh.consumer).load(std::memory_order_acquire);
        if (t - c >= shm::kRingSlots) return Delivery::wait;
        targets |= 1u << h;
    }
    if (targets == 0) {
        wire_.tx_no_peer.fetch_add(1, std::memory_order_relaxed);
        return Delivery::done;
    }
    for (std::uint32_t h = 0; h < shm::kHostSlots; ++h) {
        if ((targets & (1u << h)) == 0) continue;
        if (shm::ring_push(seg_, h, frame, consumer_seen_[h]))
            published(h);
        else // another producer filled it since: as a switch's full port queue
            wire_.tx_dropped.fetch_add(1, std::memory_order_relaxed);
    }
    wire_.tx_floods.fetch_add(1, std::memory_order_relaxed);
    wire_.sent(frame.size());
    return Delivery::done;
}

bool ShmWire::unread() const noexcept {
    if (!backlog_.empty()) return true;
    for (std::uint32_t h = 0; h < shm::kHostSlots; ++h) {
        if (h == host() || !peer_alive_[h]) continue;
        shm::HostHeader& hh = seg_.host_header(h);
        if (shm::word(hh.reserve).load(std::memory_order_acquire) !=
            shm::word(hh.consumer).load(std::memory_order_acquire))
            return true;
    }
    return false;
}

void ShmWire::ring_bells() noexcept {
    for (std::uint32_t due = bells_due_; due != 0; due &= due - 1) {
        const auto h = static_cast<std::uint32_t>(__builtin_ctz(due));
        if (!shm::ring_needs_bell(seg_, h)) continue;
        if (peer_bells_[h] < 0) peer_bells_[h] = open_bell(seg_.bell_path(h), 0600, false);
        if (peer_bells_[h] < 0) continue; // no doorbell: the reader is not there yet
        const char one = 1;
        if (::write(peer_bells_[h], &one, 1) == 1)
            wire_.doorbells.fetch_add(1, std::memory_order_relaxed);
    }
    bells_due_ = 0;
}

// --- the other hosts ---

bool ShmWire::peer_alive(std::uint32_t h) noexcept {
    // A new holder bumps the slot's generation: look at once, not at the next refresh.
    const std::uint32_t gen = shm::word(seg_.host_header(h).generation).load(std::memory_order_acquire);
    if (gen != peer_gen_[h]) {
        peer_gen_[h] = gen;
        note_peer(h, seg_.alive(h));
    }
    return peer_alive_[h];
}

void ShmWire::refresh_peers() noexcept {
    peers_checked_ = std::chrono::steady_clock::now();
    for (std::uint32_t h = 0; h < shm::kHostSlots; ++h) {
        if (h == host()) continue;
        peer_gen_[h] = shm::word(seg_.host_header(h).generation).load(std::memory_order_acquire);
        note_peer(h, seg_.alive(h));
    }
}

void ShmWire::note_peer(std::uint32_t h, bool alive) noexcept {
    if (alive && !peer_alive_[h]) {
        wire_.peers_seen.fetch_add(1, std::memory_order_relaxed);
        if (prefault_) seg_.prefault_ring(h); // this program writes its frames there
    }
    if (!alive && peer_alive_[h]) { // a pulled cable: its MACs are forgotten
        wire_.peers_gone.fetch_add(1, std::memory_order_relaxed);
        seg_.forget(h);
    }
    peer_alive_[h] = alive;
}

} // namespace rdmasim::net
