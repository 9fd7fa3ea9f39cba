// Imported device memory (device/README.md, "Shared contexts"): ibv_import_dm
// on a context of the same file names the same DM (bytes, MRs, users); the
// kernel's lookup errors; ibv_free_dm through any name frees it for all, the
// pages staying while a name does; ibv_unimport_dm frees the name alone.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <vector>

#include "device/dm.hpp"
#include "tests/device/ib_qp_helpers.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

constexpr std::size_t kLen = 4096;
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
constexpr unsigned kDmAccess = IBV_ACCESS_ZERO_BASED | kAccess;

ibv_dm* alloc(ibv_context* ctx, std::size_t length) {
    ibv_alloc_dm_attr a{};
    a.length = length;
    errno = 0;
    return ibv_alloc_dm(ctx, &a);
}

// Whether the whole BAR is free: a DM of max_dm_size fits (and is freed again).
bool bar_free(ibv_context* ctx) {
    ibv_dm* whole = alloc(ctx, device::kMaxDmSize);
    if (whole == nullptr) return false;
    REQUIRE(ibv_free_dm(whole) == 0);
    return true;
}

// ibv_import_device of a dup of `ctx`'s cmd_fd: a context of the same file.
ibv_context* import_of(ibv_context* ctx) {
    const int fd = ::dup(ctx->cmd_fd);
    REQUIRE(fd >= 0);
    ibv_context* imported = ibv_import_device(fd);
    REQUIRE(imported != nullptr);
    return imported;
}

// The errno of an ibv_import_dm that must fail.
int import_errno(ibv_context* ctx, std::uint32_t handle) {
    errno = 0;
    ibv_dm* dm = ibv_import_dm(ctx, handle);
    if (dm != nullptr) ibv_unimport_dm(dm);
    return dm == nullptr ? errno : 0;
}

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
    std::vector<std::uint8_t> v(n);
    for (std::size_t i = 0; i < n; ++i)
        v[i] = static_cast<std::uint8_t>(seed + i * 7);
    return v;
}

std::uint32_t live_objects(ibv_context* ctx) {
    return device::from_verbs(ctx)->live_objects.load();
}

} // namespace

TEST_CASE("An imported DM names the same device memory", "[import][dm]") {
    SimFixture fx;
    ibv_dm* dm = alloc(fx.ctx, 100);
    REQUIRE(dm != nullptr);
    CHECK(dm->comp_mask == IBV_DM_MASK_HANDLE);
    ibv_context* ctx2 = import_of(fx.ctx);
    ibv_dm* dm2 = ibv_import_dm(ctx2, dm->handle);
    REQUIRE(dm2 != nullptr);
    CHECK(dm2 != dm);
    CHECK(dm2->context == ctx2);
    CHECK(dm2->handle == dm->handle);
    CHECK(dm2->comp_mask == IBV_DM_MASK_HANDLE);
    const auto data = pattern(100, 3);
    std::vector<std::uint8_t> back(100);
    REQUIRE(ibv_memcpy_to_dm(dm, 0, data.data(), data.size()) == 0);
    REQUIRE(ibv_memcpy_from_dm(back.data(), dm2, 0, back.size()) == 0);
    CHECK(back == data);
    const auto more = pattern(8, 200);
    REQUIRE(ibv_memcpy_to_dm(dm2, 92, more.data(), more.size()) == 0);
    REQUIRE(ibv_memcpy_from_dm(back.data(), dm, 92, 8) == 0);
    CHECK(std::equal(more.begin(), more.end(), back.begin()));
    // The import's bounds are the length requested at allocation.
    CHECK(ibv_memcpy_to_dm(dm2, 96, more.data(), more.size()) == EFAULT);
    ibv_unimport_dm(dm2);
    // The DM lives on, importable again; unimport of what was not imported
    // changes nothing.
    dm2 = ibv_import_dm(ctx2, dm->handle);
    REQUIRE(dm2 != nullptr);
    ibv_unimport_dm(dm2);
    ibv_unimport_dm(dm);
    REQUIRE(ibv_memcpy_from_dm(back.data(), dm, 0, 8) == 0);
    CHECK(std::equal(back.begin(), back.begin() + 8, data.begin()));
    CHECK(ibv_free_dm(dm) == 0);
    CHECK(ibv_close_device(ctx2) == 0);
}

TEST_CASE("ibv_import_dm: the kernel's lookup errors", "[import][dm]") {
    SimFixture fx;
    ibv_dm* dm = alloc(fx.ctx, kLen);
    REQUIRE(dm != nullptr);
    std::vector<std::uint8_t> buf(kLen);
    ibv_mr* mr = ibv_reg_mr(fx.pd, buf.data(), kLen, kAccess);
    REQUIRE(mr != nullptr);
    ibv_context* ctx2 = import_of(fx.ctx);
    CHECK(import_errno(ctx2, fx.pd->handle) == EINVAL); // another type's handle
    CHECK(import_errno(ctx2, mr->handle) == EINVAL);
    CHECK(import_errno(ctx2, 0xfffffff0) == ENOENT);
    CHECK(import_errno(nullptr, dm->handle) == EINVAL);
    // A DM's handle to the other imports: EINVAL too.
    errno = 0;
    CHECK(ibv_import_pd(ctx2, dm->handle) == nullptr);
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(ibv_import_mr(fx.pd, dm->handle) == nullptr);
    CHECK(errno == EINVAL);
    // A context of another file has no such handle.
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    REQUIRE(n >= 1);
    ibv_context* other = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    REQUIRE(other != nullptr);
    CHECK(import_errno(other, dm->handle) == ENOENT);
    // Nor may its PD register the DM (the handle is looked up in its file).
    ibv_pd* other_pd = ibv_alloc_pd(other);
    REQUIRE(other_pd != nullptr);
    errno = 0;
    CHECK(ibv_reg_dm_mr(other_pd, dm, 0, kLen, kDmAccess) == nullptr);
    CHECK(errno == EINVAL);
    CHECK(ibv_dealloc_pd(other_pd) == 0);
    CHECK(ibv_close_device(other) == 0);
    CHECK(ibv_close_device(ctx2) == 0);
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(ibv_free_dm(dm) == 0);
}

TEST_CASE("An MR on an imported DM reaches the DM's bytes and keeps it busy", "[import][dm]") {
    SimFixture fx;
    ibv_dm* dm = alloc(fx.ctx, kLen);
    REQUIRE(dm != nullptr);
    ibv_context* ctx2 = import_of(fx.ctx);
    ibv_dm* dm2 = ibv_import_dm(ctx2, dm->handle);
    REQUIRE(dm2 != nullptr);
    // The PD's context and the import's differ, the file is one: accepted.
    ibv_mr* dm_mr = ibv_reg_dm_mr(fx.pd, dm2, 0, kLen, kDmAccess);
    REQUIRE(dm_mr != nullptr);
    CHECK(ibv_free_dm(dm) == EBUSY); // the MR is a user of the one DM
    CHECK(ibv_free_dm(dm2) == EBUSY);
    auto data = pattern(1024, 11);
    ibv_mr* host = ibv_reg_mr(fx.pd, data.data(), data.size(), kAccess);
    REQUIRE(host != nullptr);
    {
        IbQp a(fx.pd, IBV_QPT_RC, 8), b(fx.pd, IBV_QPT_RC, 8);
        connect_to_own_gid(a, b, fx.ctx, kAccess);
        connect_to_own_gid(b, a, fx.ctx, kAccess);
        ibv_sge s{reinterpret_cast<std::uint64_t>(data.data()), 1024, host->lkey};
        ibv_send_wr wr{};
        wr.opcode = IBV_WR_RDMA_WRITE;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.wr.rdma.remote_addr = 512; // zero-based: the DM's byte 512
        wr.wr.rdma.rkey = dm_mr->rkey;
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(a.qp, &wr, &bad) == 0);
        const auto wcs = wait_for(a.cq, 1);
        REQUIRE(wcs.size() == 1);
        CHECK(wcs[0].status == IBV_WC_SUCCESS);
    }
    std::vector<std::uint8_t> back(1024);
    REQUIRE(ibv_memcpy_from_dm(back.data(), dm, 512, back.size()) == 0); // the original's name
    CHECK(back == data);
    CHECK(ibv_dereg_mr(dm_mr) == 0);
    CHECK(ibv_dereg_mr(host) == 0);
    ibv_unimport_dm(dm2);
    CHECK(ibv_free_dm(dm) == 0);
    CHECK(ibv_close_device(ctx2) == 0);
}

TEST_CASE("Freeing a DM through one name frees it for all", "[import][dm]") {
    SimFixture fx;
    ibv_dm* dm = alloc(fx.ctx, kLen);
    REQUIRE(dm != nullptr);
    const auto data = pattern(kLen, 5);
    REQUIRE(ibv_memcpy_to_dm(dm, 0, data.data(), data.size()) == 0);
    ibv_context* ctx2 = import_of(fx.ctx);
    ibv_dm* dm2 = ibv_import_dm(ctx2, dm->handle);
    REQUIRE(dm2 != nullptr);
    const std::uint32_t handle = dm->handle;
    SECTION("the original, while imported") {
        CHECK(ibv_free_dm(dm) == 0);
        CHECK(import_errno(ctx2, handle) == ENOENT);
        // The import still maps the memory (as mlx5's mmap), its pages held.
        std::vector<std::uint8_t> back(kLen);
        REQUIRE(ibv_memcpy_from_dm(back.data(), dm2, 0, back.size()) == 0);
        CHECK(back == data);
        CHECK_FALSE(bar_free(fx.ctx));
        errno = 0;
        CHECK(ibv_reg_dm_mr(fx.pd, dm2, 0, kLen, kDmAccess) == nullptr);
        CHECK(errno == ENOENT);            // the kernel's lookup of the DM handle
        CHECK(ibv_free_dm(dm2) == ENOENT); // the import stays, for unimport
        ibv_unimport_dm(dm2);
        CHECK(bar_free(fx.ctx)); // the last name gone: the pages are free
    }
    SECTION("the import") {
        CHECK(ibv_free_dm(dm2) == 0);
        CHECK(import_errno(ctx2, handle) == ENOENT);
        errno = 0;
        CHECK(ibv_reg_dm_mr(fx.pd, dm, 0, kLen, kDmAccess) == nullptr);
        CHECK(errno == ENOENT);
        CHECK_FALSE(bar_free(fx.ctx));
        CHECK(ibv_free_dm(dm) == ENOENT); // the original's name goes, with the pages
        CHECK(bar_free(fx.ctx));
    }
    CHECK(ibv_close_device(ctx2) == 0);
}

TEST_CASE("An imported DM counts as an object of its context", "[import][dm]") {
    SimFixture fx;
    ibv_dm* dm = alloc(fx.ctx, kLen);
    REQUIRE(dm != nullptr);
    ibv_context* ctx2 = import_of(fx.ctx);
    CHECK(live_objects(ctx2) == 0);
    ibv_dm* dm2 = ibv_import_dm(ctx2, dm->handle);
    REQUIRE(dm2 != nullptr);
    CHECK(live_objects(ctx2) == 1);
    ibv_unimport_dm(dm2);
    CHECK(live_objects(ctx2) == 0);
    dm2 = ibv_import_dm(ctx2, dm->handle);
    REQUIRE(dm2 != nullptr);
    // Closed while the import lives: the context stays for it, usable.
    CHECK(ibv_close_device(ctx2) == 0);
    const auto data = pattern(64, 1);
    CHECK(ibv_memcpy_to_dm(dm2, 0, data.data(), data.size()) == 0);
    ibv_unimport_dm(dm2); // the context goes with it
    CHECK(ibv_free_dm(dm) == 0);
}
