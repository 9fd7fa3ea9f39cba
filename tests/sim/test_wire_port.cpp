// A device plugged into a ptp:// wire from the configuration (`wire`): the
// socket is the owner's, frames from the wire pass the port's checks like
// any source's, and a raw QP's sends go out on the wire byte for byte.
#include <catch2/catch.hpp>

#include "support/vdeplug_guard.hpp"

#include <poll.h>
#include <sys/stat.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/crc32.hpp"
#include "net/vde_wire.hpp"
#include "sim/simulator.hpp"
#include "tests/net/temp_dir.hpp"
#include "tests/sim/port_io_helpers.hpp"

using namespace rdmasim;
using net::test::TempDir;

namespace {

std::unique_ptr<sim::Simulator> wired(const std::string& url, const std::string& mode = "") {
    sim::Config c;
    c.engine = sim::EngineKind::inline_;
    REQUIRE(c.set("start", "now"));
    REQUIRE(c.set("wire", url));
    if (!mode.empty()) REQUIRE(c.set("wire_mode", mode));
    auto s = sim::Simulator::create(c);
    INFO((s ? std::string() : s.error().message));
    REQUIRE(s);
    return std::move(s.value());
}

unsigned mode_of(const std::string& path) {
    struct stat st{};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    return st.st_mode & 07777;
}

std::uint64_t drops(sim::Simulator& s, datapath::Drop d) {
    return s.port_counters(0).drops[static_cast<std::size_t>(d)].get();
}

} // namespace

TEST_CASE("wire frames pass the port's checks: runts and oversize datagrams are counted drops",
          "[sim][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    const std::string sock = dir / "sock";
    auto s = wired("ptp://" + sock);
    CHECK(mode_of(sock) == 0600); // the device's end of the wire: its owner's only
    auto peer = net::VdeWire::open("ptp://" + sock);
    REQUIRE(peer);
    CHECK(mode_of(sock + "+") == 0600);
    {
        test::NamedDevice dev(0);
        test::ReceiveRig rig(dev.ctx, dev.pd,
                             {.wqs = 1, .depth = 16, .wq_flags = {IBV_WQ_FLAGS_SCATTER_FCS}});
        const auto good = test::ipv4_tcp_frame(0x0a000001, 0x0a000002, 1000, 80);
        peer.value()->send(std::vector<std::uint8_t>(6, 0xee), 0);     // a runt
        peer.value()->send(std::vector<std::uint8_t>(10000, 0x11), 0); // longer than any frame
        peer.value()->send(good, 0);
        (void)peer.value()->flush(); // a connected ptp end sends its batch here, as a port does
        const auto got = test::receive(rig, 1);
        REQUIRE(got.size() == 1);
        // The wire carries no FCS: the port computes the one the queue scatters.
        std::vector<std::uint8_t> want = good;
        std::uint8_t fcs[4];
        net::write_fcs(good, fcs);
        want.insert(want.end(), fcs, fcs + 4);
        CHECK(got[0] == want);
    }
    CHECK(s->port_counters(0).frames.get() == 3);
    CHECK(s->port_counters(0).delivered.get() == 1);
    CHECK(drops(*s, datapath::Drop::runt) == 1);
    CHECK(drops(*s, datapath::Drop::truncated_capture) == 1);
    const auto* wire = dynamic_cast<const net::VdeWire*>(&s->engine(0).source());
    REQUIRE(wire != nullptr);
    CHECK(wire->counters().frames == 3);
    CHECK(wire->counters().truncated_records == 1);
}

TEST_CASE("a raw QP's sends leave on the wire byte for byte", "[sim][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    const std::string sock = dir / "sock";
    auto s = wired("ptp://" + sock, "0660");
    CHECK(mode_of(sock) == 0660); // widened on request
    auto peer = net::VdeWire::open("ptp://" + sock);
    REQUIRE(peer);
    std::vector<std::vector<std::uint8_t>> sent;
    {
        test::NamedDevice dev(0);
        test::RawSender tx(dev.pd);
        for (unsigned i = 0; i < 10; ++i) {
            sent.push_back(test::ipv4_tcp_frame(0x0a000001, 0x0a000002 + i, 1000, 80, test::kDstMac, 10 + i * 100));
            tx.send(sent.back());
        }
    }
    std::vector<std::vector<std::uint8_t>> got;
    net::Frame f;
    for (int tries = 0; tries < 100 && got.size() < sent.size(); ++tries) {
        if (peer.value()->next(f)) {
            got.emplace_back(f.data, f.data + f.len);
            continue;
        }
        pollfd p{peer.value()->wait_fd(), POLLIN, 0};
        ::poll(&p, 1, 10);
    }
    CHECK(got == sent);
    const auto* wire = dynamic_cast<const net::VdeWire*>(&s->engine(0).source());
    REQUIRE(wire != nullptr);
    CHECK(wire->wire_counters().tx_frames == 10);
    CHECK(wire->wire_counters().tx_failures == 0);
}

TEST_CASE("drain_wires sends what waits in the backlog while the peer reads, and says what is "
          "left when it does not",
          "[sim][wire][lossless]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    const std::string sock = dir / "sock";
    auto s = wired("ptp://" + sock);
    auto peer = net::VdeWire::open("ptp://" + sock);
    REQUIRE(peer);
    constexpr unsigned kFrames = 100; // the peer's socket queue takes about 10 before it reads
    {
        test::NamedDevice dev(0);
        test::RawSender tx(dev.pd);
        for (unsigned i = 0; i < kFrames; ++i)
            tx.send(
                test::ipv4_tcp_frame(0x0a000001, 0x0a000002 + i, 1000, 80, test::kDstMac, 1000));
    }
    const auto* wire = dynamic_cast<const net::VdeWire*>(&s->engine(0).source());
    REQUIRE(wire != nullptr);
    REQUIRE(wire->backlog_frames() > 0); // the peer has not read: frames wait
    SECTION("a peer that reads: nothing is left, every frame arrives in order") {
        std::vector<std::uint32_t> dst; // each frame's IPv4 destination, in arrival order
        std::thread reader([&] {
            net::Frame f;
            for (int idle = 0; idle < 200 && dst.size() < kFrames;) {
                if (peer.value()->next(f)) {
                    dst.push_back(static_cast<std::uint32_t>(f.data[30]) << 24 | f.data[31] << 16 |
                                  f.data[32] << 8 | f.data[33]);
                    continue;
                }
                ++idle;
                pollfd p{peer.value()->wait_fd(), POLLIN, 0};
                ::poll(&p, 1, 10);
            }
        });
        CHECK(s->drain_wires(std::chrono::milliseconds(5000)) == 0);
        reader.join();
        REQUIRE(dst.size() == kFrames);
        for (unsigned i = 0; i < kFrames; ++i)
            CHECK(dst[i] == 0x0a000002 + i);
    }
    SECTION("a peer that never reads: the frames still waiting after the limit") {
        const auto t0 = std::chrono::steady_clock::now();
        const std::size_t left = s->drain_wires(std::chrono::milliseconds(50));
        CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(50));
        CHECK(left == wire->backlog_frames());
        CHECK(left + wire->wire_counters().tx_frames == kFrames);
        CHECK(left > 0);
    }
}

TEST_CASE("a wire that cannot be opened fails the simulator with the URL and the reason", "[sim][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    sim::Config c;
    REQUIRE(c.set("wire", "vde://" + (dir / "no-switch")));
    auto s = sim::Simulator::create(c);
    REQUIRE_FALSE(s);
    CHECK(s.error().code == ENOENT);
    CHECK(s.error().message.find("vde://" + (dir / "no-switch")) != std::string::npos);
    CHECK(s.error().message.find("No such file or directory") != std::string::npos);
}
