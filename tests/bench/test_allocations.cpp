// Heap allocations per frame in steady state (issue 11, target 6), counted
// by replacing the global operator new (every form) in this executable of
// its own: after a warm-up, a 100k-frame burst through the receive path
// must allocate nothing, and so must 100k ibv_post_send calls on a raw QP.
// The receiver is bench_receiver.h's (no allocation of its own per round);
// the frames come from SyntheticSource (none either).
#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include "sim/config.hpp"
#include "sim/simulator.hpp"
#include "tests/bench/bench_receiver.h"
#include "tests/support/raw_qp.hpp"
#include "tests/support/synthetic_source.hpp"

namespace {

std::atomic<std::uint64_t> g_news{0};

void* counted_new(std::size_t n) {
    g_news.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n != 0 ? n : 1)) return p;
    throw std::bad_alloc();
}

void* counted_new(std::size_t n, std::align_val_t a) {
    g_news.fetch_add(1, std::memory_order_relaxed);
    const auto align = static_cast<std::size_t>(a);
    if (void* p = std::aligned_alloc(align, (n + align - 1) / align * align)) return p;
    throw std::bad_alloc();
}

} // namespace

void* operator new(std::size_t n) { return counted_new(n); }
void* operator new[](std::size_t n) { return counted_new(n); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_new(n, a); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_new(n, a); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
    try {
        return counted_new(n);
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

constexpr std::uint64_t kWarmup = 20'000;
constexpr std::uint64_t kBurst = 100'000;

// One device on the inline engine fed by `source`, a context on it.
struct Device {
    explicit Device(std::unique_ptr<rdmasim::net::FrameSource> source) {
        rdmasim::sim::Config config;
        REQUIRE(config.set("engine", "inline"));
        std::vector<std::unique_ptr<rdmasim::net::FrameSource>> sources;
        sources.push_back(std::move(source));
        auto s = rdmasim::sim::Simulator::create(config, std::move(sources));
        REQUIRE(s);
        sim = std::move(s.value());
        int n = 0;
        ibv_device** list = ibv_get_device_list(&n);
        REQUIRE((list != nullptr && n == 1));
        ctx = ibv_open_device(list[0]);
        ibv_free_device_list(list);
        REQUIRE(ctx != nullptr);
    }
    ~Device() { CHECK(ibv_close_device(ctx) == 0); }
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;

    std::unique_ptr<rdmasim::sim::Simulator> sim;
    ibv_context* ctx = nullptr;
};

// Polls until `rx` has `total` completions (the inline engine pulls frames as it polls).
void receive_until(bench_rx& rx, std::uint64_t total) {
    while (rx.completions < total)
        REQUIRE(bench_rx_poll(&rx, nullptr, nullptr) > 0);
}

} // namespace

TEST_CASE("the receive path allocates nothing per frame in steady state", "[alloc]") {
    Device dev(std::make_unique<rdmasim::test::SyntheticSource>(kWarmup + kBurst, 11));
    bench_rx rx;
    REQUIRE(bench_rx_open(&rx, dev.ctx, 4, 256, 2048) == 0);
    receive_until(rx, kWarmup);
    const std::uint64_t before = g_news.load();
    receive_until(rx, kWarmup + kBurst);
    const std::uint64_t allocations = g_news.load() - before;
    INFO(allocations << " operator new calls over " << kBurst << " frames");
    CHECK(allocations == 0);
    CHECK(rx.errors == 0);
    CHECK(dev.sim->port_counters(0).delivered.get() == kWarmup + kBurst);
    CHECK(bench_rx_close(&rx) == 0);
}

// Issue 11, target 6: a raw QP builds its frames in its own send buffer,
// allocated at creation (device/README.md), so a send allocates nothing.
TEST_CASE("ibv_post_send on a raw QP allocates nothing per frame", "[alloc]") {
    Device dev(nullptr);
    ibv_pd* pd = ibv_alloc_pd(dev.ctx);
    REQUIRE(pd != nullptr);
    ibv_cq* cq = ibv_create_cq(dev.ctx, 64, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    ibv_qp* qp = rdmasim::test::make_raw_qp(pd, cq, cq); // 16 WQEs each way
    rdmasim::test::raw_qp_to_rts(qp);

    // A 64-byte IPv4/UDP frame to a MAC no flow matches: it leaves the port, no sink takes it.
    std::uint8_t frame[64] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x09, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01,
                              0x08, 0x00, 0x45, 0x00, 0x00, 0x32};
    ibv_mr* mr = ibv_reg_mr(pd, frame, sizeof frame, 0);
    REQUIRE(mr != nullptr);
    std::uint64_t sent = 0, failed = 0;
    auto send = [&](std::uint64_t n) {
        for (std::uint64_t i = 0; i < n; ++i) {
            ibv_sge sge{reinterpret_cast<std::uint64_t>(frame), sizeof frame, mr->lkey};
            ibv_send_wr wr{};
            wr.wr_id = i;
            wr.opcode = IBV_WR_SEND;
            wr.send_flags = IBV_SEND_SIGNALED;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            ibv_send_wr* bad = nullptr;
            if (ibv_post_send(qp, &wr, &bad) != 0) {
                ++failed;
                continue;
            }
            ibv_wc wc{};
            while (ibv_poll_cq(cq, 1, &wc) == 0) {
            }
            if (wc.status != IBV_WC_SUCCESS) ++failed;
            ++sent;
        }
    };
    send(kWarmup);
    const std::uint64_t before = g_news.load();
    send(kBurst);
    const std::uint64_t allocations = g_news.load() - before;
    CHECK(failed == 0);
    CHECK(sent == kWarmup + kBurst);
    CHECK(ibv_dereg_mr(mr) == 0);
    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
    CHECK(ibv_dealloc_pd(pd) == 0);
    INFO(allocations << " operator new calls over " << kBurst << " ibv_post_send calls");
    CHECK(allocations == 0);
}
