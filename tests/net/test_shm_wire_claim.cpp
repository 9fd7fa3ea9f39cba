// ShmWire's one-copy send (FrameSink::claim / commit): a RoCE frame built
// straight into the peer's ring slot arrives as the same bytes send() puts
// there, counted the same; claim never passes frames waiting in the
// backlog, and leaves floods, unknown and own MACs to send().
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "net/roce_frame.hpp"
#include "net/shm_wire.hpp"
#include "tests/net/temp_dir.hpp"

using namespace rdmasim::net;
using rdmasim::net::test::TempDir;

namespace {

using Bytes = std::vector<std::uint8_t>;
using Mac = std::array<std::uint8_t, 6>;

const Mac kA{0x02, 0, 0, 0, 0, 0x01};
const Mac kB{0x02, 0, 0, 0, 0, 0x02};

std::unique_ptr<ShmWire> open_ok(const std::string& url) {
    auto w = ShmWire::open(url);
    INFO(url << ": " << (w ? std::string() : w.error().message));
    REQUIRE(w);
    return std::move(w.value());
}

RocePath path_a_to_b() {
    RocePath p;
    p.src_mac = kA;
    p.dst_mac = kB;
    const std::uint8_t a[4] = {192, 0, 2, 1}, b[4] = {192, 0, 2, 2};
    p.sgid = ipv4_mapped_gid(a);
    p.dgid = ipv4_mapped_gid(b);
    p.udp_src_port = 0xc123;
    return p;
}

RoceHeaders send_only(std::uint32_t psn) {
    RoceHeaders h;
    h.bth.opcode = static_cast<std::uint8_t>(RoceOpcode::rc_send_only);
    h.bth.dest_qp = 0x12;
    h.bth.psn = psn;
    h.bth.ack_req = true;
    return h;
}

Bytes payload(std::size_t n, std::uint8_t seed) {
    Bytes b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(seed + 7 * i);
    return b;
}

// The old path's bytes: built into a buffer of the caller's.
Bytes built(const RocePath& path, const RoceHeaders& h, const Bytes& pl) {
    Bytes out(roce_frame_len(path, h.bth.opcode, pl.size()));
    REQUIRE(build_roce_frame(path, h, pl, out).len == out.size());
    return out;
}

// The new one: built into the room `w` claims; false when it grants none.
bool build_claimed(ShmWire& w, const RocePath& path, const RoceHeaders& h, const Bytes& pl) {
    const RoceBuildResult plan = roce_frame_plan(path, h, pl.size());
    REQUIRE(plan.error == RoceBuildError::none);
    const std::span<std::uint8_t> room = w.claim(plan.len, path.dst_mac.data());
    if (room.empty()) return false;
    REQUIRE(room.size() == plan.len);
    REQUIRE(build_roce_frame(path, h, pl, room).len == plan.len);
    w.commit(plan.len, 0);
    return true;
}

Bytes next_bytes(ShmWire& w) {
    Frame f;
    REQUIRE(w.next(f));
    return {f.data, f.data + f.len};
}

// a and b on one segment, each MAC learned by the other's switch.
struct Pair {
    TempDir dir;
    std::unique_ptr<ShmWire> a, b;
    Pair() {
        const std::string url = "shm://" + (dir / "seg");
        a = open_ok(url);
        b = open_ok(url);
        Bytes hello(60, 0);
        std::memcpy(hello.data(), kA.data(), 6); // b -> a: b's MAC learned
        std::memcpy(hello.data() + 6, kB.data(), 6);
        b->send(hello, 0);
        Frame f;
        REQUIRE(a->next(f));
    }
};

} // namespace

TEST_CASE("ShmWire claim: the frame built in the ring is the frame send() puts there, ICRC valid",
          "[net][shm][claim]") {
    Pair p;
    const RocePath path = path_a_to_b();
    std::uint64_t bytes = 0;
    for (const std::size_t n : {0u, 1u, 1024u, 4096u}) {
        const Bytes pl = payload(n, static_cast<std::uint8_t>(n));
        const Bytes old_frame = built(path, send_only(static_cast<std::uint32_t>(n)), pl);
        bytes += old_frame.size();
        p.a->send(old_frame, 0);
        REQUIRE(build_claimed(*p.a, path, send_only(static_cast<std::uint32_t>(n)), pl));
        const Bytes via_send = next_bytes(*p.b), via_claim = next_bytes(*p.b);
        CHECK(via_send == old_frame);
        CHECK(via_claim == old_frame);
        RocePacket pkt;
        CHECK(parse_roce_frame(via_claim, pkt) == RoceDrop::none); // the ICRC among its checks
        CHECK(pkt.payload.size() == n);
    }
    CHECK(p.a->wire_counters().tx_frames == 8);
    CHECK(p.a->wire_counters().tx_bytes == 2 * bytes);
    Frame f;
    CHECK_FALSE(p.b->next(f));
}

TEST_CASE("ShmWire claim: refused while frames wait in the backlog; then after them, in order",
          "[net][shm][claim]") {
    Pair p;
    const RocePath path = path_a_to_b();
    const Bytes pl = payload(64, 1);
    // Fill b's ring, and one more: it waits in a's backlog.
    for (std::uint32_t i = 0; i <= 256; ++i) p.a->send(built(path, send_only(i), pl), 0);
    REQUIRE(p.a->backlog_frames() == 1);
    CHECK_FALSE(build_claimed(*p.a, path, send_only(257), pl));
    // b reads 10 frames (handed back at its next pull): room again, but
    // the claim goes behind the waiting frame.
    for (int i = 0; i < 10; ++i) (void)next_bytes(*p.b);
    Frame f;
    REQUIRE(p.b->next(f)); // the 11th; the 10 before it are handed back
    REQUIRE(build_claimed(*p.a, path, send_only(257), pl));
    CHECK(p.a->backlog_frames() == 0);
    std::vector<std::uint32_t> psns;
    RocePacket pkt;
    REQUIRE(parse_roce_frame({f.data, f.len}, pkt) == RoceDrop::none);
    psns.push_back(pkt.headers.bth.psn);
    while (p.b->next(f)) {
        REQUIRE(parse_roce_frame({f.data, f.len}, pkt) == RoceDrop::none);
        psns.push_back(pkt.headers.bth.psn);
    }
    REQUIRE(psns.size() == 258 - 10);
    for (std::size_t i = 0; i < psns.size(); ++i) CHECK(psns[i] == 10 + i);
    CHECK(p.a->wire_counters().tx_frames == 258);
}

TEST_CASE("ShmWire claim: floods, unknown and own MACs and bad sizes are left to send()",
          "[net][shm][claim]") {
    Pair p;
    const Mac broadcast{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    const Mac unknown{0x02, 0, 0, 0, 0, 0x09};
    CHECK(p.a->claim(60, broadcast.data()).empty());
    CHECK(p.a->claim(60, unknown.data()).empty());
    CHECK(p.b->claim(60, kB.data()).empty()); // b's own MAC: a switch never sends it back
    CHECK(p.a->claim(13, kB.data()).empty());
    CHECK(p.a->claim(ShmWire::kMaxFrame + 1, kB.data()).empty());
    CHECK(p.a->claim(ShmWire::kMaxFrame, kB.data()).size() == ShmWire::kMaxFrame);
    p.a->commit(60, 0);
    CHECK(p.a->wire_counters().tx_frames == 1);
    CHECK(p.a->wire_counters().tx_dropped == 0);
}
