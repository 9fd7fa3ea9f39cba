// Flow steering onto plain RAW_PACKET QPs, and frames sent on a raw QP
// looping back to the port (datapath/README.md, "The port";
// device/README.md, "Flow steering").
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "tests/device/verbs_helpers.hpp"
#include "tests/support/recording_sink.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

constexpr Mac kOtherMac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x99};

// The receives a test expects: slot i of `buf` with wr_id base + i.
void post_receives(const RawQp& q, const MrBuffer& buf, std::size_t n, std::uint64_t base = 0) {
    for (std::size_t i = 0; i < n; ++i)
        REQUIRE(post_qp(q.qp, base + i, buf.sge(i)) == 0);
}

ibv_flow_attr sniffer_attr() {
    ibv_flow_attr a{};
    a.type = IBV_FLOW_ATTR_SNIFFER;
    a.size = sizeof a;
    a.num_of_specs = 0;
    a.port = 1;
    return a;
}

} // namespace

TEST_CASE("a flow rule steers matching frames to its QP; others are steering misses",
          "[device][flow]") {
    SimFixture fx;
    RawQp q(fx.pd);
    MrBuffer buf(fx.pd, 4);
    post_receives(q, buf, 4);
    ibv_flow* flow = make_flow(q.qp, eth_flow(&kDstMac));

    const Frame hit = eth_frame(kDstMac, kSrcMac, 0x88b5, 60);
    const Frame miss = eth_frame(kOtherMac, kSrcMac, 0x88b5, 60);
    fx.offer(hit);
    fx.offer(miss);
    const auto wcs = drain(q.cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].status == IBV_WC_SUCCESS);
    CHECK(wcs[0].opcode == IBV_WC_RECV);
    CHECK(wcs[0].wr_id == 0);
    CHECK(wcs[0].qp_num == q.qp->qp_num);
    CHECK(wcs[0].byte_len == hit.size());
    CHECK(std::memcmp(buf.slot(0), hit.data(), hit.size()) == 0);
    CHECK(drops(fx, datapath::Drop::steering_miss) == 1);
    CHECK(fx.port().delivered.get() == 1);

    // Without the rule, the same frame misses too.
    REQUIRE(ibv_destroy_flow(flow) == 0);
    fx.offer(hit);
    CHECK(drain(q.cq).empty());
    CHECK(drops(fx, datapath::Drop::steering_miss) == 2);
    CHECK(fx.balanced());
}

TEST_CASE("an IPv4 + TCP rule matches on addresses and ports", "[device][flow]") {
    SimFixture fx;
    RawQp q(fx.pd);
    MrBuffer buf(fx.pd, 4);
    post_receives(q, buf, 4);
    struct {
        ibv_flow_attr attr;
        ibv_flow_spec_eth eth;
        ibv_flow_spec_ipv4 ipv4;
        ibv_flow_spec_tcp_udp tcp;
    } rule;
    std::memset(&rule, 0, sizeof rule);
    rule.attr.type = IBV_FLOW_ATTR_NORMAL;
    rule.attr.size = sizeof rule;
    rule.attr.num_of_specs = 3;
    rule.attr.port = 1;
    rule.eth.type = IBV_FLOW_SPEC_ETH;
    rule.eth.size = sizeof rule.eth;
    rule.ipv4.type = IBV_FLOW_SPEC_IPV4;
    rule.ipv4.size = sizeof rule.ipv4;
    rule.ipv4.val.dst_ip = htonl(0xc0a80101); // 192.168.1.1
    rule.ipv4.mask.dst_ip = 0xffffffff;
    rule.tcp.type = IBV_FLOW_SPEC_TCP;
    rule.tcp.size = sizeof rule.tcp;
    rule.tcp.val.dst_port = htons(80);
    rule.tcp.mask.dst_port = 0xffff;
    ibv_flow* flow = ibv_create_flow(q.qp, &rule.attr);
    REQUIRE(flow != nullptr);

    fx.offer(ipv4_tcp_frame(0x0a000001, 0xc0a80101, 1234, 80));  // hit
    fx.offer(ipv4_tcp_frame(0x0a000001, 0xc0a80102, 1234, 80));  // other address
    fx.offer(ipv4_tcp_frame(0x0a000001, 0xc0a80101, 1234, 443)); // other port
    fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));               // not IPv4
    const auto wcs = drain(q.cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].wr_id == 0);
    CHECK(drops(fx, datapath::Drop::steering_miss) == 3);
    REQUIRE(ibv_destroy_flow(flow) == 0);
    CHECK(fx.balanced());
}

TEST_CASE("an ETH spec with all-zero masks matches every frame", "[device][flow]") {
    SimFixture fx;
    RawQp q(fx.pd);
    MrBuffer buf(fx.pd, 8);
    post_receives(q, buf, 8);
    ibv_flow* flow = make_flow(q.qp, eth_flow(nullptr));
    const std::vector<Frame> frames = {
        eth_frame(kDstMac, kSrcMac, 0x88b5),
        eth_frame(kOtherMac, kSrcMac, 0x0806),
        eth_frame({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, kSrcMac, 0x0800),
        eth_frame({0x01, 0x00, 0x5e, 0x00, 0x00, 0x01}, kOtherMac, 0x86dd),
        vlan_frame(0x0123),
        ipv4_tcp_frame(0x01020304, 0x05060708, 1, 2, kOtherMac),
    };
    for (const Frame& f : frames)
        fx.offer(f);
    const auto wcs = drain(q.cq);
    REQUIRE(wcs.size() == frames.size());
    for (std::size_t i = 0; i < frames.size(); ++i) {
        CAPTURE(i);
        CHECK(wcs[i].wr_id == i);
        CHECK(wcs[i].byte_len == frames[i].size());
    }
    CHECK(drops(fx, datapath::Drop::steering_miss) == 0);
    REQUIRE(ibv_destroy_flow(flow) == 0);
    CHECK(fx.balanced());
}

TEST_CASE("between two matching rules the higher priority (lower value) wins", "[device][flow]") {
    SimFixture fx;
    RawQp a(fx.pd);
    RawQp b(fx.pd);
    MrBuffer buf_a(fx.pd, 4);
    MrBuffer buf_b(fx.pd, 4);
    post_receives(a, buf_a, 4);
    post_receives(b, buf_b, 4);
    const bool a_first = GENERATE(true, false);
    CAPTURE(a_first);
    // `a` has the better priority, whichever rule is created first.
    ibv_flow* fa = nullptr;
    ibv_flow* fb = nullptr;
    if (a_first) {
        fa = make_flow(a.qp, eth_flow(&kDstMac, 1));
        fb = make_flow(b.qp, eth_flow(&kDstMac, 3));
    } else {
        fb = make_flow(b.qp, eth_flow(&kDstMac, 3));
        fa = make_flow(a.qp, eth_flow(&kDstMac, 1));
    }
    fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
    CHECK(drain(a.cq).size() == 1);
    CHECK(drain(b.cq).empty());

    // With a's rule gone, b gets the next one.
    REQUIRE(ibv_destroy_flow(fa) == 0);
    fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
    CHECK(drain(a.cq).empty());
    CHECK(drain(b.cq).size() == 1);
    REQUIRE(ibv_destroy_flow(fb) == 0);
    CHECK(fx.balanced());
}

TEST_CASE("default rules take what no normal rule matched", "[device][flow]") {
    SimFixture fx;
    RawQp normal(fx.pd);
    RawQp mc(fx.pd);
    RawQp all(fx.pd);
    MrBuffer buf_n(fx.pd, 4);
    MrBuffer buf_m(fx.pd, 4);
    MrBuffer buf_a(fx.pd, 4);
    post_receives(normal, buf_n, 4);
    post_receives(mc, buf_m, 4);
    post_receives(all, buf_a, 4);
    // Created defaults first, with a better priority value than the normal
    // rule: a default rule still only gets what the normal rules leave.
    ibv_flow_attr all_attr{};
    all_attr.type = IBV_FLOW_ATTR_ALL_DEFAULT;
    all_attr.size = sizeof all_attr;
    all_attr.port = 1;
    ibv_flow* fa = ibv_create_flow(all.qp, &all_attr);
    REQUIRE(fa != nullptr);
    ibv_flow_attr mc_attr = all_attr;
    mc_attr.type = IBV_FLOW_ATTR_MC_DEFAULT;
    ibv_flow* fm = ibv_create_flow(mc.qp, &mc_attr);
    REQUIRE(fm != nullptr);
    ibv_flow* fn = make_flow(normal.qp, eth_flow(&kDstMac, 2));

    fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));                              // normal
    fx.offer(eth_frame({0x01, 0x00, 0x5e, 0x01, 0x02, 0x03}, kSrcMac, 0x0800)); // multicast
    fx.offer(eth_frame(kOtherMac, kSrcMac, 0x88b5));                            // the rest
    CHECK(drain(normal.cq).size() == 1);
    CHECK(drain(mc.cq).size() == 1);
    CHECK(drain(all.cq).size() == 1);
    CHECK(drops(fx, datapath::Drop::steering_miss) == 0);
    REQUIRE(ibv_destroy_flow(fn) == 0);
    REQUIRE(ibv_destroy_flow(fm) == 0);
    REQUIRE(ibv_destroy_flow(fa) == 0);
    CHECK(fx.balanced());
}

TEST_CASE("a sniffer rule gets a copy of every frame", "[device][flow]") {
    SimFixture fx;
    RawQp normal(fx.pd);
    RawQp sniffer(fx.pd);
    MrBuffer buf_n(fx.pd, 4);
    MrBuffer buf_s(fx.pd, 4);
    post_receives(normal, buf_n, 4);
    post_receives(sniffer, buf_s, 4);
    ibv_flow* fn = make_flow(normal.qp, eth_flow(&kDstMac));
    ibv_flow_attr sa = sniffer_attr();
    ibv_flow* fs = ibv_create_flow(sniffer.qp, &sa);
    REQUIRE(fs != nullptr);

    const Frame hit = eth_frame(kDstMac, kSrcMac, 0x88b5, 50);
    const Frame miss = eth_frame(kOtherMac, kSrcMac, 0x88b5, 70);
    fx.offer(hit);
    fx.offer(miss);
    const auto n = drain(normal.cq);
    REQUIRE(n.size() == 1);
    CHECK(n[0].byte_len == hit.size());
    const auto s = drain(sniffer.cq);
    REQUIRE(s.size() == 2);
    CHECK(s[0].byte_len == hit.size());
    CHECK(std::memcmp(buf_s.slot(0), hit.data(), hit.size()) == 0);
    CHECK(s[1].byte_len == miss.size());
    CHECK(std::memcmp(buf_s.slot(1), miss.data(), miss.size()) == 0);
    // The copy is not an outcome: one frame delivered, one missed.
    CHECK(fx.port().delivered.get() == 1);
    CHECK(drops(fx, datapath::Drop::steering_miss) == 1);
    REQUIRE(ibv_destroy_flow(fs) == 0);
    REQUIRE(ibv_destroy_flow(fn) == 0);
    CHECK(fx.balanced());
}

TEST_CASE("an unknown flow spec type is EOPNOTSUPP", "[device][flow]") {
    SimFixture fx;
    RawQp q(fx.pd);
    struct {
        ibv_flow_attr attr;
        ibv_flow_spec_eth eth;
        std::uint32_t type;
        std::uint16_t size;
        std::uint16_t pad;
        std::uint32_t body[2];
    } rule;
    std::memset(&rule, 0, sizeof rule);
    rule.attr.type = IBV_FLOW_ATTR_NORMAL;
    rule.attr.size = sizeof rule;
    rule.attr.num_of_specs = 2;
    rule.attr.port = 1;
    rule.eth.type = IBV_FLOW_SPEC_ETH;
    rule.eth.size = sizeof rule.eth;
    rule.type = 0x7e; // no such spec
    rule.size = 16;
    errno = 0;
    CHECK(ibv_create_flow(q.qp, &rule.attr) == nullptr);
    CHECK(errno == EOPNOTSUPP);
    // Nothing was attached: the QP can go.
}

TEST_CASE("a QP with a flow rule cannot be destroyed", "[device][flow]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    ibv_qp* qp = make_raw_qp(fx.pd, cq, cq, {.send_wr = 4, .recv_wr = 4});
    ibv_flow* flow = make_flow(qp, eth_flow(&kDstMac));
    CHECK(ibv_destroy_qp(qp) == EBUSY);
    CHECK(ibv_destroy_cq(cq) == EBUSY);
    REQUIRE(ibv_destroy_flow(flow) == 0);
    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_post_send on a raw QP loops the frame back to another QP's flow", "[device][flow]") {
    RecordingSink wire; // outlives the fixture, whose port holds it
    SimFixture fx;
    {
        std::lock_guard lock(fx.device().port.mutex());
        fx.device().port.attach_sink(wire);
    }
    RawQp tx(fx.pd);
    RawQp rx(fx.pd);
    MrBuffer rx_buf(fx.pd, 4);
    post_receives(rx, rx_buf, 4, 500);
    MrBuffer tx_buf(fx.pd, 2);
    post_receives(tx, tx_buf, 2, 900); // the sender listens too, and must not hear itself
    // The sender's catch-all rule ranks above the receiver's: only the
    // exclusion of the sending QP lets the frame reach `rx`.
    ibv_flow* rx_flow = make_flow(rx.qp, eth_flow(&kDstMac, 5));
    ibv_flow* tx_flow = make_flow(tx.qp, eth_flow(nullptr, 0));

    const Frame f = ipv4_tcp_frame(0x0a000001, 0x0a000002, 4000, 5000);
    std::memcpy(const_cast<std::uint8_t*>(tx_buf.slot(1)), f.data(), f.size());
    ibv_sge sge = tx_buf.sge(1);
    sge.length = static_cast<std::uint32_t>(f.size());
    ibv_send_wr wr{};
    wr.wr_id = 0x5eed;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_send_wr* bad = nullptr;
    REQUIRE(ibv_post_send(tx.qp, &wr, &bad) == 0);

    const auto got = drain(rx.cq);
    REQUIRE(got.size() == 1);
    CHECK(got[0].status == IBV_WC_SUCCESS);
    CHECK(got[0].opcode == IBV_WC_RECV);
    CHECK(got[0].wr_id == 500);
    CHECK(got[0].byte_len == f.size());
    CHECK(std::memcmp(rx_buf.slot(0), f.data(), f.size()) == 0);

    const auto sent = drain(tx.cq);
    REQUIRE(sent.size() == 1); // the send completion only: no copy of its own frame
    CHECK(sent[0].status == IBV_WC_SUCCESS);
    CHECK(sent[0].opcode == IBV_WC_SEND);
    CHECK(sent[0].wr_id == 0x5eed);
    CHECK(sent[0].qp_num == tx.qp->qp_num);
    // ... and it left the port: the attached sink has exactly its bytes.
    REQUIRE(wire.frames.size() == 1);
    CHECK(wire.frames[0] == f);
    {
        std::lock_guard lock(fx.device().port.mutex());
        fx.device().port.detach_sink(wire);
    }

    REQUIRE(ibv_destroy_flow(tx_flow) == 0);
    REQUIRE(ibv_destroy_flow(rx_flow) == 0);
    CHECK(fx.balanced());
}
