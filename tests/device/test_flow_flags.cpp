// ibv_flow_attr.flags (device/README.md, "Flow steering"; datapath/README.md,
// "The port"): IBV_FLOW_ATTR_FLAGS_DONT_TRAP delivers and lets the frame go on
// to the rules below (ranking before the trapping rules of its priority, as
// mlx5's ib_prio_to_core_prio does), with one outcome per frame at the port;
// IBV_FLOW_ATTR_FLAGS_EGRESS is refused (EOPNOTSUPP); other bits, and either
// flag on a default rule, are EINVAL as the kernel answers.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "support/golden_frames.hpp"
#include "tests/device/verbs_helpers.hpp"

using namespace rdmasim;
using namespace rdmasim::test;
using datapath::Drop;
namespace golden = rdmasim::test::golden;

namespace {

EthFlowAttr flow_with(std::uint32_t flags, std::uint16_t priority = 0,
                      ibv_flow_attr_type type = IBV_FLOW_ATTR_NORMAL) {
    EthFlowAttr f = eth_flow(nullptr, priority, type);
    f.attr.flags = flags;
    return f;
}

// errno of ibv_create_flow, 0 when it succeeded (the flow is destroyed again).
int flow_errno(ibv_qp* qp, EthFlowAttr f) {
    errno = 0;
    ibv_flow* flow = ibv_create_flow(qp, &f.attr);
    if (flow == nullptr) return errno;
    CHECK(ibv_destroy_flow(flow) == 0);
    return 0;
}

// A raw QP with `n` receives posted, one MR slot each.
struct Receiver {
    Receiver(ibv_pd* pd, std::size_t n) : buf(pd, n == 0 ? 1 : n), q(pd) {
        for (std::size_t i = 0; i < n; ++i)
            REQUIRE(post_qp(q.qp, i, buf.sge(i)) == 0);
    }
    [[nodiscard]] std::size_t completions() const { return drain(q.cq).size(); }
    MrBuffer buf;
    RawQp q;
};

std::uint64_t queue_delivered(SimFixture& fx, const Receiver& r) {
    std::lock_guard lock(fx.device().port.mutex());
    return fx.device().port.find_queue(r.q.qp->qp_num)->counters().delivered.get();
}

} // namespace

TEST_CASE("a DONT_TRAP rule delivers and the frame goes on to the rules below it",
          "[device][flow][dont_trap]") {
    SimFixture fx;
    Receiver trap(fx.pd, 4), copy(fx.pd, 4);
    // Same priority, the trapping rule created first: DONT_TRAP still ranks first.
    ibv_flow* f_trap = make_flow(trap.q.qp, flow_with(0, 1));
    ibv_flow* f_copy = make_flow(copy.q.qp, flow_with(IBV_FLOW_ATTR_FLAGS_DONT_TRAP, 1));
    fx.offer(golden::concat(golden::kUntagged));
    fx.pump();
    CHECK(copy.completions() == 1);
    CHECK(trap.completions() == 1);
    // One frame, one outcome at the port: the trapping rule's delivery.
    CHECK(fx.port().frames.get() == 1);
    CHECK(fx.port().delivered.get() == 1);
    CHECK(queue_delivered(fx, copy) == 1);
    CHECK(queue_delivered(fx, trap) == 1);
    CHECK(fx.balanced());

    // Without a trapping rule below, the DONT_TRAP delivery is the frame's outcome.
    CHECK(ibv_destroy_flow(f_trap) == 0);
    fx.offer(golden::concat(golden::kUntagged));
    fx.pump();
    CHECK(copy.completions() == 1);
    CHECK(trap.completions() == 0);
    CHECK(fx.port().delivered.get() == 2);
    CHECK(drops(fx, Drop::steering_miss) == 0);
    CHECK(fx.balanced());
    CHECK(ibv_destroy_flow(f_copy) == 0);
}

TEST_CASE("DONT_TRAP rules: each matching one delivers, in rule order; a trapping rule above "
          "them ends the walk",
          "[device][flow][dont_trap]") {
    SimFixture fx;
    Receiver a(fx.pd, 4), b(fx.pd, 4), c(fx.pd, 4);
    ibv_flow* fa = make_flow(a.q.qp, flow_with(IBV_FLOW_ATTR_FLAGS_DONT_TRAP, 2));
    ibv_flow* fb = make_flow(b.q.qp, flow_with(IBV_FLOW_ATTR_FLAGS_DONT_TRAP, 3));
    fx.offer(golden::concat(golden::kUntagged));
    fx.pump();
    CHECK(a.completions() == 1);
    CHECK(b.completions() == 1);
    CHECK(fx.port().delivered.get() == 1);
    // A trapping rule of a better priority: the DONT_TRAP rules below never see the frame.
    ibv_flow* fc = make_flow(c.q.qp, flow_with(0, 1));
    fx.offer(golden::concat(golden::kUntagged));
    fx.pump();
    CHECK(c.completions() == 1);
    CHECK(a.completions() == 0);
    CHECK(b.completions() == 0);
    CHECK(fx.port().frames.get() == 2);
    CHECK(fx.port().delivered.get() == 2);
    CHECK(fx.balanced());
    for (ibv_flow* f : {fa, fb, fc})
        CHECK(ibv_destroy_flow(f) == 0);
}

TEST_CASE("a DONT_TRAP copy that finds no WQE is its queue's drop, not the frame's",
          "[device][flow][dont_trap]") {
    SimFixture fx;
    Receiver empty(fx.pd, 0), trap(fx.pd, 1);
    ibv_flow* f1 = make_flow(empty.q.qp, flow_with(IBV_FLOW_ATTR_FLAGS_DONT_TRAP, 0));
    ibv_flow* f2 = make_flow(trap.q.qp, flow_with(0, 1));
    fx.offer(golden::concat(golden::kUntagged));
    fx.pump();
    CHECK(trap.completions() == 1);
    CHECK(drops(fx, Drop::out_of_buffer) == 0);
    CHECK(fx.port().delivered.get() == 1);
    {
        std::lock_guard lock(fx.device().port.mutex());
        const auto* q = fx.device().port.find_queue(empty.q.qp->qp_num);
        CHECK(q->counters().drops[static_cast<std::size_t>(Drop::out_of_buffer)].get() == 1);
    }
    CHECK(fx.balanced());
    CHECK(ibv_destroy_flow(f1) == 0);
    CHECK(ibv_destroy_flow(f2) == 0);
}

TEST_CASE("ibv_create_flow flags: the kernel's answers", "[device][flow][dont_trap]") {
    SimFixture fx;
    RawQp q(fx.pd);
    SECTION("DONT_TRAP on a NORMAL or SNIFFER rule is accepted") {
        CHECK(flow_errno(q.qp, flow_with(IBV_FLOW_ATTR_FLAGS_DONT_TRAP)) == 0);
        CHECK(flow_errno(q.qp,
                         flow_with(IBV_FLOW_ATTR_FLAGS_DONT_TRAP, 0, IBV_FLOW_ATTR_SNIFFER)) == 0);
    }
    SECTION("DONT_TRAP or EGRESS on a default rule is EINVAL") {
        for (const auto type : {IBV_FLOW_ATTR_ALL_DEFAULT, IBV_FLOW_ATTR_MC_DEFAULT}) {
            CHECK(flow_errno(q.qp, flow_with(IBV_FLOW_ATTR_FLAGS_DONT_TRAP, 0, type)) == EINVAL);
            CHECK(flow_errno(q.qp, flow_with(IBV_FLOW_ATTR_FLAGS_EGRESS, 0, type)) == EINVAL);
        }
    }
    SECTION("EGRESS is not emulated: EOPNOTSUPP") {
        CHECK(flow_errno(q.qp, flow_with(IBV_FLOW_ATTR_FLAGS_EGRESS)) == EOPNOTSUPP);
        CHECK(flow_errno(q.qp, flow_with(IBV_FLOW_ATTR_FLAGS_EGRESS |
                                         IBV_FLOW_ATTR_FLAGS_DONT_TRAP)) == EOPNOTSUPP);
    }
    SECTION("any other bit is EINVAL") {
        for (unsigned bit = 0; bit < 32; ++bit) {
            const std::uint32_t flag = 1u << bit;
            if (flag == IBV_FLOW_ATTR_FLAGS_DONT_TRAP || flag == IBV_FLOW_ATTR_FLAGS_EGRESS)
                continue;
            INFO("bit " << bit);
            CHECK(flow_errno(q.qp, flow_with(flag)) == EINVAL);
            CHECK(flow_errno(q.qp, flow_with(flag | IBV_FLOW_ATTR_FLAGS_DONT_TRAP)) == EINVAL);
        }
    }
}
