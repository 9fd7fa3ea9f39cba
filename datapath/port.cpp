#include "datapath/port.hpp"

#include <algorithm>
#include <cstring>

#include "datapath/offloads.hpp"
#include "datapath/rx_queue_receive.hpp"

namespace rdmasim::datapath {

namespace {

// Where an IPv4 / IPv6 header keeps its destination address.
constexpr std::size_t kIpv4DstOffset = 16;
constexpr std::size_t kIpv6DstOffset = 24;

template <std::size_t N>
std::array<std::uint8_t, N> read_address(net::Bytes frame, std::size_t off) noexcept {
    std::array<std::uint8_t, N> a;
    std::memcpy(a.data(), frame.data() + off, N);
    return a;
}

// RoCE v2 to this port: its MAC, its IP address, UDP 4791, not a fragment.
bool roce_for_port(net::Bytes frame, const net::ParsedFrame& p, const PortAddresses& own) noexcept {
    if (p.l4 != net::L4Kind::udp || p.dst_port != net::kRoceV2UdpPort || p.ip_fragment) return false;
    if (std::memcmp(frame.data(), own.mac.data(), own.mac.size()) != 0) return false;
    if (p.l3 == net::L3Kind::ipv4)
        return read_address<4>(frame, p.l3_offset + kIpv4DstOffset) == own.ipv4;
    return read_address<16>(frame, p.l3_offset + kIpv6DstOffset) == own.ipv6;
}

// The MAC of a link-local IPv6 address whose interface identifier is a
// modified EUI-64 (net::ipv6_link_local's inverse), or nullopt.
std::optional<net::MacAddress> mac_of_link_local(const net::Ipv6Address& ip) noexcept {
    static constexpr std::array<std::uint8_t, 8> prefix{0xfe, 0x80, 0, 0, 0, 0, 0, 0};
    if (!std::equal(prefix.begin(), prefix.end(), ip.begin()) || ip[11] != 0xff || ip[12] != 0xfe)
        return std::nullopt;
    return net::MacAddress{static_cast<std::uint8_t>(ip[8] ^ 0x02), ip[9], ip[10], ip[13], ip[14], ip[15]};
}

} // namespace

Port::~Port() { delete host_out_; }

void Port::attach_sink(net::FrameSink& sink) { sinks_.push_back(&sink); }

void Port::detach_sink(net::FrameSink& sink) noexcept { std::erase(sinks_, &sink); }

inline RxOutcome Port::deliver(const Target& target, const net::Frame& frame,
                               const net::ParsedFrame& parsed, bool primary) noexcept {
    RxQueue& q = target.pick(frame.payload(), parsed);
    if (faults_.pending() && primary) [[unlikely]]
        faults_.arm(q);
    // Only a queue holding frames can release some: the common case neither
    // builds a tally (88 bytes to zero) nor counts one.
    RxOutcome out;
    if (q.has_held()) [[unlikely]] {
        RxTally released;
        out = q.receive(frame, parsed, now_ns_, delay_drop_.armed(), primary, &released);
        counters_.count(released);
    } else {
        out = q.receive(frame, parsed, now_ns_, delay_drop_.armed(), primary, nullptr);
    }
    delay_drop_.check_failed(q, counters_);
    return out;
}

RxOutcome Port::deliver_copy(const Target& target, const net::Frame& frame,
                             const net::ParsedFrame& parsed) noexcept {
    return deliver(target, frame, parsed, false);
}

inline void Port::ingress_frame(const net::Frame& frame, std::uint64_t now_ns, const void* exclude,
                                BurstTally& tally) noexcept {
    now_ns_ = now_ns;
    tally.bytes += frame.len;
    if (frame.lost) [[unlikely]] {
        counters_.drop(Drop::fault_injected);
        return;
    }
    if (frame.truncated() || frame.len < frame.fcs_len) [[unlikely]] {
        counters_.drop(Drop::truncated_capture);
        return;
    }
    const auto bytes = frame.payload();
    if (bytes.size() < net::kEthHeaderLen) [[unlikely]] {
        counters_.drop(Drop::runt);
        return;
    }
    // The MAC checks the CRC before anything else sees the frame; only a
    // source whose frames carry their FCS lets it (the others pay nothing).
    if (frame.fcs_len != 0 && !deliver_bad_fcs_ && !carried_fcs_ok(frame)) [[unlikely]] {
        counters_.drop(Drop::fcs_error);
        return;
    }
    const auto parsed = net::parse_frame(bytes);
    // ARP from the wire: the host learns and answers (datapath/README.md,
    // "Neighbours"); the frame still goes on to the steering, as on hardware
    // where the kernel and a sniffer both see it.
    if (parsed.ether_type == net::kEtherTypeArp && !parsed.has_vlan && exclude == nullptr) [[unlikely]] {
        tally.deadlines_moved = true;
        neighbours_.receive(bytes, now_ns, *host_out_);
        if (!arp_wait_.empty()) arp_wait_.flush(neighbours_, *host_out_, now_ns);
    }
    // RoCE v2 to the port: the transport's, not the steering's. A source's
    // frames only: a program's own sends to its port loop back inside the
    // transport (send_roce).
    if (exclude == nullptr && roce_for_port(bytes, parsed, neighbours_.addresses())) [[unlikely]] {
        tally.deadlines_moved = true;
        if (roce_.ingress(bytes, now_ns)) // payload(): the FCS is already off
            counters_.count(RxOutcome{static_cast<std::uint32_t>(bytes.size()), Fate::delivered});
        else
            counters_.drop(Drop::roce_undeliverable);
        roce_.drain_loopback(now_ns);
        return;
    }
    steering_.each_sniffer(bytes, parsed, exclude, [&](const SteeringEntry& e) {
        (void)deliver_copy(e.target, frame, parsed); // the queue counts the copy
        counters_.sniffer_copies.add();
    });
    // The entry whose delivery is the frame's outcome; a DONT_TRAP match
    // that is not is a copy, counted by its queue only.
    const SteeringEntry* primary = steering_.walk(bytes, parsed, exclude, [&](const SteeringEntry& e) {
        (void)deliver_copy(e.target, frame, parsed);
    });
    if (primary == nullptr) [[unlikely]] {
        counters_.drop(Drop::steering_miss);
        return;
    }
    // The frame's one outcome, counted by the port. One call site: deliver()
    // is inlined here, the per-frame path.
    const RxOutcome out = deliver(primary->target, frame, parsed, true);
    if (out.fate == Fate::delivered && !out.fcs_bad) [[likely]] {
        ++tally.delivered;
        tally.delivered_bytes += out.byte_len;
        return;
    }
    counters_.count(out);
    if (out.fate == Fate::held) [[unlikely]] {
        delay_drop_.note_held(now_ns);
        tally.deadlines_moved = true;
    }
}

std::uint32_t Port::ingress_burst(std::span<const net::Frame> frames, const std::uint64_t* at,
                                  const void* exclude) noexcept {
    const auto n = static_cast<std::uint32_t>(frames.size());
    if (n == 0) return 0;
    // Only a held frame, ARP or RoCE moves a deadline (ingress_frame says so);
    // a release or a flush may leave it early, which costs a service, no more.
    std::uint64_t deadline = next_deadline_ns();
    BurstTally tally;
    std::uint32_t i = 0;
    do {
        ingress_frame(frames[i], at[i], exclude, tally);
        if (tally.deadlines_moved) [[unlikely]] {
            deadline = next_deadline_ns();
            tally.deadlines_moved = false;
        }
    } while (++i < n && deadline > at[i]);
    counters_.frames.add(i);
    counters_.bytes.add(tally.bytes);
    if (tally.delivered != 0) {
        counters_.delivered.add(tally.delivered);
        counters_.delivered_bytes.add(tally.delivered_bytes);
    }
    return i;
}

void Port::transmit(const net::Frame& frame, const void* sender) noexcept {
    ingress(frame, now_ns_, sender);
    for (net::FrameSink* s : sinks_) s->send(frame.payload(), now_ns_);
}

void Port::send_roce(std::span<std::uint8_t> frame) noexcept {
    const auto p = net::parse_frame(frame); // built by a QP: Ethernet, IP, UDP
    const PortAddresses& own = neighbours_.addresses();
    std::optional<net::MacAddress> mac;
    if (p.l3 == net::L3Kind::ipv4) {
        const auto dst = read_address<4>(frame, p.l3_offset + kIpv4DstOffset);
        if (dst == own.ipv4) {
            (void)roce_.queue_loopback(frame);
            return;
        }
        const Resolution r = neighbours_.resolve(dst, now_ns_, *host_out_);
        if (r.state == ResolveState::pending) {
            (void)arp_wait_.push(frame, dst); // ArpWaitCounters count what became of it
            return;
        }
        if (r.state == ResolveState::resolved) mac = r.mac;
    } else if (p.l3 == net::L3Kind::ipv6) {
        const auto dst = read_address<16>(frame, p.l3_offset + kIpv6DstOffset);
        if (dst == own.ipv6) {
            (void)roce_.queue_loopback(frame);
            return;
        }
        mac = mac_of_link_local(dst);
    }
    if (!mac) [[unlikely]] {
        roce_.count_tx_unroutable();
        return;
    }
    std::memcpy(frame.data(), mac->data(), mac->size());
    roce_.count_tx_wire();
    for (net::FrameSink* s : sinks_) s->send(frame, now_ns_);
}

void Port::service(std::uint64_t now_ns, ExpireNow expire) noexcept {
    if (now_ns > now_ns_) now_ns_ = now_ns;
    neighbours_.service(now_ns_, *host_out_); // ARP retries and failures; O(1) when none is due
    if (!arp_wait_.empty()) [[unlikely]]
        arp_wait_.flush(neighbours_, *host_out_, now_ns_);
    roce_.service(now_ns_); // the QPs' ACK and RNR timers
    roce_.drain_loopback(now_ns_);
    delay_drop_.service(now_ns_, expire, counters_);
}

} // namespace rdmasim::datapath
