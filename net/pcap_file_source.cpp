#include "net/pcap_file_source.hpp"

#include "net/pcapng_interfaces.hpp"

#include <pcap/pcap.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sys/mman.h>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace rdmasim::net {

namespace {


constexpr std::uint32_t kEthHeaderLen = 14;
constexpr std::uint32_t kSllHeaderLen = 16;  // pcap/sll.h SLL_HDR_LEN
constexpr std::uint32_t kSll2HeaderLen = 20; // pcap/sll.h SLL2_HDR_LEN
constexpr std::uint32_t kNullHeaderLen = 4;  // the address family word of DLT_NULL / DLT_LOOP
constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::uint16_t kEtherTypeIpv6 = 0x86dd;
constexpr std::uint16_t kEtherTypeMin = 0x0600; // below: an 802.3 length, not a type
constexpr std::uint16_t kMax8023Length = 1500;
// Cooked protocol values that are not EtherTypes (pcap/sll.h LINUX_SLL_P_*):
// the payload follows an 802.3 length field.
constexpr std::uint16_t kSllProto8023 = 0x0001; // Novell raw 802.3
constexpr std::uint16_t kSllProto8022 = 0x0004; // 802.2 LLC
constexpr std::uint16_t kArphrdEther = 1;       // the cooked header's hatype for Ethernet devices
// The LINKTYPE_ number of raw IP in files; libpcap maps it to DLT_RAW (12 on Linux).
constexpr std::uint16_t kLinktypeRaw = 101;

// The link types handed over, in the order the refusal message lists them.
constexpr std::array kSupportedDlts = {DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, DLT_RAW,
                                       DLT_IPV4,   DLT_IPV6,      DLT_NULL,       DLT_LOOP};

std::uint16_t be16(const std::uint8_t* p) noexcept {
    return static_cast<std::uint16_t>(p[0] << 8 | p[1]);
}


std::string errno_text(int err) {
    return std::generic_category().message(err);
}

std::string link_type_name(int dlt) {
    const char* name = pcap_datalink_val_to_name(dlt);
    return name ? name : "DLT " + std::to_string(dlt);
}

// libpcap's DLT_ value for a LINKTYPE_ value read from a file, for the link
// types this source knows (they are equal but for raw IP).
int dlt_of_linktype(std::uint16_t linktype) {
    return linktype == kLinktypeRaw ? DLT_RAW : linktype;
}

std::string supported_list() {
    std::string s;
    for (const int dlt : kSupportedDlts)
        s += (s.empty() ? "" : ", ") + link_type_name(dlt);
    return s;
}

std::string mac_text(const MacAddress& m) {
    char buf[18];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                  m[5]);
    return buf;
}

// Why libpcap 1.10 cannot read these interfaces as one stream, or "". Its
// pcapng reader has one link type per file (the first IDB's), checks each
// later IDB's LINKTYPE_ number against that DLT_ number and stops with a
// read error when they differ (so two raw-IP interfaces, 101 against 12,
// stop it too), and never says which interface a packet came on, so
// interfaces cannot differ in FCS length either.
std::string interfaces_problem(const std::vector<PcapngInterface>& ifs, int dlt, bool fcs_forced) {
    if (ifs.size() < 2) return {};
    auto list = [&ifs](auto&& field) {
        std::string s;
        for (std::size_t i = 0; i < ifs.size() && i < 8; ++i)
            s += (i ? ", " : "") + ("interface " + std::to_string(i) + ": ") + field(ifs[i]);
        if (ifs.size() > 8) s += ", ...";
        return s;
    };
    auto type_of = [](const PcapngInterface& i) {
        return link_type_name(dlt_of_linktype(i.linktype));
    };
    bool mixed_types = false, libpcap_mismatch = false, mixed_fcs = false;
    for (std::size_t i = 1; i < ifs.size(); ++i) {
        mixed_types |= dlt_of_linktype(ifs[i].linktype) != dlt_of_linktype(ifs[0].linktype);
        libpcap_mismatch |= ifs[i].linktype != dlt;
        mixed_fcs |= ifs[i].fcs_len.value_or(0) != ifs[0].fcs_len.value_or(0);
    }
    if (mixed_types)
        return "pcapng interfaces of different link types (" + list(type_of) +
               "): libpcap reads one link type per file and does not say which interface a "
               "packet came on; split the file per interface";
    if (libpcap_mismatch)
        return std::to_string(ifs.size()) + " pcapng interfaces of link type " + type_of(ifs[0]) +
               ": libpcap stops at every interface after the first whose LINKTYPE number (" +
               std::to_string(ifs[1].linktype) + ") is not its DLT number (" + std::to_string(dlt) +
               "); split the file per interface";
    if (mixed_fcs && !fcs_forced)
        return "pcapng interfaces with different FCS lengths (" +
               list([](const PcapngInterface& i) {
                   return std::to_string(i.fcs_len.value_or(0)) + " bytes";
               }) +
               "): libpcap does not say which interface a packet came on; force one FCS length";
    return {};
}

std::uint16_t ether_type_of_ip(std::uint8_t first_byte) noexcept {
    switch (first_byte >> 4) {
    case 4:
        return kEtherTypeIpv4;
    case 6:
        return kEtherTypeIpv6;
    default:
        return 0;
    }
}

// The type/length field for a cooked record's payload, or 0 when no Ethernet
// NIC could have received it (CAN, netlink, 802.11, ...). An EtherType is
// kept as it is, 0x8100 included (libpcap puts the VLAN tag of Linux's
// PACKET_AUXDATA back into LINUX_SLL records as a protocol of 0x8100 followed
// by the TCI); 802.2 and Novell 802.3 payloads from an Ethernet device get
// back their 802.3 length field.
std::uint16_t cooked_type(std::uint16_t hatype, std::uint16_t protocol,
                          std::uint32_t payload_wire_len) noexcept {
    if (protocol >= kEtherTypeMin) return protocol;
    if ((protocol == kSllProto8022 || protocol == kSllProto8023) && hatype == kArphrdEther &&
        payload_wire_len <= kMax8023Length)
        return static_cast<std::uint16_t>(payload_wire_len);
    return 0;
}

std::uint64_t timestamp_ns(const pcap_pkthdr& hdr) noexcept {
    // In nanosecond precision tv_usec holds nanoseconds.
    return static_cast<std::uint64_t>(hdr.ts.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(hdr.ts.tv_usec);
}

} // namespace

Result<std::unique_ptr<PcapFileSource>> PcapFileSource::open(const std::string& path,
                                                             const PcapOpenOptions& options) {
    const std::string what = "pcap file " + path;
    const std::optional<int> forced = options.force_fcs_len;
    if (forced && *forced != 0 && *forced != 4)
        return make_error(EINVAL, what + ": forced FCS length " + std::to_string(*forced) +
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
    src->linktype_ = pcap_datalink(p);
    const std::string type = link_type_name(src->linktype_);
    switch (src->linktype_) {
    case DLT_EN10MB:
        src->link_ = Link::ethernet;
        break;
    case DLT_LINUX_SLL:
        src->link_ = Link::linux_sll;
        break;
    case DLT_LINUX_SLL2:
        src->link_ = Link::linux_sll2;
        break;
    case DLT_RAW:
        src->link_ = Link::raw_ip;
        break;
    case DLT_IPV4:
        src->link_ = Link::ipv4;
        break;
    case DLT_IPV6:
        src->link_ = Link::ipv6;
        break;
    case DLT_NULL:
    case DLT_LOOP:
        src->link_ = Link::bsd_null;
        break;
    default:
        return make_error(EINVAL, what + ": link type " + type + " (" +
                                      std::to_string(src->linktype_) +
                                      ") is not supported: it carries no IP-over-Ethernet "
                                      "traffic; supported link types: " +
                                      supported_list());
    }

    // The FCS length the file declares: pcapng keeps it per interface, in
    // if_fcslen, which libpcap does not read; classic pcap in the link type
    // field's upper bits, which pcap_datalink_ext() returns.
    int declared = 0;
    const bool pcapng = is_pcapng(path);
    if (pcapng) {
        const auto interfaces = pcapng_interfaces(path);
        if (auto why = interfaces_problem(interfaces, src->linktype_, forced.has_value());
            !why.empty())
            return make_error(EINVAL, what + ": " + why);
        if (!interfaces.empty()) declared = interfaces.front().fcs_len.value_or(0);
    } else {
        const auto ext = static_cast<std::uint32_t>(pcap_datalink_ext(p));
        if (LT_FCS_LENGTH_PRESENT(ext)) declared = static_cast<int>(LT_FCS_LENGTH(ext)) * 2;
    }

    if (src->link_ == Link::ethernet) {
        if (forced) {
            src->fcs_len_ = *forced;
        } else {
            if (declared != 0 && declared != 4)
                return make_error(EINVAL, what + ": FCS length " + std::to_string(declared) +
                                              " bytes is not supported on Ethernet (0 or 4)");
            src->fcs_len_ = declared;
        }
    } else {
        // A synthesized header has no FCS behind the packet; the port computes one if asked.
        const int wanted = forced.value_or(declared);
        if (wanted != 0)
            return make_error(EINVAL, what + ": " + (forced ? "forced" : "declared") +
                                          " FCS length " + std::to_string(wanted) +
                                          " bytes on link type " + type +
                                          ", whose records carry no Ethernet FCS");
        src->synth_dst_ = options.synth_dst_mac;
        src->synth_src_ = options.synth_src_mac;
        // libpcap hands over at most the snapshot length (it cuts longer
        // records, and refuses those beyond its per-link-type maximum,
        // 262144 bytes for every link type read here). The header's snapshot
        // length is not clamped to it: a corrupt one asked for 218 MB here.
        const int snap = std::min(pcap_snapshot(p), kMaxRecordLen);
        src->scratch_.resize(static_cast<std::size_t>(std::max(snap, 0)) + kEthHeaderLen);
    }
    if (!pcapng && options.map_file) src->map_classic(pcap_snapshot(p));
    // Room for fail_read()'s sentence, so that building it never allocates.
    src->read_error_.reserve(what.size() + 48 + PCAP_ERRBUF_SIZE);
    return src;
}

PcapFileSource::~PcapFileSource() {
    if (pcap_) pcap_close(pcap_);
}

void PcapFileSource::fail_read(const char* why) noexcept {
    // Capacity was reserved at open(): every piece fits, so this cannot allocate.
    char number[24];
    const auto end = std::to_chars(number, number + sizeof number, records_ + 1).ptr;
    read_error_.clear();
    read_error_.append("pcap file ").append(path_).append(": record ");
    read_error_.append(number, end).append(": ");
    read_error_.append(why, ::strnlen(why, PCAP_ERRBUF_SIZE));
    done_.store(true, std::memory_order_release); // after the text: failure() follows exhausted()
}

std::uint32_t PcapFileSource::next_burst(std::span<Frame> out) noexcept {
    if (!win_.empty() && link_ == Link::ethernet) [[likely]] {
        if (const std::uint32_t n = next_mapped_frames(out); n != 0) [[likely]]
            return n;
    }
    return FrameSource::next_burst(out); // one frame, the general way
}

bool PcapFileSource::next(Frame& out) noexcept {
    if (!win_.empty() && link_ == Link::ethernet && next_mapped_frames({&out, 1}) == 1) [[likely]]
        return true;
    while (!done_.load(std::memory_order_relaxed)) {
        pcap_pkthdr mapped;
        pcap_pkthdr* hdr = &mapped;
        const u_char* data = nullptr;
        if (win_.empty() || !next_mapped(mapped, data)) {
            if (done_.load(std::memory_order_relaxed)) return false;
            const int rc = next_libpcap(hdr, data);
            if (rc == PCAP_ERROR_BREAK) { // end of file
                done_.store(true, std::memory_order_release);
                return false;
            }
            if (rc != 1) {
                if (rc < 0 && !done_.load(std::memory_order_relaxed)) fail_read(pcap_geterr(pcap_));
                return false;
            }
        }
        if ((records_++ & 1023) == 0) {
            FILE* f = pcap_file(pcap_);
            const long long pos = !win_.empty() ? static_cast<long long>(map_offset_)
                                  : f  ? static_cast<long long>(std::ftell(f))
                                       : -1;
            position_.store(pos, std::memory_order_relaxed);
        }
        if (take(*hdr, data, out)) return true;
    }
    return false;
}

bool PcapFileSource::take(const pcap_pkthdr& hdr, const std::uint8_t* data, Frame& out) noexcept {
    // A record claiming more captured bytes than the wire carried (a broken
    // writer) holds the frame and then bytes that were never part of it.
    const std::uint32_t caplen = std::min(hdr.caplen, hdr.len);
    if (link_ == Link::ethernet) {
        out = Frame{};
        out.data = data;
        out.len = caplen;
        out.wire_len = hdr.len;
        // Set only when the captured bytes hold a whole FCS, so payload() stays meaningful.
        out.fcs_len = out.len >= static_cast<std::uint32_t>(fcs_len_)
                          ? static_cast<std::uint8_t>(fcs_len_)
                          : 0;
    } else if (synthesize(caplen, hdr.len, data, out)) {
        ++counters_.synthesized_headers;
    } else {
        ++counters_.skipped_records;
        return false;
    }
    out.ts_ns = timestamp_ns(hdr);
    ++counters_.frames;
    counters_.bytes += out.len;
    if (out.len < out.wire_len) ++counters_.truncated_records;
    return true;
}

bool PcapFileSource::synthesize(std::uint32_t caplen, std::uint32_t wire_len,
                                const std::uint8_t* data, Frame& out) noexcept {
    std::uint32_t link_len = 0; // bytes of the record's own link header, replaced
    std::uint16_t type = 0;     // the Ethernet type/length field
    switch (link_) {
    case Link::linux_sll: // pkttype, hatype, halen, addr[8], protocol
        link_len = kSllHeaderLen;
        if (caplen < link_len) return false;
        type = cooked_type(be16(data + 2), be16(data + 14), wire_len - link_len);
        break;
    case Link::linux_sll2: // protocol, reserved, ifindex, hatype, pkttype, halen, addr[8]
        link_len = kSll2HeaderLen;
        if (caplen < link_len) return false;
        type = cooked_type(be16(data + 8), be16(data), wire_len - link_len);
        break;
    case Link::raw_ip:
        if (caplen < 1) return false;
        type = ether_type_of_ip(data[0]);
        break;
    case Link::ipv4:
        type = kEtherTypeIpv4;
        break;
    case Link::ipv6:
        type = kEtherTypeIpv6;
        break;
    case Link::bsd_null: // the address family's value differs between systems: look at the packet
        link_len = kNullHeaderLen;
        if (caplen <= link_len) return false;
        type = ether_type_of_ip(data[link_len]);
        break;
    case Link::ethernet:
        return false;
    }
    if (type == 0) return false;

    const auto room = static_cast<std::uint32_t>(scratch_.size()) - kEthHeaderLen;
    const std::uint32_t copied = std::min(caplen - link_len, room);
    std::uint8_t* f = scratch_.data();
    std::memcpy(f, synth_dst_.data(), 6);
    std::memcpy(f + 6, synth_src_.data(), 6);
    f[12] = static_cast<std::uint8_t>(type >> 8);
    f[13] = static_cast<std::uint8_t>(type);
    if (copied) std::memcpy(f + kEthHeaderLen, data + link_len, copied);
    out = Frame{};
    out.data = f;
    out.len = kEthHeaderLen + copied;
    const std::uint64_t wire = std::uint64_t{kEthHeaderLen} + (wire_len - link_len);
    out.wire_len = static_cast<std::uint32_t>(
        std::min<std::uint64_t>(wire, std::numeric_limits<std::uint32_t>::max()));
    return true;
}

std::string PcapFileSource::describe() const {
    const std::string head = "pcap file " + path_ + " (" + link_type_name(linktype_);
    if (link_ == Link::ethernet) return head + ", fcs " + std::to_string(fcs_len_) + " bytes)";
    return head + ", Ethernet header synthesized, " + mac_text(synth_src_) + " -> " +
           mac_text(synth_dst_) + ")";
}

double PcapFileSource::progress() const noexcept {
    if (done_.load(std::memory_order_acquire)) return 1.0;
    const long long pos = position_.load(std::memory_order_relaxed);
    if (file_size_ <= 0 || pos < 0) return -1;
    return static_cast<double>(pos) / static_cast<double>(file_size_);
}

} // namespace rdmasim::net
