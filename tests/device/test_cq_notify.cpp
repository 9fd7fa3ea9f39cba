// Arming a CQ (device/README.md, "Completion queues and events"): the event
// is for the next completion, one written after the arm (ibv_req_notify_cq(3));
// a completion already waiting raises none, the program polls for it after
// arming. perftest -e (4.5, one channel for its send and receive CQs) arms,
// then takes one completion, then sleeps for the next event expecting its
// own CQ's: an event for a completion it has just taken wakes it for the
// wrong CQ and it reads a work completion it never got. And none may be
// lost: a completion written as the CQ is armed, from another thread, still
// raises one.
//
// The device runs the thread engine, never started (`start=manual`): what
// completes is a raw-packet QP's send, on the posting thread, which then
// runs the device's service (the CQ notifications after a burst).
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
    explicit Rig(SimFixture& fx, bool with_channel = true) {
        if (with_channel) {
            ch = ibv_create_comp_channel(fx.ctx);
            REQUIRE(ch != nullptr);
            REQUIRE(::fcntl(ch->fd, F_SETFL, ::fcntl(ch->fd, F_GETFL) | O_NONBLOCK) == 0);
        }
        cq = ibv_create_cq(fx.ctx, kCqDepth, nullptr, ch, 0);
        REQUIRE(cq != nullptr);
        qp = make_raw_qp(fx.pd, cq, cq, {.send_wr = kCqDepth, .recv_wr = 1, .max_inline = 64});
        raw_qp_to_rts(qp);
        frame = eth_frame(kDstMac, kSrcMac, 0x88b5);
    }
    ~Rig() {
        CHECK(ibv_destroy_qp(qp) == 0);
        CHECK(ibv_destroy_cq(cq) == 0);
        if (ch != nullptr) CHECK(ibv_destroy_comp_channel(ch) == 0);
    }
    Rig(const Rig&) = delete;
    Rig& operator=(const Rig&) = delete;

    // One signaled send on the QP in RTS: it completes, and the device is
    // serviced, before this returns (its completion is in the CQ).
    int complete(std::uint64_t wr_id) {
        return post_inline_send(qp, frame.data(), static_cast<std::uint32_t>(frame.size()), wr_id);
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

TEST_CASE("an armed CQ fires for a completion written after the arm, not for one waiting at it",
          "[device][events][cq]") {
    SimFixture fx({{"engine", "thread"}, {"start", "manual"}});
    Rig rig(fx);
    Rig other(fx, false); // its sends run the device's service, as a burst would
    std::uint64_t other_id = 100;
    auto service = [&] {
        REQUIRE(other.complete(other_id++) == 0);
        REQUIRE(drain(other.cq).size() == 1);
    };
    ibv_wc wc{};

    REQUIRE(rig.complete(1) == 0); // not armed
    REQUIRE(ibv_req_notify_cq(rig.cq, 0) == 0);
    service();
    CHECK_FALSE(event_within(rig.ch, 50)); // 1 was waiting at the arm
    REQUIRE(ibv_poll_cq(rig.cq, 1, &wc) == 1);
    CHECK(wc.wr_id == 1);
    REQUIRE(rig.complete(2) == 0); // the next completion: once
    service();
    REQUIRE(rig.take_event());
    CHECK_FALSE(rig.take_event());
    REQUIRE(ibv_poll_cq(rig.cq, 1, &wc) == 1);
    CHECK(wc.wr_id == 2);

    // perftest -e: an event, the ack, the arm, then one completion taken.
    REQUIRE(ibv_req_notify_cq(rig.cq, 0) == 0);
    REQUIRE(rig.complete(3) == 0);
    REQUIRE(rig.take_event());
    REQUIRE(ibv_req_notify_cq(rig.cq, 0) == 0);
    service(); // 3 is still in the CQ, armed: no event for it
    CHECK_FALSE(event_within(rig.ch, 50));
    REQUIRE(ibv_poll_cq(rig.cq, 1, &wc) == 1);
    CHECK(wc.wr_id == 3);
    REQUIRE(rig.complete(4) == 0);
    REQUIRE(rig.take_event());
    CHECK_FALSE(rig.take_event());
    REQUIRE(ibv_poll_cq(rig.cq, 1, &wc) == 1);
    CHECK(wc.wr_id == 4);

    // Armed twice: the second arm keeps what the first one owes.
    REQUIRE(ibv_req_notify_cq(rig.cq, 0) == 0);
    REQUIRE(ibv_req_notify_cq(rig.cq, 0) == 0);
    REQUIRE(rig.complete(5) == 0);
    REQUIRE(rig.take_event());
    REQUIRE(ibv_poll_cq(rig.cq, 1, &wc) == 1);

    // Armed for solicited completions only: a plain one does not fire.
    REQUIRE(ibv_req_notify_cq(rig.cq, 1) == 0);
    REQUIRE(rig.complete(6) == 0);
    CHECK_FALSE(event_within(rig.ch, 50));
    REQUIRE(ibv_poll_cq(rig.cq, 1, &wc) == 1);
    CHECK(wc.wr_id == 6);
}

TEST_CASE("an arm racing a completing thread never loses the event (bounded stress)",
          "[device][events][cq][stress]") {
    // The program thread sleeps on events as the man page has it (arm,
    // poll the CQ empty, wait, ack); another thread completes in bursts
    // of 1 to 3, never more than half the CQ ahead, a burst waiting whole for
    // room. A completion written after an arm without its event leaves the
    // program asleep with the other thread waiting on it: the wait runs
    // into its 10 s limit. It runs at least 2 s and 1000 events; a loaded
    // host or a sanitizer may need longer for those (up to 60 s).
    SimFixture fx({{"engine", "thread"}, {"start", "manual"}});
    Rig rig(fx);
    constexpr std::uint64_t kMinWaits = 1000;
    const auto t0 = std::chrono::steady_clock::now();
    const auto min_until = t0 + std::chrono::seconds(2), give_up = t0 + std::chrono::seconds(60);
    std::atomic<std::uint64_t> consumed{0};
    std::atomic<bool> stop{false};
    std::atomic<std::uint64_t> produced{0};
    std::atomic<int> post_errors{0};
    std::thread completer([&] {
        std::uint32_t x = 12345;
        while (!stop.load(std::memory_order_relaxed)) {
            x = x * 1103515245u + 12345u;
            const std::uint32_t burst = 1 + (x >> 16) % 3;
            while (produced.load() + burst > consumed.load() + kCqDepth / 2 && !stop.load())
                std::this_thread::yield();
            for (std::uint32_t i = 0; i < burst; ++i)
                if (rig.complete(produced.load() + 1) == 0) produced.fetch_add(1);
                else post_errors.fetch_add(1);
        }
    });
    std::uint64_t waits = 0;
    std::uint64_t lost_at = 0;
    for (auto now = t0; (now < min_until || waits < kMinWaits) && now < give_up;
         now = std::chrono::steady_clock::now()) {
        REQUIRE(ibv_req_notify_cq(rig.cq, 0) == 0);
        ibv_wc wc{};
        int n = 0;
        while ((n = ibv_poll_cq(rig.cq, 1, &wc)) == 1) {
            if (wc.status != IBV_WC_SUCCESS || wc.wr_id != consumed.load() + 1) break;
            consumed.fetch_add(1);
        }
        if (n != 0) {
            FAIL_CHECK("poll " << n << ": completion " << wc.wr_id << " status " << wc.status
                               << ", expected " << consumed.load() + 1);
            break;
        }
        if (!event_within(rig.ch, 10'000)) {
            lost_at = consumed.load() + 1;
            break;
        }
        REQUIRE(rig.take_event());
        ++waits;
    }
    stop.store(true);
    completer.join();
    INFO("events waited for: " << waits << ", completions taken: " << consumed.load()
                               << ", produced: " << produced.load());
    CHECK(lost_at == 0);
    CHECK(post_errors.load() == 0);
    CHECK(waits >= kMinWaits);
    // Drain what is left so the QP and CQ go cleanly.
    while (!drain(rig.cq).empty()) {
    }
    while (rig.take_event()) {
    }
}
