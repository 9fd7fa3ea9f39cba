// The port's L2 host (datapath/README.md, "Neighbours" and "RoCE
// transport"): the port's addresses and ARP cache (Neighbours), the frames
// the host itself sends (ARP) out to the attached sinks, RoCE frames waiting
// for ARP (ArpWait), and RoCE send: send_roce, the entry point a RoCE
// transport hands each frame it sends to.
//
// It shares the port's clock and RoCE side (loopback queue, transmit
// counters), which the port owns. Locking: the port's mutex.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "datapath/arp_wait.hpp"
#include "datapath/neighbours.hpp"
#include "datapath/roce/port.hpp"
#include "net/frame.hpp"
#include "net/frame_sink.hpp"
#include "net/roce_frame.hpp"

namespace rdmasim::datapath {

class L2Host {
public:
    // `roce` and `clock` (the port's time, never moving back) outlive the host.
    L2Host(RocePort& roce, const std::uint64_t& clock);
    L2Host(const L2Host&) = delete;
    L2Host& operator=(const L2Host&) = delete;
    ~L2Host();

    // --- control side ---
    // The port's MAC and IP addresses; empties the ARP cache.
    void configure_addresses(const PortAddresses& addresses, const NeighbourConfig& config) {
        neighbours_.configure(addresses, config);
    }
    [[nodiscard]] const PortAddresses& addresses() const noexcept { return neighbours_.addresses(); }
    [[nodiscard]] const Neighbours& neighbours() const noexcept { return neighbours_; }
    void set_neighbour_listener(NeighbourListener* listener) noexcept { neighbours_.set_listener(listener); }
    [[nodiscard]] const ArpWaitCounters& arp_wait_counters() const noexcept { return arp_wait_.counters(); }
    void attach_sink(net::FrameSink& sink) { sinks_.push_back(&sink); }
    void detach_sink(net::FrameSink& sink) noexcept { std::erase(sinks_, &sink); }

    // --- the wire ---
    // `frame` to every attached sink, at `ts_ns`.
    void to_wire(std::span<const std::uint8_t> frame, std::uint64_t ts_ns) noexcept {
        for (net::FrameSink* s : sinks_) s->send(frame, ts_ns);
    }
    // Lossless links: every sink's backlog onto its wire, as far as the
    // wire takes it; the frames still waiting, over all sinks.
    std::size_t flush_sinks() noexcept {
        std::size_t waiting = 0;
        for (net::FrameSink* s : sinks_) waiting += s->flush();
        return waiting;
    }
    // Whether requesters must wait: frames wait for ARP (a burst released
    // before the peer's MAC is known would overflow ArpWait), or a sink's
    // backlog is above its high watermark.
    [[nodiscard]] bool congested() const noexcept {
        if (!arp_wait_.empty()) [[unlikely]]
            return true;
        return std::any_of(sinks_.begin(), sinks_.end(), [](const net::FrameSink* s) { return s->congested(); });
    }
    // Whether a sink's far end has not yet read all it was sent (net::FrameSink::unread).
    [[nodiscard]] bool unread() const noexcept {
        return std::any_of(sinks_.begin(), sinks_.end(), [](const net::FrameSink* s) { return s->unread(); });
    }
    // A peer's MAC from the cache, or an ARP request on the sinks
    // (Neighbours::resolve), at the port's clock.
    [[nodiscard]] Resolution resolve(const net::Ipv4Address& ip) noexcept;
    // A frame (no FCS) a RoCE QP of this port sends. To the port's own
    // address: RoCE loopback (RocePort::queue_loopback). To a multicast
    // group: send_to_group, never ARP. To another IPv4
    // address: to every sink with the destination MAC from the ARP cache,
    // waiting in ArpWait while ARP resolves. To another IPv6 address: only a
    // link-local one whose interface identifier is a MAC's EUI-64 is
    // reachable (there is no neighbour discovery); the rest count as
    // RocePortCounters::tx_unroutable. Its destination MAC is written in place.
    void send_roce(std::span<std::uint8_t> frame) noexcept;
    // One copy (RoceWire::claim, net::FrameSink::claim): room for a
    // `len`-byte RoCE frame along `path` straight in a sink's storage, when
    // send_roce would put it on the wire at once (a cached MAC or a
    // link-local IPv6 one; not the port's own address; nothing waits for
    // ARP) and the first sink that can grants it; else empty: build it and
    // send_roce it. commit_roce(len), next, writes the destination MAC,
    // hands the frame's bytes to the other sinks (send), then commits it.
    [[nodiscard]] std::span<std::uint8_t> claim_roce(const net::RocePath& path, std::size_t len) noexcept;
    void commit_roce(std::size_t len) noexcept;

    // --- frame side ---
    // An untagged ARP frame from the wire: the host learns and answers, and
    // the frames waiting for ARP that it resolved go out.
    void receive_arp(net::Bytes frame, std::uint64_t now_ns) noexcept;
    // Whether a parsed frame is RoCE v2 to this host: its MAC, its IP
    // address, UDP 4791, not a fragment. Inline: asked of every frame.
    [[gnu::always_inline]] [[nodiscard]] bool roce_for_host(net::Bytes frame,
                                                            const net::ParsedFrame& p) const noexcept {
        if (p.l4 != net::L4Kind::udp || p.dst_port != net::kRoceV2UdpPort || p.ip_fragment) return false;
        return roce_for_address(frame, p);
    }
    // ARP retries and failures, then the frames waiting for ARP that resolved.
    void service(std::uint64_t now_ns) noexcept;
    // The neighbours' next ARP retry, or UINT64_MAX.
    [[nodiscard]] std::uint64_t next_deadline_ns() const noexcept { return neighbours_.next_deadline_ns(); }

private:
    // What the host itself sends (ARP): every attached sink, never the
    // port's own flows (a host's frames do not loop back to raw QPs). Held
    // through a plain owning pointer: a polymorphic member, and with clang's
    // reading of libstdc++ a std::unique_ptr too, would make the Device that
    // embeds the port non-standard-layout (device/objects.hpp asserts it).
    class Out;

    // Where an IPv4 / IPv6 header keeps its destination address.
    static constexpr std::size_t kIpv4DstOffset = 16;
    static constexpr std::size_t kIpv6DstOffset = 24;
    template <std::size_t N>
    static std::array<std::uint8_t, N> read_address(net::Bytes frame, std::size_t off) noexcept {
        std::array<std::uint8_t, N> a;
        std::memcpy(a.data(), frame.data() + off, N);
        return a;
    }
    // roce_for_host's address checks: the frame's destination MAC and IP
    // are the port's, or a group's that a QP of the port is attached to.
    [[nodiscard]] bool roce_for_address(net::Bytes frame, const net::ParsedFrame& p) const noexcept {
        const PortAddresses& own = neighbours_.addresses();
        if (std::memcmp(frame.data(), own.mac.data(), own.mac.size()) != 0) [[unlikely]]
            return (frame[0] & 1) != 0 && !roce_->mcast().empty() && roce_for_group(frame, p);
        if (p.l3 == net::L3Kind::ipv4)
            return read_address<4>(frame, p.l3_offset + kIpv4DstOffset) == own.ipv4;
        return read_address<16>(frame, p.l3_offset + kIpv6DstOffset) == own.ipv6;
    }
    [[gnu::cold]] bool roce_for_group(net::Bytes frame, const net::ParsedFrame& p) const noexcept;
    // A frame to the port's own address: its destination MAC the port's, to the loopback queue.
    void loop_back(std::span<std::uint8_t> frame) noexcept;
    // A datagram to the group `group` (send_roce): queued for this port's
    // QPs attached to it, if any, then to the wire with the group's MAC.
    void send_to_group(std::span<std::uint8_t> frame, const net::Gid& group) noexcept;
    // send_roce's destination MAC for a frame along `path`, when it would send at once.
    [[nodiscard]] std::optional<net::MacAddress> wire_mac(const net::RocePath& path) noexcept;

    std::vector<net::FrameSink*> sinks_;
    net::FrameSink* claimed_ = nullptr; // the sink claim_roce's room is in, until commit_roce
    std::uint8_t* claimed_room_ = nullptr;
    net::MacAddress claimed_mac_{};
    Neighbours neighbours_;
    ArpWait arp_wait_;
    RocePort* roce_;
    const std::uint64_t* clock_;
    Out* out_; // owned: deleted by ~L2Host
};

} // namespace rdmasim::datapath
