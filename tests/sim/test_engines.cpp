// The engines that move frames from a source into a device port: the inline
// engine (pulled by pump(), virtual time) and the thread engine (its own
// thread, real time). Programs see them only through verbs.
#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "datapath/counters.hpp"
#include "device/device.hpp"
#include "net/memory_source.hpp"
#include "sim/config.hpp"
#include "sim/inline_engine.hpp"
#include "sim/simulator.hpp"
#include "support/golden_frames.hpp"

using namespace rdmasim;
namespace golden = rdmasim::test::golden;

namespace {

// A simulator with one device fed by a memory source holding `frames`
// (closed: the source is exhausted once they are consumed).
std::unique_ptr<sim::Simulator> make_sim(sim::Config config, std::size_t frames) {
    auto src = std::make_unique<net::MemorySource>();
    const std::array<std::vector<std::uint8_t>, 3> shapes = {golden::concat(golden::kUntagged),
                                                             golden::concat(golden::kTagged),
                                                             golden::concat(golden::kTcpGood)};
    for (std::size_t i = 0; i < frames; ++i)
        src->push(shapes[i % shapes.size()], 1'000'000'000ull + i * 1000);
    src->close();
    std::vector<std::unique_ptr<net::FrameSource>> sources;
    sources.push_back(std::move(src));
    auto s = sim::Simulator::create(config, std::move(sources));
    REQUIRE(s);
    return std::move(s.value());
}

bool balanced(device::Device& dev) {
    std::lock_guard lock(dev.port.lock);
    const auto& c = dev.port.counters;
    return c.frames.get() == c.delivered.get() + c.drops_total() + device::port_held_frames(dev);
}

// A program's receive set-up on the simulator's device: CQ-ex, WQ in RDY, a
// one-entry indirection table, an RSS QP and a catch-all flow, a buffer.
class Program {
public:
    static constexpr std::uint32_t kSlot = 2048;

    Program(std::uint32_t max_wr, std::uint32_t wq_flags = 0) {
        int n = 0;
        ibv_device** list = ibv_get_device_list(&n);
        REQUIRE(list != nullptr);
        REQUIRE(n == 1);
        ctx = ibv_open_device(list[0]);
        ibv_free_device_list(list);
        REQUIRE(ctx != nullptr);
        pd = ibv_alloc_pd(ctx);
        REQUIRE(pd != nullptr);
        mem.assign(static_cast<std::size_t>(max_wr) * kSlot, 0);
        mr = ibv_reg_mr(pd, mem.data(), mem.size(), int{IBV_ACCESS_LOCAL_WRITE});
        REQUIRE(mr != nullptr);

        ibv_cq_init_attr_ex ca{};
        ca.cqe = 2 * max_wr;
        ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM;
        cq = ibv_create_cq_ex(ctx, &ca);
        REQUIRE(cq != nullptr);
        ibv_wq_init_attr wa{};
        wa.wq_type = IBV_WQT_RQ;
        wa.max_wr = max_wr;
        wa.max_sge = 1;
        wa.pd = pd;
        wa.cq = ibv_cq_ex_to_cq(cq);
        wa.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
        wa.create_flags = wq_flags;
        wq = ibv_create_wq(ctx, &wa);
        REQUIRE(wq != nullptr);
        ibv_wq_attr mod{};
        mod.attr_mask = IBV_WQ_ATTR_STATE;
        mod.wq_state = IBV_WQS_RDY;
        REQUIRE(ibv_modify_wq(wq, &mod) == 0);
        ibv_rwq_ind_table_init_attr ta{};
        ta.ind_tbl = &wq;
        table = ibv_create_rwq_ind_table(ctx, &ta);
        REQUIRE(table != nullptr);
        static std::array<std::uint8_t, 40> key{};
        ibv_qp_init_attr_ex qa{};
        qa.qp_type = IBV_QPT_RAW_PACKET;
        qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
        qa.pd = pd;
        qa.rwq_ind_tbl = table;
        qa.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
        qa.rx_hash_conf.rx_hash_key_len = static_cast<std::uint8_t>(key.size());
        qa.rx_hash_conf.rx_hash_key = key.data();
        qp = ibv_create_qp_ex(ctx, &qa);
        REQUIRE(qp != nullptr);
    }
    ~Program() {
        if (flow) CHECK(ibv_destroy_flow(flow) == 0);
        CHECK(ibv_destroy_qp(qp) == 0);
        CHECK(ibv_destroy_rwq_ind_table(table) == 0);
        CHECK(ibv_destroy_wq(wq) == 0);
        CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
        CHECK(ibv_dereg_mr(mr) == 0);
        CHECK(ibv_dealloc_pd(pd) == 0);
        CHECK(ibv_close_device(ctx) == 0);
    }
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;

    void attach_flow() {
        struct {
            ibv_flow_attr attr;
            ibv_flow_spec_eth eth;
        } fa{};
        fa.attr.type = IBV_FLOW_ATTR_NORMAL;
        fa.attr.size = sizeof fa;
        fa.attr.num_of_specs = 1;
        fa.attr.port = 1;
        fa.eth.type = IBV_FLOW_SPEC_ETH;
        fa.eth.size = sizeof fa.eth;
        flow = ibv_create_flow(qp, &fa.attr);
        REQUIRE(flow != nullptr);
    }
    // Posts a WQE on slot `slot` with wr_id = slot.
    int post(std::uint64_t slot) {
        ibv_sge s{reinterpret_cast<std::uint64_t>(mem.data() + slot * kSlot), kSlot, mr->lkey};
        ibv_recv_wr wr{};
        wr.wr_id = slot;
        wr.sg_list = &s;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        return ibv_post_wq_recv(wq, &wr, &bad);
    }
    // Polls once; reposts every completed slot. Returns the successes seen.
    std::uint64_t poll_and_repost(std::uint64_t& failures) {
        std::uint64_t ok = 0;
        std::vector<std::uint64_t> done;
        ibv_poll_cq_attr pa{};
        int rc = ibv_start_poll(cq, &pa);
        if (rc == ENOENT) return 0;
        REQUIRE(rc == 0);
        for (; rc == 0; rc = ibv_next_poll(cq)) {
            if (cq->status == IBV_WC_SUCCESS)
                ++ok;
            else
                ++failures;
            done.push_back(cq->wr_id);
        }
        ibv_end_poll(cq);
        for (auto slot : done)
            REQUIRE(post(slot) == 0);
        return ok;
    }

    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
    std::vector<std::uint8_t> mem;
    ibv_mr* mr = nullptr;
    ibv_cq_ex* cq = nullptr;
    ibv_wq* wq = nullptr;
    ibv_rwq_ind_table* table = nullptr;
    ibv_qp* qp = nullptr;
    ibv_flow* flow = nullptr;
};

sim::Config inline_config() {
    sim::Config c;
    c.engine = sim::EngineKind::inline_;
    return c;
}

} // namespace

TEST_CASE("inline engine: each pump pulls at most `burst` frames; idle after exhaustion",
          "[sim][engine]") {
    sim::Config config = inline_config();
    REQUIRE(config.set("burst", "4"));
    REQUIRE(config.set("start", "now"));
    auto s = make_sim(config, 10);
    auto& engine = static_cast<sim::InlineEngine&>(s->engine(0));
    auto& dev = s->device(0);
    REQUIRE(engine.started());
    CHECK_FALSE(engine.idle());
    engine.pump();
    CHECK(dev.port.counters.frames.get() == 4);
    CHECK_FALSE(engine.idle());
    engine.pump();
    CHECK(dev.port.counters.frames.get() == 8);
    CHECK_FALSE(engine.idle());
    engine.pump();
    CHECK(dev.port.counters.frames.get() == 10);
    CHECK(engine.idle());
    CHECK(s->idle());
    engine.pump();
    CHECK(dev.port.counters.frames.get() == 10);
    // No flow: every frame is a steering miss, and the balance holds.
    CHECK(dev.port.counters.drops[static_cast<std::size_t>(datapath::Drop::steering_miss)].get() ==
          10);
    CHECK(balanced(dev));
}

TEST_CASE("inline engine: by default no frame enters before a flow is attached", "[sim][engine]") {
    sim::Config config = inline_config();
    REQUIRE(config.start == sim::StartTrigger::first_flow); // the default
    REQUIRE(config.set("burst", "8"));
    auto s = make_sim(config, 12);
    auto& engine = static_cast<sim::InlineEngine&>(s->engine(0));
    auto& dev = s->device(0);
    {
        Program p(16);
        CHECK_FALSE(engine.started());
        for (int i = 0; i < 5; ++i)
            engine.pump();
        std::uint64_t failures = 0;
        CHECK(p.poll_and_repost(failures) == 0); // polling pumps too
        CHECK(dev.port.counters.frames.get() == 0);
        for (std::uint64_t i = 0; i < 16; ++i)
            REQUIRE(p.post(i) == 0);
        CHECK(dev.port.counters.frames.get() == 0); // posting does not start it either

        p.attach_flow();
        CHECK(engine.started());
        engine.pump();
        CHECK(dev.port.counters.frames.get() == 8);
        std::uint64_t delivered = p.poll_and_repost(failures); // pumps the last 4
        delivered += p.poll_and_repost(failures);
        CHECK(delivered == 12);
        CHECK(failures == 0);
        CHECK(dev.port.counters.delivered.get() == 12);
        CHECK(engine.idle());
        CHECK(balanced(dev));
    }
}

TEST_CASE("inline engine: held frames keep it busy; wait_idle pumps them to their outcome",
          "[sim][engine]") {
    sim::Config config = inline_config();
    REQUIRE(config.set("start", "now"));
    REQUIRE(config.set("caps.delay_drop_timeout_us", "500"));
    auto s = make_sim(config, 3);
    auto& engine = static_cast<sim::InlineEngine&>(s->engine(0));
    auto& dev = s->device(0);
    {
        Program p(4, IBV_WQ_FLAGS_DELAY_DROP);
        p.attach_flow();
        engine.pump();
        CHECK(dev.port.counters.frames.get() == 3);
        CHECK(dev.port.counters.delay_drop_waits.get() == 3);
        CHECK_FALSE(engine.idle()); // the source is done, but frames are held
        CHECK(engine.wait_idle(std::chrono::milliseconds(0)));
        CHECK(engine.idle());
        CHECK(dev.port.counters.drops[static_cast<std::size_t>(datapath::Drop::delay_drop_timeout)]
                  .get() == 3);
        CHECK(balanced(dev));
    }
}

TEST_CASE("thread engine: thousands of frames to a polling program, and the balance holds",
          "[sim][engine]") {
    constexpr std::size_t kFrames = 4000;
    sim::Config config; // engine=thread, start=first-flow, topspeed
    REQUIRE(config.engine == sim::EngineKind::thread);
    auto s = make_sim(config, kFrames);
    auto& engine = s->engine(0);
    auto& dev = s->device(0);
    {
        Program p(256);
        for (std::uint64_t i = 0; i < 256; ++i)
            REQUIRE(p.post(i) == 0);
        // Not started: nothing moves, and waiting for idle times out.
        CHECK_FALSE(engine.wait_idle(std::chrono::milliseconds(50)));
        CHECK(dev.port.counters.frames.get() == 0);

        p.attach_flow();
        std::uint64_t delivered = 0, failures = 0;
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!engine.idle() && std::chrono::steady_clock::now() < until)
            delivered += p.poll_and_repost(failures);
        REQUIRE(engine.idle());
        // Whatever completed before idle is in the CQ by now.
        delivered += p.poll_and_repost(failures);
        delivered += p.poll_and_repost(failures);
        CHECK(engine.wait_idle(std::chrono::milliseconds(1000)));
        CHECK(s->wait_idle(std::chrono::milliseconds(1000)));

        const auto& c = dev.port.counters;
        CHECK(c.frames.get() == kFrames);
        CHECK(c.delivered.get() == delivered);
        CHECK(failures == 0);
        CHECK(c.frames.get() == c.delivered.get() + c.drops_total());
        // At topspeed the only acceptable loss is running out of posted WQEs.
        CHECK(c.drops_total() ==
              c.drops[static_cast<std::size_t>(datapath::Drop::out_of_buffer)].get());
        CHECK(delivered > 0);
        CHECK(balanced(dev));
    }
}
