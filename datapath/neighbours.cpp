#include "datapath/neighbours.hpp"

#include <algorithm>

namespace rdmasim::datapath {

namespace {

constexpr net::Ipv4Address kNoAddress{};

} // namespace

void Neighbours::configure(const PortAddresses& addresses, const NeighbourConfig& config) {
    addresses_ = addresses;
    config_ = config;
    config_.request_tries = std::max<std::uint32_t>(config_.request_tries, 1);
    entries_.assign(config.capacity, Entry{});
    pending_.assign(config.max_pending, Pending{});
    next_deadline_ns_ = UINT64_MAX;
}

Neighbours::Entry* Neighbours::find(const net::Ipv4Address& ip) noexcept {
    for (Entry& e : entries_)
        if (e.stamp != 0 && e.ip == ip) return &e;
    return nullptr;
}

std::optional<net::MacAddress> Neighbours::lookup(const net::Ipv4Address& ip) const noexcept {
    for (const Entry& e : entries_)
        if (e.stamp != 0 && e.ip == ip) return e.mac;
    return std::nullopt;
}

bool Neighbours::resolving(const net::Ipv4Address& ip) const noexcept {
    return std::any_of(pending_.begin(), pending_.end(),
                       [&ip](const Pending& p) { return p.tries != 0 && p.ip == ip; });
}

std::size_t Neighbours::cached() const noexcept {
    return static_cast<std::size_t>(
        std::count_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.stamp != 0; }));
}

std::size_t Neighbours::pending() const noexcept {
    return static_cast<std::size_t>(
        std::count_if(pending_.begin(), pending_.end(), [](const Pending& p) { return p.tries != 0; }));
}

void Neighbours::learn(const net::Ipv4Address& ip, const net::MacAddress& mac) noexcept {
    Entry* e = find(ip);
    if (e == nullptr && !entries_.empty()) {
        // A free slot, else the least recently used entry.
        e = &*std::min_element(entries_.begin(), entries_.end(),
                               [](const Entry& a, const Entry& b) { return a.stamp < b.stamp; });
        if (e->stamp != 0) counters_.arp_cache_evictions.add();
        e->ip = ip;
    }
    if (e != nullptr) {
        e->mac = mac;
        e->stamp = next_stamp_++;
    }
    for (Pending& p : pending_) {
        if (p.tries == 0 || p.ip != ip) continue;
        p.tries = 0; // the slot is free before the listener may resolve again
        counters_.arp_resolved.add();
        if (listener_) listener_->resolved(ip, mac);
        break;
    }
}

void Neighbours::send(const net::MacAddress& dst, const net::ArpPacket& arp, std::uint64_t now_ns,
                      net::FrameSink& out) noexcept {
    const std::size_t len = net::build_arp(std::span<std::uint8_t, net::kMinFrameLen>(frame_), dst, arp);
    out.send(std::span<const std::uint8_t>(frame_.data(), len), now_ns);
}

void Neighbours::send_request(const net::Ipv4Address& ip, std::uint64_t now_ns, net::FrameSink& out) noexcept {
    counters_.arp_requests_sent.add(); // counted before it leaves: see receive()
    send(net::kBroadcastMac, net::arp_request(addresses_.mac, addresses_.ipv4, ip), now_ns, out);
}

void Neighbours::receive(net::Bytes frame, std::uint64_t now_ns, net::FrameSink& out) noexcept {
    const auto arp = net::parse_arp(frame);
    if (!arp) {
        counters_.arp_malformed.add();
        return;
    }
    counters_.arp_frames.add();
    const bool have_address = addresses_.ipv4 != kNoAddress;
    if (have_address && arp->sender_ip == addresses_.ipv4) {
        // Our own frame coming back (a hub, a looped wire), or a conflict.
        if (arp->sender_mac != addresses_.mac) counters_.arp_address_conflicts.add();
        return;
    }
    const bool for_us = have_address && arp->target_ip == addresses_.ipv4;
    // A probe (sender 0.0.0.0, RFC 5227) or a group sender teaches nothing.
    const bool learnable = arp->sender_ip != kNoAddress && net::is_unicast(arp->sender_mac) &&
                           arp->sender_mac != net::MacAddress{};
    if (learnable) {
        // Counted before learn(), which tells the listener: whoever it wakes
        // finds the count (as arp_resolved, and the answer below).
        if (for_us) {
            (arp->op == net::ArpOp::request ? counters_.arp_requests_learned : counters_.arp_replies_learned)
                .add();
            learn(arp->sender_ip, arp->sender_mac);
        } else if (find(arp->sender_ip) != nullptr) {
            counters_.arp_entries_updated.add();
            learn(arp->sender_ip, arp->sender_mac);
        }
    }
    if (for_us && arp->op == net::ArpOp::request && net::is_unicast(arp->sender_mac)) {
        // Counted before the reply leaves: on the thread engine the peer may
        // learn from it, and whoever waits on that may read this counter
        // without this port's lock.
        counters_.arp_requests_answered.add();
        send(arp->sender_mac, net::arp_reply(*arp, addresses_.mac), now_ns, out);
    }
}

Resolution Neighbours::resolve(const net::Ipv4Address& ip, std::uint64_t now_ns, net::FrameSink& out) noexcept {
    if (ip == addresses_.ipv4 && ip != kNoAddress) return {ResolveState::resolved, addresses_.mac};
    if (Entry* e = find(ip)) {
        e->stamp = next_stamp_++;
        return {ResolveState::resolved, e->mac};
    }
    Pending* free_slot = nullptr;
    for (Pending& p : pending_) {
        if (p.tries != 0 && p.ip == ip) return {ResolveState::pending, {}};
        if (p.tries == 0 && free_slot == nullptr) free_slot = &p;
    }
    if (free_slot == nullptr || addresses_.ipv4 == kNoAddress) {
        counters_.arp_resolve_failures.add();
        return {ResolveState::failed, {}};
    }
    *free_slot = Pending{ip, 1, now_ns + config_.retry_interval_ns};
    next_deadline_ns_ = std::min(next_deadline_ns_, free_slot->next_ns);
    send_request(ip, now_ns, out);
    return {ResolveState::pending, {}};
}

void Neighbours::service(std::uint64_t now_ns, net::FrameSink& out) noexcept {
    if (now_ns < next_deadline_ns_) return;
    for (Pending& p : pending_) {
        if (p.tries == 0 || p.next_ns > now_ns) continue;
        if (p.tries < config_.request_tries) {
            ++p.tries;
            p.next_ns = now_ns + config_.retry_interval_ns;
            send_request(p.ip, now_ns, out);
            continue;
        }
        const net::Ipv4Address ip = p.ip;
        p.tries = 0; // free before the listener may resolve again
        counters_.arp_resolve_failures.add();
        if (listener_) listener_->unreachable(ip);
    }
    // A listener may have started resolves: they lowered next_deadline_ns_
    // only if it was already below; recompute from the slots.
    std::uint64_t next = UINT64_MAX;
    for (const Pending& p : pending_)
        if (p.tries != 0) next = std::min(next, p.next_ns);
    next_deadline_ns_ = next;
}

} // namespace rdmasim::datapath
