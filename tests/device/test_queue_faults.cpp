// Device faults that act on one receive queue (sim/README.md, "Fault
// injection"), as a program sees them through the verbs API: out-of-buffer
// (frames dropped as rx_out_of_buffer, WQEs kept, the hw_counters file),
// cqe-error (the completion's status, the queue in ERR, the rest flushed),
// delay-drop-timeout (held frames dropped now, delay drop re-armed or not),
// qp= targets on a raw-packet QP (IBV_EVENT_QP_FATAL, IBV_EVENT_CQ_ERR), and
// the sysfs port state under port-down.
// Each fires counted in frames from the device's source, so the inline
// engine makes it exact, and the same plan gives the same run twice.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/golden_frames.hpp"
#include "tests/device/verbs_helpers.hpp"
#include "tests/support/verbs_events.hpp"

// rdma-core's sysfs reader (infiniband/driver.h), which the drop-in library exports.
extern "C" int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);

using namespace rdmasim;
using namespace rdmasim::test;
using datapath::Drop;
using sim::FaultKind;
namespace golden = rdmasim::test::golden;

namespace {

// The first object numbered on a fresh device (WQs and QPs share the numbers).
constexpr std::uint32_t kFirstQpn = 0x100;

std::uint64_t queue_drops(SimFixture& fx, std::uint32_t qpn, Drop d) {
    const datapath::RxCounters* c = fx.simulator().queue_counters(0, qpn);
    REQUIRE(c != nullptr);
    return c->drops[static_cast<std::size_t>(d)].get();
}

std::uint64_t injected(SimFixture& fx, FaultKind kind) {
    return fx.simulator().faults_injected(0)[static_cast<std::size_t>(kind)];
}

// What a program reads from the emulated sysfs file of mlx5's port Q counter.
std::string hw_out_of_buffer(ibv_context* ctx) {
    char buf[32] = {};
    REQUIRE(ibv_read_sysfs_file(ctx->device->ibdev_path, "ports/1/hw_counters/out_of_buffer", buf,
                                sizeof buf) > 0);
    return buf;
}

// A raw-packet QP in RTS taking every frame (a catch-all flow): qp_num kFirstQpn on a fresh device.
struct SteeredQp {
    explicit SteeredQp(ibv_pd* pd) : raw(pd) {
        REQUIRE(raw.qp->qp_num == kFirstQpn);
        flow = make_flow(raw.qp, eth_flow());
    }
    ~SteeredQp() { CHECK(ibv_destroy_flow(flow) == 0); }
    SteeredQp(const SteeredQp&) = delete;
    SteeredQp& operator=(const SteeredQp&) = delete;

    RawQp raw;
    ibv_flow* flow = nullptr;
};

void offer_frames(SimFixture& fx, int n) {
    for (int i = 0; i < n; ++i) fx.offer(golden::concat(golden::kUntagged), i * 1000ull);
}

} // namespace

TEST_CASE("out-of-buffer: a burst of frames finds the ring empty; dropped and counted as "
          "rx_out_of_buffer, no WQE taken",
          "[device][faults]") {
    // Targeted (wq=0 is the WQ that receives) or not (the frames' own queue):
    // frames 2 and 3 of 5 are dropped, 1, 4 and 5 take the first three WQEs.
    for (const char* plan : {"out-of-buffer:wq=0,after=1,frames=2", "out-of-buffer:nth=2,frames=2,port=1"}) {
        INFO(plan);
        SimFixture fx(Settings{{"faults", plan}});
        MrBuffer buf(fx.pd, 8);
        SteeredWq q(fx.pd);
        for (std::uint64_t i = 0; i < 6; ++i) REQUIRE(post_wq(q.wq, i, buf.sge(i)) == 0);
        CHECK(hw_out_of_buffer(fx.ctx) == "0");
        offer_frames(fx, 5);
        fx.pump_all();
        const auto wc = seen(q.cq);
        INFO(show(wc));
        CHECK(wc == std::vector<Seen>{{0, IBV_WC_SUCCESS}, {1, IBV_WC_SUCCESS}, {2, IBV_WC_SUCCESS}});
        CHECK(drops(fx, Drop::out_of_buffer) == 2);
        CHECK(queue_drops(fx, q.wq->wq_num, Drop::out_of_buffer) == 2);
        CHECK(hw_out_of_buffer(fx.ctx) == "2");
        CHECK(fx.port().flushed_wqes.get() == 0);
        CHECK(q.wq->state == IBV_WQS_RDY);
        CHECK(injected(fx, FaultKind::out_of_buffer) == 1);
        CHECK_FALSE(next_async_event(fx.ctx).has_value());
        // The WQEs the burst did not take are still posted: the next frames take them.
        offer_frames(fx, 3);
        fx.pump_all();
        CHECK(seen(q.cq) == std::vector<Seen>{{3, IBV_WC_SUCCESS}, {4, IBV_WC_SUCCESS}, {5, IBV_WC_SUCCESS}});
        CHECK(fx.balanced());
    }
}

TEST_CASE("out-of-buffer: a WQ with delay drop drops the burst too, never holds it",
          "[device][faults]") {
    SimFixture fx(Settings{{"faults", "out-of-buffer:wq=0,after=0,frames=2"}});
    MrBuffer buf(fx.pd, 8);
    SteeredWq q(fx.pd, IBV_WQ_FLAGS_DELAY_DROP);
    for (std::uint64_t i = 0; i < 4; ++i) REQUIRE(post_wq(q.wq, i, buf.sge(i)) == 0);
    offer_frames(fx, 3);
    fx.pump_all();
    CHECK(seen(q.cq) == std::vector<Seen>{{0, IBV_WC_SUCCESS}});
    CHECK(drops(fx, Drop::out_of_buffer) == 2);
    CHECK(fx.port().delay_drop_waits.get() == 0);
    CHECK(fx.balanced());
}

TEST_CASE("out-of-buffer: a WQ the frames do not reach is not touched", "[device][faults]") {
    SimFixture fx(Settings{{"faults", "out-of-buffer:wq=0,after=0,frames=4"}});
    MrBuffer buf(fx.pd, 8);
    ibv_cq* cq = make_cq(fx.ctx, 16);
    ibv_wq* other = make_wq(fx.pd, cq, 8); // index 0: the target, which nothing steers to
    {
        SteeredWq q(fx.pd);
        for (std::uint64_t i = 0; i < 2; ++i) REQUIRE(post_wq(q.wq, i, buf.sge(i)) == 0);
        offer_frames(fx, 2);
        fx.pump_all();
        CHECK(seen(q.cq).size() == 2);
        CHECK(drops(fx, Drop::out_of_buffer) == 0);
        CHECK(injected(fx, FaultKind::out_of_buffer) == 1);
    }
    CHECK(ibv_destroy_wq(other) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("cqe-error: the frame's completion carries the status, the WQ goes to ERR, the rest "
          "flush; no async event",
          "[device][faults]") {
    struct Case {
        const char* status;
        int expected;
    };
    for (const Case& c : {Case{"LOC_LEN_ERR", IBV_WC_LOC_LEN_ERR},
                          Case{"IBV_WC_LOC_PROT_ERR", IBV_WC_LOC_PROT_ERR},
                          Case{"GENERAL_ERR", IBV_WC_GENERAL_ERR}}) {
        INFO(c.status);
        SimFixture fx(Settings{{"faults", std::string("cqe-error:wq=0,nth=2,status=") + c.status}});
        MrBuffer buf(fx.pd, 8);
        SteeredWq q(fx.pd);
        for (std::uint64_t i = 0; i < 6; ++i) REQUIRE(post_wq(q.wq, i, buf.sge(i)) == 0);
        offer_frames(fx, 4);
        fx.pump_all();
        const auto wcs = drain(q.cq);
        REQUIRE(wcs.size() == 6);
        CHECK(wcs[0].status == IBV_WC_SUCCESS);
        CHECK(wcs[1].wr_id == 1);
        CHECK(wcs[1].status == c.expected);
        CHECK(wcs[1].qp_num == q.wq->wq_num);
        CHECK(wcs[1].byte_len == 0);
        for (std::size_t i = 2; i < wcs.size(); ++i) {
            INFO(i);
            CHECK(wcs[i].wr_id == i);
            CHECK(wcs[i].status == IBV_WC_WR_FLUSH_ERR);
        }
        CHECK(q.wq->state == IBV_WQS_ERR);
        CHECK(drops(fx, Drop::cqe_error) == 1);
        CHECK(drops(fx, Drop::wq_not_ready) == 2); // frames 3 and 4
        CHECK(fx.port().flushed_wqes.get() == 4);
        CHECK(injected(fx, FaultKind::cqe_error) == 1);
        CHECK_FALSE(next_async_event(fx.ctx).has_value()); // reported in the completion only
        // Posted now: flushed at once, until the program takes the WQ through RESET.
        REQUIRE(post_wq(q.wq, 9, buf.sge(0)) == 0);
        CHECK(seen(q.cq) == std::vector<Seen>{{9, IBV_WC_WR_FLUSH_ERR}});
        REQUIRE(set_wq_state(q.wq, IBV_WQS_RESET) == 0);
        REQUIRE(set_wq_state(q.wq, IBV_WQS_RDY) == 0);
        REQUIRE(post_wq(q.wq, 10, buf.sge(0)) == 0);
        offer_frames(fx, 1);
        fx.pump_all();
        CHECK(seen(q.cq) == std::vector<Seen>{{10, IBV_WC_SUCCESS}});
        CHECK(fx.balanced());
    }
}

TEST_CASE("cqe-error: a frame that takes no WQE leaves the error for the next one that does",
          "[device][faults]") {
    SimFixture fx(Settings{{"faults", "cqe-error:after=0,status=GENERAL_ERR"}});
    MrBuffer buf(fx.pd, 8);
    SteeredWq q(fx.pd);
    offer_frames(fx, 1); // nothing posted: rx_out_of_buffer, the error waits
    fx.pump_all();
    CHECK(drops(fx, Drop::out_of_buffer) == 1);
    REQUIRE(post_wq(q.wq, 1, buf.sge(0)) == 0);
    offer_frames(fx, 1);
    fx.pump_all();
    CHECK(seen(q.cq) == std::vector<Seen>{{1, IBV_WC_GENERAL_ERR}});
    CHECK(q.wq->state == IBV_WQS_ERR);
    CHECK(fx.balanced());
}

TEST_CASE("delay-drop-timeout: what the WQ holds is dropped now; delay drop re-arms, or not",
          "[device][faults]") {
    for (const bool rearm : {true, false}) {
        for (const char* plan : {"delay-drop-timeout:wq=0,after=3", "delay-drop-timeout:after=3"}) {
            INFO(plan << ", caps.delay_drop_rearm " << rearm);
            SimFixture fx(Settings{{"faults", plan}, {"caps.delay_drop_rearm", rearm ? "on" : "off"}});
            MrBuffer buf(fx.pd, 8);
            SteeredWq q(fx.pd, IBV_WQ_FLAGS_DELAY_DROP);
            offer_frames(fx, 4); // 1 us apart: far from the 100 ms timeout
            fx.pump_all();
            CHECK(drops(fx, Drop::delay_drop_timeout) == 3); // frames 1-3, held when it fired
            CHECK(injected(fx, FaultKind::delay_drop_timeout) == 1);
            if (rearm) {
                CHECK(fx.port().delay_drop_waits.get() == 4); // frame 4 is held again
                REQUIRE(post_wq(q.wq, 7, buf.sge(0)) == 0);
                CHECK(seen(q.cq) == std::vector<Seen>{{7, IBV_WC_SUCCESS}});
            } else {
                CHECK(fx.port().delay_drop_waits.get() == 3);
                CHECK(drops(fx, Drop::out_of_buffer) == 1); // disarmed: frame 4 is not held
                CHECK(hw_out_of_buffer(fx.ctx) == "1");
                REQUIRE(post_wq(q.wq, 7, buf.sge(0)) == 0);
                CHECK(seen(q.cq).empty());
            }
            CHECK(fx.balanced());
        }
    }
}

TEST_CASE("wq-fatal:qp=: a raw QP's receive queue goes to ERR, IBV_EVENT_QP_FATAL names the QP",
          "[device][faults]") {
    SimFixture fx(Settings{{"faults", "wq-fatal:qp=256,after=1"}});
    MrBuffer buf(fx.pd, 8);
    SteeredQp q(fx.pd);
    for (std::uint64_t i = 0; i < 4; ++i) REQUIRE(post_qp(q.raw.qp, i, buf.sge(i)) == 0);
    offer_frames(fx, 3);
    fx.pump_all();
    const auto wc = seen(q.raw.cq);
    INFO(show(wc));
    CHECK(wc == std::vector<Seen>{{0, IBV_WC_SUCCESS},
                                  {1, IBV_WC_WR_FLUSH_ERR},
                                  {2, IBV_WC_WR_FLUSH_ERR},
                                  {3, IBV_WC_WR_FLUSH_ERR}});
    CHECK(drops(fx, Drop::wq_not_ready) == 2);
    const auto ev = next_async_event(fx.ctx);
    REQUIRE(ev.has_value());
    CHECK(ev->event_type == IBV_EVENT_QP_FATAL);
    CHECK(ev->element.qp == q.raw.qp);
    CHECK_FALSE(next_async_event(fx.ctx).has_value());
    CHECK(q.raw.qp->state == IBV_QPS_RTS); // the RQ failed; the QP's state is the program's
    REQUIRE(post_qp(q.raw.qp, 9, buf.sge(0)) == 0);
    CHECK(seen(q.raw.cq) == std::vector<Seen>{{9, IBV_WC_WR_FLUSH_ERR}});
    CHECK(injected(fx, FaultKind::wq_fatal) == 1);
    CHECK(fx.balanced());
}

TEST_CASE("qp= targets: cq-overrun, out-of-buffer and cqe-error on a raw QP", "[device][faults]") {
    SECTION("cq-overrun:qp=256: IBV_EVENT_CQ_ERR names the QP's receive CQ") {
        SimFixture fx(Settings{{"faults", "cq-overrun:qp=256,after=1"}});
        SteeredQp q(fx.pd);
        offer_frames(fx, 2);
        fx.pump_all();
        const auto ev = next_async_event(fx.ctx);
        REQUIRE(ev.has_value());
        CHECK(ev->event_type == IBV_EVENT_CQ_ERR);
        CHECK(ev->element.cq == q.raw.cq);
        CHECK(fx.balanced());
    }
    SECTION("out-of-buffer:qp=256: the QP's frames 2 and 3 are dropped, its WQEs kept") {
        SimFixture fx(Settings{{"faults", "out-of-buffer:qp=256,after=1,frames=2"}});
        MrBuffer buf(fx.pd, 8);
        SteeredQp q(fx.pd);
        for (std::uint64_t i = 0; i < 4; ++i) REQUIRE(post_qp(q.raw.qp, i, buf.sge(i)) == 0);
        offer_frames(fx, 4);
        fx.pump_all();
        CHECK(seen(q.raw.cq) == std::vector<Seen>{{0, IBV_WC_SUCCESS}, {1, IBV_WC_SUCCESS}});
        CHECK(queue_drops(fx, kFirstQpn, Drop::out_of_buffer) == 2);
        CHECK(hw_out_of_buffer(fx.ctx) == "2");
        CHECK(fx.balanced());
    }
    SECTION("cqe-error:qp=256: the error completion, then the QP's receive side flushes") {
        SimFixture fx(Settings{{"faults", "cqe-error:qp=256,after=0,status=LOC_PROT_ERR"}});
        MrBuffer buf(fx.pd, 8);
        SteeredQp q(fx.pd);
        for (std::uint64_t i = 0; i < 3; ++i) REQUIRE(post_qp(q.raw.qp, i, buf.sge(i)) == 0);
        offer_frames(fx, 2);
        fx.pump_all();
        CHECK(seen(q.raw.cq) == std::vector<Seen>{{0, IBV_WC_LOC_PROT_ERR},
                                                   {1, IBV_WC_WR_FLUSH_ERR},
                                                   {2, IBV_WC_WR_FLUSH_ERR}});
        CHECK(drops(fx, Drop::cqe_error) == 1);
        CHECK(drops(fx, Drop::wq_not_ready) == 1);
        CHECK_FALSE(next_async_event(fx.ctx).has_value());
        CHECK(fx.balanced());
    }
    SECTION("a qp= naming no raw QP fires (counted) and touches nothing") {
        SimFixture fx(Settings{{"faults", "wq-fatal:qp=999,after=0"}});
        MrBuffer buf(fx.pd, 8);
        SteeredQp q(fx.pd);
        REQUIRE(post_qp(q.raw.qp, 0, buf.sge(0)) == 0);
        offer_frames(fx, 1);
        fx.pump_all();
        CHECK(seen(q.raw.cq) == std::vector<Seen>{{0, IBV_WC_SUCCESS}});
        CHECK(injected(fx, FaultKind::wq_fatal) == 1);
        CHECK_FALSE(next_async_event(fx.ctx).has_value());
    }
}

TEST_CASE("port-down: the emulated sysfs port state follows ibv_query_port", "[device][faults]") {
    SimFixture fx(Settings{{"faults", "port-down:after=1,frames=2"}, {"burst", "1"}});
    const auto read = [&](const char* file) {
        char buf[32] = {};
        REQUIRE(ibv_read_sysfs_file(fx.ctx->device->ibdev_path, file, buf, sizeof buf) > 0);
        return std::string(buf);
    };
    offer_frames(fx, 3);
    fx.pump(); // frame 1
    CHECK(read("ports/1/state") == "4: ACTIVE");
    fx.pump(); // frame 2: the port goes down
    CHECK(read("ports/1/state") == "1: DOWN");
    CHECK(read("ports/1/phys_state") == "3: Disabled");
    fx.pump_all(); // frame 3 missed: up again
    CHECK(read("ports/1/state") == "4: ACTIVE");
    CHECK(read("ports/1/phys_state") == "5: LinkUp");
}

namespace {

// One run of a small receiver under `plan` with the inline engine: 60 frames,
// WQEs re-posted as they complete; what it saw and the --trace file.
struct Run {
    std::vector<Seen> completions;
    std::vector<std::uint64_t> drops;
    std::string trace;
};

Run run_once(const std::string& plan) {
    const auto path = std::filesystem::temp_directory_path() /
                      ("rdmasim-queue-faults-" + std::to_string(::getpid()) + ".jsonl");
    Run r;
    {
        SimFixture fx(Settings{{"faults", plan}, {"trace", path.string()}, {"burst", "4"}});
        MrBuffer buf(fx.pd, 16);
        SteeredWq q(fx.pd, IBV_WQ_FLAGS_DELAY_DROP);
        std::uint64_t next = 0;
        for (; next < 8; ++next) REQUIRE(post_wq(q.wq, next, buf.sge(next % 16)) == 0);
        for (int i = 0; i < 60; ++i) fx.offer(golden::concat(golden::kUntagged), i * 1000ull);
        for (int step = 0; step < 40; ++step) {
            for (const Seen& s : seen(q.cq)) {
                r.completions.push_back(s);
                if (s.status != IBV_WC_SUCCESS) continue;
                REQUIRE(post_wq(q.wq, next, buf.sge(next % 16)) == 0);
                ++next;
            }
        }
        for (const auto& c : fx.port().drops) r.drops.push_back(c.get());
        CHECK(fx.balanced());
    }
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    r.trace = text.str();
    std::filesystem::remove(path);
    return r;
}

} // namespace

TEST_CASE("device faults: the same plan with the inline engine fires at the same frames twice",
          "[device][faults]") {
    const std::string plan = "seed=5; out-of-buffer:p=0.1,frames=2; cqe-error:p=0.02,wq=0,status=LOC_LEN_ERR;"
                             "delay-drop-timeout:wq=0,after=30; cq-overrun:after=25";
    const Run a = run_once(plan);
    const Run b = run_once(plan);
    CHECK(a.completions == b.completions);
    CHECK(a.drops == b.drops);
    CHECK(a.trace == b.trace);
    CHECK(a.drops[static_cast<std::size_t>(Drop::out_of_buffer)] > 0);
    CHECK_THAT(a.trace, Catch::Contains("\"kind\":\"out-of-buffer\"") &&
                            Catch::Contains("\"kind\":\"delay-drop-timeout\""));
    const Run c = run_once("seed=6" + plan.substr(plan.find(';')));
    CHECK(c.trace != a.trace);
}
