// On-demand paging at the verbs (device/README.md, "On-demand paging"): the
// odp_caps a ConnectX reports, ODP and implicit ODP registration, and
// ibv_advise_mr's checks and errnos as mlx5 (and the kernel under it) gives
// them. Traffic through ODP MRs: test_odp_traffic.cpp.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <vector>

#include "tests/support/sim_fixture.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

// Plain unsigned: verbs.h's ibv_reg_mr macro ANDs the access with another
// enum's value, which clang rejects for an enumerator (C++20).
constexpr unsigned kLocal = IBV_ACCESS_LOCAL_WRITE;
constexpr unsigned kOnDemand = IBV_ACCESS_ON_DEMAND;
constexpr unsigned kOdp = kLocal | kOnDemand;

int advise(ibv_pd* pd, int advice, std::uint32_t flags, ibv_sge* sg, std::uint32_t n) {
    return ibv_advise_mr(pd, static_cast<ibv_advise_mr_advice>(advice), flags, sg, n);
}

} // namespace

TEST_CASE("ibv_query_device_ex: odp_caps as mlx5 reports a ConnectX's", "[odp]") {
    SimFixture fx;
    ibv_device_attr_ex a{};
    REQUIRE(ibv_query_device_ex(fx.ctx, nullptr, &a) == 0);
    CHECK(a.odp_caps.general_caps == (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT));
    const std::uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
                             IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
                             IBV_ODP_SUPPORT_SRQ_RECV;
    CHECK(a.odp_caps.per_transport_caps.rc_odp_caps == rc);
    CHECK(a.odp_caps.per_transport_caps.uc_odp_caps == 0);
    CHECK(a.odp_caps.per_transport_caps.ud_odp_caps == IBV_ODP_SUPPORT_SEND);
    CHECK(a.xrc_odp_caps == (rc & ~static_cast<std::uint32_t>(IBV_ODP_SUPPORT_RECV)));
}

TEST_CASE("ODP registration: explicit and implicit MRs; an ODP key is marked in the table",
          "[odp]") {
    SimFixture fx;
    std::vector<std::uint8_t> buf(4096);
    ibv_mr* odp = ibv_reg_mr(fx.pd, buf.data(), buf.size(), kOdp);
    REQUIRE(odp != nullptr);
    ibv_mr* plain = ibv_reg_mr(fx.pd, buf.data(), buf.size(), kLocal);
    REQUIRE(plain != nullptr);
    ibv_mr* implicit = ibv_reg_mr(fx.pd, nullptr, SIZE_MAX, kOdp | IBV_ACCESS_REMOTE_WRITE);
    REQUIRE(implicit != nullptr);
    CHECK(implicit->addr == nullptr);
    CHECK(implicit->length == SIZE_MAX);
    {
        std::lock_guard lock(fx.device().port.mutex());
        auto& mrs = fx.device().mrs;
        CHECK(mrs.live(odp->lkey)->odp);
        CHECK_FALSE(mrs.live(plain->lkey)->odp); // the fast path: memcpy, no syscall
        CHECK(mrs.live(implicit->lkey)->odp);
        // The whole address space, through the ODP copies only.
        const auto any = reinterpret_cast<std::uint64_t>(buf.data());
        CHECK(mrs.translate_ref(implicit->lkey, fx.pd, any, 16, true).host == buf.data());
        CHECK(mrs.translate_ref(implicit->lkey, fx.pd, any, 16, true).odp);
        CHECK(mrs.translate(implicit->lkey, fx.pd, any, 16, true) == nullptr);
        CHECK(mrs.translate(plain->lkey, fx.pd, any, 16, true) == buf.data());
    }
    CHECK(ibv_dereg_mr(implicit) == 0);
    CHECK(ibv_dereg_mr(plain) == 0);
    CHECK(ibv_dereg_mr(odp) == 0);
}

TEST_CASE("Implicit ODP: iova 0 only, ON_DEMAND needed, and it stays ODP", "[odp]") {
    SimFixture fx;
    errno = 0;
    CHECK(ibv_reg_mr_iova(fx.pd, nullptr, SIZE_MAX, 0x1000, kOdp) == nullptr);
    CHECK(errno == EINVAL); // mlx5's create_user_odp_mr: iova != 0
    errno = 0;
    CHECK(ibv_reg_mr(fx.pd, nullptr, SIZE_MAX, kLocal) == nullptr);
    CHECK(errno == EINVAL); // not ODP: a NULL address and no max_mr_size exemption
    errno = 0;
    CHECK(ibv_reg_mr(fx.pd, nullptr, 4096, kOdp) == nullptr);
    CHECK(errno == EINVAL); // explicit ODP needs an address
    ibv_mr* mr = ibv_reg_mr(fx.pd, nullptr, SIZE_MAX, kOdp);
    REQUIRE(mr != nullptr);
    errno = 0;
    CHECK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                       IBV_ACCESS_LOCAL_WRITE) == IBV_REREG_MR_ERR_INPUT);
    CHECK(errno == EINVAL);
    CHECK(ibv_dereg_mr(mr) == 0);
}

TEST_CASE("ibv_advise_mr: flags, SGE list and advice are checked first", "[odp]") {
    SimFixture fx;
    std::vector<std::uint8_t> buf(8192);
    ibv_mr* mr = ibv_reg_mr(fx.pd, buf.data(), buf.size(), kOdp);
    REQUIRE(mr != nullptr);
    ibv_sge sge{reinterpret_cast<std::uint64_t>(buf.data()), 4096, mr->lkey};
    const int fetch = IBV_ADVISE_MR_ADVICE_PREFETCH;
    CHECK(advise(fx.pd, fetch, 2, &sge, 1) == EINVAL); // only IBV_ADVISE_MR_FLAG_FLUSH
    CHECK(advise(fx.pd, fetch, 0, &sge, 0) == EINVAL); // the SGE list is mandatory
    CHECK(advise(fx.pd, fetch, 0, nullptr, 1) == EINVAL);
    CHECK(advise(fx.pd, 7, 0, &sge, 1) == EOPNOTSUPP); // mlx5_ib_advise_mr: unknown advice
    for (const int a : {fetch, int{IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE},
                        int{IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT}}) {
        CAPTURE(a);
        CHECK(advise(fx.pd, a, 0, &sge, 1) == 0);
        CHECK(advise(fx.pd, a, IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1) == 0);
    }
    CHECK(ibv_dereg_mr(mr) == 0);
}

TEST_CASE("ibv_advise_mr: keys, ranges and holes, synchronous (ENOENT, EFAULT) and not", "[odp]") {
    SimFixture fx;
    const long page = sysconf(_SC_PAGESIZE);
    auto* area = static_cast<std::uint8_t*>(
        mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(area != MAP_FAILED);
    ibv_mr* odp = ibv_reg_mr(fx.pd, area, 2 * page, kOdp);
    ibv_mr* read_only = ibv_reg_mr(fx.pd, area, 2 * page, kOnDemand);
    ibv_mr* plain = ibv_reg_mr(fx.pd, area, 2 * page, kLocal);
    REQUIRE((odp && read_only && plain));
    const auto at = reinterpret_cast<std::uint64_t>(area);
    const std::uint32_t len = static_cast<std::uint32_t>(page);
    const int sync = IBV_ADVISE_MR_FLAG_FLUSH;
    const int write = IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE;
    ibv_sge s{at, len, plain->lkey};
    CHECK(advise(fx.pd, write, sync, &s, 1) == ENOENT); // not an ODP MR
    CHECK(advise(fx.pd, write, 0, &s, 1) == EINVAL);    // the same, queued
    s.lkey = read_only->lkey;
    CHECK(advise(fx.pd, write, sync, &s, 1) == ENOENT); // PREFETCH_WRITE, MR not writable
    CHECK(advise(fx.pd, IBV_ADVISE_MR_ADVICE_PREFETCH, sync, &s, 1) == 0);
    s = {at + page, 2 * len, odp->lkey};
    CHECK(advise(fx.pd, write, sync, &s, 1) == EFAULT); // past the MR's end
    CHECK(advise(fx.pd, write, 0, &s, 1) == 0);         // async: ranges not reported
    ibv_pd* other = ibv_alloc_pd(fx.ctx);
    s = {at, len, odp->lkey};
    CHECK(advise(other, write, sync, &s, 1) == ENOENT); // another PD's key
    REQUIRE(munmap(area + page, page) == 0);            // a hole under the MR
    s = {at, 2 * len, odp->lkey};
    CHECK(advise(fx.pd, write, sync, &s, 1) == EFAULT);
    CHECK(advise(fx.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, sync, &s, 1) == 0);
    s.length = len;
    CHECK(advise(fx.pd, write, sync, &s, 1) == 0); // the mapped half
    CHECK(ibv_dealloc_pd(other) == 0);
    CHECK(ibv_dereg_mr(plain) == 0);
    CHECK(ibv_dereg_mr(read_only) == 0);
    CHECK(ibv_dereg_mr(odp) == 0);
    CHECK(munmap(area, page) == 0);
}
