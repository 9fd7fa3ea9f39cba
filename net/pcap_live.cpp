#include "net/pcap_live.hpp"

#include <fcntl.h>
#include <pcap/pcap.h>

#include <cerrno>
#include <ctime>

namespace rdmasim::net {

namespace {

constexpr int kSnapLen = 262144; // libpcap's MAXIMUM_SNAPLEN: whole frames, GRO ones included
constexpr std::uint64_t kIdleStatsNs = 10'000'000;

std::uint64_t coarse_now_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

std::string link_type_name(int dlt) {
    const char* name = pcap_datalink_val_to_name(dlt);
    return name ? name : "DLT " + std::to_string(dlt);
}

// pcap_activate's error as an errno and a sentence naming the interface.
Error activate_error(const std::string& iface, int rc, const char* text) {
    const std::string detail = text && *text ? std::string(" (libpcap: ") + text + ")" : "";
    const std::string head = "pcap_live " + iface + ": ";
    switch (rc) {
    case PCAP_ERROR_NO_SUCH_DEVICE:
        return make_error(ENODEV, head + "no such network interface" + detail);
    case PCAP_ERROR_PERM_DENIED:
    case PCAP_ERROR_PROMISC_PERM_DENIED:
        return make_error(EPERM, head + "capturing needs CAP_NET_RAW (run as root, or grant the "
                                        "capability: setcap cap_net_raw+ep on the program)" +
                                     detail);
    case PCAP_ERROR_IFACE_NOT_UP:
        return make_error(ENETDOWN, head + "the interface is down" + detail);
    default:
        return make_error(EINVAL, head + pcap_statustostr(rc) + detail);
    }
}

} // namespace

Result<std::unique_ptr<PcapLivePort>> PcapLivePort::open(const PcapLiveOptions& o) {
    const std::string head = "pcap_live " + o.iface + ": ";
    char errbuf[PCAP_ERRBUF_SIZE] = {};
    // From here on the object owns the handle: an error return closes it.
    std::unique_ptr<PcapLivePort> p(new PcapLivePort);
    p->options_ = o;
    p->pcap_ = pcap_create(o.iface.c_str(), errbuf);
    if (p->pcap_ == nullptr) return make_error(EINVAL, head + errbuf);
    pcap_t* h = p->pcap_;
    // Settings before activation only fail on an activated handle: unchecked.
    (void)pcap_set_snaplen(h, kSnapLen);
    (void)pcap_set_promisc(h, o.promisc ? 1 : 0);
    (void)pcap_set_immediate_mode(h, 1); // each frame at once, not when a buffer fills
    (void)pcap_set_tstamp_precision(h, PCAP_TSTAMP_PRECISION_NANO);
    if (const int rc = pcap_activate(h); rc < 0)
        return activate_error(o.iface, rc, pcap_geterr(h));
    else if (rc > 0)
        p->warning_ = head + pcap_statustostr(rc) +
                      (*pcap_geterr(h) ? std::string(": ") + pcap_geterr(h) : "");

    if (const int dlt = pcap_datalink(h); dlt != DLT_EN10MB)
        return make_error(EINVAL, head + "link type " + link_type_name(dlt) +
                                      ": only Ethernet interfaces (EN10MB) can feed a port");
    if (pcap_setdirection(h, PCAP_D_IN) != 0)
        return make_error(EINVAL, head + "cannot capture inbound frames only (libpcap: " +
                                      pcap_geterr(h) + ")");
    if (!o.filter.empty()) {
        bpf_program prog{};
        if (pcap_compile(h, &prog, o.filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0)
            return make_error(EINVAL, head + "filter '" + o.filter + "': " + pcap_geterr(h));
        const int rc = pcap_setfilter(h, &prog);
        pcap_freecode(&prog);
        if (rc != 0)
            return make_error(EINVAL, head + "filter '" + o.filter +
                                          "': cannot install it: " + pcap_geterr(h));
    }
    if (pcap_setnonblock(h, 1, errbuf) != 0)
        return make_error(EINVAL, head + "non-blocking mode: " + errbuf);
    p->fd_ = pcap_get_selectable_fd(h);
    // pcap_inject send(2)s on this descriptor: it must never wait.
    if (const int fl = fcntl(p->fd_, F_GETFL); fl < 0 || fcntl(p->fd_, F_SETFL, fl | O_NONBLOCK) < 0)
        return make_error(errno, head + "cannot make the descriptor non-blocking");
    return p;
}

PcapLivePort::~PcapLivePort() {
    if (pcap_ != nullptr) pcap_close(pcap_); // also leaves promiscuous mode
}

void PcapLivePort::read_statistics() noexcept {
    pcap_stat st{};
    if (pcap_stats(pcap_, &st) != 0) return;
    counters_.kernel_drops += st.ps_drop - last_drops_; // unsigned: a wrap still subtracts right
    last_drops_ = st.ps_drop;
}

bool PcapLivePort::next(Frame& out) noexcept {
    if (!failure_.empty()) return false;
    pcap_pkthdr* hdr = nullptr;
    const u_char* data = nullptr;
    const int rc = pcap_next_ex(pcap_, &hdr, &data);
    if (rc == 1) {
        const bool nano = pcap_get_tstamp_precision(pcap_) == PCAP_TSTAMP_PRECISION_NANO;
        out.data = data;
        out.len = hdr->caplen;
        out.wire_len = hdr->len;
        out.fcs_len = 0;
        out.ts_ns = static_cast<std::uint64_t>(hdr->ts.tv_sec) * 1'000'000'000u +
                    static_cast<std::uint64_t>(hdr->ts.tv_usec) * (nano ? 1u : 1000u);
        ++counters_.frames;
        counters_.bytes += hdr->caplen;
        if (hdr->caplen < hdr->len) ++counters_.truncated_records;
        if ((counters_.frames & 4095) == 0) read_statistics(); // drops happen under load
        return true;
    }
    if (rc < 0) {
        failure_ = "pcap_live " + options_.iface + ": " + pcap_geterr(pcap_);
        read_statistics();
        return false;
    }
    if (const std::uint64_t now = coarse_now_ns(); now >= next_stats_ns_) {
        next_stats_ns_ = now + kIdleStatsNs;
        read_statistics();
    }
    return false;
}

std::string PcapLivePort::describe() const {
    std::string s = "libpcap interface " + options_.iface + " (";
    s += options_.filter.empty() ? "no filter" : "filter '" + options_.filter + "'";
    if (options_.promisc) s += ", promiscuous";
    return s + ")";
}

void PcapLivePort::send(std::span<const std::uint8_t> frame, std::uint64_t) noexcept {
    if (pcap_inject(pcap_, frame.data(), frame.size()) < 0)
        sent_.failed(errno); // send(2)'s errno: libpcap only formats its message after it
    else
        sent_.sent(frame.size());
}

} // namespace rdmasim::net
