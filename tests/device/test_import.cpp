// Shared contexts (device/README.md, "Shared contexts"): each context's
// cmd_fd is a descriptor of its own; ibv_import_device of a dup of it makes a
// second context on the same file, whose ibv_import_pd / ibv_import_mr name
// the same PD and MR (handle, keys, users) and carry traffic; unimport frees
// the user-space object alone; destroying through either name destroys the
// one object; descriptors of anything else are refused as libibverbs does.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "tests/device/ib_qp_helpers.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim::test;

namespace {

constexpr std::size_t kLen = 4096;
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

struct stat stat_of(int fd) {
    struct stat st {};
    REQUIRE(::fstat(fd, &st) == 0);
    return st;
}

// ibv_import_device of a dup of `ctx`'s cmd_fd: the new context, never NULL.
ibv_context* import_of(ibv_context* ctx) {
    const int fd = ::dup(ctx->cmd_fd);
    REQUIRE(fd >= 0);
    ibv_context* imported = ibv_import_device(fd);
    REQUIRE(imported != nullptr);
    CHECK(imported->cmd_fd == fd);
    return imported;
}

// What ibv_import_device does with `fd`: the errno of its NULL (0: a context).
int import_errno(int fd) {
    errno = 0;
    ibv_context* c = ibv_import_device(fd);
    if (c != nullptr) {
        ibv_close_device(c);
        return 0;
    }
    return errno;
}

// `qp`'s RDMA WRITE of `len` bytes from `from` (lkey) to `to` (rkey): its completion status.
ibv_wc_status write(IbQp& qp, const void* from, std::uint32_t lkey, void* to, std::uint32_t rkey,
                    std::uint32_t len) {
    ibv_sge s{reinterpret_cast<std::uint64_t>(from), len, lkey};
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = reinterpret_cast<std::uint64_t>(to);
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    REQUIRE(ibv_post_send(qp.qp, &wr, &bad) == 0);
    const auto wcs = wait_for(qp.cq, 1);
    REQUIRE(wcs.size() == 1);
    return wcs[0].status;
}

} // namespace

TEST_CASE("Each context's cmd_fd is an open descriptor of its own", "[import]") {
    SimFixture fx;
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    REQUIRE(n >= 1);
    ibv_context* second = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    REQUIRE(second != nullptr);
    REQUIRE(fx.ctx->cmd_fd >= 0);
    REQUIRE(second->cmd_fd >= 0);
    CHECK(::fcntl(fx.ctx->cmd_fd, F_GETFD) & FD_CLOEXEC);
    const struct stat a = stat_of(fx.ctx->cmd_fd);
    const struct stat b = stat_of(second->cmd_fd);
    CHECK((a.st_dev != b.st_dev || a.st_ino != b.st_ino));
    CHECK(fx.ctx->cmd_fd != fx.ctx->async_fd);
    // A second import of each finds its own file: a PD handle of one is unknown to the other.
    ibv_context* imported = import_of(second);
    errno = 0;
    CHECK(ibv_import_pd(imported, fx.pd->handle) == nullptr);
    CHECK(errno == ENOENT);
    CHECK(ibv_close_device(imported) == 0);
    CHECK(ibv_close_device(second) == 0);
}

TEST_CASE("An imported context names the same PD and MR", "[import]") {
    SimFixture fx;
    std::vector<std::uint8_t> buf(kLen);
    ibv_mr* mr = ibv_reg_mr(fx.pd, buf.data(), kLen, kAccess);
    REQUIRE(mr != nullptr);
    ibv_context* ctx2 = import_of(fx.ctx);
    CHECK(ctx2->device == fx.ctx->device);
    ibv_pd* pd2 = ibv_import_pd(ctx2, fx.pd->handle);
    REQUIRE(pd2 != nullptr);
    CHECK(pd2 != fx.pd);
    CHECK(pd2->context == ctx2);
    CHECK(pd2->handle == fx.pd->handle);
    ibv_mr* mr2 = ibv_import_mr(pd2, mr->handle);
    REQUIRE(mr2 != nullptr);
    CHECK(mr2->context == ctx2);
    CHECK(mr2->pd == pd2);
    CHECK(mr2->handle == mr->handle);
    CHECK(mr2->lkey == mr->lkey);
    CHECK(mr2->rkey == mr->rkey);
    CHECK(mr2->length == kLen);
    CHECK(mr2->addr == nullptr); // as libibverbs leaves it
    SECTION("the kernel's lookup: a handle of the other type is EINVAL, none ENOENT") {
        errno = 0;
        CHECK(ibv_import_pd(ctx2, mr->handle) == nullptr);
        CHECK(errno == EINVAL);
        errno = 0;
        CHECK(ibv_import_mr(pd2, fx.pd->handle) == nullptr);
        CHECK(errno == EINVAL);
        errno = 0;
        CHECK(ibv_import_mr(pd2, 0xfffffff0) == nullptr);
        CHECK(errno == ENOENT);
    }
    ibv_unimport_mr(mr2);
    ibv_unimport_pd(pd2);
    CHECK(ibv_close_device(ctx2) == 0);
    CHECK(ibv_dereg_mr(mr) == 0);
}

TEST_CASE("An MR registered through an imported PD is a user of the PD", "[import]") {
    SimFixture fx;
    ibv_context* ctx2 = import_of(fx.ctx);
    ibv_pd* pd2 = ibv_import_pd(ctx2, fx.pd->handle);
    REQUIRE(pd2 != nullptr);
    std::vector<std::uint8_t> buf(kLen);
    ibv_mr* mr = ibv_reg_mr(pd2, buf.data(), kLen, kAccess);
    REQUIRE(mr != nullptr);
    CHECK(ibv_dealloc_pd(fx.pd) == EBUSY);
    ibv_mr* back = ibv_import_mr(fx.pd, mr->handle); // the file's: the original context sees it
    REQUIRE(back != nullptr);
    CHECK(back->rkey == mr->rkey);
    ibv_unimport_mr(back);
    ibv_unimport_pd(pd2); // the MR keeps counting on the PD it names
    CHECK(ibv_dealloc_pd(fx.pd) == EBUSY);
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(ibv_dealloc_pd(fx.pd) == 0);
    fx.pd = nullptr;
    CHECK(ibv_close_device(ctx2) == 0);
}

TEST_CASE("An MR imported into the second context carries traffic with its keys", "[import]") {
    SimFixture fx;
    std::vector<std::uint8_t> mine(kLen, 0), theirs(kLen, 0);
    ibv_mr* mine_mr = ibv_reg_mr(fx.pd, mine.data(), kLen, kAccess);
    ibv_mr* theirs_mr = ibv_reg_mr(fx.pd, theirs.data(), kLen, kAccess); // the one imported
    REQUIRE(mine_mr != nullptr);
    REQUIRE(theirs_mr != nullptr);
    ibv_context* ctx2 = import_of(fx.ctx);
    ibv_pd* pd2 = ibv_import_pd(ctx2, fx.pd->handle);
    REQUIRE(pd2 != nullptr);
    ibv_mr* imported = ibv_import_mr(pd2, theirs_mr->handle);
    REQUIRE(imported != nullptr);
    {
        IbQp a(fx.pd, IBV_QPT_RC, 8);
        IbQp b(pd2, IBV_QPT_RC, 8); // on the imported context and PD
        connect_to_own_gid(a, b, fx.ctx, kAccess);
        connect_to_own_gid(b, a, ctx2, kAccess);
        for (std::size_t i = 0; i < kLen; ++i)
            mine[i] = static_cast<std::uint8_t>(i * 3 + 1);
        // Into the imported MR with its rkey; out of it with its lkey, from
        // the imported context's QP (whose PD must match the MR's).
        REQUIRE(write(a, mine.data(), mine_mr->lkey, theirs.data(), imported->rkey, 1024) ==
                IBV_WC_SUCCESS);
        CHECK(std::equal(mine.begin(), mine.begin() + 1024, theirs.begin()));
        std::fill(mine.begin(), mine.end(), 0);
        REQUIRE(write(b, theirs.data(), imported->lkey, mine.data() + 2048, mine_mr->rkey, 1024) ==
                IBV_WC_SUCCESS);
        CHECK(std::equal(theirs.begin(), theirs.begin() + 1024, mine.begin() + 2048));
    }
    ibv_unimport_mr(imported);
    ibv_unimport_pd(pd2);
    CHECK(ibv_close_device(ctx2) == 0);
    CHECK(ibv_dereg_mr(theirs_mr) == 0);
    CHECK(ibv_dereg_mr(mine_mr) == 0);
}

TEST_CASE("Unimport frees the user-space object alone", "[import]") {
    SimFixture fx;
    std::vector<std::uint8_t> buf(kLen);
    ibv_mr* mr = ibv_reg_mr(fx.pd, buf.data(), kLen, kAccess);
    REQUIRE(mr != nullptr);
    ibv_context* ctx2 = import_of(fx.ctx);
    ibv_pd* pd2 = ibv_import_pd(ctx2, fx.pd->handle);
    REQUIRE(pd2 != nullptr);
    ibv_mr* mr2 = ibv_import_mr(pd2, mr->handle);
    REQUIRE(mr2 != nullptr);
    ibv_unimport_mr(mr2);
    ibv_unimport_pd(pd2);
    // The objects live on: importable again, with the same keys.
    pd2 = ibv_import_pd(ctx2, fx.pd->handle);
    REQUIRE(pd2 != nullptr);
    mr2 = ibv_import_mr(pd2, mr->handle);
    REQUIRE(mr2 != nullptr);
    CHECK(mr2->lkey == mr->lkey);
    ibv_unimport_mr(mr2);
    ibv_unimport_pd(pd2);
    // Unimport of what was not imported changes nothing.
    ibv_unimport_mr(mr);
    ibv_unimport_pd(fx.pd);
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(ibv_dealloc_pd(fx.pd) == 0);
    fx.pd = nullptr;
    CHECK(ibv_close_device(ctx2) == 0);
}

TEST_CASE("Destroying through one name destroys the object for all", "[import]") {
    SimFixture fx;
    std::vector<std::uint8_t> buf(kLen);
    ibv_mr* mr = ibv_reg_mr(fx.pd, buf.data(), kLen, kAccess);
    REQUIRE(mr != nullptr);
    ibv_context* ctx2 = import_of(fx.ctx);
    ibv_pd* pd2 = ibv_import_pd(ctx2, fx.pd->handle);
    REQUIRE(pd2 != nullptr);
    ibv_mr* mr2 = ibv_import_mr(pd2, mr->handle);
    REQUIRE(mr2 != nullptr);
    SECTION("the originals, while imported") {
        CHECK(ibv_dereg_mr(mr) == 0);
        CHECK(ibv_dereg_mr(mr2) == ENOENT); // the import stays, for unimport
        CHECK(ibv_dealloc_pd(fx.pd) == 0);  // no users left: as the kernel, imports or not
        fx.pd = nullptr;
        errno = 0;
        CHECK(ibv_import_pd(ctx2, pd2->handle) == nullptr);
        CHECK(errno == ENOENT);
        errno = 0;
        CHECK(ibv_reg_mr(pd2, buf.data(), kLen, kAccess) == nullptr);
        CHECK(errno == EINVAL);
        CHECK(ibv_dealloc_pd(pd2) == ENOENT);
        ibv_unimport_mr(mr2);
        ibv_unimport_pd(pd2);
    }
    SECTION("the imports") {
        CHECK(ibv_dereg_mr(mr2) == 0);
        CHECK(ibv_dealloc_pd(pd2) == 0);
        errno = 0;
        CHECK(ibv_import_mr(fx.pd, mr->handle) == nullptr);
        CHECK(errno == ENOENT);
        errno = 0;
        CHECK(ibv_alloc_mw(fx.pd, IBV_MW_TYPE_1) == nullptr);
        CHECK(errno == EINVAL);
        CHECK(ibv_dereg_mr(mr) == ENOENT);
        CHECK(ibv_dealloc_pd(fx.pd) == ENOENT);
        fx.pd = nullptr;
    }
    CHECK(ibv_close_device(ctx2) == 0);
}

TEST_CASE("ibv_import_device refuses descriptors of no context of this process", "[import]") {
    SimFixture fx;
    CHECK(import_errno(-1) == EINVAL);
    CHECK(import_errno(1 << 20) == EINVAL); // never opened
    const int closed = ::dup(fx.ctx->cmd_fd);
    REQUIRE(closed >= 0);
    ::close(closed);
    CHECK(import_errno(closed) == EINVAL);
    int p[2];
    REQUIRE(::pipe(p) == 0);
    CHECK(import_errno(p[0]) == EINVAL);
    ::close(p[0]);
    ::close(p[1]);
    // A memfd of the same name, as another process's cmd_fd would be here.
    const int other = ::memfd_create("rdmasim-context", MFD_CLOEXEC);
    REQUIRE(other >= 0);
    CHECK(import_errno(other) == EINVAL);
    ::close(other);
    // A character device that is no RDMA device: ENODEV, as libibverbs.
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(null >= 0);
    CHECK(import_errno(null) == ENODEV);
    ::close(null);
    CHECK(import_errno(fx.ctx->async_fd) == EINVAL);
}

TEST_CASE("Each context owns its cmd_fd: closing one leaves the other", "[import]") {
    SimFixture fx;
    ibv_context* ctx2 = import_of(fx.ctx);
    const int fd2 = ctx2->cmd_fd;
    CHECK(ibv_close_device(ctx2) == 0);
    CHECK(::fcntl(fd2, F_GETFD) == -1); // ibv_close_device closed the imported one's
    CHECK(::fcntl(fx.ctx->cmd_fd, F_GETFD) >= 0);
    ibv_pd* pd = ibv_alloc_pd(fx.ctx);
    REQUIRE(pd != nullptr);
    CHECK(ibv_dealloc_pd(pd) == 0);
    // Imported again, after the first import went.
    ctx2 = import_of(fx.ctx);
    ibv_pd* pd2 = ibv_import_pd(ctx2, fx.pd->handle);
    CHECK(pd2 != nullptr);
    ibv_unimport_pd(pd2);
    // The original closed first: the import lives on, and the file with it.
    const int kept = ::dup(fx.ctx->cmd_fd);
    REQUIRE(kept >= 0);
    CHECK(ibv_dealloc_pd(fx.pd) == 0);
    fx.pd = nullptr;
    CHECK(ibv_close_device(fx.ctx) == 0);
    fx.ctx = nullptr;
    ibv_pd* pd3 = ibv_alloc_pd(ctx2);
    REQUIRE(pd3 != nullptr);
    ibv_context* ctx3 = ibv_import_device(kept); // the file, through its last context
    REQUIRE(ctx3 != nullptr);
    ibv_pd* pd4 = ibv_import_pd(ctx3, pd3->handle);
    CHECK(pd4 != nullptr);
    ibv_unimport_pd(pd4);
    CHECK(ibv_close_device(ctx3) == 0);
    CHECK(ibv_dealloc_pd(pd3) == 0);
    CHECK(ibv_close_device(ctx2) == 0);
}
