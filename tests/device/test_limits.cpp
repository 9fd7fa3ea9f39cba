// Limits the device reports are the limits it enforces (device/README.md,
// "Device and port" and "Indirection tables and RSS QPs"), with the errno the
// kernel returns: an indirection table above 2^13 entries is EINVAL
// (IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE, ib_uverbs_ex_create_rwq_ind_table);
// one table or receive queue more than max_rwq_indirection_tables or
// max_wq_type_rq is ENOMEM (the firmware's "limits exceeded",
// cmd_status_to_err).
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "tests/device/verbs_helpers.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

ibv_device_attr_ex query(ibv_context* ctx) {
    ibv_device_attr_ex a{};
    REQUIRE(ibv_query_device_ex(ctx, nullptr, &a) == 0);
    return a;
}

} // namespace

TEST_CASE("the indirection table size reported is the kernel's largest, and enforced",
          "[device][rss][limits]") {
    SimFixture fx;
    const ibv_device_attr_ex dev = query(fx.ctx);
    CHECK(dev.rss_caps.max_rwq_indirection_table_size == (1u << 13));
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq);
    std::vector<ibv_wq*> entries(std::size_t{1} << 16, wq);
    ibv_rwq_ind_table_init_attr a{};
    a.ind_tbl = entries.data();
    a.log_ind_tbl_size = 13;
    ibv_rwq_ind_table* t = ibv_create_rwq_ind_table(fx.ctx, &a);
    CHECK(t != nullptr);
    if (t) CHECK(ibv_destroy_rwq_ind_table(t) == 0);
    for (const std::uint32_t log : {14u, 15u, 16u}) {
        INFO("log size " << log);
        a.log_ind_tbl_size = log;
        errno = 0;
        CHECK(ibv_create_rwq_ind_table(fx.ctx, &a) == nullptr);
        CHECK(errno == EINVAL);
    }
    CHECK(ibv_destroy_wq(wq) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("max_rwq_indirection_tables: one table more is ENOMEM until one goes",
          "[device][rss][limits]") {
    SimFixture fx;
    const std::uint32_t max = query(fx.ctx).rss_caps.max_rwq_indirection_tables;
    REQUIRE(max > 0);
    REQUIRE(max <= 1u << 16); // a size a test can create
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq);
    std::vector<ibv_wq*> one{wq};
    std::vector<ibv_rwq_ind_table*> tables;
    for (std::uint32_t i = 0; i < max; ++i)
        tables.push_back(make_table(fx.ctx, one, 0));
    ibv_rwq_ind_table_init_attr a{};
    a.ind_tbl = one.data();
    errno = 0;
    CHECK(ibv_create_rwq_ind_table(fx.ctx, &a) == nullptr);
    CHECK(errno == ENOMEM);
    // A second context of the same device shares the device's tables.
    {
        OtherContext other;
        ibv_wq* w2 = make_wq(other.pd, other.cq);
        std::vector<ibv_wq*> theirs{w2};
        a.ind_tbl = theirs.data();
        errno = 0;
        CHECK(ibv_create_rwq_ind_table(other.ctx, &a) == nullptr);
        CHECK(errno == ENOMEM);
        CHECK(ibv_destroy_wq(w2) == 0);
    }
    CHECK(ibv_destroy_rwq_ind_table(tables.back()) == 0);
    tables.back() = make_table(fx.ctx, one, 0);
    for (ibv_rwq_ind_table* t : tables)
        CHECK(ibv_destroy_rwq_ind_table(t) == 0);
    CHECK(ibv_destroy_wq(wq) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("max_wq_type_rq: receive queues (WQs and raw QPs' own) beyond it are ENOMEM",
          "[device][wq][limits]") {
    SimFixture fx;
    const std::uint32_t max = query(fx.ctx).max_wq_type_rq;
    REQUIRE(max > 0);
    REQUIRE(max <= 1u << 16);
    ibv_cq* cq = make_cq(fx.ctx);
    std::vector<ibv_wq*> wqs;
    for (std::uint32_t i = 0; i < max; ++i)
        wqs.push_back(make_wq(fx.pd, cq, 1));
    ibv_wq_init_attr a = wq_attr(fx.pd, cq, 1);
    errno = 0;
    CHECK(ibv_create_wq(fx.ctx, &a) == nullptr);
    CHECK(errno == ENOMEM);
    // A plain raw QP's receive queue is an RQ too (mlx5: create_raw_packet_qp_rq).
    ibv_qp_init_attr_ex qa{};
    qa.qp_type = IBV_QPT_RAW_PACKET;
    qa.comp_mask = IBV_QP_INIT_ATTR_PD;
    qa.pd = fx.pd;
    qa.send_cq = cq;
    qa.recv_cq = cq;
    qa.cap.max_send_wr = 1;
    qa.cap.max_recv_wr = 1;
    errno = 0;
    CHECK(ibv_create_qp_ex(fx.ctx, &qa) == nullptr);
    CHECK(errno == ENOMEM);
    CHECK(ibv_destroy_wq(wqs.back()) == 0);
    wqs.pop_back();
    ibv_qp* qp = ibv_create_qp_ex(fx.ctx, &qa);
    CHECK(qp != nullptr);
    if (qp) CHECK(ibv_destroy_qp(qp) == 0);
    for (ibv_wq* w : wqs)
        CHECK(ibv_destroy_wq(w) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}
