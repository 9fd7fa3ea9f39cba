#include "datapath/port.hpp"

#include <algorithm>

#include "datapath/offloads.hpp"
#include "datapath/rx_queue_receive.hpp"

namespace rdmasim::datapath {

inline RxOutcome Port::deliver(RxQueue& q, const net::Frame& frame, const net::ParsedFrame& parsed,
                               Delivery how) noexcept {
    if (faults_.pending() && how == Delivery::primary) [[unlikely]]
        faults_.arm(q);
    const MayWait wait =
        delay_drop_.armed() && how == Delivery::primary ? MayWait::yes : MayWait::no;
    // Only a queue holding frames can release some: the common case neither
    // builds a tally (88 bytes to zero) nor counts one.
    RxOutcome out;
    if (q.has_held()) [[unlikely]] {
        RxTally released;
        out = q.receive(frame, parsed, now_ns_, wait, &released);
        counters_.count(released);
    } else {
        out = q.receive(frame, parsed, now_ns_, wait, nullptr);
    }
    delay_drop_.check_failed(q, counters_);
    return out;
}

RxOutcome Port::deliver_copy(const Target& target, const net::Frame& frame,
                             const net::ParsedFrame& parsed) noexcept {
    return deliver(target.pick(frame.payload(), parsed), frame, parsed, Delivery::copy);
}

inline bool Port::check_capture(const net::Frame& frame) noexcept {
    if (frame.lost) [[unlikely]] {
        counters_.drop(Drop::fault_injected);
        return false;
    }
    if (frame.truncated() || frame.len < frame.fcs_len) [[unlikely]] {
        counters_.drop(Drop::truncated_capture);
        return false;
    }
    if (frame.payload().size() < net::kEthHeaderLen) [[unlikely]] {
        counters_.drop(Drop::runt);
        return false;
    }
    return true;
}

inline bool Port::check_fcs(const net::Frame& frame) noexcept {
    // The MAC checks the CRC before anything else sees the frame; only a
    // source whose frames carry their FCS lets it (the others pay nothing).
    if (frame.fcs_len != 0 && !deliver_bad_fcs_ && !carried_fcs_ok(frame)) [[unlikely]] {
        counters_.drop(Drop::fcs_error);
        return false;
    }
    return true;
}

inline void Port::to_host(net::Bytes bytes, const net::ParsedFrame& parsed, std::uint64_t now_ns,
                          BurstTally& tally) noexcept {
    // ARP from the wire: the host learns and answers (datapath/README.md,
    // "Neighbours"); the frame still goes on to the steering, as on hardware
    // where the kernel and a sniffer both see it.
    if (parsed.ether_type == net::kEtherTypeArp && !parsed.has_vlan) [[unlikely]] {
        tally.deadlines_moved = true;
        host_.receive_arp(bytes, now_ns);
    }
}

inline bool Port::past_roce(net::Bytes bytes, const net::ParsedFrame& parsed, std::uint64_t now_ns,
                            BurstTally& tally) noexcept {
    // RoCE v2 to the port: the transport's, not the steering's.
    if (!host_.roce_for_host(bytes, parsed)) [[likely]]
        return true;
    tally.deadlines_moved = true;
    if (roce_.ingress(bytes, now_ns)) // payload(): the FCS is already off
        counters_.count(RxOutcome{static_cast<std::uint32_t>(bytes.size()), Fate::delivered});
    else
        counters_.drop(Drop::roce_undeliverable);
    roce_.drain_loopback(now_ns);
    return false;
}

inline void Port::copy_to_sniffers(const net::Frame& frame, const net::ParsedFrame& parsed,
                                   const void* exclude) noexcept {
    steering_.each_sniffer(frame.payload(), parsed, exclude, [&](const SteeringEntry& e) {
        (void)deliver_copy(e.target, frame, parsed); // the queue counts the copy
        counters_.sniffer_copies.add();
    });
}

inline const SteeringEntry* Port::steer(const net::Frame& frame, const net::ParsedFrame& parsed,
                                        const void* exclude) noexcept {
    // A DONT_TRAP match that is not the frame's outcome is a copy, counted
    // by its queue only.
    return steering_.walk(frame.payload(), parsed, exclude, [&](const SteeringEntry& e) {
        (void)deliver_copy(e.target, frame, parsed);
    });
}

inline void Port::deliver_primary(RxQueue& queue, const net::Frame& frame, const net::ParsedFrame& parsed,
                                  BurstTally& tally) noexcept {
    // One call site: deliver() is inlined here, the per-frame path.
    const RxOutcome out = deliver(queue, frame, parsed, Delivery::primary);
    if (out.fate == Fate::delivered && !out.fcs_bad) [[likely]] {
        ++tally.delivered;
        tally.delivered_bytes += out.byte_len;
        return;
    }
    counters_.count(out);
    if (out.fate == Fate::held) [[unlikely]] {
        delay_drop_.note_held(now_ns_);
        tally.deadlines_moved = true;
    }
}

inline void Port::ingress_frame(const net::Frame& frame, std::uint64_t now_ns, const void* exclude,
                                BurstTally& tally) noexcept {
    now_ns_ = now_ns;
    tally.bytes += frame.len;
    if (!check_capture(frame) || !check_fcs(frame)) [[unlikely]]
        return;
    const auto bytes = frame.payload();
    const auto parsed = net::parse_frame(bytes);
    // Only a source's frames (exclude null) reach the host: a program's own
    // sends to its port loop back inside the transport (send_roce).
    if (exclude == nullptr) {
        to_host(bytes, parsed, now_ns, tally);
        if (!past_roce(bytes, parsed, now_ns, tally)) [[unlikely]]
            return;
    }
    copy_to_sniffers(frame, parsed, exclude);
    const SteeringEntry* primary = steer(frame, parsed, exclude);
    if (primary == nullptr) [[unlikely]] {
        counters_.drop(Drop::steering_miss);
        return;
    }
    deliver_primary(primary->target.pick(bytes, parsed), frame, parsed, tally); // RSS, then the queue
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
    host_.to_wire(frame.payload(), now_ns_);
}

void Port::service(std::uint64_t now_ns, ExpireNow expire) noexcept {
    if (now_ns > now_ns_) now_ns_ = now_ns;
    host_.service(now_ns_); // ARP retries, and what waited for them
    roce_.service(now_ns_); // the QPs' ACK and RNR timers
    cm_->service(now_ns_);  // CM resends, timeouts, time-wait; address resolution deadlines
    roce_.drain_loopback(now_ns_);
    (void)flush_wire();     // last: the backlog, the requesters that waited, what is left waiting
    delay_drop_.service(now_ns_, expire, counters_);
}

} // namespace rdmasim::datapath
