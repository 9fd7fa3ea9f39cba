// IBV_WQ_FLAGS_DELAY_DROP and CAP_SYS_RAWIO (device/README.md, "Device and
// port"): mlx5_ib_create_wq (kernel drivers/infiniband/hw/mlx5/qp.c) refuses
// delay drop with EPERM unless capable(CAP_SYS_RAWIO), before the driver's
// other checks. caps.delay_drop_needs_rawio=on asks the same; off (the
// default) lets an unprivileged program have delay drop.
#include <catch2/catch.hpp>

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include <cerrno>
#include <thread>

#include "tests/device/verbs_helpers.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

// Takes CAP_SYS_RAWIO out of this thread's effective set for its lifetime
// (it stays permitted, so it comes back). `had` is false when the process
// never had it: nothing to take, nothing to give back.
class WithoutRawio {
public:
    WithoutRawio() {
        REQUIRE(::syscall(SYS_capget, &hdr_, data_) == 0);
        saved_ = data_[0].effective;
        had = (saved_ & (1u << CAP_SYS_RAWIO)) != 0;
        data_[0].effective &= ~(1u << CAP_SYS_RAWIO);
        REQUIRE(::syscall(SYS_capset, &hdr_, data_) == 0);
    }
    ~WithoutRawio() {
        data_[0].effective = saved_;
        CHECK(::syscall(SYS_capset, &hdr_, data_) == 0);
    }
    WithoutRawio(const WithoutRawio&) = delete;
    WithoutRawio& operator=(const WithoutRawio&) = delete;
    bool had = false;

private:
    __user_cap_header_struct hdr_{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data_[2]{};
    std::uint32_t saved_ = 0;
};

int create_errno(SimFixture& fx, ibv_cq* cq, std::uint32_t flags) {
    ibv_wq_init_attr a = wq_init_attr(fx.pd, cq, 4, 1, flags);
    errno = 0;
    ibv_wq* wq = ibv_create_wq(fx.ctx, &a);
    if (wq == nullptr) return errno;
    CHECK(ibv_destroy_wq(wq) == 0);
    return 0;
}

} // namespace

TEST_CASE("delay drop without CAP_SYS_RAWIO: EPERM under caps.delay_drop_needs_rawio, first of "
          "the driver's checks; accepted by default",
          "[device][wq][rawio]") {
    SECTION("needs_rawio on") {
        SimFixture fx(Settings{{"caps.delay_drop_needs_rawio", "on"}});
        ibv_cq* cq = make_cq(fx.ctx);
        {
            WithoutRawio no_rawio;
            CHECK(create_errno(fx, cq, IBV_WQ_FLAGS_DELAY_DROP) == EPERM);
            CHECK(create_errno(fx, cq, IBV_WQ_FLAGS_CVLAN_STRIPPING) == 0);
        }
        const bool had = [] { return WithoutRawio().had; }(); // and back again
        CHECK(create_errno(fx, cq, IBV_WQ_FLAGS_DELAY_DROP) == (had ? 0 : EPERM));
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    SECTION("needs_rawio on and the device without delay drop: EPERM comes first") {
        SimFixture fx(Settings{{"caps.delay_drop_needs_rawio", "on"}, {"caps.delay_drop", "off"}});
        ibv_cq* cq = make_cq(fx.ctx);
        {
            WithoutRawio no_rawio;
            CHECK(create_errno(fx, cq, IBV_WQ_FLAGS_DELAY_DROP) == EPERM);
        }
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    SECTION("default: no capability needed") {
        SimFixture fx;
        ibv_cq* cq = make_cq(fx.ctx);
        {
            WithoutRawio no_rawio;
            CHECK(create_errno(fx, cq, IBV_WQ_FLAGS_DELAY_DROP) == 0);
        }
        CHECK(ibv_destroy_cq(cq) == 0);
    }
}

TEST_CASE("CAP_SYS_RAWIO is the calling thread's, as capable() asks", "[device][wq][rawio]") {
    SimFixture fx(Settings{{"caps.delay_drop_needs_rawio", "on"}});
    ibv_cq* cq = make_cq(fx.ctx);
    const bool had = [] { return WithoutRawio().had; }();
    // Another thread without the capability, while this one keeps it.
    int in_thread = -1;
    std::thread t([&] {
        WithoutRawio no_rawio;
        in_thread = create_errno(fx, cq, IBV_WQ_FLAGS_DELAY_DROP);
    });
    t.join();
    CHECK(in_thread == EPERM);
    CHECK(create_errno(fx, cq, IBV_WQ_FLAGS_DELAY_DROP) == (had ? 0 : EPERM));
    CHECK(ibv_destroy_cq(cq) == 0);
}
