// VdeWire: a port's source and sink on a libvdeplug wire. Two ends of a
// ptp:// wire in one process stand for two programs.
#include <catch2/catch.hpp>

#include "support/vdeplug_guard.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "net/vde_wire.hpp"
#include "tests/net/temp_dir.hpp"

using namespace rdmasim::net;
using rdmasim::net::test::TempDir;

namespace {

using Bytes = std::vector<std::uint8_t>;

std::unique_ptr<VdeWire> open_ok(const std::string& url, std::uint32_t mode = 0600) {
    VdeWireOptions o;
    o.mode = mode;
    auto w = VdeWire::open(url, o);
    INFO(url << ": " << (w ? std::string() : w.error().message));
    REQUIRE(w);
    return std::move(w.value());
}

// The next frame within a second, waiting on wait_fd as an engine may.
bool next_frame(VdeWire& w, Frame& f) {
    for (int i = 0; i < 100; ++i) {
        if (w.next(f)) return true;
        pollfd p{w.wait_fd(), POLLIN, 0};
        ::poll(&p, 1, 10);
    }
    return false;
}

// Both ends of a fresh ptp:// wire in a temporary directory.
struct PtpEnds {
    TempDir dir;
    std::unique_ptr<VdeWire> a = open_ok("ptp://" + (dir / "sock"));
    std::unique_ptr<VdeWire> b = open_ok("ptp://" + (dir / "sock"));
};

Bytes pattern(std::size_t n, std::uint8_t seed) {
    Bytes b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(seed + i * 7);
    return b;
}

unsigned mode_of(const std::string& path) {
    struct stat st{};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    REQUIRE(S_ISSOCK(st.st_mode));
    return st.st_mode & 07777;
}

// A plain AF_UNIX datagram socket, as any process allowed to write to a
// wire's socket has: bound to `name` ("": unbound) while it lives.
class RawSocket {
public:
    explicit RawSocket(std::string name = "") : name_(std::move(name)) {
        fd_ = ::socket(AF_UNIX, SOCK_DGRAM, 0);
        REQUIRE(fd_ >= 0);
        if (name_.empty()) return;
        const sockaddr_un me = address(name_);
        REQUIRE(::bind(fd_, reinterpret_cast<const sockaddr*>(&me), sizeof me) == 0);
    }
    ~RawSocket() {
        ::close(fd_);
        if (!name_.empty()) ::unlink(name_.c_str());
    }
    RawSocket(const RawSocket&) = delete;
    RawSocket& operator=(const RawSocket&) = delete;

    // Sends `bytes` to `path`: 0, or the errno of a refusal.
    int send_to(const std::string& path, const Bytes& bytes) {
        const sockaddr_un to = address(path);
        const ssize_t n = ::sendto(fd_, bytes.data(), bytes.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
        if (n < 0) return errno;
        REQUIRE(n == static_cast<ssize_t>(bytes.size()));
        return 0;
    }

private:
    static sockaddr_un address(const std::string& path) {
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
        return a;
    }
    std::string name_;
    int fd_ = -1;
};

} // namespace

TEST_CASE("two ends of a ptp wire carry frames both ways, byte for byte, without FCS", "[net][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    const std::string url = "ptp://" + (dir / "sock");
    auto a = open_ok(url);
    auto b = open_ok(url); // the second program finds the socket and connects to it
    CHECK(a->describe() == "wire " + url + " (libvdeplug, no FCS)");
    CHECK(a->wait_fd() >= 0);
    CHECK_FALSE(a->exhausted());
    Frame f;
    CHECK_FALSE(a->next(f)); // nothing yet, and no waiting for it

    const Bytes ab = pattern(60, 1), ba = pattern(1514, 2);
    a->send(ab, 0);
    REQUIRE(next_frame(*b, f));
    CHECK(Bytes(f.data, f.data + f.len) == ab);
    CHECK(f.wire_len == f.len);
    CHECK(f.fcs_len == 0);
    CHECK_FALSE(f.truncated());
    CHECK(f.ts_ns > 1'600'000'000'000'000'000ull); // stamped on arrival, wall clock

    b->send(ba, 0);
    CHECK(b->wire_counters().tx_frames == 0); // connected: staged for a batch
    CHECK(b->flush() == 0);                   // as the port flushes after a verb
    REQUIRE(next_frame(*a, f));
    CHECK(Bytes(f.data, f.data + f.len) == ba);

    CHECK(a->wire_counters().tx_frames == 1);
    CHECK(a->wire_counters().tx_bytes == 60);
    CHECK(a->wire_counters().tx_failures == 0);
    CHECK(a->counters().frames == 1);
    CHECK(a->counters().bytes == 1514);
    CHECK(b->counters().frames == 1);
}

TEST_CASE("a connected ptp end sends a batch per sendmmsg, at flush() or when the stage is full; "
          "its peer reads a burst per recvmmsg, in order",
          "[net][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    PtpEnds ends; // b connected at open
    VdeWire* a = ends.a.get();
    VdeWire* b = ends.b.get();
    constexpr int kStage = static_cast<int>(SendBatch::kSlots);
    auto numbered = [](int i) {
        Bytes f = pattern(200 + i, 10);
        f[0] = static_cast<std::uint8_t>(i);
        return f;
    };
    // a hears b first and connects to it: from then on only the socket
    // buffer bounds b's queue at a, not net.unix.max_dgram_qlen (10 here).
    Frame f;
    b->send(pattern(60, 1), 0);
    (void)b->flush();
    REQUIRE(next_frame(*a, f));
    REQUIRE(b->wire_counters().tx_frames == 1);
    const auto* bc = &b->wire_counters();
    const std::uint64_t frames0 = 1, bytes0 = 60;
    for (int i = 0; i < kStage - 1; ++i)
        b->send(numbered(i), 0);
    CHECK(bc->tx_frames == frames0); // staged, and unread
    CHECK(b->unread());
    CHECK_FALSE(a->next(f));
    b->send(numbered(kStage - 1), 0); // the stage is full: one sendmmsg
    CHECK(bc->tx_frames == frames0 + kStage);
    for (int i = kStage; i < kStage + 5; ++i)
        b->send(numbered(i), 0);
    CHECK(bc->tx_frames == frames0 + kStage);
    CHECK(b->flush() == 0);
    CHECK(bc->tx_frames == frames0 + kStage + 5);
    CHECK(bc->tx_bytes == bytes0 + (kStage + 5) * 200 + (kStage + 5) * (kStage + 4) / 2);
    CHECK(b->backlog_counters()->queued == 0);

    std::array<Frame, 64> burst;
    pollfd p{a->wait_fd(), POLLIN, 0};
    REQUIRE(::poll(&p, 1, 1000) == 1);
    const std::uint32_t first = a->next_burst(burst);
    CHECK(first == RecvBatch::kSlots); // a full batch in one call
    int next = 0;
    for (std::uint32_t i = 0; i < first; ++i, ++next) {
        CHECK(burst[i].len == 200u + next);
        CHECK(burst[i].data[0] == next);
    }
    CHECK(a->next_burst(burst) == 5);
    for (std::uint32_t i = 0; i < 5; ++i, ++next)
        CHECK(burst[i].data[0] == next);
    CHECK(a->next_burst(burst) == 0);
    CHECK(a->counters().frames == 1 + kStage + 5);
}

TEST_CASE("a ptp end's frames are unread until its peer reads them (SIOCOUTQ)", "[net][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    PtpEnds ends;
    VdeWire* a = ends.a.get();
    VdeWire* b = ends.b.get();
    CHECK_FALSE(a->unread());
    a->send(pattern(100, 3), 0);
    a->send(pattern(100, 4), 0);
    CHECK(a->unread());
    Frame f;
    REQUIRE(next_frame(*b, f));
    CHECK(a->unread()); // one of two read
    REQUIRE(next_frame(*b, f));
    CHECK_FALSE(a->unread());
    CHECK_FALSE(b->unread());
}

TEST_CASE("a ptp wire's socket files are the owner's only unless wire_mode widens them", "[net][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    // The mode is set explicitly, whatever the umask lets through.
    const mode_t old = ::umask(0);
    {
        const std::string sock = dir / "private";
        auto a = open_ok("ptp://" + sock);
        auto b = open_ok("ptp://" + sock);
        CHECK(mode_of(sock) == 0600);       // the first end's socket
        CHECK(mode_of(sock + "+") == 0600); // the second end's
    }
    {
        const std::string sock = dir / "shared";
        auto a = open_ok("ptp://" + sock, 0660);
        auto b = open_ok("ptp://" + sock, 0660);
        CHECK(mode_of(sock) == 0660);
        CHECK(mode_of(sock + "+") == 0660);
    }
    ::umask(old);
    // Closing an end removes its socket file.
    CHECK(::access((dir / "private").c_str(), F_OK) != 0);
    CHECK(::access((dir / "private+").c_str(), F_OK) != 0);
}

TEST_CASE("wire datagrams are not trusted: longer ones are handed over truncated, runts as they are",
          "[net][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    const std::string sock = dir / "sock";
    auto a = open_ok("ptp://" + sock);
    // 10000 bytes: longer than any frame a wire carries (9234). Sent from
    // the peer's socket name, PATH+: the only sender a ptp end takes.
    const Bytes oversize = pattern(10000, 3);
    RawSocket peer(sock + "+");
    CHECK(peer.send_to(sock, oversize) == 0);
    CHECK(peer.send_to(sock, pattern(5, 4)) == 0);
    Frame f;
    REQUIRE(next_frame(*a, f));
    CHECK(f.len == VdeWire::kMaxFrame);
    CHECK(f.wire_len > f.len);
    CHECK(f.truncated()); // the port drops it as truncated_capture
    CHECK(std::equal(f.data, f.data + f.len, oversize.begin()));
    REQUIRE(next_frame(*a, f));
    CHECK(f.len == 5); // the port counts it as a runt
    CHECK_FALSE(f.truncated());
    CHECK(a->counters().frames == 2);
    CHECK(a->counters().truncated_records == 1);
    // A frame of exactly the largest size passes whole.
    CHECK(peer.send_to(sock, pattern(VdeWire::kMaxFrame, 5)) == 0);
    REQUIRE(next_frame(*a, f));
    CHECK(f.len == VdeWire::kMaxFrame);
    CHECK_FALSE(f.truncated());
}

TEST_CASE("no peer loses the frame, counted; a peer that stopped reading pauses the sender",
          "[net][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    const std::string url = "ptp://" + (dir / "sock");
    auto a = open_ok(url);
    const Bytes frame = pattern(64, 6);
    a->send(frame, 0); // nobody at the other end yet: a pulled cable
    CHECK(a->wire_counters().tx_frames == 0);
    CHECK(a->wire_counters().tx_failures == 1);
    const int err = a->wire_counters().tx_last_errno;
    INFO(std::strerror(err));
    CHECK((err == ENOTCONN || err == ENOENT || err == ECONNREFUSED));
    CHECK(a->flush() == 0);

    auto b = open_ok(url); // plugged in, but never reads
    const Bytes big = pattern(1500, 7);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 2000; ++i) a->send(big, 0);
    const auto took = std::chrono::steady_clock::now() - t0;
    const auto& c = a->wire_counters();
    const auto& q = *a->backlog_counters();
    CHECK(c.tx_failures == 1); // nothing more lost: the rest waits
    CHECK(c.tx_frames > 0);
    CHECK(c.tx_frames + q.queued == 2000);
    CHECK(q.overflow == 0);
    CHECK(q.pauses == 1);
    CHECK(a->flush() == 2000 - c.tx_frames); // still no room
    CHECK(took < std::chrono::milliseconds(500)); // a send never waits on its peer
    CHECK(a->congested()); // 3 MB waits: above the 128 KiB watermark, requesters stop
}

TEST_CASE("a peer slow to read loses nothing: frames wait in order and flush() sends them",
          "[net][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    const std::string url = "ptp://" + (dir / "sock");
    auto first = open_ok(url);
    auto second = open_ok(url); // connected to `first` at open: it stages and sends batches
    VdeWire* a = first.get();
    VdeWire* b = second.get();
    SECTION("one sendto a frame (the end that has not heard its peer)") {}
    SECTION("a batch a sendmmsg, from the backlog too (the connected end)") {
        std::swap(a, b);
    }
    constexpr int kFrames = 2000;
    std::atomic<int> received{0};
    std::atomic<bool> in_order{true};
    // The reader starts late and pauses now and then, as an engine not
    // scheduled for a while; the queue fills meanwhile.
    std::thread reader([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        Frame f;
        while (received.load() < kFrames) {
            if (!next_frame(*b, f)) return;
            const int i = received.fetch_add(1);
            if (f.len != 1100 || f.data[0] != static_cast<std::uint8_t>(i) ||
                f.data[1] != static_cast<std::uint8_t>(i >> 8))
                in_order = false;
            if (i % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    });
    for (int i = 0; i < kFrames; ++i) {
        Bytes big = pattern(1100, 8);
        big[0] = static_cast<std::uint8_t>(i);
        big[1] = static_cast<std::uint8_t>(i >> 8);
        a->send(big, 0);
    }
    CHECK(a->backlog_counters()->queued > 0); // the peer's queue was full at least once
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (a->flush() > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    reader.join();
    CHECK(a->wire_counters().tx_failures == 0);
    CHECK(a->backlog_counters()->overflow == 0);
    CHECK(a->wire_counters().tx_frames == kFrames);
    CHECK(a->wire_counters().tx_bytes == kFrames * 1100);
    CHECK(received.load() == kFrames);
    CHECK(in_order.load());
    CHECK(a->backlog_counters()->paused_ns > 0);
}

TEST_CASE("a long run of sends behind a backlog retries the wire as it goes, without flush()",
          "[net][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    PtpEnds ends;
    VdeWire* a = ends.a.get();
    VdeWire* b = ends.b.get();
    const Bytes f100 = pattern(100, 5);
    // Fill the peer's socket queue until a frame waits.
    while (a->backlog_counters()->queued == 0) a->send(f100, 0);
    // The peer reads everything; the sender goes on sending (never calling
    // flush(), as a responder building a READ's responses in one burst).
    Frame f;
    std::uint64_t read = 0;
    while (b->next(f)) ++read;
    const std::uint64_t before = a->wire_counters().tx_frames;
    REQUIRE(read == before);
    for (int i = 0; i < 64; ++i) a->send(f100, 0);
    CHECK(a->wire_counters().tx_frames > before); // the run moved frames onto the wire
    while (b->next(f)) ++read;
    CHECK(a->wire_counters().tx_frames == read);
}

TEST_CASE("two senders that do not read hold nothing up: both queue, and both drain once read",
          "[net][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    const std::string url = "ptp://" + (dir / "sock");
    auto a = open_ok(url);
    auto b = open_ok(url);
    const Bytes big = pattern(1500, 9);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) {
        a->send(big, 0);
        b->send(big, 0);
    }
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500));
    CHECK(a->wire_counters().tx_failures == 0);
    CHECK(b->wire_counters().tx_failures == 0);
    // Each side reads, then flushes, as an engine step does.
    Frame f;
    int at_a = 0, at_b = 0;
    for (int round = 0; round < 100000 && (at_a < 1000 || at_b < 1000); ++round) {
        while (a->next(f)) ++at_a;
        while (b->next(f)) ++at_b;
        (void)a->flush();
        (void)b->flush();
    }
    CHECK(at_a == 1000);
    CHECK(at_b == 1000);
    CHECK(a->backlog_counters()->overflow == 0);
}

TEST_CASE("a wire URL libvdeplug cannot open is an error naming the URL and the reason", "[net][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    auto expect = [](const std::string& url, int code, const std::string& text, std::uint32_t mode = 0600) {
        VdeWireOptions o;
        o.mode = mode;
        auto w = VdeWire::open(url, o);
        REQUIRE_FALSE(w);
        INFO(w.error().message);
        CHECK(w.error().code == code);
        CHECK(w.error().message.find("'" + url + "'") != std::string::npos);
        CHECK(w.error().message.find(text) != std::string::npos);
    };
    expect("tap://tap0", EINVAL, "expected ptp://PATH, vde://PATH or vxvde://GROUP");
    expect("cmd://ssh host vde_plug", EINVAL, "expected ptp://PATH");
    expect("/tmp/switch", EINVAL, "expected ptp://PATH");
    expect("ptp://", EINVAL, "names no socket path");
    expect("ptp://" + (dir / "sock"), EINVAL, "expected owner read and write", 0400);
    expect("ptp://" + (dir / "sock"), EINVAL, "socket mode 1777", 01777);
    // A switch that is not there.
    expect("vde://" + (dir / "no-switch"), ENOENT, std::strerror(ENOENT));
    expect("vde://" + (dir / "no-switch"), ENOENT, "start one with vde_switch");
    // A directory that is not there.
    expect("ptp://" + (dir / "missing/sock"), ENOENT, std::strerror(ENOENT));
    // A third program on a point-to-point wire.
    const std::string url = "ptp://" + (dir / "busy");
    auto a = open_ok(url);
    auto b = open_ok(url);
    expect(url, EADDRINUSE, "plugged in already");
}

TEST_CASE("a ptp end takes datagrams from its peer alone; empty ones are counted and change nothing",
          "[net][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    const std::string sock = dir / "sock";
    auto a = open_ok("ptp://" + sock); // creates sock; its peer is sock+
    Frame f;
    // Before the peer is there: a stranger, named or not, is dropped and counted.
    CHECK(RawSocket(dir / "stranger").send_to(sock, pattern(60, 1)) == 0);
    CHECK(RawSocket().send_to(sock, pattern(60, 2)) == 0);
    CHECK_FALSE(next_frame(*a, f));
    CHECK(a->wire_counters().rx_strangers == 2);
    CHECK(a->counters().frames == 0);

    auto b = open_ok("ptp://" + sock); // binds sock+, connected to sock
    // An empty datagram from the peer: ignored, counted, and the ends stay
    // paired (libvdeplug would have disconnected the receiving end).
    b->send(Bytes{}, 0);
    a->send(Bytes{}, 0);
    const Bytes ab = pattern(60, 3), ba = pattern(60, 4);
    b->send(ba, 0);
    (void)a->flush();
    (void)b->flush();
    REQUIRE(next_frame(*a, f));
    CHECK(Bytes(f.data, f.data + f.len) == ba);
    CHECK(a->wire_counters().rx_empty == 1);
    CHECK_FALSE(next_frame(*b, f)); // reads the empty datagram
    CHECK(b->wire_counters().rx_empty == 1);

    // Strangers after the empty datagrams: the kernel refuses them (both
    // ends are connected to each other) or the end drops them; never a frame.
    for (const auto& [to, end] : {std::pair{sock, a.get()}, std::pair{sock + "+", b.get()}}) {
        const int err = RawSocket(dir / "stranger").send_to(to, pattern(60, 5));
        INFO(to << ": " << std::strerror(err));
        CHECK((err == 0 || err == EPERM));
        CHECK_FALSE(next_frame(*end, f));
    }
    a->send(ab, 0);
    (void)a->flush();
    REQUIRE(next_frame(*b, f));
    CHECK(Bytes(f.data, f.data + f.len) == ab);
    CHECK(a->counters().frames == 1);
    CHECK(b->counters().frames == 1);
}

TEST_CASE("a ptp wire refuses a socket directory others could plug into", "[net][wire]") {
    RDMASIM_SKIP_WITHOUT_VDEPLUG();
    TempDir dir;
    auto refused = [&](const std::string& sub, mode_t mode, const std::string& why) {
        const std::string d = dir / sub;
        REQUIRE(::mkdir(d.c_str(), 0700) == 0);
        REQUIRE(::chmod(d.c_str(), mode) == 0);
        auto w = VdeWire::open("ptp://" + d + "/sock");
        REQUIRE_FALSE(w);
        INFO(w.error().message);
        CHECK(w.error().code == EPERM);
        CHECK(w.error().message.find("socket directory " + d + " ") != std::string::npos);
        CHECK(w.error().message.find(why) != std::string::npos);
        CHECK(::access((d + "/sock").c_str(), F_OK) != 0); // nothing created
        return d;
    };
    refused("all", 0777, "writable by others (mode 0777)");
    refused("sticky", 01777, "writable by others (mode 1777)");
    refused("group", 0770, "writable by its group");
    // Ours, and writable by nobody else: opens, readable by others or not.
    for (const auto& [sub, mode] : {std::pair{"private", 0700}, std::pair{"readable", 0755}}) {
        const std::string d = dir / sub;
        REQUIRE(::mkdir(d.c_str(), 0700) == 0);
        REQUIRE(::chmod(d.c_str(), static_cast<mode_t>(mode)) == 0);
        open_ok("ptp://" + d + "/sock");
    }
    if (::geteuid() == 0) {
        const std::string d = dir / "nobody";
        REQUIRE(::mkdir(d.c_str(), 0700) == 0);
        REQUIRE(::chown(d.c_str(), 65534, 65534) == 0);
        auto w = VdeWire::open("ptp://" + d + "/sock");
        REQUIRE_FALSE(w);
        INFO(w.error().message);
        CHECK(w.error().code == EPERM);
        CHECK(w.error().message.find("owned by uid 65534, not by you") != std::string::npos);
    } else {
        WARN("not root: a directory of another owner needs chown (CI runs this as root)");
    }
    // A path whose peer name would not fit a unix socket's.
    auto w = VdeWire::open("ptp://" + dir / std::string(VdeWire::kMaxPtpPath, 'x'));
    REQUIRE_FALSE(w);
    CHECK(w.error().code == EINVAL);
}
