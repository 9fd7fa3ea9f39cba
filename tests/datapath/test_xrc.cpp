// XRC between two transport endpoints (datapath/README.md, "RoCE
// transport", "XRC"): an INI requester's packets use the XRC opcodes with
// an XRCETH; the TGT responder asks its host for the SRQ named, takes the
// receive and checks memory with that SRQ's PD; an unknown SRQ is an
// invalid request; RC and XRC QPs drop each other's packets.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cstring>
#include <vector>

#include "support/roce_pair.hpp"

using namespace rdmasim;
using datapath::RoceRx;
using datapath::SendOp;
using datapath::SendWr;
using datapath::Sge;
using test::RocePair;

namespace {

constexpr std::uint32_t kSrqn = 0x000abc;

// A is the INI QP, B the TGT QP: B has no PD of its own; SRQ kSrqn's PD is
// the one B's MRs were registered with.
struct XrcPair : RocePair {
    XrcPair()
        : RocePair(datapath::QpTransport::rc, {}, {}, [](auto& a, auto& b) {
              a.xrc = b.xrc = true;
              b.pd = nullptr;
              b.srq = true;
          }) {
        b.xrc_srq = [this](std::uint32_t srqn) { return srqn == kSrqn ? b.pd() : nullptr; };
    }
};

SendWr to_srq(std::uint64_t id, SendOp op, std::uint32_t srqn) {
    SendWr w;
    w.wr_id = id;
    w.op = op;
    w.xrc_srqn = srqn;
    return w;
}

} // namespace

TEST_CASE("xrc: SEND and WRITE through the TGT QP into the SRQ the XRCETH names",
          "[datapath][roce][xrc]") {
    XrcPair pr;
    std::vector<std::uint8_t> src(3000), dst(4096, 0), remote(64, 0);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 7);
    Sge s{reinterpret_cast<std::uint64_t>(src.data()), 3000, pr.a.reg(src.data(), src.size())};
    pr.b.post_recv(5, dst.data(), 4096, pr.b.reg(dst.data(), dst.size()));
    REQUIRE(pr.a.qp->post_send(to_srq(1, SendOp::send, kSrqn), test::one_sge(s), pr.now) == 0);
    SendWr w = to_srq(2, SendOp::write, kSrqn);
    w.remote_addr = reinterpret_cast<std::uint64_t>(remote.data());
    w.rkey = pr.b.reg(remote.data(), remote.size());
    Sge eight{s.addr, 8, s.lkey};
    REQUIRE(pr.a.qp->post_send(w, test::one_sge(eight), pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.b.recv_cqes.size() == 1);
    CHECK(pr.b.recv_cqes[0].wr_id == 5);
    CHECK(pr.b.recv_cqes[0].byte_len == 3000);
    CHECK(std::memcmp(dst.data(), src.data(), 3000) == 0);
    CHECK(std::memcmp(remote.data(), src.data(), 8) == 0);
    REQUIRE(pr.a.send_cqes.size() == 2);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_SUCCESS);
    CHECK(pr.a.send_cqes[1].status == IBV_WC_SUCCESS);
    // XRC SEND FIRST, MIDDLE, LAST at MTU 1024, then XRC RDMA WRITE ONLY.
    REQUIRE(pr.log_a_to_b.size() == 4);
    CHECK(pr.log_a_to_b[0].second == 0xa0);
    CHECK(pr.log_a_to_b[1].second == 0xa1);
    CHECK(pr.log_a_to_b[2].second == 0xa2);
    CHECK(pr.log_a_to_b[3].second == 0xaa);
    CHECK(pr.a.qp->counters().rx_frames.get() == pr.a.qp->counters().get(RoceRx::consumed)); // XRC ACKs taken
}

TEST_CASE("xrc: an SRQ number the TGT's domain lacks is an invalid request", "[datapath][roce][xrc]") {
    XrcPair pr;
    std::uint8_t byte = 1;
    Sge s{reinterpret_cast<std::uint64_t>(&byte), 1, pr.a.reg(&byte, 1)};
    REQUIRE(pr.a.qp->post_send(to_srq(1, SendOp::send, kSrqn + 1), test::one_sge(s), pr.now) == 0);
    pr.run_idle();
    REQUIRE(pr.a.send_cqes.size() == 1);
    CHECK(pr.a.send_cqes[0].status == IBV_WC_REM_INV_REQ_ERR);
    CHECK(pr.b.qp->counters().get(RoceRx::invalid_request) == 1);
    CHECK(pr.b.qp->state() == datapath::TransportState::error);
}

TEST_CASE("xrc: an RC QP and an XRC QP drop each other's packets", "[datapath][roce][xrc]") {
    RocePair pr(datapath::QpTransport::rc, {}, {}, [](auto& a, auto&) { a.xrc = true; });
    std::uint8_t byte = 1;
    Sge s{reinterpret_cast<std::uint64_t>(&byte), 1, pr.a.reg(&byte, 1)};
    REQUIRE(pr.a.qp->post_send(to_srq(1, SendOp::send, kSrqn), test::one_sge(s), pr.now) == 0);
    pr.run_until([&] { return pr.b.qp->counters().get(RoceRx::wrong_transport) > 0; }, 1'000'000);
    CHECK(pr.b.qp->counters().get(RoceRx::wrong_transport) > 0);
    CHECK(pr.b.recv_cqes.empty());
}
