#include "net/af_packet.hpp"

#include <arpa/inet.h>
#include <net/if_arp.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <system_error>

namespace rdmasim::net {

namespace {

constexpr std::uint32_t kVlanTagLen = 4;
constexpr std::uint32_t kMacPairLen = 12; // destination and source MAC: the tag goes after them
constexpr std::uint16_t kTpid8021Q = 0x8100;
constexpr std::uint32_t kFrameBytes = 2048; // tp_frame_size: a V3 ring packs frames, this is a hint
constexpr std::uint64_t kIdleStatsNs = 10'000'000;

std::string errno_text(int err) {
    return std::generic_category().message(err);
}

Error call_failed(const std::string& iface, const char* what, int err) {
    return make_error(err, "iface " + iface + ": " + what + ": " + errno_text(err));
}

std::uint64_t coarse_now_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

template <class T> bool set_option(int fd, int name, const T& value) noexcept {
    return setsockopt(fd, SOL_PACKET, name, &value, sizeof value) == 0;
}

std::uint32_t block_status(const tpacket_block_desc* b) noexcept {
    return __atomic_load_n(&b->hdr.bh1.block_status, __ATOMIC_ACQUIRE);
}

// open()'s steps, each on the socket it is given (the caller owns it).

// The name an interface's, the ring's geometry sound: the interface's index.
Result<unsigned> check_options(const AfPacketOptions& o) {
    const std::string& name = o.iface;
    if (name.empty() || name.size() >= IFNAMSIZ || name.find('/') != std::string::npos)
        return make_error(EINVAL, "iface '" + name + "': not an interface name (1 to " +
                                      std::to_string(IFNAMSIZ - 1) + " characters)");
    const unsigned index = if_nametoindex(name.c_str());
    if (index == 0)
        return make_error(ENODEV, "iface " + name + ": no such network interface" +
                                      (errno == ENODEV ? "" : " (" + errno_text(errno) + ")"));
    const long page = sysconf(_SC_PAGESIZE);
    if (o.blocks == 0 || o.block_bytes < page || o.block_bytes % page != 0 ||
        (o.block_bytes & (o.block_bytes - 1)) != 0 || o.block_bytes < kFrameBytes)
        return make_error(EINVAL, "iface " + name + ": ring block size " +
                                      std::to_string(o.block_bytes) +
                                      " is not a power-of-two multiple of the page size");
    return index;
}

Result<int> open_socket(const std::string& name) {
    // Protocol 0: nothing is queued before the ring exists and bind() names ETH_P_ALL.
    const int fd = ::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd >= 0) return fd;
    const int err = errno;
    if (err == EPERM || err == EACCES)
        return make_error(EPERM, "iface " + name +
                                     ": opening an AF_PACKET socket needs CAP_NET_RAW "
                                     "(run as root, or grant the capability: setcap "
                                     "cap_net_raw+ep on the program): " +
                                     errno_text(err));
    return call_failed(name, "socket(AF_PACKET)", err);
}

Result<void> check_ethernet(int fd, const std::string& name) {
    ifreq ifr{};
    std::memcpy(ifr.ifr_name, name.c_str(), name.size());
    if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0) return call_failed(name, "SIOCGIFHWADDR", errno);
    const int hw = ifr.ifr_hwaddr.sa_family;
    if (hw != ARPHRD_ETHER && hw != ARPHRD_LOOPBACK)
        return make_error(EINVAL, "iface " + name + ": not an Ethernet interface (ARPHRD " +
                                      std::to_string(hw) + "): its frames have no Ethernet header");
    return {};
}

// A TPACKET_V3 receive ring of o.blocks blocks, mapped: its first byte.
Result<std::uint8_t*> map_ring(int fd, const AfPacketOptions& o) {
    if (!set_option(fd, PACKET_VERSION, int{TPACKET_V3}))
        return call_failed(o.iface, "PACKET_VERSION TPACKET_V3", errno);
    tpacket_req3 req{};
    req.tp_block_size = o.block_bytes;
    req.tp_block_nr = o.blocks;
    req.tp_frame_size = kFrameBytes;
    req.tp_frame_nr = o.block_bytes / kFrameBytes * o.blocks;
    req.tp_retire_blk_tov = o.retire_ms;
    if (!set_option(fd, PACKET_RX_RING, req)) return call_failed(o.iface, "PACKET_RX_RING", errno);
    void* ring = mmap(nullptr, static_cast<std::size_t>(o.block_bytes) * o.blocks, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_POPULATE, fd, 0);
    if (ring == MAP_FAILED) return call_failed(o.iface, "mmap of the receive ring", errno);
    return static_cast<std::uint8_t*>(ring);
}

// Promiscuous mode when asked, then bound to the interface, every protocol.
Result<void> bind_socket(int fd, int ifindex, const AfPacketOptions& o) {
    if (o.promisc) {
        packet_mreq mr{};
        mr.mr_ifindex = ifindex;
        mr.mr_type = PACKET_MR_PROMISC;
        if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof mr) != 0)
            return call_failed(o.iface, "promiscuous mode (PACKET_MR_PROMISC)", errno);
    }
    sockaddr_ll addr{};
    addr.sll_family = AF_PACKET;
    addr.sll_protocol = htons(ETH_P_ALL);
    addr.sll_ifindex = ifindex;
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
        return call_failed(o.iface, "bind", errno);
    return {};
}

} // namespace

Result<std::unique_ptr<AfPacketPort>> AfPacketPort::open(const AfPacketOptions& o) {
    const auto index = check_options(o);
    if (!index) return index.error();
    // From here on the object owns what it opened: an error return closes it.
    std::unique_ptr<AfPacketPort> p(new AfPacketPort);
    p->options_ = o;
    p->ifindex_ = static_cast<int>(index.value());
    const auto fd = open_socket(o.iface);
    if (!fd) return fd.error();
    p->fd_ = fd.value();
    if (auto r = check_ethernet(p->fd_, o.iface); !r) return r.error();
    const auto ring = map_ring(p->fd_, o);
    if (!ring) return ring.error();
    p->ring_ = ring.value();
    p->ring_bytes_ = static_cast<std::size_t>(o.block_bytes) * o.blocks;
    p->scratch_.resize(o.block_bytes + kVlanTagLen);

    // Our own sends must not come back in. Older kernels lack the option:
    // next() also skips PACKET_OUTGOING frames.
    (void)set_option(p->fd_, PACKET_IGNORE_OUTGOING, int{1});
    // Best effort: sends skip the qdisc layer (refused on some devices).
    p->qdisc_bypass_ = set_option(p->fd_, PACKET_QDISC_BYPASS, int{1});
    if (auto r = bind_socket(p->fd_, p->ifindex_, o); !r) return r.error();
    return p;
}

AfPacketPort::~AfPacketPort() {
    if (ring_ != nullptr) munmap(ring_, ring_bytes_);
    if (fd_ >= 0) ::close(fd_); // also leaves promiscuous mode
}

bool AfPacketPort::take_block() noexcept {
    auto* b = reinterpret_cast<const tpacket_block_desc*>(
        ring_ + static_cast<std::size_t>(block_) * options_.block_bytes);
    if ((block_status(b) & TP_STATUS_USER) == 0) return false;
    owned_ = true;
    left_ = b->hdr.bh1.num_pkts;
    packet_ = reinterpret_cast<const std::uint8_t*>(b) + b->hdr.bh1.offset_to_first_pkt;
    return true;
}

void AfPacketPort::return_block() noexcept {
    auto* b = reinterpret_cast<tpacket_block_desc*>(
        ring_ + static_cast<std::size_t>(block_) * options_.block_bytes);
    __atomic_store_n(&b->hdr.bh1.block_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
    owned_ = false;
    block_ = (block_ + 1) % options_.blocks;
    read_statistics();
}

void AfPacketPort::read_statistics() noexcept {
    tpacket_stats_v3 st{};
    socklen_t len = sizeof st;
    // Reading resets the kernel's counts: they add up here.
    if (getsockopt(fd_, SOL_PACKET, PACKET_STATISTICS, &st, &len) == 0)
        counters_.kernel_drops += st.tp_drops;
}

bool AfPacketPort::next(Frame& out) noexcept {
    for (;;) {
        if (owned_ && left_ == 0) return_block(); // the previous frame's bytes are done with
        if (!owned_ && !take_block()) {
            if (const std::uint64_t now = coarse_now_ns(); now >= next_stats_ns_) {
                next_stats_ns_ = now + kIdleStatsNs;
                read_statistics();
            }
            return false;
        }
        if (left_ == 0) continue; // a block retired empty
        auto* h = reinterpret_cast<const tpacket3_hdr*>(packet_);
        --left_;
        packet_ += h->tp_next_offset;

        const auto* base = reinterpret_cast<const std::uint8_t*>(h);
        const auto* ll = reinterpret_cast<const sockaddr_ll*>(base + TPACKET_ALIGN(sizeof *h));
        if (ll->sll_pkttype == PACKET_OUTGOING) { // not ours to receive
            ++counters_.skipped_records;
            continue;
        }
        const std::uint8_t* data = base + h->tp_mac;
        std::uint32_t len = h->tp_snaplen;
        std::uint32_t wire_len = h->tp_len;
        // The kernel took the outer tag off (even a TCI of 0 is flagged): put
        // it back after the source MAC, as the wire carried it.
        if ((h->tp_status & TP_STATUS_VLAN_VALID) != 0 && len >= kMacPairLen) {
            const std::uint16_t tpid = (h->tp_status & TP_STATUS_VLAN_TPID_VALID) != 0
                                           ? h->hv1.tp_vlan_tpid
                                           : kTpid8021Q;
            const std::uint16_t tci = h->hv1.tp_vlan_tci;
            std::uint8_t* s = scratch_.data();
            std::memcpy(s, data, kMacPairLen);
            s[12] = static_cast<std::uint8_t>(tpid >> 8);
            s[13] = static_cast<std::uint8_t>(tpid);
            s[14] = static_cast<std::uint8_t>(tci >> 8);
            s[15] = static_cast<std::uint8_t>(tci);
            std::memcpy(s + kMacPairLen + kVlanTagLen, data + kMacPairLen, len - kMacPairLen);
            data = s;
            len += kVlanTagLen;
            wire_len += kVlanTagLen;
        }
        out.data = data;
        out.len = len;
        out.wire_len = wire_len;
        out.fcs_len = 0;
        out.ts_ns = static_cast<std::uint64_t>(h->tp_sec) * 1'000'000'000u + h->tp_nsec;
        ++counters_.frames;
        counters_.bytes += len;
        if (len < wire_len) ++counters_.truncated_records;
        return true;
    }
}

std::string AfPacketPort::describe() const {
    std::string s = "interface " + options_.iface + " (AF_PACKET, TPACKET_V3 ring " +
                    std::to_string(options_.blocks) + " x " +
                    std::to_string(options_.block_bytes / 1024) + " KiB";
    if (options_.promisc) s += ", promiscuous";
    if (qdisc_bypass_) s += ", qdisc bypass";
    return s + ")";
}

void AfPacketPort::send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept {
    // Behind frames already waiting, never past them: a link keeps its order.
    if (backlog_.empty() && try_send(frame)) [[likely]]
        return;
    (void)backlog_.push(frame, ts_ns);
}

std::size_t AfPacketPort::flush() noexcept {
    if (backlog_.empty()) return 0;
    return backlog_.flush([this](std::span<const std::uint8_t> f, std::uint64_t) { return try_send(f); });
}

bool AfPacketPort::try_send(std::span<const std::uint8_t> frame) noexcept {
    if (::send(fd_, frame.data(), frame.size(), MSG_DONTWAIT) >= 0) [[likely]] {
        sent_.sent(frame.size());
        return true;
    }
    // A full socket buffer or device queue is a pause, not a loss.
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) return false;
    sent_.failed(errno);
    return true; // lost, counted
}

} // namespace rdmasim::net
