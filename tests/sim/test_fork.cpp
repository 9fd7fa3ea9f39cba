// fork() (sim/README.md, "Fork"): a child forked after the devices exist gets
// a device that makes progress on its own engine, loops back only, and
// leaves the parent's shm:// wire alone. The handlers run around fork() as
// the drop-in's pthread_atfork handlers run them. A child reports through its
// exit status (no Catch2 in it) and leaves with _exit.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "datapath/family.hpp"
#include "net/shm_segment.hpp"
#include "net/shm_wire.hpp"
#include "sim/addresses.hpp"
#include "sim/simulator.hpp"
#include "tests/device/ib_qp_helpers.hpp"
#include "tests/net/temp_dir.hpp"
#include "tests/sim/port_io_helpers.hpp"
#include "tests/support/wait_until.hpp"

#if defined(__SANITIZE_THREAD__)
// TSan kills a child of a threaded parent that starts a thread, by default;
// the successor engine's thread is the point here.
extern "C" const char* __tsan_default_options() {
    return "die_after_fork=0";
}
#endif

using namespace rdmasim;

namespace {

using Clock = std::chrono::steady_clock;

// fork() with the Simulator's handlers around it, in the drop-in's order.
pid_t fork_with(sim::Simulator& s) {
    s.prepare_fork();
    const pid_t pid = ::fork();
    if (pid == 0)
        s.child_after_fork();
    else
        s.parent_after_fork();
    return pid;
}

// The child's exit status; -1 when it did not exit (a signal).
int wait_child(pid_t pid) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::unique_ptr<sim::Simulator> one_device(const std::string& wire = {}) {
    sim::Config c;
    REQUIRE(c.set("start", "now"));
    if (!wire.empty()) REQUIRE(c.set("wire", wire));
    c.engine = sim::EngineKind::thread;
    auto s = sim::Simulator::create(c);
    INFO((s ? std::string() : s.error().message));
    REQUIRE(s);
    return std::move(s.value());
}

// Moves `qp` to RTS towards `peer_qpn` on the context's own GID 0.
bool connect_rc(ibv_qp* qp, std::uint32_t peer_qpn, const ibv_gid& gid) {
    ibv_qp_attr at = test::good_attr(IBV_QPS_INIT);
    if (ibv_modify_qp(qp, &at, test::init_mask(IBV_QPT_RC)) != 0) return false;
    at = test::good_attr(IBV_QPS_RTR);
    at.ah_attr.grh.dgid = gid;
    at.dest_qp_num = peer_qpn;
    at.min_rnr_timer = 1; // 0.01 ms: the retry is the engine's timer
    if (ibv_modify_qp(qp, &at, test::rtr_mask(IBV_QPT_RC)) != 0) return false;
    at = test::good_attr(IBV_QPS_RTS);
    at.sq_psn = 0x100; // = good_attr's rq_psn
    return ibv_modify_qp(qp, &at, test::rts_mask(IBV_QPT_RC)) == 0;
}

// In the child, on the inherited context: PD, CQ, MR, two RC QPs connected
// to each other through the own GID; the SEND goes before its receive (an
// RNR NAK, then the engine's retry). 0: both completions within 3 s.
int child_rnr_send(ibv_context* ctx) {
    ibv_pd* pd = ibv_alloc_pd(ctx);
    ibv_cq* cq = pd ? ibv_create_cq(ctx, 16, nullptr, nullptr, 0) : nullptr;
    if (cq == nullptr) return 2;
    static std::array<std::uint8_t, 128> buf{};
    ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
    ibv_qp_init_attr qa{};
    qa.qp_type = IBV_QPT_RC;
    qa.send_cq = qa.recv_cq = cq;
    qa.cap = {4, 4, 1, 1, 0};
    ibv_qp* a = mr ? ibv_create_qp(pd, &qa) : nullptr;
    ibv_qp* b = a ? ibv_create_qp(pd, &qa) : nullptr;
    ibv_gid gid{};
    if (b == nullptr || ibv_query_gid(ctx, 1, 0, &gid) != 0) return 3;
    if (!connect_rc(a, b->qp_num, gid) || !connect_rc(b, a->qp_num, gid)) return 4;
    std::memset(buf.data(), 0x5a, 64);
    ibv_sge send_sge{reinterpret_cast<std::uint64_t>(buf.data()), 64, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 1;
    wr.sg_list = &send_sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad_send = nullptr;
    if (ibv_post_send(a, &wr, &bad_send) != 0) return 5;
    std::this_thread::sleep_for(
        std::chrono::milliseconds(20)); // the receiver answers RNR meanwhile
    ibv_sge recv_sge{reinterpret_cast<std::uint64_t>(buf.data() + 64), 64, mr->lkey};
    ibv_recv_wr rr{};
    rr.wr_id = 2;
    rr.sg_list = &recv_sge;
    rr.num_sge = 1;
    ibv_recv_wr* bad_recv = nullptr;
    if (ibv_post_recv(b, &rr, &bad_recv) != 0) return 6;
    int done = 0;
    for (const auto until = Clock::now() + std::chrono::seconds(3);
         done < 2 && Clock::now() < until;) {
        ibv_wc wc{};
        const int n = ibv_poll_cq(cq, 1, &wc);
        if (n < 0 || (n == 1 && wc.status != IBV_WC_SUCCESS)) return 7;
        if (n == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
        done += n;
    }
    if (done < 2) return 8; // no progress: the engine the child inherited is dead
    if (std::memcmp(buf.data(), buf.data() + 64, 64) != 0) return 9;
    const bool freed = ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0 && ibv_dereg_mr(mr) == 0 &&
                       ibv_destroy_cq(cq) == 0 && ibv_dealloc_pd(pd) == 0;
    return freed ? 0 : 10;
}

// In one of two children of one parent: an RC QP connected through the
// device's own GID to the other child's, the QP numbers exchanged over
// pipes; the receiver posts its receive, says so, and the sender SENDs 64
// bytes. 0: the completion (and in the receiver the bytes) within 3 s.
int child_of_family(ibv_context* ctx, bool sender, int out_fd, int in_fd) {
    ibv_pd* pd = ibv_alloc_pd(ctx);
    ibv_cq* cq = pd ? ibv_create_cq(ctx, 16, nullptr, nullptr, 0) : nullptr;
    static std::array<std::uint8_t, 64> buf{};
    ibv_mr* mr = cq ? ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE) : nullptr;
    ibv_qp_init_attr qa{};
    qa.qp_type = IBV_QPT_RC;
    qa.send_cq = qa.recv_cq = cq;
    qa.cap = {4, 4, 1, 1, 0};
    ibv_qp* qp = mr ? ibv_create_qp(pd, &qa) : nullptr;
    ibv_gid gid{};
    if (qp == nullptr || ibv_query_gid(ctx, 1, 0, &gid) != 0) return 2;
    std::uint32_t peer = 0;
    if (::write(out_fd, &qp->qp_num, 4) != 4 || ::read(in_fd, &peer, 4) != 4) return 3;
    if (datapath::qpn_member(peer) == datapath::qpn_member(qp->qp_num))
        return 4; // one number space
    if (!connect_rc(qp, peer, gid)) return 5;
    ibv_sge sge{reinterpret_cast<std::uint64_t>(buf.data()), 64, mr->lkey};
    char ready = 0;
    if (sender) {
        std::memset(buf.data(), 0x5a, buf.size());
        ibv_send_wr wr{};
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        ibv_send_wr* bad = nullptr;
        if (::read(in_fd, &ready, 1) != 1 || ibv_post_send(qp, &wr, &bad) != 0) return 6;
    } else {
        ibv_recv_wr rr{};
        rr.sg_list = &sge;
        rr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        if (ibv_post_recv(qp, &rr, &bad) != 0 || ::write(out_fd, &ready, 1) != 1) return 6;
    }
    ibv_wc wc{};
    int n = 0;
    for (const auto until = Clock::now() + std::chrono::seconds(3); n == 0 && Clock::now() < until;)
        if ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
            std::this_thread::sleep_for(std::chrono::microseconds(200));
    if (n != 1 || wc.status != IBV_WC_SUCCESS) return 7; // 7: the frames reached no QP of the other
    if (!sender && std::count(buf.begin(), buf.end(), 0x5a) != 64) return 8;
    // The receiver stays until the sender has its ACK (its QP would go with it).
    if (sender ? ::write(out_fd, &ready, 1) != 1 : ::read(in_fd, &ready, 1) != 1) return 9;
    return 0;
}

// A child keeps only its own ends, so a reader sees EOF when its writer is gone.
int run_child_of_family(ibv_context* ctx, bool sender, const std::array<int, 4>& fds) {
    const int out_fd = sender ? fds[1] : fds[3], in_fd = sender ? fds[2] : fds[0];
    for (const int fd : fds)
        if (fd != out_fd && fd != in_fd) ::close(fd);
    return child_of_family(ctx, sender, out_fd, in_fd);
}

} // namespace

TEST_CASE("two forked children reach each other's QPs on the family's bus", "[sim][fork][family]") {
    auto s = one_device();
    test::NamedDevice dev(0);
    REQUIRE(test::wait_until([&] { return s->engine(0).steps() > 0; }));
    std::array<int, 4> fds{}; // a to b (read, write), b to a (read, write)
    REQUIRE(::pipe(fds.data()) == 0);
    REQUIRE(::pipe(fds.data() + 2) == 0);
    const pid_t a = fork_with(*s);
    REQUIRE(a >= 0);
    if (a == 0) ::_exit(run_child_of_family(dev.ctx, true, fds));
    const pid_t b = fork_with(*s);
    REQUIRE(b >= 0);
    if (b == 0) ::_exit(run_child_of_family(dev.ctx, false, fds));
    for (const int fd : fds)
        ::close(fd);
    INFO("exit statuses (0 ok, 4 one QP number space, 7 no completion within 3 s)");
    CHECK(wait_child(a) == 0);
    CHECK(wait_child(b) == 0);
}

TEST_CASE("a forked child's RC SEND before its receive completes on the child's own engine",
          "[sim][fork]") {
    auto s = one_device();
    test::NamedDevice dev(0); // opened before the fork: the child inherits the context
    // Under ASan, a fork while the engine thread is still starting can leave
    // the sanitizer's own thread bookkeeping locked in the child (its next
    // thread never runs: seen 3 times in 5 without this wait, never with it).
    REQUIRE(test::wait_until([&] { return s->engine(0).steps() > 0; }));
    const pid_t pid = fork_with(*s);
    REQUIRE(pid >= 0);
    if (pid == 0) ::_exit(child_rnr_send(dev.ctx));
    INFO("child exit status (0 ok, 8 no completion within 3 s)");
    CHECK(wait_child(pid) == 0);
    // The parent's engine still runs: the same exchange works here afterwards.
    CHECK(child_rnr_send(dev.ctx) == 0);
}

// Not under the sanitizers, whose GCC 12 runtimes do not support a thread
// started in the child of a threaded process. TSan stops the child here with
// "dup thread with used id" (glibc gives the new engine thread the cached
// stack, hence the pthread_t, of a parent thread TSan still counts as
// running). ASan hung the child 1 run in 10: gdb showed its new engine thread
// waiting for ASan's allocator mutex (SizeClassAllocator64::GetFromAllocator),
// held in the parent when it forked. Neither reported a race or an error
// before. The case above passes under both.
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
namespace {

using Mac = std::array<std::uint8_t, 6>;
constexpr Mac kOtherHost{0x02, 0, 0, 0, 0, 0x99};

std::vector<std::uint8_t> frame_to(const Mac& dst, const Mac& src) {
    std::vector<std::uint8_t> b(64, 0);
    std::memcpy(b.data(), dst.data(), 6);
    std::memcpy(b.data() + 6, src.data(), 6);
    b[12] = 0x88;
    b[13] = 0xb5; // local experimental
    return b;
}

// In the child, with the parent's other host sending to the device meanwhile:
// 0 when nothing arrived at the child's port, then the child's Simulator goes
// (as the drop-in's does at exit) without touching the parent's wire.
int child_on_shm(std::unique_ptr<sim::Simulator> s) {
    const auto before = s->port_counters(0).frames.get();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const bool took = s->port_counters(0).frames.get() != before;
    s.reset();
    return took ? 3 : 0;
}

} // namespace

TEST_CASE("a forked child neither reads the parent's shm:// ring nor forgets its MAC in the switch",
          "[sim][fork][shm]") {
    net::test::TempDir dir;
    const std::string path = dir / "seg", url = "shm://" + path;
    auto other = net::ShmWire::open(url);
    REQUIRE(other);
    auto s = one_device(url);
    Mac mac{};
    {
        sim::Config c;
        mac = sim::device_identity(c, 0).mac;
    }
    test::NamedDevice dev(0);
    {
        test::RawSender tx(dev.pd); // the switch learns the device's MAC from its frame
        tx.send(frame_to(kOtherHost, mac));
    }
    auto seg = net::shm::Segment::open(url, path, 0600); // a third host: reads the switch
    REQUIRE(seg);
    REQUIRE(seg.value().lookup(mac.data()) >= 0);

    const pid_t pid = fork_with(*s);
    REQUIRE(pid >= 0);
    if (pid == 0) ::_exit(child_on_shm(std::move(s)));
    const auto before = s->port_counters(0).frames.get();
    constexpr int kFrames = 64;
    for (int i = 0; i < kFrames; ++i) {
        other.value()->send(frame_to(mac, kOtherHost), 0);
        (void)other.value()->flush(); // wakes the parent's engine (FrameSink's contract)
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    INFO("child exit status (0 ok, 3 its port took frames)");
    CHECK(wait_child(pid) == 0);
    CHECK(test::wait_until([&] { return s->port_counters(0).frames.get() == before + kFrames; }));
    CHECK(s->port_counters(0).frames.get() ==
          before + kFrames);                    // every frame here, none in the child
    CHECK(seg.value().lookup(mac.data()) >= 0); // the child's exit forgot nothing
}
#endif // no sanitizer
