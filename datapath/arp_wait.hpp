// Frames the port originates toward an IPv4 next hop whose MAC is not known
// yet (datapath/README.md, "RoCE transport", "To the wire"): they wait here,
// in order, while ARP resolves, as Linux's neighbour layer queues packets
// for an incomplete entry (unres_qlen_bytes); then they leave with the
// resolved MAC, or are dropped when the address does not resolve.
//
// Storage is allocated once, at construction; under the port lock.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "datapath/counters.hpp"
#include "datapath/uninit_bytes.hpp"
#include "net/addresses.hpp"
#include "net/frame_sink.hpp"

namespace rdmasim::datapath {

class Neighbours;

struct ArpWaitCounters {
    Counter queued;     // frames that had to wait for ARP
    Counter sent;       // of those, sent once the address resolved
    Counter unresolved; // dropped: the address did not resolve
    Counter overflow;   // dropped: no room to wait (the bytes or the frame slots ran out)
};

class ArpWait {
public:
    // Room for `bytes` of frames and at most `frames` frames at once.
    explicit ArpWait(std::size_t bytes = 2u << 20, std::uint32_t frames = 2048);

    // Keeps a copy of `frame` until `next_hop` resolves; false (counted as
    // overflow) when there is no room.
    bool push(std::span<const std::uint8_t> frame, const net::Ipv4Address& next_hop) noexcept;
    // Sends, with their destination MAC filled in, the waiting frames whose
    // next hop the cache now knows; drops those whose resolve ended without
    // an answer; keeps the rest, in order. O(waiting bytes); nothing to do
    // when empty.
    void flush(const Neighbours& neighbours, net::FrameSink& out, std::uint64_t now_ns) noexcept;

    [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
    [[nodiscard]] const ArpWaitCounters& counters() const noexcept { return counters_; }

private:
    struct Entry {
        net::Ipv4Address next_hop{};
        std::uint32_t off = 0;
        std::uint32_t len = 0;
    };
    UninitBytes bytes_;               // frames back to back, oldest first
    std::vector<Entry> entries_;      // reserved: never grows past its capacity
    std::size_t used_ = 0;            // bytes_ in use
    ArpWaitCounters counters_;
};

} // namespace rdmasim::datapath
