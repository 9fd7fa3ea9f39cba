// Arming a CQ (device/README.md, "Completion queues and events"): an armed
// CQ holding a completion owes an event, whether the completion came before
// the arm or races it from another thread. The programs that sleep on events
// (perftest -e, ibv_rc_pingpong -e) arm, then poll, and take one completion
// per event: a completion left waiting at the arm must still wake them, as a
// ConnectX does, even when the engine has nothing more to do.
//
// The device runs the thread engine, never started (`start=manual`): no
// engine step can fire an event behind the test's back, so what fires is the
// arm itself or the thread that completes (a raw-packet QP's send completes
// in ibv_post_send, on the posting thread).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "tests/device/verbs_helpers.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

constexpr int kCqDepth = 64;

// An event within `ms`: the channel's fd polls readable.
bool event_within(ibv_comp_channel* ch, int ms) {
    pollfd p{ch->fd, POLLIN, 0};
    return ::poll(&p, 1, ms) == 1 && (p.revents & POLLIN) != 0;
}

// One CQ on a completion channel, and a raw-packet QP in RTS sending into it.
struct Rig {
    explicit Rig(SimFixture& fx) {
        ch = ibv_create_comp_channel(fx.ctx);
        REQUIRE(ch != nullptr);
        REQUIRE(::fcntl(ch->fd, F_SETFL, ::fcntl(ch->fd, F_GETFL) | O_NONBLOCK) == 0);
        cq = ibv_create_cq(fx.ctx, kCqDepth, nullptr, ch, 0);
        REQUIRE(cq != nullptr);
        ibv_qp_init_attr_ex a{};
        a.qp_type = IBV_QPT_RAW_PACKET;
        a.comp_mask = IBV_QP_INIT_ATTR_PD;
        a.pd = fx.pd;
        a.send_cq = cq;
        a.recv_cq = cq;
        a.cap.max_send_wr = kCqDepth;
        a.cap.max_recv_wr = 1;
        a.cap.max_send_sge = 1;
        a.cap.max_recv_sge = 1;
        a.cap.max_inline_data = 64;
        qp = ibv_create_qp_ex(fx.ctx, &a);
        REQUIRE(qp != nullptr);
        ibv_qp_attr m{};
        m.qp_state = IBV_QPS_INIT;
        m.port_num = 1;
        REQUIRE(ibv_modify_qp(qp, &m, IBV_QP_STATE | IBV_QP_PORT) == 0);
        m.qp_state = IBV_QPS_RTR;
        REQUIRE(ibv_modify_qp(qp, &m, IBV_QP_STATE) == 0);
        m.qp_state = IBV_QPS_RTS;
        REQUIRE(ibv_modify_qp(qp, &m, IBV_QP_STATE) == 0);
        frame = eth_frame(kDstMac, kSrcMac, 0x88b5);
    }
    ~Rig() {
        CHECK(ibv_destroy_qp(qp) == 0);
        CHECK(ibv_destroy_cq(cq) == 0);
        CHECK(ibv_destroy_comp_channel(ch) == 0);
    }
    Rig(const Rig&) = delete;
    Rig& operator=(const Rig&) = delete;

    // One signaled send: its completion is in the CQ when this returns.
    int complete(std::uint64_t wr_id) {
        ibv_sge sge{reinterpret_cast<std::uintptr_t>(frame.data()), static_cast<std::uint32_t>(frame.size()), 0};
        ibv_send_wr wr{};
        wr.wr_id = wr_id;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
        ibv_send_wr* bad = nullptr;
        return ibv_post_send(qp, &wr, &bad);
    }
    // ibv_get_cq_event + ibv_ack_cq_events; false when none is there.
    bool take_event() {
        ibv_cq* ev_cq = nullptr;
        void* ev_ctx = nullptr;
        if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) != 0) return false;
        ibv_ack_cq_events(ev_cq, 1);
        return ev_cq == cq;
    }

    ibv_comp_channel* ch = nullptr;
    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
    Frame frame;
};

} // namespace

TEST_CASE("arming a CQ that holds a completion fires its event at once, engine idle",
          "[device][events][cq]") {
    SimFixture fx({{"engine", "thread"}, {"start", "manual"}});
    Rig rig(fx);
    REQUIRE(ibv_req_notify_cq(rig.cq, 0) == 0);
    REQUIRE(rig.complete(1) == 0); // armed: fires
    REQUIRE(rig.complete(2) == 0); // disarmed: waits in the CQ without an event
    REQUIRE(rig.take_event());
    CHECK_FALSE(rig.take_event());

    // As perftest -e does: arm, then take one completion.
    REQUIRE(ibv_req_notify_cq(rig.cq, 0) == 0);
    ibv_wc wc{};
    REQUIRE(ibv_poll_cq(rig.cq, 1, &wc) == 1);
    CHECK(wc.wr_id == 1);
    // Completion 2 was waiting when the CQ was armed: its event is owed now,
    // though nothing else will ever complete.
    REQUIRE(event_within(rig.ch, 1000));
    REQUIRE(rig.take_event());
    REQUIRE(ibv_poll_cq(rig.cq, 1, &wc) == 1);
    CHECK(wc.wr_id == 2);

    // Armed on an empty CQ: nothing fires until something completes, then once.
    REQUIRE(ibv_req_notify_cq(rig.cq, 0) == 0);
    CHECK_FALSE(event_within(rig.ch, 50));
    REQUIRE(rig.complete(3) == 0);
    REQUIRE(rig.take_event());
    CHECK_FALSE(rig.take_event());
    REQUIRE(ibv_poll_cq(rig.cq, 1, &wc) == 1);
    CHECK(wc.wr_id == 3);

    // Armed for solicited completions only: a plain one waiting does not fire.
    REQUIRE(rig.complete(4) == 0);
    REQUIRE(ibv_req_notify_cq(rig.cq, 1) == 0);
    CHECK_FALSE(event_within(rig.ch, 50));
    REQUIRE(ibv_poll_cq(rig.cq, 1, &wc) == 1);
}

TEST_CASE("an arm racing a completing thread never loses the event (bounded stress)",
          "[device][events][cq][stress]") {
    // The program thread sleeps on events the way perftest -e does (wait,
    // ack, arm, poll one); another thread completes in bursts of 1 to 3,
    // never more than half the CQ ahead. Each event the program waits for
    // must come: a lost one leaves completions in the CQ that nothing
    // announces, and the wait runs into its 2 s limit.
    SimFixture fx({{"engine", "thread"}, {"start", "manual"}});
    Rig rig(fx);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    std::atomic<std::uint64_t> consumed{0};
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> produced{0};
    std::atomic<int> post_errors{0};
    std::thread completer([&] {
        std::uint32_t x = 12345;
        while (!stop.load(std::memory_order_relaxed)) {
            x = x * 1103515245u + 12345u;
            const std::uint32_t burst = 1 + (x >> 16) % 3;
            // The burst waits, whole, for room: the program must take
            // completions that nothing new announces.
            while (produced.load() + burst > consumed.load() + kCqDepth / 2 && !stop.load())
                std::this_thread::yield();
            for (std::uint32_t i = 0; i < burst; ++i)
                if (rig.complete(produced.load() + 1) == 0) produced.fetch_add(1);
                else post_errors.fetch_add(1);
        }
    });
    REQUIRE(ibv_req_notify_cq(rig.cq, 0) == 0);
    std::uint64_t waits = 0;
    std::uint64_t lost_at = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!event_within(rig.ch, 2000)) {
            lost_at = consumed.load() + 1;
            break;
        }
        REQUIRE(rig.take_event());
        ++waits;
        REQUIRE(ibv_req_notify_cq(rig.cq, 0) == 0);
        ibv_wc wc{};
        const int n = ibv_poll_cq(rig.cq, 1, &wc);
        REQUIRE(n >= 0);
        if (n == 1) {
            if (wc.status != IBV_WC_SUCCESS || wc.wr_id != consumed.load() + 1) {
                FAIL_CHECK("completion " << wc.wr_id << " status " << wc.status << ", expected "
                                         << consumed.load() + 1);
                break;
            }
            consumed.fetch_add(1);
        }
    }
    stop.store(true);
    completer.join();
    INFO("events waited for: " << waits << ", completions taken: " << consumed.load()
                               << ", produced: " << produced.load());
    CHECK(lost_at == 0);
    CHECK(post_errors.load() == 0);
    CHECK(waits > 1000);
    // Drain what is left so the QP and CQ go cleanly.
    while (!drain(rig.cq).empty()) {
    }
    while (rig.take_event()) {
    }
}
