// IBV_WC_IP_CSUM_OK as mlx5 reports it (datapath/README.md, "Per-frame
// order", step 17): only on a raw-packet QP's own receive queue (never a WQ's:
// test_receive.cpp), and only for an IPv4 frame that is not a fragment,
// carries TCP or UDP, and has a good header and a good L4 checksum
// (get_csum_ok in rdma-core's providers/mlx5/cq.c: L3_OK and L4_OK, IPv4).
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

#include "support/golden_frames.hpp"
#include "tests/device/verbs_helpers.hpp"

using namespace rdmasim;
using namespace rdmasim::test;
namespace golden = rdmasim::test::golden;

namespace {

// Recomputes the IPv4 header checksum of the header at `at`.
void fix_ipv4_checksum(Frame& f, std::size_t at) {
    f[at + 10] = 0;
    f[at + 11] = 0;
    std::uint32_t sum = 0;
    const std::size_t len = static_cast<std::size_t>(f[at] & 0x0f) * 4;
    for (std::size_t i = 0; i < len; i += 2)
        sum += static_cast<std::uint32_t>(f[at + i] << 8 | f[at + i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    const auto c = static_cast<std::uint16_t>(~sum);
    f[at + 10] = static_cast<std::uint8_t>(c >> 8);
    f[at + 11] = static_cast<std::uint8_t>(c);
}

struct Case {
    std::string name;
    Frame frame;
    bool ok;
};

std::vector<Case> cases() {
    std::vector<Case> out;
    out.push_back({"IPv4 TCP, good sums", golden::concat(golden::kTcpGood), true});
    out.push_back({"IPv4 UDP, good sums", golden::concat(golden::kUntagged), true});
    out.push_back({"IPv4 UDP through an 802.1Q tag", golden::concat(golden::kTagged), true});
    out.push_back({"IPv4 TCP, bad TCP checksum", golden::concat(golden::kTcpBadL4), false});
    Frame no_sum = golden::concat(golden::kUntagged);
    no_sum[40] = 0; // UDP checksum 0: none computed
    no_sum[41] = 0;
    out.push_back({"IPv4 UDP without a checksum", no_sum, true});
    Frame bad_header = golden::concat(golden::kUntagged);
    bad_header[22] ^= 0x01; // TTL, header checksum not fixed
    out.push_back({"IPv4, bad header checksum", bad_header, false});
    Frame icmp = golden::concat(golden::kUntagged);
    icmp[23] = 1; // ICMP: good header, no TCP/UDP checksum
    fix_ipv4_checksum(icmp, 14);
    out.push_back({"IPv4 ICMP, good header", icmp, false});
    Frame first_fragment = golden::concat(golden::kUntagged);
    first_fragment[20] = 0x20; // MF, offset 0; the UDP checksum is still right
    fix_ipv4_checksum(first_fragment, 14);
    out.push_back({"IPv4 first fragment", first_fragment, false});
    Frame later_fragment = golden::concat(golden::kUntagged);
    later_fragment[20] = 0x00;
    later_fragment[21] = 0x03; // offset 24 bytes
    fix_ipv4_checksum(later_fragment, 14);
    out.push_back({"IPv4 later fragment", later_fragment, false});
    Frame v6 = eth_frame(kDstMac, kSrcMac, 0x86dd, 0);
    const std::uint8_t ip6[40] = {0x60, 0, 0, 0, 0, 8, 17, 64};
    v6.insert(v6.end(), ip6, ip6 + 40);
    const std::uint8_t udp[8] = {0x9c, 0x40, 0x12, 0xb7, 0, 8, 0, 0};
    v6.insert(v6.end(), udp, udp + 8);
    out.push_back({"IPv6 UDP", v6, false});
    out.push_back({"not IP", eth_frame(kDstMac, kSrcMac, 0x88b5), false});
    return out;
}

// Receives each case on `qp`, one WQE each; returns whether each got IP_CSUM_OK.
std::vector<bool> verdicts(SimFixture& fx, const RawQp& q, const std::vector<Case>& cs) {
    MrBuffer buf(fx.pd, cs.size());
    std::vector<bool> out;
    for (std::size_t i = 0; i < cs.size(); ++i) {
        INFO(cs[i].name);
        REQUIRE(post_qp(q.qp, i, buf.sge(i)) == 0);
        fx.offer(cs[i].frame);
        fx.pump();
        const auto wc = drain(q.cq);
        REQUIRE(wc.size() == 1);
        CHECK(wc[0].wr_id == i);
        CHECK(wc[0].status == IBV_WC_SUCCESS);
        CHECK(wc[0].byte_len == cs[i].frame.size());
        out.push_back((wc[0].wc_flags & IBV_WC_IP_CSUM_OK) != 0);
    }
    return out;
}

} // namespace

TEST_CASE("a raw QP's completions carry IP_CSUM_OK for IPv4 TCP/UDP with both sums good, only",
          "[device][receive][ip_csum]") {
    SimFixture fx;
    RawQp q(fx.pd);
    ibv_flow* flow = make_flow(q.qp, eth_flow());
    const auto cs = cases();
    const auto got = verdicts(fx, q, cs);
    for (std::size_t i = 0; i < cs.size(); ++i) {
        INFO(cs[i].name);
        CHECK(got[i] == cs[i].ok);
    }
    CHECK(ibv_destroy_flow(flow) == 0);
    CHECK(fx.balanced());
}

TEST_CASE("with caps.ip_csum=off a raw QP's completions never carry IP_CSUM_OK",
          "[device][receive][ip_csum]") {
    SimFixture fx(Settings{{"caps.ip_csum", "off"}});
    RawQp q(fx.pd);
    ibv_flow* flow = make_flow(q.qp, eth_flow());
    for (const bool ok : verdicts(fx, q, cases()))
        CHECK_FALSE(ok);
    CHECK(ibv_destroy_flow(flow) == 0);
    CHECK(fx.balanced());
}
