#include "datapath/l2_host.hpp"

#include <algorithm>
#include <utility>

namespace rdmasim::datapath {

namespace {

// The MAC of a link-local IPv6 address whose interface identifier is a
// modified EUI-64 (net::ipv6_link_local's inverse), or nullopt.
std::optional<net::MacAddress> mac_of_link_local(const net::Ipv6Address& ip) noexcept {
    static constexpr std::array<std::uint8_t, 8> prefix{0xfe, 0x80, 0, 0, 0, 0, 0, 0};
    if (!std::equal(prefix.begin(), prefix.end(), ip.begin()) || ip[11] != 0xff || ip[12] != 0xfe)
        return std::nullopt;
    return net::MacAddress{static_cast<std::uint8_t>(ip[8] ^ 0x02), ip[9], ip[10], ip[13], ip[14], ip[15]};
}

} // namespace

class L2Host::Out final : public net::FrameSink {
public:
    explicit Out(L2Host& host) noexcept : host_(host) {}
    void send(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept override {
        host_.to_wire(frame, ts_ns);
    }

private:
    L2Host& host_;
};

L2Host::L2Host(RocePort& roce, const std::uint64_t& clock)
    : roce_(&roce), clock_(&clock), out_(new Out(*this)) {}

L2Host::~L2Host() { delete out_; }

Resolution L2Host::resolve(const net::Ipv4Address& ip) noexcept {
    return neighbours_.resolve(ip, *clock_, *out_);
}

void L2Host::receive_arp(net::Bytes frame, std::uint64_t now_ns) noexcept {
    neighbours_.receive(frame, now_ns, *out_);
    if (!arp_wait_.empty()) arp_wait_.flush(neighbours_, *out_, now_ns);
}

void L2Host::service(std::uint64_t now_ns) noexcept {
    neighbours_.service(now_ns, *out_); // ARP retries and failures; O(1) when none is due
    if (!arp_wait_.empty()) [[unlikely]]
        arp_wait_.flush(neighbours_, *out_, now_ns);
}

bool L2Host::roce_for_group(net::Bytes frame, const net::ParsedFrame& p) const noexcept {
    const net::Gid group =
        p.l3 == net::L3Kind::ipv4
            ? net::ipv4_mapped(read_address<4>(frame, p.l3_offset + kIpv4DstOffset))
            : read_address<16>(frame, p.l3_offset + kIpv6DstOffset);
    return net::is_multicast_gid(group) && roce_->mcast().accepts(frame.data(), group);
}

void L2Host::send_to_group(std::span<std::uint8_t> frame, const net::Gid& group) noexcept {
    const net::MacAddress mac = net::multicast_mac(group);
    std::memcpy(frame.data(), mac.data(), mac.size());
    if (!roce_->mcast().members(group).empty()) (void)roce_->queue_loopback(frame, true);
    roce_->count_tx_wire();
    to_wire(frame, *clock_);
}

void L2Host::loop_back(std::span<std::uint8_t> frame) noexcept {
    // Addressed as on a wire: a forked sibling's port (datapath/family.hpp) takes it from the bus.
    const net::MacAddress& mac = neighbours_.addresses().mac;
    std::memcpy(frame.data(), mac.data(), mac.size());
    (void)roce_->queue_loopback(frame);
}

void L2Host::send_roce(std::span<std::uint8_t> frame) noexcept {
    const auto p = net::parse_frame(frame); // built by a QP: Ethernet, IP, UDP
    const PortAddresses& own = neighbours_.addresses();
    std::optional<net::MacAddress> mac;
    if (p.l3 == net::L3Kind::ipv4) {
        const auto dst = read_address<4>(frame, p.l3_offset + kIpv4DstOffset);
        if ((dst[0] & 0xf0) == 0xe0) [[unlikely]] {
            send_to_group(frame, net::ipv4_mapped(dst));
            return;
        }
        if (dst == own.ipv4) {
            loop_back(frame);
            return;
        }
        const Resolution r = resolve(dst);
        if (r.state == ResolveState::pending) {
            (void)arp_wait_.push(frame, dst); // ArpWaitCounters count what became of it
            return;
        }
        if (r.state == ResolveState::resolved) mac = r.mac;
    } else if (p.l3 == net::L3Kind::ipv6) {
        const auto dst = read_address<16>(frame, p.l3_offset + kIpv6DstOffset);
        if (dst[0] == 0xff) [[unlikely]] {
            send_to_group(frame, dst);
            return;
        }
        if (dst == own.ipv6) {
            loop_back(frame);
            return;
        }
        mac = mac_of_link_local(dst);
    }
    if (!mac) [[unlikely]] {
        roce_->count_tx_unroutable();
        return;
    }
    std::memcpy(frame.data(), mac->data(), mac->size());
    roce_->count_tx_wire();
    to_wire(frame, *clock_);
}

std::optional<net::MacAddress> L2Host::wire_mac(const net::RocePath& path) noexcept {
    if (!arp_wait_.empty()) return std::nullopt; // in order, behind the frames waiting for ARP
    const PortAddresses& own = neighbours_.addresses();
    if (net::is_multicast_gid(path.dgid)) [[unlikely]] // send_to_group when this port has members
        return roce_->mcast().members(path.dgid).empty()
                   ? std::optional(net::multicast_mac(path.dgid))
                   : std::nullopt;
    if (!net::is_ipv4_mapped(path.sgid)) // IPv6 (Ipv6Address and Gid: 16 bytes in network order)
        return path.dgid == own.ipv6 ? std::nullopt : mac_of_link_local(path.dgid); // loopback, or the wire
    net::Ipv4Address dst;
    std::copy(path.dgid.begin() + 12, path.dgid.end(), dst.begin());
    if (dst == own.ipv4 || !neighbours_.lookup(dst)) return std::nullopt; // loopback, or ARP first
    const Resolution r = resolve(dst); // a cache hit, as send_roce's (it keeps the entry fresh)
    return r.state == ResolveState::resolved ? std::optional(r.mac) : std::nullopt;
}

std::span<std::uint8_t> L2Host::claim_roce(const net::RocePath& path, std::size_t len) noexcept {
    const std::optional<net::MacAddress> mac = wire_mac(path);
    if (!mac) return {};
    for (net::FrameSink* s : sinks_) {
        const std::span<std::uint8_t> room = s->claim(len, mac->data());
        if (room.empty()) continue;
        claimed_ = s;
        claimed_room_ = room.data();
        claimed_mac_ = *mac;
        return room;
    }
    return {};
}

void L2Host::commit_roce(std::size_t len) noexcept {
    if (claimed_ == nullptr) [[unlikely]]
        return;
    std::memcpy(claimed_room_, claimed_mac_.data(), claimed_mac_.size());
    roce_->count_tx_wire();
    for (net::FrameSink* s : sinks_) // the same bytes as the wire's (captures, statistics)
        if (s != claimed_) s->send({claimed_room_, len}, *clock_);
    std::exchange(claimed_, nullptr)->commit(len, *clock_);
}

} // namespace rdmasim::datapath
