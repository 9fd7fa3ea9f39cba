// Verbs that revoke a peer's access (datapath/README.md, "What a peer
// reaches"): once one returns, no frame touches the memory it revoked. A
// frame is processed under the port lock, so each of these verbs must take
// it; and the transport checks the key again on every packet of a message.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/roce_frame.hpp"
#include "support/sim_fixture.hpp"
#include "tests/device/ib_qp_helpers.hpp"

using namespace rdmasim;

TEST_CASE("revoke: ibv_dereg_mr waits for the frame in progress (the port lock)",
          "[device][trust]") {
    test::SimFixture fx;
    std::vector<std::uint8_t> buf(4096);
    ibv_mr* mr = ibv_reg_mr(fx.pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    REQUIRE(mr != nullptr);
    std::atomic<bool> returned{false};
    std::thread t;
    {
        // The engine is inside a frame that resolved the key.
        std::lock_guard lock(fx.device().port.mutex());
        t = std::thread([&] {
            CHECK(ibv_dereg_mr(mr) == 0);
            returned = true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        CHECK_FALSE(returned.load());
    }
    t.join();
    CHECK(returned.load());
}

namespace {

// An RC QP of the fixture's device in RTS, its peer a stranger on the wire.
struct Responder {
    explicit Responder(test::SimFixture& fx) : fx(fx), qp(fx.pd, IBV_QPT_RC) {
        const auto& own = fx.device().port.neighbours().addresses();
        ibv_gid gid{};
        REQUIRE(ibv_query_gid(fx.ctx, 1, 0, &gid) == 0);
        path.dst_mac = own.mac;
        path.src_mac = {0x02, 0x99, 0, 0, 0, 1};
        std::memcpy(path.dgid.data(), gid.raw, 16);
        const std::uint8_t peer_ip[4] = {own.ipv4[0], own.ipv4[1], own.ipv4[2],
                                         static_cast<std::uint8_t>(own.ipv4[3] ^ 1)};
        path.sgid = net::ipv4_mapped_gid(peer_ip);
        // Its replies loop back to its own address, where no QP 0x1234 is.
        REQUIRE(qp.modify(IBV_QPS_INIT, test::init_mask(IBV_QPT_RC)) == 0);
        ibv_qp_attr a = test::good_attr(IBV_QPS_RTR);
        a.ah_attr.grh.dgid = gid;
        REQUIRE(ibv_modify_qp(qp.qp, &a, test::rtr_mask(IBV_QPT_RC)) == 0);
        REQUIRE(qp.modify(IBV_QPS_RTS, test::rts_mask(IBV_QPT_RC)) == 0);
    }
    void write(net::RoceOpcode op, std::uint32_t psn, std::uint64_t va, std::uint32_t rkey,
               std::uint32_t len, std::uint8_t fill) {
        net::RoceHeaders h;
        h.bth.opcode = static_cast<std::uint8_t>(op);
        h.bth.dest_qp = qp.qp->qp_num;
        h.bth.psn = psn;
        h.reth = {va, rkey, len};
        const std::vector<std::uint8_t> payload(1024, fill);
        std::vector<std::uint8_t> frame(2048);
        const auto r = net::build_roce_frame(path, h, payload, frame);
        REQUIRE(r.error == net::RoceBuildError::none);
        frame.resize(r.len);
        fx.offer(frame);
        fx.pump_all();
    }
    ibv_qp_state state() {
        ibv_qp_attr a{};
        ibv_qp_init_attr ia{};
        REQUIRE(ibv_query_qp(qp.qp, &a, IBV_QP_STATE, &ia) == 0);
        return a.qp_state;
    }

    test::SimFixture& fx;
    test::IbQp qp;
    net::RocePath path;
};

} // namespace

TEST_CASE("revoke: a WRITE whose MR is deregistered and unmapped after its FIRST goes no "
          "further: the rest is NAKed, the QP enters ERR with an access error",
          "[device][trust]") {
    test::SimFixture fx;
    Responder r(fx);
    const std::size_t page = 4096;
    auto* mem = static_cast<std::uint8_t*>(
        mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(mem != MAP_FAILED);
    ibv_mr* mr = ibv_reg_mr(fx.pd, mem, 2 * page, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    REQUIRE(mr != nullptr);
    const auto va = reinterpret_cast<std::uint64_t>(mem);
    const std::uint32_t rkey = mr->rkey;
    r.write(net::RoceOpcode::rc_write_first, 0x100, va, rkey, 3072, 0xab);
    CHECK(std::all_of(mem, mem + 1024, [](std::uint8_t b) { return b == 0xab; }));
    REQUIRE(ibv_dereg_mr(mr) == 0);
    REQUIRE(munmap(mem, 2 * page) == 0); // the engine would die in memcpy if it wrote on
    r.write(net::RoceOpcode::rc_write_middle, 0x101, 0, 0, 0, 0xcd);
    r.write(net::RoceOpcode::rc_write_last, 0x102, 0, 0, 0, 0xcd);
    const auto& rc = fx.device().port.roce().counters().qps;
    CHECK(rc.get(datapath::RoceRx::consumed) == 1);
    CHECK(rc.get(datapath::RoceRx::remote_access) == 1);
    CHECK(rc.get(datapath::RoceRx::not_ready) == 1);
    CHECK(rc.naks_sent.get() == 1);
    CHECK(r.state() == IBV_QPS_ERR);
    pollfd pfd{fx.ctx->async_fd, POLLIN, 0};
    REQUIRE(::poll(&pfd, 1, 0) == 1); // the event is queued: the read below cannot block
    ibv_async_event ev{};
    REQUIRE(ibv_get_async_event(fx.ctx, &ev) == 0);
    CHECK(ev.event_type == IBV_EVENT_QP_ACCESS_ERR);
    ibv_ack_async_event(&ev);
}
