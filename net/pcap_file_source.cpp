#include "net/pcap_file_source.hpp"

#include <pcap/pcap.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>
#include <vector>

namespace rdmasim::net {

namespace {

// Classic pcap link type field, upper bits (libpcap's LT_FCS_* macros and
// pcap-savefile(5)): bit 26 'P' says an FCS length is present, bits 28-31
// give it in 16-bit units.
constexpr std::uint32_t kLtFcsPresent = 0x04000000;
constexpr unsigned kLtFcsShift = 28;
constexpr std::uint32_t kPcapngShb = 0x0a0d0d0a;
constexpr std::uint32_t kPcapngIdb = 0x00000001;
constexpr std::uint32_t kPcapngByteOrder = 0x1a2b3c4d;
constexpr std::uint16_t kOptIfFcslen = 13;
constexpr std::size_t kMaxBlockScan = 1 << 20; // never read more than this looking for an IDB

std::uint32_t bswap32(std::uint32_t v) noexcept {
    return __builtin_bswap32(v);
}
std::uint16_t bswap16(std::uint16_t v) noexcept {
    return __builtin_bswap16(v);
}

struct FileCloser {
    void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

bool read_exact(std::FILE* f, void* buf, std::size_t n) noexcept {
    return std::fread(buf, 1, n, f) == n;
}

// Classic pcap: the FCS length in bytes from the link type field, or nullopt
// when the file does not say.
std::optional<int> classic_fcs_len(std::FILE* f, bool swapped) noexcept {
    std::array<std::uint8_t, 20> rest{}; // header after the magic
    if (!read_exact(f, rest.data(), rest.size())) return std::nullopt;
    std::uint32_t linktype = 0;
    std::memcpy(&linktype, rest.data() + 16, 4);
    if (swapped) linktype = bswap32(linktype);
    if (!(linktype & kLtFcsPresent)) return std::nullopt;
    return static_cast<int>((linktype >> kLtFcsShift) & 0xf) * 2;
}

// pcapng: if_fcslen of the first interface description block, or nullopt.
// The option is one byte giving bytes, as writers (Wireshark) use it; 32 is
// taken as bits. Reads at most kMaxBlockScan bytes of blocks.
std::optional<int> pcapng_fcs_len(std::FILE* f) {
    // The section header block: type (already read), length, byte-order magic.
    std::uint32_t words[2];
    if (!read_exact(f, words, sizeof words)) return std::nullopt;
    bool swapped = false;
    if (words[1] == bswap32(kPcapngByteOrder))
        swapped = true;
    else if (words[1] != kPcapngByteOrder)
        return std::nullopt;
    auto u32 = [swapped](std::uint32_t v) { return swapped ? bswap32(v) : v; };
    auto u16 = [swapped](std::uint16_t v) { return swapped ? bswap16(v) : v; };

    std::uint32_t block_len = u32(words[0]);
    if (block_len < 12 || block_len % 4 != 0) return std::nullopt;
    // Skip the rest of the SHB: 12 bytes (type, length, magic) are consumed.
    if (std::fseek(f, static_cast<long>(block_len) - 12, SEEK_CUR) != 0) return std::nullopt;

    std::size_t scanned = block_len;
    while (scanned < kMaxBlockScan) {
        std::uint32_t hdr[2];
        if (!read_exact(f, hdr, sizeof hdr)) return std::nullopt;
        const std::uint32_t type = u32(hdr[0]);
        block_len = u32(hdr[1]);
        if (block_len < 12 || block_len % 4 != 0 || block_len > kMaxBlockScan) return std::nullopt;
        if (type == kPcapngShb) return std::nullopt; // a new section before any IDB
        if (type != kPcapngIdb) {
            if (std::fseek(f, static_cast<long>(block_len) - 8, SEEK_CUR) != 0) return std::nullopt;
            scanned += block_len;
            continue;
        }
        // IDB body: link type (2), reserved (2), snaplen (4), options; then the trailing length.
        if (block_len < 20) return std::nullopt;
        std::vector<std::uint8_t> body(block_len - 12);
        if (!read_exact(f, body.data(), body.size())) return std::nullopt;
        std::size_t pos = 8;
        while (pos + 4 <= body.size()) {
            std::uint16_t code = 0, len = 0;
            std::memcpy(&code, body.data() + pos, 2);
            std::memcpy(&len, body.data() + pos + 2, 2);
            code = u16(code);
            len = u16(len);
            pos += 4;
            if (code == 0 || pos + len > body.size()) break; // opt_endofopt, or malformed
            if (code == kOptIfFcslen && len == 1) {
                const int v = body[pos];
                return v == 32 ? 4 : v;
            }
            pos += (len + 3u) & ~3u;
        }
        return std::nullopt;
    }
    return std::nullopt;
}

// The FCS length the file declares; nullopt when it declares none (0 is assumed).
std::optional<int> file_fcs_len(const std::string& path) {
    FilePtr f(std::fopen(path.c_str(), "rb"));
    if (!f) return std::nullopt;
    std::uint32_t magic = 0;
    if (!read_exact(f.get(), &magic, 4)) return std::nullopt;
    switch (magic) {
    case 0xa1b2c3d4:
    case 0xa1b23c4d:
        return classic_fcs_len(f.get(), false);
    case 0xd4c3b2a1:
    case 0x4d3cb2a1:
        return classic_fcs_len(f.get(), true);
    case kPcapngShb: // palindromic: same in either byte order
        return pcapng_fcs_len(f.get());
    default:
        return std::nullopt;
    }
}

std::string errno_text(int err) {
    return std::generic_category().message(err);
}

std::string link_type_name(int dlt) {
    const char* name = pcap_datalink_val_to_name(dlt);
    return name ? name : "DLT " + std::to_string(dlt);
}

} // namespace

Result<std::unique_ptr<PcapFileSource>> PcapFileSource::open(const std::string& path,
                                                             std::optional<int> force_fcs_len) {
    const std::string what = "pcap file " + path;
    if (force_fcs_len && *force_fcs_len != 0 && *force_fcs_len != 4)
        return make_error(EINVAL, what + ": forced FCS length " + std::to_string(*force_fcs_len) +
                                      " is not 0 or 4");

    // libpcap reports open failures as text only; check the file first for a precise errno.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || ::access(path.c_str(), R_OK) != 0) {
        const int err = errno;
        return make_error(err, what + ": " + errno_text(err));
    }
    if (S_ISDIR(st.st_mode)) return make_error(EISDIR, what + ": " + errno_text(EISDIR));

    char errbuf[PCAP_ERRBUF_SIZE] = {};
    pcap_t* p =
        pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (!p) {
        int code = EINVAL; // not a capture file, or an unreadable header
        if (std::strstr(errbuf, errno_text(ENOENT).c_str()))
            code = ENOENT;
        else if (std::strstr(errbuf, errno_text(EACCES).c_str()))
            code = EACCES;
        return make_error(code, what + ": " + errbuf);
    }

    std::unique_ptr<PcapFileSource> src(new PcapFileSource());
    src->pcap_ = p; // closed by the destructor from here on
    src->path_ = path;
    src->file_size_ = static_cast<long long>(st.st_size);
    src->read_error_.reserve(PCAP_ERRBUF_SIZE);
    src->linktype_ = pcap_datalink(p);
    if (src->linktype_ != DLT_EN10MB)
        return make_error(EINVAL, what + ": link type " + link_type_name(src->linktype_) + " (" +
                                      std::to_string(src->linktype_) +
                                      ") is not supported, only EN10MB (Ethernet)");

    if (force_fcs_len) {
        src->fcs_len_ = *force_fcs_len;
    } else {
        const int declared = file_fcs_len(path).value_or(0);
        if (declared != 0 && declared != 4)
            return make_error(EINVAL, what + ": FCS length " + std::to_string(declared) +
                                          " bytes is not supported on Ethernet (0 or 4)");
        src->fcs_len_ = declared;
    }
    return src;
}

PcapFileSource::~PcapFileSource() {
    if (pcap_) pcap_close(pcap_);
}

bool PcapFileSource::next(Frame& out) noexcept {
    if (done_.load(std::memory_order_relaxed)) return false;
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    const int rc = pcap_next_ex(pcap_, &hdr, &data);
    if (rc != 1) {
        if (rc == PCAP_ERROR) {
            // Capacity was reserved at open(): libpcap's text fits, so this cannot allocate.
            const char* msg = pcap_geterr(pcap_);
            read_error_.assign(msg, ::strnlen(msg, read_error_.capacity()));
        }
        if (rc == PCAP_ERROR_BREAK || rc == PCAP_ERROR) // end of file, or a read error
            done_.store(true, std::memory_order_release);
        return false;
    }
    out = Frame{};
    out.data = data;
    // A record claiming more captured bytes than the wire carried (a broken
    // writer) holds the frame and then bytes that were never part of it.
    out.len = hdr->caplen <= hdr->len ? hdr->caplen : hdr->len;
    out.wire_len = hdr->len;
    // Set only when the captured bytes hold a whole FCS, so payload() stays meaningful.
    out.fcs_len =
        out.len >= static_cast<std::uint32_t>(fcs_len_) ? static_cast<std::uint8_t>(fcs_len_) : 0;
    // In nanosecond precision tv_usec holds nanoseconds.
    out.ts_ns = static_cast<std::uint64_t>(hdr->ts.tv_sec) * 1'000'000'000u +
                static_cast<std::uint64_t>(hdr->ts.tv_usec);
    if ((counters_.frames++ & 1023) == 0) {
        FILE* f = pcap_file(pcap_);
        if (f != nullptr) position_.store(std::ftell(f), std::memory_order_relaxed);
    }
    counters_.bytes += out.len;
    if (hdr->caplen < hdr->len) ++counters_.truncated_records;
    return true;
}

std::string PcapFileSource::describe() const {
    return "pcap file " + path_ + " (" + link_type_name(linktype_) + ", fcs " +
           std::to_string(fcs_len_) + " bytes)";
}

double PcapFileSource::progress() const noexcept {
    if (done_.load(std::memory_order_acquire)) return 1.0;
    const long long pos = position_.load(std::memory_order_relaxed);
    if (file_size_ <= 0 || pos < 0) return -1;
    return static_cast<double>(pos) / static_cast<double>(file_size_);
}

} // namespace rdmasim::net
