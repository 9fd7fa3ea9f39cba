// ShmWire: a port's source and sink on a shared-memory wire. Several wires
// on one PATH in one process stand for several programs: each maps the file
// on its own, as separate programs do.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "net/shm_wire.hpp"
#include "tests/net/temp_dir.hpp"

using namespace rdmasim::net;
using rdmasim::net::test::TempDir;

namespace {

using Bytes = std::vector<std::uint8_t>;
using Mac = std::array<std::uint8_t, 6>;

constexpr Mac kBroadcast{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
Mac host_mac(std::uint8_t n) { return {0x02, 0, 0, 0, 0, n}; }

std::unique_ptr<ShmWire> open_ok(const std::string& url) {
    auto w = ShmWire::open(url);
    INFO(url << ": " << (w ? std::string() : w.error().message));
    REQUIRE(w);
    return std::move(w.value());
}

// A frame dst <- src whose payload carries `seq`, `size` bytes in all.
Bytes frame(const Mac& dst, const Mac& src, std::uint32_t seq, std::size_t size = 64) {
    Bytes b(size);
    std::memcpy(b.data(), dst.data(), 6);
    std::memcpy(b.data() + 6, src.data(), 6);
    b[12] = 0x88;
    b[13] = 0xb5; // local experimental ether type
    std::memcpy(b.data() + 14, &seq, 4);
    for (std::size_t i = 18; i < size; ++i) b[i] = static_cast<std::uint8_t>(seq + i);
    return b;
}

std::uint32_t seq_of(const Frame& f) {
    std::uint32_t s = 0;
    std::memcpy(&s, f.data + 14, 4);
    return s;
}

bool intact(const Frame& f, std::size_t size) {
    if (f.len != size) return false;
    const std::uint32_t seq = seq_of(f);
    for (std::size_t i = 18; i < size; ++i)
        if (f.data[i] != static_cast<std::uint8_t>(seq + i)) return false;
    return true;
}

// Every frame `w` has now: (source MAC's last byte, seq) pairs.
std::vector<std::pair<int, std::uint32_t>> drain(ShmWire& w) {
    std::vector<std::pair<int, std::uint32_t>> got;
    Frame f;
    while (w.next(f)) got.emplace_back(f.data[11], seq_of(f));
    return got;
}

// A burst of one, as the port sends: the frame, then the flush that wakes
// a sleeping reader (FrameSink's contract).
void send(ShmWire& w, const Bytes& b) {
    w.send(b, 0);
    (void)w.flush();
}

} // namespace

TEST_CASE("ShmWire: ARP-style broadcast reaches every other host, learned unicast only its own", "[net][shm]") {
    TempDir dir;
    const std::string url = "shm://" + (dir / "seg");
    auto a = open_ok(url), b = open_ok(url), c = open_ok(url);
    CHECK(a->host() != b->host());
    CHECK(b->host() != c->host());
    CHECK(a->describe() == "wire " + url + " (host slot " + std::to_string(a->host()) + ", no FCS)");

    send(*a, frame(kBroadcast, host_mac(1), 7));
    CHECK(drain(*b) == std::vector<std::pair<int, std::uint32_t>>{{1, 7}});
    CHECK(drain(*c) == std::vector<std::pair<int, std::uint32_t>>{{1, 7}});
    CHECK(drain(*a).empty()); // never back to the sender
    CHECK(a->wire_counters().tx_floods == 1);

    // b answers a (learned from the broadcast): only a hears it.
    send(*b, frame(host_mac(1), host_mac(2), 8));
    CHECK(drain(*a) == std::vector<std::pair<int, std::uint32_t>>{{2, 8}});
    CHECK(drain(*c).empty());
    // a to b, learned from b's answer: only b.
    send(*a, frame(host_mac(2), host_mac(1), 9, 9234));
    Frame f;
    REQUIRE(b->next(f));
    CHECK(intact(f, 9234));
    CHECK(f.fcs_len == 0);
    CHECK(drain(*c).empty());
    CHECK(a->wire_counters().tx_frames == 2);
    CHECK(b->counters().frames == 2);
    CHECK(c->wire_counters().peers_seen == 2); // a and b were there when c came
}

TEST_CASE("ShmWire: sent frames are unread until the peer's reader is done with them", "[net][shm]") {
    TempDir dir;
    const std::string url = "shm://" + (dir / "seg");
    auto a = open_ok(url), b = open_ok(url);
    CHECK_FALSE(a->unread());
    send(*a, frame(host_mac(2), host_mac(1), 1));
    CHECK(a->unread());
    Frame f;
    REQUIRE(b->next(f));
    CHECK(a->unread()); // handed over, not released: the engine may still be at it
    CHECK_FALSE(b->next(f)); // the next pull releases it
    CHECK_FALSE(a->unread());
    CHECK_FALSE(b->unread());
}

TEST_CASE("ShmWire: two hosts; unknown unicast floods; oversize frames are dropped", "[net][shm]") {
    TempDir dir;
    const std::string url = "shm://" + (dir / "seg");
    auto a = open_ok(url), b = open_ok(url);
    send(*a, frame(host_mac(9), host_mac(1), 1)); // nobody has sent from 9: flooded
    CHECK(drain(*b) == std::vector<std::pair<int, std::uint32_t>>{{1, 1}});
    send(*a, Bytes(9235, 0));
    send(*a, Bytes(13, 0));
    CHECK(a->wire_counters().tx_dropped == 2);
    CHECK(drain(*b).empty());
}

TEST_CASE("ShmWire: a full ring queues into the backlog, flush delivers all in order", "[net][shm]") {
    TempDir dir;
    const std::string url = "shm://" + (dir / "seg");
    auto a = open_ok(url), b = open_ok(url);
    send(*b, frame(host_mac(1), host_mac(2), 0)); // a learns nothing, b's MAC is learned
    drain(*a);
    constexpr std::uint32_t kFrames = shm::kRingSlots + 100; // 100 KB waits: under the 128 KiB watermark
    for (std::uint32_t i = 0; i < kFrames; ++i) send(*a, frame(host_mac(2), host_mac(1), i, 1000));
    CHECK(a->backlog_frames() == kFrames - shm::kRingSlots);
    CHECK(a->congested() == false);
    CHECK(a->backlog_counters()->queued == kFrames - shm::kRingSlots);
    std::uint32_t expect = 0;
    for (int round = 0; round < 100 && expect < kFrames + 1; ++round) {
        Frame f;
        while (b->next(f)) {
            REQUIRE(intact(f, 1000));
            REQUIRE(seq_of(f) == expect);
            ++expect;
        }
        // A frame sent while others wait (the ring has room now) goes behind them.
        if (round == 0) send(*a, frame(host_mac(2), host_mac(1), kFrames, 1000));
        a->flush();
    }
    CHECK(expect == kFrames + 1);
    CHECK(a->backlog_frames() == 0);
    CHECK(a->wire_counters().tx_frames == kFrames + 1);
    CHECK(a->backlog_counters()->overflow == 0);
}

TEST_CASE("ShmWire: a sleeping reader is woken through its doorbell, a busy one never", "[net][shm]") {
    TempDir dir;
    const std::string url = "shm://" + (dir / "seg");
    auto a = open_ok(url), b = open_ok(url);
    send(*b, frame(host_mac(1), host_mac(2), 0));
    drain(*a);
    REQUIRE(b->prepare_wait()); // empty: b may sleep
    pollfd p{b->wait_fd(), POLLIN, 0};
    CHECK(::poll(&p, 1, 0) == 0);
    std::thread writer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        send(*a, frame(host_mac(2), host_mac(1), 1));
    });
    CHECK(::poll(&p, 1, 5000) == 1); // woken by the write
    writer.join();
    CHECK(a->wire_counters().doorbells == 1);
    // Busy: the flag is down, so frames go without a doorbell.
    for (std::uint32_t i = 2; i < 50; ++i) send(*a, frame(host_mac(2), host_mac(1), i));
    CHECK(drain(*b).size() == 49);
    CHECK(a->wire_counters().doorbells == 1);
    // Something came between the last pull and the sleep: do not sleep.
    send(*a, frame(host_mac(2), host_mac(1), 50));
    CHECK_FALSE(b->prepare_wait());
    CHECK(drain(*b).size() == 1);
    CHECK(b->prepare_wait());
    CHECK(::poll(&p, 1, 0) == 0); // the doorbell was drained
    // A batch wakes its sleeping reader once, at the flush after it.
    for (std::uint32_t i = 51; i < 61; ++i)
        a->send(frame(host_mac(2), host_mac(1), i), 0);
    CHECK(::poll(&p, 1, 20) == 0);
    CHECK(a->wire_counters().doorbells == 1);
    CHECK(a->flush() == 0);
    CHECK(::poll(&p, 1, 5000) == 1);
    CHECK(a->wire_counters().doorbells == 2);
    CHECK(drain(*b).size() == 10);
}

TEST_CASE("ShmWire: a host that died is a pulled cable, and its slot is taken again", "[net][shm]") {
    TempDir dir;
    const std::string url = "shm://" + (dir / "seg");
    auto a = open_ok(url);
    int up[2], go[2];
    REQUIRE(::pipe(up) == 0);
    REQUIRE(::pipe(go) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) { // another program: plugs in, says who it is, dies when told
        auto w = ShmWire::open(url);
        if (!w) ::_exit(100);
        w.value()->send(frame(kBroadcast, host_mac(7), 1), 0);
        const char slot = static_cast<char>(w.value()->host());
        char c = 0;
        if (::write(up[1], &slot, 1) != 1 || ::read(go[0], &c, 1) != 1) ::_exit(101);
        ::_exit(0);
    }
    char slot = -1;
    REQUIRE(::read(up[0], &slot, 1) == 1);
    CHECK(drain(*a) == std::vector<std::pair<int, std::uint32_t>>{{7, 1}});
    send(*a, frame(host_mac(7), host_mac(1), 2)); // alive: delivered into its ring
    CHECK(a->wire_counters().tx_frames == 1);
    CHECK(a->wire_counters().peers_seen == 1);
    REQUIRE(::write(go[1], "x", 1) == 1);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    for (int fd : {up[0], up[1], go[0], go[1]}) ::close(fd);

    // Seen gone within kPeerRefresh: unicast to its MAC lost and counted, the MAC forgotten.
    std::this_thread::sleep_for(ShmWire::kPeerRefresh);
    send(*a, frame(host_mac(7), host_mac(1), 3));
    CHECK(a->wire_counters().peers_gone == 1);
    CHECK(a->wire_counters().tx_no_peer == 1);
    CHECK(a->wire_counters().tx_frames == 1);
    CHECK(a->backlog_frames() == 0);
    // Its slot is free for the next program, which hears a's next frame
    // (the MAC forgotten: flooded) and nothing the dead one left unread.
    auto b = open_ok(url);
    CHECK(b->host() == static_cast<std::uint32_t>(slot));
    send(*a, frame(host_mac(7), host_mac(1), 4));
    CHECK(drain(*b) == std::vector<std::pair<int, std::uint32_t>>{{1, 4}});
    CHECK(a->wire_counters().tx_floods == 1);
}

TEST_CASE("ShmWire: bad URLs, files and directories are refused, naming them", "[net][shm]") {
    TempDir dir;
    CHECK(ShmWire::open("shm://").error().code == EINVAL);
    CHECK(ShmWire::open("ptp://" + (dir / "x")).error().code == EINVAL);
    std::ofstream(dir / "junk") << "not a segment";
    auto junk = ShmWire::open("shm://" + (dir / "junk"));
    REQUIRE_FALSE(junk);
    CHECK(junk.error().code == EINVAL);
    CHECK(junk.error().message.find(dir / "junk") != std::string::npos);
    REQUIRE(::mkdir((dir / "open").c_str(), 0777) == 0);
    REQUIRE(::chmod((dir / "open").c_str(), 0777) == 0);
    auto open_dir = ShmWire::open("shm://" + (dir / "open") + "/seg");
    REQUIRE_FALSE(open_dir);
    CHECK(open_dir.error().code == EPERM);
}

TEST_CASE("ShmWire: the files it creates have the wire's mode", "[net][shm]") {
    TempDir dir;
    ShmWireOptions o;
    o.mode = 0640;
    auto w = ShmWire::open("shm://" + (dir / "seg"), o);
    REQUIRE(w);
    struct stat st{};
    REQUIRE(::stat((dir / "seg").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0640);
    REQUIRE(::stat((dir / "seg.bell.0").c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
    CHECK((st.st_mode & 0777) == 0640);
}

TEST_CASE("ShmWire: a pull never rings; only prepare_wait arms the doorbell", "[net][shm]") {
    // A program's poll pulls as often as an engine does: a frame to a
    // reader that only pulls costs its producer no system call.
    TempDir dir;
    const std::string url = "shm://" + (dir / "seg");
    auto a = open_ok(url), b = open_ok(url);
    send(*b, frame(host_mac(1), host_mac(2), 0));
    drain(*a);
    send(*a, frame(host_mac(2), host_mac(1), 1));
    send(*a, frame(host_mac(2), host_mac(1), 2));
    std::array<Frame, 8> burst{};
    REQUIRE(b->next_burst(burst) == 2);
    REQUIRE(b->next_burst(burst) == 0); // empty: still not armed
    pollfd p{b->wait_fd(), POLLIN, 0};
    send(*a, frame(host_mac(2), host_mac(1), 3));
    CHECK(::poll(&p, 1, 50) == 0);
    CHECK(a->wire_counters().doorbells == 0);
    REQUIRE(b->next_burst(burst) == 1);
    REQUIRE(b->prepare_wait()); // the engine is about to sleep
    send(*a, frame(host_mac(2), host_mac(1), 4));
    CHECK(::poll(&p, 1, 1000) == 1);
    CHECK(a->wire_counters().doorbells == 1);
}
