// Receive work queues: ibv_create_wq, ibv_modify_wq, ibv_post_wq_recv,
// ibv_destroy_wq (device/README.md, "Work queues").
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include "tests/device/verbs_helpers.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

// Creates a WQ from `attr`; returns the errno of a failure, 0 (and destroys the WQ) on success.
int create_errno(ibv_context* ctx, ibv_wq_init_attr attr) {
    errno = 0;
    ibv_wq* wq = ibv_create_wq(ctx, &attr);
    if (wq == nullptr) return errno == 0 ? -1 : errno;
    REQUIRE(ibv_destroy_wq(wq) == 0);
    return 0;
}

ibv_device_attr device_attr(ibv_context* ctx) {
    ibv_device_attr a;
    REQUIRE(ibv_query_device(ctx, &a) == 0);
    return a;
}

void drive_to(ibv_wq* wq, ibv_wq_state state) {
    if (state == IBV_WQS_RESET) return;
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    if (state == IBV_WQS_ERR) REQUIRE(set_wq_state(wq, IBV_WQS_ERR) == 0);
    REQUIRE(wq->state == state);
}

// Posts WRs with wr_ids first, first+1, ... until the WQ refuses one; returns how many it took.
std::uint64_t fill(ibv_wq* wq, const MrBuffer& buf, std::uint64_t first = 1000) {
    std::uint64_t n = 0;
    for (;; ++n) {
        ibv_sge sge = buf.sge(0);
        ibv_recv_wr wr{};
        wr.wr_id = first + n;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        const int rc = ibv_post_wq_recv(wq, &wr, &bad);
        if (rc != 0) {
            CHECK(rc == ENOMEM);
            CHECK(bad == &wr);
            return n;
        }
        REQUIRE(n < 1u << 16);
    }
}

void check_flushed(const std::vector<ibv_wc>& wcs, const std::vector<std::uint64_t>& ids,
                   std::uint32_t wq_num) {
    REQUIRE(wcs.size() == ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        CAPTURE(i);
        CHECK(wcs[i].status == IBV_WC_WR_FLUSH_ERR);
        CHECK(wcs[i].wr_id == ids[i]);
        CHECK(wcs[i].qp_num == wq_num);
    }
}

} // namespace

// ---- ibv_create_wq ----

TEST_CASE("ibv_create_wq: a new WQ is in RESET with every field filled", "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq_init_attr a = wq_attr(fx.pd, cq, 5, 3);
    int cookie = 0;
    a.wq_context = &cookie;
    ibv_wq* wq = ibv_create_wq(fx.ctx, &a);
    REQUIRE(wq != nullptr);
    CHECK(wq->state == IBV_WQS_RESET);
    CHECK(wq->context == fx.ctx);
    CHECK(wq->pd == fx.pd);
    CHECK(wq->cq == cq);
    CHECK(wq->wq_type == IBV_WQT_RQ);
    CHECK(wq->wq_context == &cookie);
    CHECK(wq->post_recv != nullptr);
    CHECK(wq->events_completed == 0);
    // Exactly the request comes back (hardware does so and DPDK relies on it).
    CHECK(a.max_wr == 5);
    CHECK(a.max_sge == 3);
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_create_wq: wq_num is unique across the device", "[device][wq]") {
    SimFixture fx;
    OtherContext other;
    ibv_cq* cq = make_cq(fx.ctx);
    std::vector<ibv_wq*> wqs;
    std::set<std::uint32_t> nums;
    std::set<std::uint32_t> handles;
    for (int i = 0; i < 8; ++i) {
        wqs.push_back(make_wq(fx.pd, cq));
        nums.insert(wqs.back()->wq_num);
        handles.insert(wqs.back()->handle);
    }
    ibv_wq* foreign = make_wq(other.pd, other.cq);
    nums.insert(foreign->wq_num);
    CHECK(nums.size() == 9);
    CHECK(handles.size() == 8);
    REQUIRE(ibv_destroy_wq(foreign) == 0);
    for (ibv_wq* wq : wqs)
        REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_create_wq: comp_mask and flag rules", "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    const ibv_wq_init_attr base = wq_attr(fx.pd, cq);

    SECTION("a comp_mask bit at or above IBV_WQ_INIT_ATTR_RESERVED is EINVAL") {
        for (const std::uint32_t bit :
             {std::uint32_t{IBV_WQ_INIT_ATTR_RESERVED}, 1u << 7, 1u << 31}) {
            CAPTURE(bit);
            ibv_wq_init_attr a = base;
            a.comp_mask = bit;
            CHECK(create_errno(fx.ctx, a) == EINVAL);
            a.comp_mask = bit | IBV_WQ_INIT_ATTR_FLAGS;
            CHECK(create_errno(fx.ctx, a) == EINVAL);
        }
    }
    SECTION("a flag bit at or above IBV_WQ_FLAGS_RESERVED is EOPNOTSUPP") {
        for (const std::uint32_t bit : {std::uint32_t{IBV_WQ_FLAGS_RESERVED}, 1u << 9, 1u << 31}) {
            CAPTURE(bit);
            ibv_wq_init_attr a = base;
            a.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
            a.create_flags = bit | IBV_WQ_FLAGS_CVLAN_STRIPPING;
            CHECK(create_errno(fx.ctx, a) == EOPNOTSUPP);
        }
    }
    SECTION("every known flag together is accepted") {
        ibv_wq_init_attr a = base;
        a.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
        a.create_flags = IBV_WQ_FLAGS_CVLAN_STRIPPING | IBV_WQ_FLAGS_SCATTER_FCS |
                         IBV_WQ_FLAGS_DELAY_DROP | IBV_WQ_FLAGS_PCI_WRITE_END_PADDING;
        CHECK(create_errno(fx.ctx, a) == 0);
    }
    SECTION("create_flags is not read without IBV_WQ_INIT_ATTR_FLAGS") {
        ibv_wq_init_attr a = base;
        a.comp_mask = 0;
        a.create_flags = 0xffffffffu; // garbage a program left there: reserved bits too
        CHECK(create_errno(fx.ctx, a) == 0);
    }
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_create_wq: create_flags without IBV_WQ_INIT_ATTR_FLAGS has no effect on frames",
          "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq_init_attr a = wq_attr(fx.pd, cq);
    a.comp_mask = 0;
    a.create_flags = IBV_WQ_FLAGS_SCATTER_FCS | IBV_WQ_FLAGS_CVLAN_STRIPPING;
    ibv_wq* wq = ibv_create_wq(fx.ctx, &a);
    REQUIRE(wq != nullptr);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    check_passes_unchanged(fx, fx.pd, fx.pd, wq, cq, vlan_frame(0x2064)); // tag kept, no FCS
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_create_wq: wq_type other than IBV_WQT_RQ is EINVAL", "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq_init_attr a = wq_attr(fx.pd, cq);
    a.wq_type = static_cast<ibv_wq_type>(IBV_WQT_RQ + 1);
    CHECK(create_errno(fx.ctx, a) == EINVAL);
    a.wq_type = static_cast<ibv_wq_type>(77);
    CHECK(create_errno(fx.ctx, a) == EINVAL);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_create_wq: pd and cq must exist and belong to the context", "[device][wq]") {
    SimFixture fx;
    OtherContext other;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq_init_attr a = wq_attr(fx.pd, cq);

    a.pd = nullptr;
    CHECK(create_errno(fx.ctx, a) == EINVAL);
    a.pd = other.pd;
    CHECK(create_errno(fx.ctx, a) == EINVAL);
    a.pd = fx.pd;
    a.cq = nullptr;
    CHECK(create_errno(fx.ctx, a) == EINVAL);
    a.cq = other.cq;
    CHECK(create_errno(fx.ctx, a) == EINVAL);
    // Both from the other context, created on this one: still another context.
    a.pd = other.pd;
    CHECK(create_errno(fx.ctx, a) == EINVAL);
    a.pd = fx.pd;
    a.cq = cq;
    CHECK(create_errno(fx.ctx, a) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_create_wq: max_wr and max_sge limits", "[device][wq]") {
    SimFixture fx;
    const ibv_device_attr dev = device_attr(fx.ctx);
    ibv_cq* cq = make_cq(fx.ctx);

    SECTION("max_wr 0 is EINVAL") {
        CHECK(create_errno(fx.ctx, wq_attr(fx.pd, cq, 0)) == EINVAL);
    }
    SECTION("max_wr up to the reported limit is accepted, above it EINVAL") {
        CHECK(create_errno(fx.ctx, wq_attr(fx.pd, cq, static_cast<std::uint32_t>(dev.max_qp_wr))) ==
              0);
        CHECK(create_errno(fx.ctx,
                           wq_attr(fx.pd, cq, static_cast<std::uint32_t>(dev.max_qp_wr) + 1)) ==
              EINVAL);
        CHECK(create_errno(fx.ctx, wq_attr(fx.pd, cq, 0xffffffffu)) == EINVAL);
    }
    SECTION("max_sge up to the reported limit is accepted, above it EINVAL") {
        const auto max_sge = static_cast<std::uint32_t>(dev.max_sge);
        ibv_wq_init_attr a = wq_attr(fx.pd, cq, 4, max_sge);
        ibv_wq* wq = ibv_create_wq(fx.ctx, &a);
        REQUIRE(wq != nullptr);
        CHECK(a.max_sge == max_sge);
        REQUIRE(ibv_destroy_wq(wq) == 0);
        CHECK(create_errno(fx.ctx, wq_attr(fx.pd, cq, 4, max_sge + 1)) == EINVAL);
    }
    SECTION("max_sge 0 counts as 1") {
        ibv_wq_init_attr a = wq_attr(fx.pd, cq, 4, 0);
        ibv_wq* wq = ibv_create_wq(fx.ctx, &a);
        REQUIRE(wq != nullptr);
        CHECK(a.max_sge == 1);
        CHECK(a.max_wr == 4);
        MrBuffer buf(fx.pd, 2);
        ibv_sge sges[2] = {buf.sge(0), buf.sge(1)};
        ibv_recv_wr wr{};
        wr.sg_list = sges;
        wr.num_sge = 1;
        ibv_recv_wr* bad = nullptr;
        CHECK(ibv_post_wq_recv(wq, &wr, &bad) == 0);
        wr.num_sge = 2;
        CHECK(ibv_post_wq_recv(wq, &wr, &bad) == EINVAL);
        CHECK(bad == &wr);
        REQUIRE(ibv_destroy_wq(wq) == 0);
    }
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_create_wq: the reported max_qp_wr holds under a smaller configured WQ limit",
          "[device][wq]") {
    // A program sizes its WQs from the query; the device must accept what it reports.
    SimFixture fx(Settings{{"caps.max_wr", "1024"}});
    const ibv_device_attr dev = device_attr(fx.ctx);
    CHECK(dev.max_qp_wr == 1024);
    ibv_cq* cq = make_cq(fx.ctx);
    CHECK(create_errno(fx.ctx, wq_attr(fx.pd, cq, static_cast<std::uint32_t>(dev.max_qp_wr))) == 0);
    CHECK(create_errno(fx.ctx, wq_attr(fx.pd, cq, static_cast<std::uint32_t>(dev.max_qp_wr) + 1)) ==
          EINVAL);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

// ---- ibv_modify_wq ----

TEST_CASE("ibv_modify_wq: attr_mask rules", "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq);
    ibv_wq_attr a{};
    a.wq_state = IBV_WQS_RDY;

    a.attr_mask = 0;
    CHECK(ibv_modify_wq(wq, &a) == EINVAL);
    a.attr_mask = IBV_WQ_ATTR_RESERVED;
    CHECK(ibv_modify_wq(wq, &a) == EINVAL);
    a.attr_mask = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_RESERVED;
    CHECK(ibv_modify_wq(wq, &a) == EINVAL);
    a.attr_mask = IBV_WQ_ATTR_STATE | (1u << 31);
    CHECK(ibv_modify_wq(wq, &a) == EINVAL);
    CHECK(wq->state == IBV_WQS_RESET);

    SECTION("IBV_WQ_ATTR_CURR_STATE must name the current state") {
        a.attr_mask = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE;
        a.curr_wq_state = IBV_WQS_RDY;
        CHECK(ibv_modify_wq(wq, &a) == EINVAL);
        CHECK(wq->state == IBV_WQS_RESET);
        a.curr_wq_state = IBV_WQS_ERR;
        CHECK(ibv_modify_wq(wq, &a) == EINVAL);
        CHECK(wq->state == IBV_WQS_RESET);
        a.curr_wq_state = IBV_WQS_RESET;
        CHECK(ibv_modify_wq(wq, &a) == 0);
        CHECK(wq->state == IBV_WQS_RDY);
        // CURR_STATE alone (no change asked) checks too.
        a.attr_mask = IBV_WQ_ATTR_CURR_STATE;
        a.curr_wq_state = IBV_WQS_RESET;
        CHECK(ibv_modify_wq(wq, &a) == EINVAL);
        a.curr_wq_state = IBV_WQS_RDY;
        CHECK(ibv_modify_wq(wq, &a) == 0);
        CHECK(wq->state == IBV_WQS_RDY);
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_modify_wq: every state transition", "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    const ibv_wq_state states[] = {IBV_WQS_RESET, IBV_WQS_RDY, IBV_WQS_ERR};
    auto legal = [](ibv_wq_state from, ibv_wq_state to) {
        return from == to || (from == IBV_WQS_RESET && to == IBV_WQS_RDY) ||
               (from == IBV_WQS_RDY && to == IBV_WQS_ERR) ||
               (from == IBV_WQS_RDY && to == IBV_WQS_RESET) ||
               (from == IBV_WQS_ERR && to == IBV_WQS_RESET);
    };
    for (const ibv_wq_state from : states) {
        for (const ibv_wq_state to : states) {
            CAPTURE(from, to);
            ibv_wq* wq = make_wq(fx.pd, cq);
            drive_to(wq, from);
            const int rc = set_wq_state(wq, to);
            if (legal(from, to)) {
                CHECK(rc == 0);
                CHECK(wq->state == to);
            } else {
                CHECK(rc == EINVAL);
                CHECK(wq->state == from);
            }
            REQUIRE(ibv_destroy_wq(wq) == 0);
        }
        for (const int bad_target : {int{IBV_WQS_UNKNOWN}, int{IBV_WQS_UNKNOWN} + 1, 99, -1}) {
            CAPTURE(from, bad_target);
            ibv_wq* wq = make_wq(fx.pd, cq);
            drive_to(wq, from);
            CHECK(set_wq_state(wq, static_cast<ibv_wq_state>(bad_target)) == EINVAL);
            CHECK(wq->state == from);
            REQUIRE(ibv_destroy_wq(wq) == 0);
        }
    }
    drain(cq); // nothing was posted: no flush completions either
    CHECK(drain(cq).empty());
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_modify_wq: flags", "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq);
    ibv_wq_attr a{};

    SECTION("PCI write end padding cannot change at run time") {
        a.attr_mask = IBV_WQ_ATTR_FLAGS;
        a.flags_mask = IBV_WQ_FLAGS_PCI_WRITE_END_PADDING;
        a.flags = IBV_WQ_FLAGS_PCI_WRITE_END_PADDING;
        CHECK(ibv_modify_wq(wq, &a) == EOPNOTSUPP);
        a.flags = 0;
        CHECK(ibv_modify_wq(wq, &a) == EOPNOTSUPP);
    }
    SECTION("an unknown flag bit is EOPNOTSUPP") {
        a.attr_mask = IBV_WQ_ATTR_FLAGS;
        for (const std::uint32_t bit : {std::uint32_t{IBV_WQ_FLAGS_RESERVED}, 1u << 31}) {
            a.flags_mask = bit;
            a.flags = bit;
            CHECK(ibv_modify_wq(wq, &a) == EOPNOTSUPP);
        }
    }
    SECTION("a refused flag change leaves the state alone") {
        a.attr_mask = IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_FLAGS;
        a.wq_state = IBV_WQS_RDY;
        a.flags_mask = IBV_WQ_FLAGS_PCI_WRITE_END_PADDING;
        CHECK(ibv_modify_wq(wq, &a) == EOPNOTSUPP);
        CHECK(wq->state == IBV_WQS_RESET);
    }
    SECTION("CVLAN stripping can change, and frames show it") {
        REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
        MrBuffer buf(fx.pd, 4);
        Steering steer(fx.pd, {wq});
        const Frame f = vlan_frame(0x6123);

        REQUIRE(post_wq(wq, 1, buf.sge(0)) == 0);
        fx.offer(f);
        auto wcs = drain(cq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].byte_len == f.size());

        a.attr_mask = IBV_WQ_ATTR_FLAGS;
        a.flags_mask = IBV_WQ_FLAGS_CVLAN_STRIPPING;
        a.flags = IBV_WQ_FLAGS_CVLAN_STRIPPING;
        REQUIRE(ibv_modify_wq(wq, &a) == 0);
        CHECK(wq->state == IBV_WQS_RDY);
        REQUIRE(post_wq(wq, 2, buf.sge(1)) == 0);
        fx.offer(f);
        wcs = drain(cq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].byte_len == f.size() - 4);
        CHECK(buf.slot(1)[12] == 0x88); // the inner ether type follows the source MAC
        CHECK(buf.slot(1)[13] == 0xb5);

        a.flags = 0;
        REQUIRE(ibv_modify_wq(wq, &a) == 0);
        REQUIRE(post_wq(wq, 3, buf.sge(2)) == 0);
        fx.offer(f);
        wcs = drain(cq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].byte_len == f.size());
        CHECK(fx.balanced());
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_modify_wq: CVLAN stripping cannot be turned on when the device lacks it",
          "[device][wq]") {
    SimFixture fx(Settings{{"caps.cvlan_stripping", "off"}});
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq);
    ibv_wq_attr a{};
    a.attr_mask = IBV_WQ_ATTR_FLAGS;
    a.flags_mask = IBV_WQ_FLAGS_CVLAN_STRIPPING;
    a.flags = IBV_WQ_FLAGS_CVLAN_STRIPPING;
    CHECK(ibv_modify_wq(wq, &a) == EOPNOTSUPP);
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

// ---- ibv_post_wq_recv ----

TEST_CASE("ibv_post_wq_recv: a full ring is ENOMEM and earlier WRs stay posted", "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx, 256);
    MrBuffer buf(fx.pd, 1);

    SECTION("one WR at a time") {
        ibv_wq* wq = make_wq(fx.pd, cq, 5);
        REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
        const std::uint64_t cap = fill(wq, buf, 1000);
        CHECK(cap >= 5);
        CHECK(cap < 64);
        REQUIRE(set_wq_state(wq, IBV_WQS_ERR) == 0);
        std::vector<std::uint64_t> ids;
        for (std::uint64_t i = 0; i < cap; ++i)
            ids.push_back(1000 + i);
        check_flushed(drain(cq), ids, wq->wq_num);
        REQUIRE(ibv_destroy_wq(wq) == 0);
    }
    SECTION("a list longer than the ring") {
        ibv_wq* wq = make_wq(fx.pd, cq, 5);
        REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
        const std::uint64_t cap = fill(wq, buf, 0);
        // Flush them so that the ring is empty again, then start over in a fresh WQ.
        REQUIRE(ibv_destroy_wq(wq) == 0);
        drain(cq);
        wq = make_wq(fx.pd, cq, 5);
        REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);

        std::vector<ibv_sge> sges(cap + 3, buf.sge(0));
        std::vector<ibv_recv_wr> wrs(cap + 3);
        for (std::size_t i = 0; i < wrs.size(); ++i) {
            wrs[i] = {};
            wrs[i].wr_id = 500 + i;
            wrs[i].sg_list = &sges[i];
            wrs[i].num_sge = 1;
            wrs[i].next = i + 1 < wrs.size() ? &wrs[i + 1] : nullptr;
        }
        ibv_recv_wr* bad = nullptr;
        CHECK(ibv_post_wq_recv(wq, wrs.data(), &bad) == ENOMEM);
        CHECK(bad == &wrs[cap]);
        REQUIRE(set_wq_state(wq, IBV_WQS_ERR) == 0);
        std::vector<std::uint64_t> ids;
        for (std::uint64_t i = 0; i < cap; ++i)
            ids.push_back(500 + i);
        check_flushed(drain(cq), ids, wq->wq_num);
        REQUIRE(ibv_destroy_wq(wq) == 0);
    }
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_post_wq_recv: num_sge above max_sge is EINVAL at that WR", "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq, 8, 2);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    MrBuffer buf(fx.pd, 3);
    ibv_sge sges[3] = {buf.sge(0), buf.sge(1), buf.sge(2)};
    ibv_recv_wr wrs[3] = {};
    wrs[0].wr_id = 1;
    wrs[0].sg_list = sges;
    wrs[0].num_sge = 2;
    wrs[0].next = &wrs[1];
    wrs[1].wr_id = 2;
    wrs[1].sg_list = sges;
    wrs[1].num_sge = 3;
    wrs[1].next = &wrs[2];
    wrs[2].wr_id = 3;
    wrs[2].sg_list = sges;
    wrs[2].num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    CHECK(ibv_post_wq_recv(wq, wrs, &bad) == EINVAL);
    CHECK(bad == &wrs[1]);
    REQUIRE(set_wq_state(wq, IBV_WQS_ERR) == 0);
    check_flushed(drain(cq), {1}, wq->wq_num);
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_post_wq_recv: completions come back in posting order with their wr_ids",
          "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq, 8, 2);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    MrBuffer buf(fx.pd, 4);
    {
        Steering steer(fx.pd, {wq});
        // A zero-length SGE is skipped: the frame lands in the next one.
        ibv_sge two[2] = {buf.sge(0), buf.sge(1)};
        two[0].length = 0;
        ibv_recv_wr wr{};
        wr.wr_id = 41;
        wr.sg_list = two;
        wr.num_sge = 2;
        ibv_recv_wr* bad = nullptr;
        REQUIRE(ibv_post_wq_recv(wq, &wr, &bad) == 0);
        REQUIRE(post_wq(wq, 42, buf.sge(2)) == 0);
        const Frame f1 = eth_frame(kDstMac, kSrcMac, 0x88b5, 50);
        const Frame f2 = eth_frame(kDstMac, kSrcMac, 0x88b5, 70);
        fx.offer(f1);
        fx.offer(f2);
        const auto wcs = drain(cq);
        REQUIRE(wcs.size() == 2);
        CHECK(wcs[0].wr_id == 41);
        CHECK(wcs[0].status == IBV_WC_SUCCESS);
        CHECK(wcs[0].opcode == IBV_WC_RECV);
        CHECK(wcs[0].byte_len == f1.size());
        CHECK(wcs[0].qp_num == wq->wq_num);
        CHECK(std::memcmp(buf.slot(1), f1.data(), f1.size()) == 0);
        CHECK(wcs[1].wr_id == 42);
        CHECK(wcs[1].byte_len == f2.size());
        CHECK(std::memcmp(buf.slot(2), f2.data(), f2.size()) == 0);
        CHECK(fx.balanced());
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("entering ERR flushes every outstanding WQE in posting order", "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq, 8);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    MrBuffer buf(fx.pd, 1);
    for (const std::uint64_t id : {7u, 3u, 9u, 1u})
        REQUIRE(post_wq(wq, id, buf.sge(0)) == 0);
    CHECK(drain(cq).empty());
    REQUIRE(set_wq_state(wq, IBV_WQS_ERR) == 0);
    check_flushed(drain(cq), {7, 3, 9, 1}, wq->wq_num);

    // Posted while in ERR: flushed too, in order.
    REQUIRE(post_wq(wq, 20, buf.sge(0)) == 0);
    REQUIRE(post_wq(wq, 21, buf.sge(0)) == 0);
    check_flushed(drain(cq), {20, 21}, wq->wq_num);

    // Back through RESET to RDY: a working queue again, nothing left over.
    REQUIRE(set_wq_state(wq, IBV_WQS_RESET) == 0);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    CHECK(drain(cq).empty());
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("WQEs posted in RESET are gone once the WQ enters RDY", "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq, 8);
    MrBuffer buf(fx.pd, 2);
    REQUIRE(post_wq(wq, 1, buf.sge(0)) == 0);
    REQUIRE(post_wq(wq, 2, buf.sge(1)) == 0);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    {
        Steering steer(fx.pd, {wq});
        fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        CHECK(drain(cq).empty());
        CHECK(drops(fx, datapath::Drop::out_of_buffer) == 1);
        // And ERR has nothing to flush.
        REQUIRE(set_wq_state(wq, IBV_WQS_ERR) == 0);
        CHECK(drain(cq).empty());
        CHECK(fx.balanced());
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("a frame steered to a WQ that is not ready is dropped", "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq, 8);
    MrBuffer buf(fx.pd, 1);
    {
        Steering steer(fx.pd, {wq});
        REQUIRE(post_wq(wq, 1, buf.sge(0)) == 0); // still in RESET
        fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        CHECK(drain(cq).empty());
        CHECK(drops(fx, datapath::Drop::wq_not_ready) == 1);
        CHECK(fx.balanced());
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("frames held for delay drop are discarded, and counted, when the WQ enters ERR",
          "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq_init_attr a = wq_attr(fx.pd, cq, 4);
    a.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
    a.create_flags = IBV_WQ_FLAGS_DELAY_DROP;
    ibv_wq* wq = ibv_create_wq(fx.ctx, &a);
    REQUIRE(wq != nullptr);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    {
        Steering steer(fx.pd, {wq});
        fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        fx.pump_all();
        CHECK(drain(cq).empty());
        CHECK(fx.balanced()); // two frames held
        CHECK(drops(fx, datapath::Drop::out_of_buffer) == 0);
        REQUIRE(set_wq_state(wq, IBV_WQS_ERR) == 0);
        CHECK(drops(fx, datapath::Drop::discarded) == 2);
        // A WQE posted now is flushed; it does not receive a held frame.
        MrBuffer buf(fx.pd, 1);
        REQUIRE(post_wq(wq, 5, buf.sge(0)) == 0);
        check_flushed(drain(cq), {5}, wq->wq_num);
        CHECK(fx.port().delivered.get() == 0);
        CHECK(fx.balanced());
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

// ---- ibv_destroy_wq and what a WQ keeps alive ----

TEST_CASE("ibv_destroy_wq and its dependants", "[device][wq]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq);

    SECTION("a PD or CQ with a live WQ cannot go") {
        CHECK(ibv_dealloc_pd(fx.pd) == EBUSY);
        CHECK(ibv_destroy_cq(cq) == EBUSY);
    }
    SECTION("a WQ in an indirection table cannot go, nor a table a QP uses") {
        std::vector<ibv_wq*> entries{wq};
        ibv_rwq_ind_table* t = make_table(fx.ctx, entries, 0);
        CHECK(ibv_destroy_wq(wq) == EBUSY);
        CHECK(wq->state == IBV_WQS_RESET);
        ibv_qp_init_attr_ex qa = rss_qp_attr(fx.pd, t, 0);
        ibv_qp* qp = ibv_create_qp_ex(fx.ctx, &qa);
        REQUIRE(qp != nullptr);
        CHECK(ibv_destroy_rwq_ind_table(t) == EBUSY);
        CHECK(ibv_destroy_wq(wq) == EBUSY);
        REQUIRE(ibv_destroy_qp(qp) == 0);
        REQUIRE(ibv_destroy_rwq_ind_table(t) == 0);
    }
    SECTION("a WQ in two tables stays busy until both are gone") {
        std::vector<ibv_wq*> entries{wq};
        ibv_rwq_ind_table* t1 = make_table(fx.ctx, entries, 0);
        ibv_rwq_ind_table* t2 = make_table(fx.ctx, entries, 0);
        REQUIRE(ibv_destroy_rwq_ind_table(t1) == 0);
        CHECK(ibv_destroy_wq(wq) == EBUSY);
        REQUIRE(ibv_destroy_rwq_ind_table(t2) == 0);
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
    // Once the WQ is gone, so may the PD's and CQ's hold on them be.
    REQUIRE(ibv_destroy_cq(cq) == 0);
}
