// Completion queues, CQ overflow events and completion channels (device/README.md, "Completion queues and events").
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "tests/device/verbs_helpers.hpp"
#include "tests/support/verbs_events.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

ibv_cq_init_attr_ex cq_ex_attr(std::uint64_t wc_flags, std::uint32_t cqe = 16) {
    ibv_cq_init_attr_ex a{};
    a.cqe = cqe;
    a.wc_flags = wc_flags;
    return a;
}

int cq_ex_errno(ibv_context* ctx, ibv_cq_init_attr_ex a) {
    errno = 0;
    ibv_cq_ex* cq = ibv_create_cq_ex(ctx, &a);
    if (cq == nullptr) return errno == 0 ? -1 : errno;
    REQUIRE(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
    return 0;
}

} // namespace

TEST_CASE("ibv_create_cq: size and completion vector limits", "[device][cq]") {
    SimFixture fx;
    ibv_device_attr dev;
    REQUIRE(ibv_query_device(fx.ctx, &dev) == 0);

    errno = 0;
    CHECK(ibv_create_cq(fx.ctx, dev.max_cqe + 1, nullptr, nullptr, 0) == nullptr);
    CHECK(errno == EINVAL);

    REQUIRE(fx.ctx->num_comp_vectors > 0);
    errno = 0;
    CHECK(ibv_create_cq(fx.ctx, 16, nullptr, nullptr, fx.ctx->num_comp_vectors) == nullptr);
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(ibv_create_cq(fx.ctx, 16, nullptr, nullptr, -1) == nullptr);
    CHECK(errno == EINVAL);

    int cookie = 0;
    ibv_cq* cq = ibv_create_cq(fx.ctx, 100, &cookie, nullptr, fx.ctx->num_comp_vectors - 1);
    REQUIRE(cq != nullptr);
    CHECK(cq->cqe >= 100);
    CHECK(cq->context == fx.ctx);
    CHECK(cq->cq_context == &cookie);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_create_cq_ex: wc_flags outside IBV_CREATE_CQ_SUP_WC_FLAGS is EOPNOTSUPP",
          "[device][cq]") {
    SimFixture fx;
    CHECK(cq_ex_errno(fx.ctx, cq_ex_attr(IBV_CREATE_CQ_SUP_WC_FLAGS)) == 0);
    for (const std::uint64_t bit : {std::uint64_t{1} << 12, std::uint64_t{1} << 31,
                                    std::uint64_t{1} << 40, std::uint64_t{1} << 63}) {
        CAPTURE(bit);
        CHECK(cq_ex_errno(fx.ctx, cq_ex_attr(IBV_WC_EX_WITH_BYTE_LEN | bit)) == EOPNOTSUPP);
    }
    ibv_device_attr dev;
    REQUIRE(ibv_query_device(fx.ctx, &dev) == 0);
    CHECK(cq_ex_errno(fx.ctx, cq_ex_attr(0, static_cast<std::uint32_t>(dev.max_cqe) + 1)) ==
          EINVAL);
    ibv_cq_init_attr_ex a = cq_ex_attr(0);
    a.comp_vector = static_cast<std::uint32_t>(fx.ctx->num_comp_vectors);
    CHECK(cq_ex_errno(fx.ctx, a) == EINVAL);
}

TEST_CASE("ibv_create_cq_ex: a read_* accessor is there only when requested", "[device][cq]") {
    struct Reader {
        std::uint64_t flag;
        bool (*installed)(const ibv_cq_ex&);
    };
    const Reader readers[] = {
        {IBV_WC_EX_WITH_BYTE_LEN, [](const ibv_cq_ex& c) { return c.read_byte_len != nullptr; }},
        {IBV_WC_EX_WITH_IMM, [](const ibv_cq_ex& c) { return c.read_imm_data != nullptr; }},
        {IBV_WC_EX_WITH_QP_NUM, [](const ibv_cq_ex& c) { return c.read_qp_num != nullptr; }},
        {IBV_WC_EX_WITH_SRC_QP, [](const ibv_cq_ex& c) { return c.read_src_qp != nullptr; }},
        {IBV_WC_EX_WITH_SLID, [](const ibv_cq_ex& c) { return c.read_slid != nullptr; }},
        {IBV_WC_EX_WITH_SL, [](const ibv_cq_ex& c) { return c.read_sl != nullptr; }},
        {IBV_WC_EX_WITH_DLID_PATH_BITS,
         [](const ibv_cq_ex& c) { return c.read_dlid_path_bits != nullptr; }},
        {IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
         [](const ibv_cq_ex& c) { return c.read_completion_ts != nullptr; }},
        {IBV_WC_EX_WITH_CVLAN, [](const ibv_cq_ex& c) { return c.read_cvlan != nullptr; }},
        {IBV_WC_EX_WITH_FLOW_TAG, [](const ibv_cq_ex& c) { return c.read_flow_tag != nullptr; }},
        {IBV_WC_EX_WITH_TM_INFO, [](const ibv_cq_ex& c) { return c.read_tm_info != nullptr; }},
        {IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
         [](const ibv_cq_ex& c) { return c.read_completion_wallclock_ns != nullptr; }},
    };
    SimFixture fx;
    for (const Reader& want : readers) {
        CAPTURE(want.flag);
        ibv_cq_init_attr_ex a = cq_ex_attr(want.flag);
        ibv_cq_ex* cq = ibv_create_cq_ex(fx.ctx, &a);
        REQUIRE(cq != nullptr);
        CHECK(cq->start_poll != nullptr);
        CHECK(cq->next_poll != nullptr);
        CHECK(cq->end_poll != nullptr);
        CHECK(cq->read_opcode != nullptr);
        CHECK(cq->read_vendor_err != nullptr);
        CHECK(cq->read_wc_flags != nullptr);
        for (const Reader& r : readers) {
            CAPTURE(r.flag);
            CHECK(r.installed(*cq) == (r.flag == want.flag));
        }
        REQUIRE(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
    }
    // No flags: none of them.
    ibv_cq_init_attr_ex a = cq_ex_attr(0);
    ibv_cq_ex* cq = ibv_create_cq_ex(fx.ctx, &a);
    REQUIRE(cq != nullptr);
    for (const Reader& r : readers)
        CHECK_FALSE(r.installed(*cq));
    REQUIRE(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
}

TEST_CASE("an extended CQ reports the stripped VLAN through ibv_wc_read_cvlan", "[device][cq]") {
    SimFixture fx;
    ibv_cq_init_attr_ex ca =
        cq_ex_attr(IBV_WC_EX_WITH_CVLAN | IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM);
    ibv_cq_ex* cqx = ibv_create_cq_ex(fx.ctx, &ca);
    REQUIRE(cqx != nullptr);
    ibv_cq* cq = ibv_cq_ex_to_cq(cqx);
    ibv_wq_init_attr wa = wq_attr(fx.pd, cq, 8);
    wa.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
    wa.create_flags = IBV_WQ_FLAGS_CVLAN_STRIPPING;
    ibv_wq* wq = ibv_create_wq(fx.ctx, &wa);
    REQUIRE(wq != nullptr);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    MrBuffer buf(fx.pd, 2);
    {
        Steering steer(fx.pd, {wq});
        REQUIRE(post_wq(wq, 77, buf.sge(0)) == 0);
        const Frame f = vlan_frame(0xa07b); // PCP 5, DEI 0, VID 0x07b
        fx.offer(f);
        ibv_poll_cq_attr pa{};
        int rc = ibv_start_poll(cqx, &pa);
        for (int i = 0; rc == ENOENT && i < 100; ++i)
            rc = ibv_start_poll(cqx, &pa);
        REQUIRE(rc == 0);
        CHECK(cqx->wr_id == 77);
        CHECK(cqx->status == IBV_WC_SUCCESS);
        CHECK(ibv_wc_read_opcode(cqx) == IBV_WC_RECV);
        CHECK(ibv_wc_read_cvlan(cqx) == 0xa07b);
        CHECK(ibv_wc_read_byte_len(cqx) == f.size() - 4);
        CHECK(ibv_wc_read_qp_num(cqx) == wq->wq_num);
        CHECK(ibv_next_poll(cqx) == ENOENT);
        ibv_end_poll(cqx);
        // Outside a poll (a program's mistake: the verbs do not allow it) the
        // accessors read an empty entry, never a ring slot the device may reuse.
        CHECK(ibv_wc_read_byte_len(cqx) == 0);
        CHECK(ibv_wc_read_cvlan(cqx) == 0);
        CHECK(fx.balanced());
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

// device/README.md, "Completion queues and events": a poll pumps the inline
// engine only when the CQ holds nothing, so a program that drains its CQ one
// completion at a time is not flooded; an empty poll pumps, once.
TEST_CASE("a poll pumps the inline engine only when the CQ is empty", "[device][cq]") {
    SimFixture fx(std::vector<std::pair<std::string, std::string>>{{"burst", "1"}});
    ibv_cq_init_attr_ex ca = cq_ex_attr(IBV_WC_EX_WITH_BYTE_LEN);
    ibv_cq_ex* cqx = ibv_create_cq_ex(fx.ctx, &ca);
    REQUIRE(cqx != nullptr);
    ibv_cq* cq = ibv_cq_ex_to_cq(cqx);
    ibv_wq_init_attr wa = wq_attr(fx.pd, cq, 8);
    ibv_wq* wq = ibv_create_wq(fx.ctx, &wa);
    REQUIRE(wq != nullptr);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    MrBuffer buf(fx.pd, 4);
    {
        Steering steer(fx.pd, {wq});
        for (std::uint64_t i = 0; i < 4; ++i) REQUIRE(post_wq(wq, i, buf.sge(i)) == 0);
        fx.offer(vlan_frame(1));
        fx.pump(); // frame 0 completes
        fx.offer(vlan_frame(2));
        fx.offer(vlan_frame(3));
        ibv_wc wc[2]{};
        // The CQ holds one: this poll (either verb) must not pump.
        REQUIRE(ibv_poll_cq(cq, 0, wc) == 0);
        ibv_poll_cq_attr pa{};
        REQUIRE(ibv_start_poll(cqx, &pa) == 0);
        CHECK(cqx->wr_id == 0);
        CHECK(ibv_next_poll(cqx) == ENOENT);
        ibv_end_poll(cqx);
        CHECK(fx.port().frames.get() == 1);
        // Now empty: a poll pumps once (a burst of one frame) and finds it.
        REQUIRE(ibv_poll_cq(cq, 2, wc) == 1);
        CHECK(wc[0].wr_id == 1);
        CHECK(fx.port().frames.get() == 2);
        REQUIRE(ibv_poll_cq(cq, 2, wc) == 1);
        CHECK(wc[0].wr_id == 2);
        CHECK(fx.port().frames.get() == 3);
        CHECK(fx.balanced());
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_destroy_cq works on both kinds", "[device][cq]") {
    SimFixture fx;
    ibv_cq* plain = ibv_create_cq(fx.ctx, 8, nullptr, nullptr, 0);
    REQUIRE(plain != nullptr);
    ibv_cq_init_attr_ex a = cq_ex_attr(IBV_WC_STANDARD_FLAGS);
    ibv_cq_ex* ex = ibv_create_cq_ex(fx.ctx, &a);
    REQUIRE(ex != nullptr);
    CHECK(ibv_destroy_cq(plain) == 0);
    CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(ex)) == 0);
    // Everything is gone: the context closes cleanly (checked by the fixture).
}

TEST_CASE("an overflowing CQ raises IBV_EVENT_CQ_ERR and loses nothing it holds", "[device][cq]") {
    SimFixture fx;
    ibv_cq* cq = ibv_create_cq(fx.ctx, 4, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    const auto capacity = static_cast<std::uint32_t>(cq->cqe);
    REQUIRE(capacity >= 4);
    constexpr std::uint32_t kExtra = 3;
    ibv_wq* wq = make_wq(fx.pd, cq, capacity + kExtra + 4);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    MrBuffer buf(fx.pd, capacity + kExtra + 4);
    for (std::uint32_t i = 0; i < capacity + kExtra + 4; ++i)
        REQUIRE(post_wq(wq, 100 + i, buf.sge(i)) == 0);
    {
        Steering steer(fx.pd, {wq});
        CHECK_FALSE(readable(fx.ctx->async_fd));
        std::vector<Frame> frames;
        for (std::uint32_t i = 0; i < capacity + kExtra; ++i) {
            frames.push_back(eth_frame(kDstMac, kSrcMac, 0x88b5, 46 + i));
            fx.offer(frames.back());
        }
        fx.pump_all();

        REQUIRE(readable(fx.ctx->async_fd));
        ibv_async_event ev{};
        REQUIRE(ibv_get_async_event(fx.ctx, &ev) == 0);
        CHECK(ev.event_type == IBV_EVENT_CQ_ERR);
        CHECK(ev.element.cq == cq);
        ibv_ack_async_event(&ev);
        CHECK(cq->async_events_completed == 1);
        CHECK_FALSE(readable(fx.ctx->async_fd));

        CHECK(drops(fx, datapath::Drop::cq_overflow) == kExtra);
        // What the CQ held is intact, in order.
        auto wcs = drain(cq);
        REQUIRE(wcs.size() == capacity);
        for (std::uint32_t i = 0; i < capacity; ++i) {
            CAPTURE(i);
            CHECK(wcs[i].status == IBV_WC_SUCCESS);
            CHECK(wcs[i].wr_id == 100 + i);
            CHECK(wcs[i].byte_len == frames[i].size());
            CHECK(std::memcmp(buf.slot(i), frames[i].data(), frames[i].size()) == 0);
        }
        // The dropped frames did not consume WQEs: the next frame takes the next WQE.
        const Frame next = eth_frame(kDstMac, kSrcMac, 0x88b5, 99);
        fx.offer(next);
        wcs = drain(cq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].wr_id == 100 + capacity);
        CHECK(wcs[0].byte_len == next.size());
        CHECK(fx.balanced());
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("a completion channel signals an armed CQ through a pollable fd", "[device][cq]") {
    SimFixture fx;
    ibv_comp_channel* ch = ibv_create_comp_channel(fx.ctx);
    REQUIRE(ch != nullptr);
    int cookie = 0;
    ibv_cq* cq = ibv_create_cq(fx.ctx, 16, &cookie, ch, 0);
    REQUIRE(cq != nullptr);
    CHECK(cq->channel == ch);
    ibv_wq* wq = make_wq(fx.pd, cq, 8);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    MrBuffer buf(fx.pd, 4);
    for (std::uint64_t i = 0; i < 4; ++i)
        REQUIRE(post_wq(wq, i, buf.sge(i)) == 0);
    {
        Steering steer(fx.pd, {wq});
        REQUIRE(ibv_req_notify_cq(cq, 0) == 0);
        fx.pump_all();
        CHECK_FALSE(readable(ch->fd)); // armed, but nothing completed yet

        fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        fx.pump_all();
        REQUIRE(readable(ch->fd));
        ibv_cq* ev_cq = nullptr;
        void* ev_ctx = nullptr;
        REQUIRE(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0);
        CHECK(ev_cq == cq);
        CHECK(ev_ctx == &cookie);
        ibv_ack_cq_events(cq, 1);
        CHECK(cq->comp_events_completed == 1);
        CHECK_FALSE(readable(ch->fd));
        CHECK(drain(cq).size() == 1);

        // Not re-armed: a new completion does not signal.
        fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        fx.pump_all();
        CHECK_FALSE(readable(ch->fd));
        CHECK(drain(cq).size() == 1);

        // Re-armed: it does again.
        REQUIRE(ibv_req_notify_cq(cq, 0) == 0);
        fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        fx.pump_all();
        REQUIRE(readable(ch->fd));
        REQUIRE(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0);
        CHECK(ev_cq == cq);
        ibv_ack_cq_events(cq, 1);
        CHECK(cq->comp_events_completed == 2);
        CHECK(drain(cq).size() == 1);
        CHECK(fx.balanced());
    }
    CHECK(ibv_destroy_comp_channel(ch) == EBUSY); // a CQ still uses it
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
    REQUIRE(ibv_destroy_comp_channel(ch) == 0);
}

TEST_CASE("arming a CQ without a channel is harmless, as on real providers", "[device][cq]") {
    // mlx5 and rxe accept ibv_req_notify_cq on any CQ; a program that arms
    // unconditionally and then polls must not fail here.
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    CHECK(ibv_req_notify_cq(cq, 0) == 0);
    CHECK(ibv_req_notify_cq(cq, 1) == 0);
    ibv_wq* wq = make_wq(fx.pd, cq, 4);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    MrBuffer buf(fx.pd, 1);
    REQUIRE(post_wq(wq, 9, buf.sge(0)) == 0);
    {
        Steering steer(fx.pd, {wq});
        fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        const auto wcs = drain(cq);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].wr_id == 9);
        CHECK_FALSE(readable(fx.ctx->async_fd));
        CHECK(fx.balanced());
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("a parent domain stays allocated while a CQ, a WQ or a QP created with it lives",
          "[device][cq][pd]") {
    // mlx5 counts each of them on the domain (mlx5_create_cq, create_qp) and
    // mlx5_dealloc_pd refuses with EBUSY meanwhile. The frames still go
    // through: an MR of the PD the domain stands for serves a WQ of the domain.
    SimFixture fx;
    ibv_parent_domain_init_attr pa{};
    pa.pd = fx.pd;
    ibv_pd* parent = ibv_alloc_parent_domain(fx.ctx, &pa);
    REQUIRE(parent != nullptr);
    CHECK(ibv_dealloc_pd(fx.pd) == EBUSY); // the domain stands for it

    ibv_cq_init_attr_ex ca = cq_ex_attr(IBV_WC_EX_WITH_BYTE_LEN);
    ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
    ca.parent_domain = parent;
    ibv_cq_ex* cqx = ibv_create_cq_ex(fx.ctx, &ca);
    REQUIRE(cqx != nullptr);
    ibv_cq* cq = ibv_cq_ex_to_cq(cqx);
    CHECK(ibv_dealloc_pd(parent) == EBUSY); // the CQ

    ibv_wq* wq = make_wq(parent, cq);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    // Through the domain's RSS QP into an MR of the PD (gone with the call).
    check_passes_unchanged(fx, parent, fx.pd, wq, cq, vlan_frame(0x2064));
    REQUIRE(ibv_destroy_cq(cq) == EBUSY); // the WQ
    CHECK(ibv_dealloc_pd(parent) == EBUSY);
    REQUIRE(ibv_destroy_wq(wq) == 0);
    CHECK(ibv_dealloc_pd(parent) == EBUSY); // still the CQ
    {
        RawQp qp(parent);
        REQUIRE(ibv_destroy_cq(cq) == 0);
        CHECK(ibv_dealloc_pd(parent) == EBUSY); // the QP
    }
    CHECK(ibv_dealloc_pd(fx.pd) == EBUSY); // the domain is still there
    REQUIRE(ibv_dealloc_pd(parent) == 0);  // nothing of it is left
}
