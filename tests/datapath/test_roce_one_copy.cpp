// A RoCE frame built straight into a sink's storage (RocePort::transmit_in_place,
// L2Host::claim_roce / commit_roce, net::FrameSink::claim): the same bytes
// as the build-then-send path, the other sinks given them too; and small
// payloads and every case send_roce would not put on the wire at once left to it.
#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

#include "datapath/port.hpp"
#include "net/arp.hpp"

using namespace rdmasim;
using net::Ipv4Address;
using net::MacAddress;

namespace {

using Bytes = std::vector<std::uint8_t>;

const MacAddress kOurMac{0x02, 0, 0, 0, 0, 0x01};
const Ipv4Address kOurIp{192, 0, 2, 1};
const MacAddress kPeerMac{0x02, 0, 0, 0, 0, 0x02};
const Ipv4Address kPeerIp{192, 0, 2, 2};

struct Recorder : net::FrameSink {
    std::vector<Bytes> sent;
    void send(std::span<const std::uint8_t> f, std::uint64_t) noexcept override { sent.emplace_back(f.begin(), f.end()); }
};

// A wire with storage of its own: grants claims (while `grant`), keeps what is committed.
struct SlotWire final : Recorder {
    bool grant = true;
    Bytes slot = Bytes(9000, 0xee);
    std::vector<MacAddress> claimed_for;
    std::vector<Bytes> committed;
    std::span<std::uint8_t> claim(std::size_t size, const std::uint8_t* dst_mac) noexcept override {
        if (!grant) return {};
        claimed_for.push_back({dst_mac[0], dst_mac[1], dst_mac[2], dst_mac[3], dst_mac[4], dst_mac[5]});
        return {slot.data(), size};
    }
    void commit(std::size_t len, std::uint64_t) noexcept override {
        committed.emplace_back(slot.begin(), slot.begin() + static_cast<std::ptrdiff_t>(len));
    }
};

net::RocePath path_to(const Ipv4Address& dst) {
    net::RocePath p;
    p.src_mac = kOurMac;
    p.dst_mac = {0, 0, 0, 0, 0, 0}; // send_roce writes the neighbour's
    p.sgid = net::ipv4_mapped_gid(kOurIp.data());
    p.dgid = net::ipv4_mapped_gid(dst.data());
    return p;
}

net::RoceHeaders write_only() {
    net::RoceHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(net::RoceOpcode::rc_write_only);
    h.bth.dest_qp = 0x11;
    h.bth.psn = 0x123;
    h.reth = {0x1000, 0x42, 1500};
    return h;
}

// A port that knows its peer (an ARP request from it taught it), sinks attached.
struct Fixture {
    datapath::Port port;
    SlotWire wire;
    Recorder capture;
    std::lock_guard<std::mutex> lock{port.mutex()};
    Fixture() {
        port.configure_addresses({kOurMac, kOurIp, net::ipv6_link_local(kOurMac)});
        port.attach_sink(wire);
        port.attach_sink(capture);
        std::array<std::uint8_t, net::kMinFrameLen> arp;
        net::build_arp(arp, net::kBroadcastMac, net::arp_request(kPeerMac, kPeerIp, kOurIp));
        net::Frame f;
        f.data = arp.data();
        f.len = f.wire_len = static_cast<std::uint32_t>(arp.size());
        port.ingress(f, 1);
        wire.sent.clear();
        capture.sent.clear();
    }
    ~Fixture() {
        port.detach_sink(capture);
        port.detach_sink(wire);
    }
};

} // namespace

TEST_CASE("one copy: the frame built in the wire's room is the one build-then-send sends, to every sink",
          "[datapath][roce][claim]") {
    Fixture fx;
    const Bytes a(1000, 0x5a), b(500, 0xa5);
    const std::span<const std::uint8_t> pieces[2] = {a, b};
    const net::RocePath path = path_to(kPeerIp);

    // The old path: built into a buffer, handed to send_roce (MAC rewritten in place).
    Bytes old_frame(net::roce_frame_len(path, write_only().bth.opcode, 1500));
    REQUIRE(net::build_roce_frame(path, write_only(), pieces, old_frame).len == old_frame.size());
    fx.port.roce().transmit(old_frame, 2);
    REQUIRE(fx.wire.sent.size() == 1);
    REQUIRE(fx.capture.sent.size() == 1);
    CHECK(std::equal(kPeerMac.begin(), kPeerMac.end(), fx.wire.sent[0].begin()));

    const std::size_t len = fx.port.roce().transmit_in_place(path, write_only(), pieces);
    CHECK(len == old_frame.size());
    REQUIRE(fx.wire.committed.size() == 1);
    CHECK(fx.wire.claimed_for == std::vector<MacAddress>{kPeerMac});
    CHECK(fx.wire.committed[0] == fx.wire.sent[0]);
    REQUIRE(fx.capture.sent.size() == 2);
    CHECK(fx.capture.sent[1] == fx.wire.sent[0]);
    CHECK(fx.wire.sent.size() == 1); // the wire got it by commit only
    net::RocePacket p;
    CHECK(net::parse_roce_frame(fx.wire.committed[0], p) == net::RoceDrop::none);
    CHECK(fx.port.roce().counters().tx_wire.get() == 2);
}

TEST_CASE("one copy: left to send_roce when no sink grants room, ARP is needed, or the peer is the port",
          "[datapath][roce][claim]") {
    Fixture fx;
    const Bytes a(datapath::RocePort::kInPlaceMin, 1), small(datapath::RocePort::kInPlaceMin - 1, 1);
    const std::span<const std::uint8_t> pieces[1] = {a};
    const std::span<const std::uint8_t> small_pieces[1] = {small};
    CHECK(fx.port.roce().transmit_in_place(path_to(kPeerIp), write_only(), small_pieces) == 0); // copying is cheaper
    auto in_place = [&](const Ipv4Address& dst) {
        return fx.port.roce().transmit_in_place(path_to(dst), write_only(), pieces);
    };
    fx.wire.grant = false;
    CHECK(in_place(kPeerIp) == 0);
    fx.wire.grant = true;
    CHECK(in_place(Ipv4Address{192, 0, 2, 9}) == 0); // not cached: ARP first (send_roce asks)
    CHECK(in_place(kOurIp) == 0);                     // loopback
    CHECK(fx.wire.claimed_for.empty());
    CHECK(fx.wire.sent.empty());
    CHECK(fx.capture.sent.empty()); // no ARP request either: resolving is send_roce's
    CHECK(fx.port.neighbours().counters().arp_requests_sent.get() == 0);
    CHECK(fx.port.roce().counters().tx_wire.get() == 0);
    CHECK(in_place(kPeerIp) != 0);
}
