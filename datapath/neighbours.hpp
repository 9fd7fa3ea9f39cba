// The port's own addresses and its IPv4 neighbours (datapath/README.md,
// "Neighbours"): a bounded ARP cache, answers to ARP requests for the port's
// address, and resolve(), which the RoCE transport calls to find a peer's MAC.
//
// Runs in the port's context: every call needs the port lock (Port wraps
// them), time is the port's clock (virtual under the inline engine), frames
// go out through the FrameSink the caller passes (the port's sinks). Nothing
// here allocates, logs or blocks after configure().
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "datapath/counters.hpp"
#include "net/addresses.hpp"
#include "net/arp.hpp"
#include "net/frame_sink.hpp"

namespace rdmasim::datapath {

struct PortAddresses {
    net::MacAddress mac{};
    net::Ipv4Address ipv4{}; // 0.0.0.0: none (the port answers no request)
    net::Ipv6Address ipv6{};
};

struct NeighbourConfig {
    std::uint32_t capacity = 256;   // cache entries; the least recently used one makes room
    std::uint32_t max_pending = 64; // addresses being resolved at once
    // Requests sent for one resolve before it fails, and the time between
    // them: Linux's defaults (mcast_solicit 3, retrans_time 1 s).
    std::uint32_t request_tries = 3;
    std::uint64_t retry_interval_ns = 1'000'000'000;
};

// The host's handling of ARP, per port. ARP frames are also offered to the
// steering like any frame: these count what the port itself did with them.
struct NeighbourCounters {
    Counter arp_frames;             // ARP frames from the wire (IPv4 over Ethernet, untagged)
    Counter arp_malformed;          // ether type 0x0806 but not that (another type, cut short)
    Counter arp_requests_answered;  // requests for the port's address: a reply sent
    Counter arp_requests_learned;   // requests for the port's address whose sender entered the cache
    Counter arp_replies_learned;    // replies to the port whose sender entered the cache
    Counter arp_entries_updated;    // entries refreshed by other ARP traffic (RFC 826's merge)
    Counter arp_requests_sent;      // by resolve() and its retries
    Counter arp_resolved;           // resolves completed by an answer
    Counter arp_resolve_failures;   // resolves that ran out of tries, or found no free pending slot
    Counter arp_cache_evictions;    // entries dropped to make room
    Counter arp_address_conflicts;  // ARP from another MAC claiming the port's IPv4 address
};

// Told when a resolve() that returned `pending` ends. Called under the port
// lock, from the port's ingress or service; it may call resolve() again.
class NeighbourListener {
public:
    virtual ~NeighbourListener() = default;
    virtual void resolved(const net::Ipv4Address& ip, const net::MacAddress& mac) noexcept = 0;
    virtual void unreachable(const net::Ipv4Address& ip) noexcept = 0;
};

enum class ResolveState : std::uint8_t { resolved, pending, failed };

struct Resolution {
    ResolveState state = ResolveState::failed;
    net::MacAddress mac{}; // when resolved
};

class Neighbours {
public:
    // Sets the addresses and the limits; empties the cache and the pending
    // resolves. Allocates: control path only.
    void configure(const PortAddresses& addresses, const NeighbourConfig& config = {});
    [[nodiscard]] const PortAddresses& addresses() const noexcept { return addresses_; }
    [[nodiscard]] const NeighbourCounters& counters() const noexcept { return counters_; }
    void set_listener(NeighbourListener* listener) noexcept { listener_ = listener; }

    // An ARP frame that arrived on the wire (ether type 0x0806): learns the
    // sender when the frame is aimed at the port's address (and refreshes an
    // entry it already has for the sender, whatever the target), and answers
    // a request for the port's address through `out`.
    void receive(net::Bytes frame, std::uint64_t now_ns, net::FrameSink& out) noexcept;

    // The MAC of `ip`: resolved at once from the cache (or the port's own
    // address); else pending, with a request sent through `out` (one for
    // each address, however often it is asked), and the listener told when
    // it resolves or fails; failed when request_tries requests went
    // unanswered earlier is not remembered (each call after a failure starts
    // anew), and failed at once when max_pending resolves are under way.
    [[nodiscard]] Resolution resolve(const net::Ipv4Address& ip, std::uint64_t now_ns,
                                     net::FrameSink& out) noexcept;
    // The cache alone, sending nothing.
    [[nodiscard]] std::optional<net::MacAddress> lookup(const net::Ipv4Address& ip) const noexcept;
    // A resolve of `ip` is under way (requests sent, no answer yet).
    [[nodiscard]] bool resolving(const net::Ipv4Address& ip) const noexcept;
    // Time passes: a pending resolve whose interval elapsed sends its next
    // request, or fails after the last one (the listener is told).
    void service(std::uint64_t now_ns, net::FrameSink& out) noexcept;
    // When service() next has something to do, or UINT64_MAX.
    [[nodiscard]] std::uint64_t next_deadline_ns() const noexcept { return next_deadline_ns_; }
    [[nodiscard]] std::size_t cached() const noexcept;
    [[nodiscard]] std::size_t pending() const noexcept;

private:
    struct Entry {
        net::Ipv4Address ip{};
        net::MacAddress mac{};
        std::uint64_t stamp = 0; // last use; 0: the slot is free
    };
    struct Pending {
        net::Ipv4Address ip{};
        std::uint32_t tries = 0; // requests sent; 0: the slot is free
        std::uint64_t next_ns = 0;
    };

    Entry* find(const net::Ipv4Address& ip) noexcept;
    // Inserts or refreshes ip -> mac; completes a pending resolve of ip.
    void learn(const net::Ipv4Address& ip, const net::MacAddress& mac) noexcept;
    void send_request(const net::Ipv4Address& ip, std::uint64_t now_ns, net::FrameSink& out) noexcept;
    void send(const net::MacAddress& dst, const net::ArpPacket& arp, std::uint64_t now_ns,
              net::FrameSink& out) noexcept;

    PortAddresses addresses_;
    NeighbourConfig config_;
    NeighbourCounters counters_;
    NeighbourListener* listener_ = nullptr;
    std::vector<Entry> entries_;   // capacity slots
    std::vector<Pending> pending_; // max_pending slots
    std::uint64_t next_stamp_ = 1;
    std::uint64_t next_deadline_ns_ = UINT64_MAX;
    std::array<std::uint8_t, net::kMinFrameLen> frame_{}; // what send() builds
};

} // namespace rdmasim::datapath
