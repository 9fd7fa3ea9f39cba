// PcapFileSource::open (net/README.md, "Reading captures"): the file checked,
// opened by libpcap, its link type and FCS length settled, the fast path set
// up for a classic file; and the description of what was opened.
#include "net/pcap_file_source.hpp"

#include "net/headers.hpp"
#include "net/pcapng_interfaces.hpp"

#include <pcap/pcap.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>

namespace rdmasim::net {

namespace {

// The LINKTYPE_ number of raw IP in files; libpcap maps it to DLT_RAW (12 on Linux).
constexpr std::uint16_t kLinktypeRaw = 101;

// The link types handed over, in the order the refusal message lists them.
constexpr std::array kSupportedDlts = {DLT_EN10MB, DLT_LINUX_SLL, DLT_LINUX_SLL2, DLT_RAW,
                                       DLT_IPV4,   DLT_IPV6,      DLT_NULL,       DLT_LOOP};

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

// The file's size, once it is known to be a readable file (libpcap reports
// open failures as text only: this gives the precise errno).
Result<long long> readable_file_size(const std::string& path, const std::string& what) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || ::access(path.c_str(), R_OK) != 0) {
        const int err = errno;
        return make_error(err, what + ": " + errno_text(err));
    }
    if (S_ISDIR(st.st_mode)) return make_error(EISDIR, what + ": " + errno_text(EISDIR));
    return static_cast<long long>(st.st_size);
}

Result<pcap_t*> open_libpcap(const std::string& path, const std::string& what) {
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    pcap_t* p = pcap_open_offline_with_tstamp_precision(path.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (p) return p;
    int code = EINVAL; // not a capture file, or an unreadable header
    if (std::strstr(errbuf, errno_text(ENOENT).c_str()))
        code = ENOENT;
    else if (std::strstr(errbuf, errno_text(EACCES).c_str()))
        code = EACCES;
    return make_error(code, what + ": " + errbuf);
}

// The FCS length the file declares: pcapng keeps it per interface, in
// if_fcslen, which libpcap does not read; classic pcap in the link type
// field's upper bits, which pcap_datalink_ext() returns.
Result<int> declared_fcs_len(const std::string& path, bool pcapng, pcap_t* p, int dlt, bool forced,
                             const std::string& what) {
    if (!pcapng) {
        const auto ext = static_cast<std::uint32_t>(pcap_datalink_ext(p));
        return LT_FCS_LENGTH_PRESENT(ext) ? static_cast<int>(LT_FCS_LENGTH(ext)) * 2 : 0;
    }
    const auto interfaces = pcapng_interfaces(path);
    if (auto why = interfaces_problem(interfaces, dlt, forced); !why.empty())
        return make_error(EINVAL, what + ": " + why);
    return interfaces.empty() ? 0 : interfaces.front().fcs_len.value_or(0);
}

} // namespace

std::optional<PcapFileSource::Link> PcapFileSource::link_of(int dlt) noexcept {
    switch (dlt) {
    case DLT_EN10MB:
        return Link::ethernet;
    case DLT_LINUX_SLL:
        return Link::linux_sll;
    case DLT_LINUX_SLL2:
        return Link::linux_sll2;
    case DLT_RAW:
        return Link::raw_ip;
    case DLT_IPV4:
        return Link::ipv4;
    case DLT_IPV6:
        return Link::ipv6;
    case DLT_NULL:
    case DLT_LOOP:
        return Link::bsd_null;
    default:
        return std::nullopt;
    }
}

Result<void> PcapFileSource::settle_fcs(const PcapOpenOptions& options, int declared, const std::string& what) {
    const std::optional<int> forced = options.force_fcs_len;
    if (link_ == Link::ethernet) {
        if (!forced && declared != 0 && declared != 4)
            return make_error(EINVAL, what + ": FCS length " + std::to_string(declared) +
                                          " bytes is not supported on Ethernet (0 or 4)");
        fcs_len_ = forced.value_or(declared);
        return {};
    }
    // A synthesized header has no FCS behind the packet; the port computes one if asked.
    const int wanted = forced.value_or(declared);
    if (wanted != 0)
        return make_error(EINVAL, what + ": " + (forced ? "forced" : "declared") + " FCS length " +
                                      std::to_string(wanted) + " bytes on link type " + link_type_name(linktype_) +
                                      ", whose records carry no Ethernet FCS");
    synth_dst_ = options.synth_dst_mac;
    synth_src_ = options.synth_src_mac;
    // libpcap hands over at most the snapshot length (it cuts longer
    // records, and refuses those beyond its per-link-type maximum,
    // 262144 bytes for every link type read here). The header's snapshot
    // length is not clamped to it: a corrupt one asked for 218 MB here.
    const int snap = std::min(pcap_snapshot(pcap_), kMaxRecordLen);
    scratch_.resize(static_cast<std::size_t>(std::max(snap, 0)) + kEthHeaderLen);
    return {};
}

Result<std::unique_ptr<PcapFileSource>> PcapFileSource::open(const std::string& path,
                                                             const PcapOpenOptions& options) {
    const std::string what = "pcap file " + path;
    const std::optional<int> forced = options.force_fcs_len;
    if (forced && *forced != 0 && *forced != 4)
        return make_error(EINVAL, what + ": forced FCS length " + std::to_string(*forced) +
                                      " is not 0 or 4");
    const auto size = readable_file_size(path, what);
    if (!size) return size.error();
    const auto opened = open_libpcap(path, what);
    if (!opened) return opened.error();
    pcap_t* p = opened.value();

    std::unique_ptr<PcapFileSource> src(new PcapFileSource());
    src->pcap_ = p; // closed by the destructor from here on
    src->path_ = path;
    src->file_size_ = size.value();
    src->linktype_ = pcap_datalink(p);
    const std::optional<Link> link = link_of(src->linktype_);
    if (!link)
        return make_error(EINVAL, what + ": link type " + link_type_name(src->linktype_) + " (" +
                                      std::to_string(src->linktype_) +
                                      ") is not supported: it carries no IP-over-Ethernet "
                                      "traffic; supported link types: " +
                                      supported_list());
    src->link_ = *link;
    const bool pcapng = is_pcapng(path);
    const auto declared = declared_fcs_len(path, pcapng, p, src->linktype_, forced.has_value(), what);
    if (!declared) return declared.error();
    if (auto r = src->settle_fcs(options, declared.value(), what); !r) return r.error();
    if (!pcapng && options.map_file) src->map_classic(pcap_snapshot(p));
    // Room for fail_read()'s sentence, so that building it never allocates.
    src->read_error_.reserve(what.size() + 48 + PCAP_ERRBUF_SIZE);
    return src;
}

std::string PcapFileSource::describe() const {
    const std::string head = "pcap file " + path_ + " (" + link_type_name(linktype_);
    if (link_ == Link::ethernet) return head + ", fcs " + std::to_string(fcs_len_) + " bytes)";
    return head + ", Ethernet header synthesized, " + mac_text(synth_src_) + " -> " +
           mac_text(synth_dst_) + ")";
}

} // namespace rdmasim::net
