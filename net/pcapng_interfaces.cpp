#include "net/pcapng_interfaces.hpp"

#include <cstdio>
#include <cstring>
#include <memory>

namespace rdmasim::net {

namespace {

constexpr std::uint32_t kPcapngShb = 0x0a0d0d0a;
constexpr std::uint32_t kPcapngIdb = 0x00000001;
constexpr std::uint32_t kPcapngByteOrder = 0x1a2b3c4d;
constexpr std::uint16_t kOptIfFcslen = 13;
constexpr std::size_t kMaxBlockScan = 1 << 20; // never read more than this looking for IDBs

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

// if_fcslen of an IDB body (after the block type and length). The option is
// one byte giving bytes, as writers (Wireshark) use it; 32 is taken as bits.
std::optional<int> idb_fcs_len(const std::vector<std::uint8_t>& body, bool swapped) {
    std::size_t pos = 8; // link type (2), reserved (2), snaplen (4)
    while (pos + 4 <= body.size()) {
        std::uint16_t code = 0, len = 0;
        std::memcpy(&code, body.data() + pos, 2);
        std::memcpy(&len, body.data() + pos + 2, 2);
        if (swapped) {
            code = bswap16(code);
            len = bswap16(len);
        }
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

} // namespace

bool is_pcapng(const std::string& path) {
    FilePtr f(std::fopen(path.c_str(), "rb"));
    std::uint32_t magic = 0;
    return f && read_exact(f.get(), &magic, 4) && magic == kPcapngShb; // same in either order
}

// Every IDB within the first kMaxBlockScan (1 MiB) bytes of a pcapng file, in file
// order (all sections). libpcap 1.10 reads the first IDB at open and checks
// the others only when it meets them while reading packets, and it ignores
// if_fcslen: this scan lets open() refuse what libpcap would stop on later,
// and find the FCS length. Stops quietly at anything malformed (libpcap
// reports that when it gets there).
std::vector<PcapngInterface> pcapng_interfaces(const std::string& path) {
    std::vector<PcapngInterface> out;
    FilePtr f(std::fopen(path.c_str(), "rb"));
    if (!f) return out;
    std::uint32_t words[3]; // SHB: type, length, byte-order magic
    if (!read_exact(f.get(), words, sizeof words) || words[0] != kPcapngShb) return out;
    bool swapped = false;
    if (words[2] == bswap32(kPcapngByteOrder))
        swapped = true;
    else if (words[2] != kPcapngByteOrder)
        return out;
    auto u32 = [swapped](std::uint32_t v) { return swapped ? bswap32(v) : v; };

    std::uint32_t block_len = u32(words[1]);
    if (block_len < 12 || block_len % 4 != 0 || block_len > kMaxBlockScan) return out;
    if (std::fseek(f.get(), static_cast<long>(block_len) - 12, SEEK_CUR) != 0) return out;

    std::size_t scanned = block_len;
    std::vector<std::uint8_t> body;
    while (scanned < kMaxBlockScan) {
        std::uint32_t hdr[2];
        if (!read_exact(f.get(), hdr, sizeof hdr)) break;
        const std::uint32_t type = u32(hdr[0]);
        block_len = u32(hdr[1]);
        if (block_len < 12 || block_len % 4 != 0 || block_len > kMaxBlockScan) break;
        scanned += block_len;
        if (type != kPcapngIdb) {
            if (std::fseek(f.get(), static_cast<long>(block_len) - 8, SEEK_CUR) != 0) break;
            continue;
        }
        if (block_len < 20) break;
        body.resize(block_len - 8); // the fixed part, options, trailing length
        if (!read_exact(f.get(), body.data(), body.size())) break;
        body.resize(block_len - 12);
        std::uint16_t linktype = 0;
        std::memcpy(&linktype, body.data(), 2);
        out.push_back({swapped ? bswap16(linktype) : linktype, idb_fcs_len(body, swapped)});
    }
    return out;
}

} // namespace rdmasim::net
