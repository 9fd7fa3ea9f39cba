// The port's neighbours (datapath/README.md, "Neighbours"): answering requests
// for the port's address, learning from requests and replies aimed at it,
// RFC 826's merge, the bounded cache, resolve() with its retries and
// failure, and the listener; then the same through a Port, where an ARP frame
// is both handled by the host and offered to the steering.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <mutex>
#include <vector>

#include "datapath/neighbours.hpp"
#include "datapath/port.hpp"

using namespace rdmasim;
using datapath::Neighbours;
using datapath::ResolveState;
using net::Ipv4Address;
using net::MacAddress;

namespace {

const MacAddress kOurMac{0x02, 0, 0, 0, 0, 0x01};
const Ipv4Address kOurIp{192, 0, 2, 1};
const MacAddress kPeerMac{0x02, 0, 0, 0, 0, 0x02};
const Ipv4Address kPeerIp{192, 0, 2, 2};
constexpr std::uint64_t kSecond = 1'000'000'000;

struct Recorder final : net::FrameSink {
    std::vector<std::vector<std::uint8_t>> frames;
    std::vector<std::uint64_t> times;
    // With `counted` set: its requests sent and answered as each frame
    // arrives (a frame is counted before it leaves).
    const Neighbours* counted = nullptr;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> counts_at_send;
    void send(std::span<const std::uint8_t> f, std::uint64_t ts) noexcept override {
        frames.emplace_back(f.begin(), f.end());
        times.push_back(ts);
        if (counted)
            counts_at_send.emplace_back(counted->counters().arp_requests_sent.get(),
                                        counted->counters().arp_requests_answered.get());
    }
    [[nodiscard]] net::ArpPacket arp(std::size_t i) const { return *net::parse_arp(frames.at(i)); }
    [[nodiscard]] MacAddress eth_dst(std::size_t i) const {
        MacAddress m;
        std::copy_n(frames.at(i).begin(), 6, m.begin());
        return m;
    }
};

struct Listener final : datapath::NeighbourListener {
    std::vector<std::pair<Ipv4Address, MacAddress>> resolved_;
    std::vector<Ipv4Address> unreachable_;
    void resolved(const Ipv4Address& ip, const MacAddress& mac) noexcept override { resolved_.emplace_back(ip, mac); }
    void unreachable(const Ipv4Address& ip) noexcept override { unreachable_.push_back(ip); }
};

std::vector<std::uint8_t> frame(const MacAddress& dst, const net::ArpPacket& arp) {
    std::array<std::uint8_t, net::kMinFrameLen> out;
    net::build_arp(out, dst, arp);
    return {out.begin(), out.end()};
}

void configure(Neighbours& n, datapath::NeighbourConfig config = {}) {
    n.configure({kOurMac, kOurIp, net::ipv6_link_local(kOurMac)}, config);
}

} // namespace

TEST_CASE("a request for the port's address is answered and teaches the asker", "[datapath][neighbours]") {
    Neighbours n;
    configure(n);
    Recorder out;
    out.counted = &n;
    n.receive(frame(net::kBroadcastMac, net::arp_request(kPeerMac, kPeerIp, kOurIp)), 5, out);
    REQUIRE(out.frames.size() == 1);
    // Counted before it left: another thread woken by the reply finds the count.
    CHECK(out.counts_at_send.at(0) == std::pair<std::uint64_t, std::uint64_t>{0, 1});
    CHECK(out.frames[0].size() == net::kMinFrameLen);
    CHECK(out.eth_dst(0) == kPeerMac);
    CHECK(out.arp(0) == net::ArpPacket{net::ArpOp::reply, kOurMac, kOurIp, kPeerMac, kPeerIp});
    CHECK(out.times[0] == 5);
    CHECK(n.lookup(kPeerIp) == kPeerMac);
    CHECK(n.counters().arp_frames.get() == 1);
    CHECK(n.counters().arp_requests_answered.get() == 1);
    CHECK(n.counters().arp_requests_learned.get() == 1);
}

TEST_CASE("requests for other addresses are not answered and teach nothing new", "[datapath][neighbours]") {
    Neighbours n;
    configure(n);
    Recorder out;
    const Ipv4Address other{192, 0, 2, 9};
    n.receive(frame(net::kBroadcastMac, net::arp_request(kPeerMac, kPeerIp, other)), 0, out);
    CHECK(out.frames.empty());
    CHECK_FALSE(n.lookup(kPeerIp));
    // A reply to someone else, a probe (sender 0.0.0.0) for our address: the
    // probe is answered (we defend the address) but nothing is learned.
    n.receive(frame(kPeerMac, net::ArpPacket{net::ArpOp::reply, kPeerMac, kPeerIp, kPeerMac, other}), 0, out);
    n.receive(frame(net::kBroadcastMac, net::arp_request(kPeerMac, Ipv4Address{}, kOurIp)), 0, out);
    CHECK(n.cached() == 0);
    REQUIRE(out.frames.size() == 1);
    CHECK(out.arp(0).target_ip == Ipv4Address{});
    CHECK(n.counters().arp_frames.get() == 3);
    CHECK(n.counters().arp_requests_answered.get() == 1);
}

TEST_CASE("an entry is refreshed by any ARP from its owner (RFC 826 merge)", "[datapath][neighbours]") {
    Neighbours n;
    configure(n);
    Recorder out;
    n.receive(frame(net::kBroadcastMac, net::arp_request(kPeerMac, kPeerIp, kOurIp)), 0, out);
    const MacAddress moved{0x02, 0, 0, 0, 0, 0x22};
    // A gratuitous ARP from the peer's new MAC, not aimed at us.
    n.receive(frame(net::kBroadcastMac, net::arp_request(moved, kPeerIp, kPeerIp)), 0, out);
    CHECK(n.lookup(kPeerIp) == moved);
    CHECK(n.counters().arp_entries_updated.get() == 1);
}

TEST_CASE("someone else claiming the port's address is counted, never learned", "[datapath][neighbours]") {
    Neighbours n;
    configure(n);
    Recorder out;
    n.receive(frame(net::kBroadcastMac, net::arp_request(kPeerMac, kOurIp, kOurIp)), 0, out);
    // Our own request coming back (a looped wire) is no conflict.
    n.receive(frame(net::kBroadcastMac, net::arp_request(kOurMac, kOurIp, kPeerIp)), 0, out);
    CHECK(n.counters().arp_address_conflicts.get() == 1);
    CHECK(n.cached() == 0);
    CHECK(out.frames.empty());
}

TEST_CASE("malformed ARP is counted and ignored", "[datapath][neighbours]") {
    Neighbours n;
    configure(n);
    Recorder out;
    auto f = frame(net::kBroadcastMac, net::arp_request(kPeerMac, kPeerIp, kOurIp));
    f[16] = 0x86; // protocol type IPv6
    n.receive(f, 0, out);
    CHECK(n.counters().arp_malformed.get() == 1);
    CHECK(n.counters().arp_frames.get() == 0);
    CHECK(out.frames.empty());
}

TEST_CASE("the cache is bounded: the least recently used entry makes room", "[datapath][neighbours]") {
    datapath::NeighbourConfig config;
    config.capacity = 4;
    Neighbours n;
    configure(n, config);
    Recorder out;
    const auto learn = [&](std::uint8_t host) {
        const MacAddress mac{0x02, 0, 0, 0, 1, host};
        n.receive(frame(kOurMac, net::ArpPacket{net::ArpOp::reply, mac, {192, 0, 2, host}, kOurMac, kOurIp}), 0,
                  out);
    };
    for (std::uint8_t h = 10; h < 14; ++h) learn(h);
    CHECK(n.cached() == 4);
    // Using .10 makes .11 the least recently used.
    CHECK(n.resolve({192, 0, 2, 10}, 0, out).state == ResolveState::resolved);
    learn(14);
    CHECK(n.cached() == 4);
    CHECK(n.lookup({192, 0, 2, 10}));
    CHECK_FALSE(n.lookup({192, 0, 2, 11}));
    CHECK(n.lookup({192, 0, 2, 14}));
    CHECK(n.counters().arp_cache_evictions.get() == 1);
    CHECK(n.counters().arp_replies_learned.get() == 5);
    CHECK(out.frames.empty());
}

TEST_CASE("resolve: one request, the reply resolves it and tells the listener", "[datapath][neighbours]") {
    Neighbours n;
    configure(n);
    Listener listener;
    n.set_listener(&listener);
    Recorder out;
    out.counted = &n;
    CHECK(n.resolve(kOurIp, 0, out).state == ResolveState::resolved); // our own address
    const auto r = n.resolve(kPeerIp, 100, out);
    CHECK(r.state == ResolveState::pending);
    REQUIRE(out.frames.size() == 1);
    CHECK(out.counts_at_send.at(0).first == 1); // counted before it left
    CHECK(out.eth_dst(0) == net::kBroadcastMac);
    CHECK(out.arp(0) == net::arp_request(kOurMac, kOurIp, kPeerIp));
    CHECK(n.next_deadline_ns() == 100 + kSecond);
    // Asked again while pending: no second request.
    CHECK(n.resolve(kPeerIp, 200, out).state == ResolveState::pending);
    CHECK(out.frames.size() == 1);
    n.receive(frame(kOurMac, net::arp_reply(net::arp_request(kOurMac, kOurIp, kPeerIp), kPeerMac)), 300, out);
    REQUIRE(listener.resolved_.size() == 1);
    CHECK(listener.resolved_[0] == std::pair{kPeerIp, kPeerMac});
    const auto again = n.resolve(kPeerIp, 400, out);
    CHECK(again.state == ResolveState::resolved);
    CHECK(again.mac == kPeerMac);
    n.service(100 + kSecond, out); // nothing left to retry
    CHECK(out.frames.size() == 1);
    CHECK(n.next_deadline_ns() == UINT64_MAX);
    CHECK(n.counters().arp_resolved.get() == 1);
    CHECK(n.counters().arp_requests_sent.get() == 1);
    CHECK(listener.unreachable_.empty());
}

TEST_CASE("resolve: unanswered, it retries at the interval and then fails", "[datapath][neighbours]") {
    Neighbours n; // 3 tries, 1 s apart (Linux's defaults)
    configure(n);
    Listener listener;
    n.set_listener(&listener);
    Recorder out;
    REQUIRE(n.resolve(kPeerIp, 0, out).state == ResolveState::pending);
    n.service(kSecond - 1, out);
    CHECK(out.frames.size() == 1);
    n.service(kSecond, out);
    CHECK(out.frames.size() == 2);
    n.service(2 * kSecond, out);
    CHECK(out.frames.size() == 3);
    CHECK(out.times == std::vector<std::uint64_t>{0, kSecond, 2 * kSecond});
    CHECK(listener.unreachable_.empty());
    n.service(3 * kSecond, out);
    CHECK(out.frames.size() == 3);
    REQUIRE(listener.unreachable_.size() == 1);
    CHECK(listener.unreachable_[0] == kPeerIp);
    CHECK(n.pending() == 0);
    CHECK(n.next_deadline_ns() == UINT64_MAX);
    CHECK(n.counters().arp_resolve_failures.get() == 1);
    CHECK(n.counters().arp_requests_sent.get() == 3);
    // A later call starts anew.
    CHECK(n.resolve(kPeerIp, 4 * kSecond, out).state == ResolveState::pending);
    CHECK(out.frames.size() == 4);
}

TEST_CASE("resolve: more at once than max_pending fails at once", "[datapath][neighbours]") {
    datapath::NeighbourConfig config;
    config.max_pending = 2;
    Neighbours n;
    configure(n, config);
    Recorder out;
    CHECK(n.resolve({192, 0, 2, 10}, 0, out).state == ResolveState::pending);
    CHECK(n.resolve({192, 0, 2, 11}, 0, out).state == ResolveState::pending);
    CHECK(n.resolve({192, 0, 2, 12}, 0, out).state == ResolveState::failed);
    CHECK(n.counters().arp_resolve_failures.get() == 1);
    CHECK(out.frames.size() == 2);
}

TEST_CASE("a listener may resolve again from its callback", "[datapath][neighbours]") {
    struct Again final : datapath::NeighbourListener {
        Neighbours* n = nullptr;
        net::FrameSink* out = nullptr;
        int failures = 0;
        void resolved(const Ipv4Address&, const MacAddress&) noexcept override {}
        void unreachable(const Ipv4Address& ip) noexcept override {
            if (++failures == 1) (void)n->resolve(ip, 3 * kSecond, *out);
        }
    };
    Neighbours n;
    configure(n);
    Recorder out;
    Again again;
    again.n = &n;
    again.out = &out;
    n.set_listener(&again);
    (void)n.resolve(kPeerIp, 0, out);
    for (std::uint64_t t = 1; t <= 6; ++t) n.service(t * kSecond, out);
    CHECK(again.failures == 2);
    CHECK(out.frames.size() == 6);
}

TEST_CASE("through a port: an ARP request is answered on the sinks and still steered", "[datapath][neighbours]") {
    datapath::Port port;
    Recorder wire;
    std::lock_guard lock(port.mutex());
    port.configure_addresses({kOurMac, kOurIp, net::ipv6_link_local(kOurMac)});
    port.attach_sink(wire);
    const auto request = frame(net::kBroadcastMac, net::arp_request(kPeerMac, kPeerIp, kOurIp));
    net::Frame f;
    f.data = request.data();
    f.len = f.wire_len = static_cast<std::uint32_t>(request.size());
    port.ingress(f, 7);
    REQUIRE(wire.frames.size() == 1);
    CHECK(wire.arp(0).op == net::ArpOp::reply);
    CHECK(wire.times[0] == 7);
    // No flow: the frame's own outcome is a steering miss, as for any frame.
    CHECK(port.counters().frames.get() == 1);
    CHECK(port.counters().drops[static_cast<std::size_t>(datapath::Drop::steering_miss)].get() == 1);
    CHECK(port.balanced());
    CHECK(port.neighbours().counters().arp_requests_answered.get() == 1);
    // A program's own send (transmit) is not the host's business.
    port.transmit(f, &wire);
    CHECK(port.neighbours().counters().arp_frames.get() == 1);
    // resolve() through the port: the request goes to the sinks, the retry
    // deadline joins the port's.
    CHECK(port.resolve(Ipv4Address{192, 0, 2, 3}).state == ResolveState::pending);
    CHECK(port.next_deadline_ns() == 7 + kSecond);
    port.service(7 + kSecond);
    CHECK(port.neighbours().counters().arp_requests_sent.get() == 2);
    port.detach_sink(wire);
}
