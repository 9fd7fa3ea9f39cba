// PcapFileSource's fast path for classic pcap (net/README.md, "Reading
// captures"): records read straight from a window of the file (one buffer,
// refilled by pread), and the hand-over to libpcap, at the same offset, of
// every record the fast path does not take as ordinary.
#include "net/pcap_file_source.hpp"

#include <pcap/pcap.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rdmasim::net {

namespace {

// Classic pcap magic numbers as read in our byte order (pcap-savefile(5)):
// microsecond or nanosecond timestamps, written in our byte order or swapped.
constexpr std::uint32_t kMagicMicro = 0xa1b2c3d4;
constexpr std::uint32_t kMagicNano = 0xa1b23c4d;
constexpr std::size_t kFileHeaderLen = 24;
constexpr std::size_t kRecordHeaderLen = 16;

std::uint32_t load32(const std::uint8_t* p, bool swapped) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return swapped ? __builtin_bswap32(v) : v;
}

// A classic pcap record header (pcap-savefile(5)).
struct Record {
    std::uint32_t sec, frac; // frac: micro- or nanoseconds, as the magic says
    std::uint32_t caplen, wire_len;
    const std::uint8_t* data; // the captured bytes
    [[nodiscard]] std::uint64_t frac_ns(bool nano) const noexcept {
        return nano ? frac : std::uint64_t{frac} * 1000;
    }
};

// The record at `rec`, `left` bytes before the end of the window: false for
// a cut header, or a record longer than the snapshot or than the file (one
// that is not ordinary: libpcap decides what it is). Inline: the burst walk
// reads one per frame.
inline bool read_record(const std::uint8_t* rec, std::size_t left, std::uint32_t snapshot,
                        bool swapped, Record& out) noexcept {
    if (left < kRecordHeaderLen) return false;
    out.caplen = load32(rec + 8, swapped);
    if (out.caplen > snapshot || out.caplen > left - kRecordHeaderLen) return false;
    out.sec = load32(rec, swapped);
    out.frac = load32(rec + 4, swapped);
    out.wire_len = load32(rec + 12, swapped);
    out.data = rec + kRecordHeaderLen;
    return true;
}

// The window is refilled by reading this much at a time (libpcap reads 1
// MiB too): one buffer, reused, in huge pages (HugeBuffer), so it costs one
// page fault, not 256 of ~10 us each (tests/bench/RESULTS.md, twelfth
// pass). A mapping of the file costs a page-table fill per page instead,
// which on the benchmark guest cost three times the kernel's copy in one of
// its states (ninth pass). A smaller file gets a window its own size.
constexpr std::size_t kWindowLen = std::size_t{1} << 20;

// A burst ends once it spans this much of the file (64-byte frames: 13 a
// burst; 1514-byte ones: one). Each record's header says where the next one
// starts, so a walk over large records is a chain of cache misses the
// hardware does not prefetch, where one record at a time lets the copy of
// a frame stream its way to the next header. Replaying 1M frames of mixed
// sizes, against one record a call: 32 records 1.5x the time, 4 KiB 1.26x,
// 1 KiB 1.04x (tests/bench/RESULTS.md, fourth pass).
constexpr std::size_t kMaxBurstSpan = 1024;

// What one walk may read from its first record on: a burst's span, then a
// whole record (at most the snapshot length) that starts within it.
constexpr std::size_t window_need(std::uint32_t snapshot) noexcept {
    return kMaxBurstSpan + kRecordHeaderLen + snapshot;
}

} // namespace

void PcapFileSource::map_classic(int snapshot) {
    FILE* f = pcap_file(pcap_);
    if (f == nullptr) return;
    struct stat st {};
    if (::fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) ||
        static_cast<std::size_t>(st.st_size) < kFileHeaderLen)
        return;
    const auto len = static_cast<std::size_t>(st.st_size);
    std::uint32_t magic;
    if (::pread(fileno(f), &magic, 4, 0) != 4) return; // libpcap reads it all
    const std::uint32_t swapped_magic = __builtin_bswap32(magic);
    if (magic != kMagicMicro && magic != kMagicNano && swapped_magic != kMagicMicro &&
        swapped_magic != kMagicNano)
        return; // a variant only libpcap knows
    (void)::posix_fadvise(fileno(f), 0, 0, POSIX_FADV_SEQUENTIAL);
    map_snapshot_ = static_cast<std::uint32_t>(std::clamp(snapshot, 0, kMaxRecordLen));
    win_fd_ = fileno(f);
    win_cap_ = std::min(kWindowLen, len) + window_need(map_snapshot_);
    win_ = HugeBuffer(win_cap_);
    if (win_.empty()) return;
    win_off_ = win_len_ = 0;
    map_len_ = len;
    map_offset_ = kFileHeaderLen;
    map_swapped_ = magic != kMagicMicro && magic != kMagicNano;
    map_nano_ = (map_swapped_ ? swapped_magic : magic) == kMagicNano;
}

bool PcapFileSource::fill_window(std::size_t need) noexcept {
    if (map_offset_ < win_off_ || map_offset_ > win_off_ + win_len_) { // libpcap read past it
        win_off_ = map_offset_;
        win_len_ = 0;
    }
    const std::size_t at = map_offset_ - win_off_;
    if (win_len_ - at >= need || win_off_ + win_len_ >= map_len_) return true;
    // Keep what is left, at the start, and read after it.
    std::memmove(win_.data(), win_.data() + at, win_len_ - at);
    win_len_ -= at;
    win_off_ = map_offset_;
    while (win_len_ < win_cap_ && win_off_ + win_len_ < map_len_) {
        const ssize_t r = ::pread(win_fd_, win_.data() + win_len_, win_cap_ - win_len_,
                                  static_cast<off_t>(win_off_ + win_len_));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return false;
        if (r == 0) break; // the file shrank: what is there is all there is
        win_len_ += static_cast<std::size_t>(r);
    }
    return true;
}

bool PcapFileSource::next_mapped(pcap_pkthdr& hdr, const std::uint8_t*& data) noexcept {
    if (map_len_ == map_offset_) { // the end of the file, exactly at a record boundary
        done_.store(true, std::memory_order_release);
        return false;
    }
    if (!fill_window(window_need(map_snapshot_))) return false; // libpcap reads it, and says why not
    const std::size_t at = map_offset_ - win_off_;
    Record r; // a cut header, or an odd record: libpcap says what it is
    if (!read_record(win_.data() + at, win_len_ - at, map_snapshot_, map_swapped_, r)) return false;
    hdr.ts.tv_sec = static_cast<time_t>(r.sec);
    // In nanosecond precision tv_usec holds nanoseconds (as libpcap gives them).
    hdr.ts.tv_usec = static_cast<suseconds_t>(r.frac_ns(map_nano_));
    hdr.caplen = r.caplen;
    hdr.len = r.wire_len;
    data = r.data;
    map_offset_ += kRecordHeaderLen + r.caplen;
    return true;
}

namespace {

// next_mapped_frames' walk over the window, kept in locals: a Frame's
// one-byte fields may alias anything, so a store through one would reload
// members.
struct MapWalk {
    const std::uint8_t* map;
    std::size_t len;
    std::uint32_t snapshot;
    std::uint32_t fcs_len;
    bool swapped, nano;       // the file's byte order and timestamp unit
    std::size_t offset;       // of the next record
    std::uint64_t bytes = 0;  // handed over
    std::uint64_t truncated = 0;
};

std::uint32_t walk(MapWalk& state, Frame* frames, std::size_t want) noexcept {
    MapWalk w = state; // in registers: the Frame stores below cannot touch it
    const std::size_t stop = w.offset + kMaxBurstSpan;
    std::uint32_t n = 0;
    for (Record r; n < want && w.offset < stop; ++n) {
        // The end, a cut header or an odd record: next() reads it the general way.
        if (!read_record(w.map + w.offset, w.len - w.offset, w.snapshot, w.swapped, r)) break;
        Frame& f = frames[n];
        f.data = r.data;
        f.len = std::min(r.caplen, r.wire_len); // as take(): never past what the wire carried
        f.wire_len = r.wire_len;
        f.fcs_len = f.len >= w.fcs_len ? static_cast<std::uint8_t>(w.fcs_len) : 0;
        f.ts_ns = std::uint64_t{r.sec} * 1'000'000'000u + r.frac_ns(w.nano);
        f.lost = false;
        w.offset += kRecordHeaderLen + r.caplen;
        w.bytes += f.len;
        w.truncated += f.len < r.wire_len;
    }
    state = w;
    return n;
}

} // namespace

std::uint32_t PcapFileSource::next_mapped_frames(std::span<Frame> out) noexcept {
    if (!fill_window(window_need(map_snapshot_))) return 0; // libpcap reads it, and says why not
    MapWalk w{win_.data(), win_len_, map_snapshot_, static_cast<std::uint32_t>(fcs_len_), map_swapped_,
              map_nano_, map_offset_ - win_off_};
    const std::uint32_t n = walk(w, out.data(), out.size());
    map_offset_ = win_off_ + w.offset;
    counters_.frames += n;
    counters_.bytes += w.bytes;
    counters_.truncated_records += w.truncated;
    // Progress, as of every 1024th record (or so: a burst counts as one step).
    const std::uint64_t before = records_;
    records_ += n;
    if (n != 0 && (before == 0 || (before >> 10) != (records_ >> 10)))
        position_.store(static_cast<long long>(map_offset_), std::memory_order_relaxed);
    return n;
}

int PcapFileSource::next_libpcap(pcap_pkthdr*& hdr, const std::uint8_t*& data) noexcept {
    FILE* f = !win_.empty() ? pcap_file(pcap_) : nullptr;
    if (f != nullptr && std::fseek(f, static_cast<long>(map_offset_), SEEK_SET) != 0) {
        fail_read(std::strerror(errno));
        return PCAP_ERROR;
    }
    const int rc = pcap_next_ex(pcap_, &hdr, &data);
    if (f != nullptr && rc == 1) map_offset_ = static_cast<std::size_t>(std::ftell(f));
    return rc;
}

} // namespace rdmasim::net
