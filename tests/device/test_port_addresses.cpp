// Port attributes and the GID table from the configured addresses
// (device/README.md, "Device and port"): ibv_query_port, ibv_query_gid,
// ibv_query_gid_ex, ibv_query_gid_table, ibv_query_gid_type, the emulated
// sysfs; the RDMA read and atomic limits; and ARP answered for the port's
// address on the device's sinks while the frame is still steered.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "net/arp.hpp"
#include "tests/device/private_verbs.hpp"
#include "tests/device/verbs_helpers.hpp"
#include "tests/support/recording_sink.hpp"

using namespace rdmasim;
using namespace rdmasim::test;


namespace {

std::string gid_string(const ibv_gid& gid) {
    net::Ipv6Address a;
    std::memcpy(a.data(), gid.raw, a.size());
    return net::to_string(a);
}

std::string sysfs(ibv_context* ctx, const char* file) {
    char buf[128] = {};
    if (ibv_read_sysfs_file(ctx->device->ibdev_path, file, buf, sizeof buf) < 0) return "ENOENT";
    return buf;
}

const Settings kAddressed{{"mac", "02:00:00:00:00:01"}, {"ip", "192.0.2.1"}, {"mtu", "4096"}};

} // namespace

TEST_CASE("ibv_query_port: active_mtu from mtu, max_mtu 4096, two GIDs", "[device][addresses]") {
    // One fixture at a time: a program sees every live simulator's devices.
    for (const auto& [mtu, value] : {std::pair{"", IBV_MTU_1024}, std::pair{"256", IBV_MTU_256},
                                     std::pair{"512", IBV_MTU_512}, std::pair{"1024", IBV_MTU_1024},
                                     std::pair{"2048", IBV_MTU_2048}, std::pair{"4096", IBV_MTU_4096}}) {
        CAPTURE(mtu);
        SimFixture fx(*mtu ? Settings{{"mtu", mtu}} : Settings{});
        ibv_port_attr p;
        REQUIRE(ibv_query_port(fx.ctx, 1, &p) == 0);
        CHECK(p.active_mtu == value);
        CHECK(p.max_mtu == IBV_MTU_4096);
        CHECK(p.gid_tbl_len == 256);
        CHECK(p.state == IBV_PORT_ACTIVE);
        CHECK(p.link_layer == IBV_LINK_LAYER_ETHERNET);
    }
}

TEST_CASE("GID 0 is the IPv4-mapped address, GID 1 the IPv6 one; the rest are empty", "[device][addresses]") {
    SimFixture fx(kAddressed);
    ibv_gid gid;
    REQUIRE(ibv_query_gid(fx.ctx, 1, 0, &gid) == 0);
    CHECK(gid_string(gid) == "::ffff:192.0.2.1");
    REQUIRE(ibv_query_gid(fx.ctx, 1, 1, &gid) == 0);
    CHECK(gid_string(gid) == "fe80::ff:fe00:1"); // EUI-64 of 02:00:00:00:00:01
    // Empty entries, as on a ConnectX whose port has one address of each kind.
    std::memset(&gid, 0xee, sizeof gid);
    REQUIRE(ibv_query_gid(fx.ctx, 1, 2, &gid) == 0);
    CHECK(gid_string(gid) == "::");
    REQUIRE(ibv_query_gid(fx.ctx, 1, 255, &gid) == 0);
    errno = 0;
    CHECK(ibv_query_gid(fx.ctx, 1, 256, &gid) == -1);
    CHECK(errno == EINVAL);

    ibv_gid_entry e;
    for (std::uint32_t i = 0; i < 2; ++i) {
        CAPTURE(i);
        std::memset(&e, 0xee, sizeof e);
        REQUIRE(ibv_query_gid_ex(fx.ctx, 1, i, &e, 0) == 0);
        REQUIRE(ibv_query_gid(fx.ctx, 1, static_cast<int>(i), &gid) == 0);
        CHECK(std::memcmp(e.gid.raw, gid.raw, sizeof gid.raw) == 0);
        CHECK(e.gid_index == i);
        CHECK(e.port_num == 1);
        CHECK(e.gid_type == IBV_GID_TYPE_ROCE_V2);
        CHECK(e.ndev_ifindex == 0);
        ibv_gid_type_sysfs type;
        REQUIRE(ibv_query_gid_type(fx.ctx, 1, i, &type) == 0);
        CHECK(type == IBV_GID_TYPE_SYSFS_ROCE_V2);
    }
    CHECK(ibv_query_gid_ex(fx.ctx, 1, 2, &e, 0) == ENODATA);
    CHECK(ibv_query_gid_ex(fx.ctx, 1, 255, &e, 0) == ENODATA);
    CHECK(ibv_query_gid_ex(fx.ctx, 1, 256, &e, 0) == EINVAL);
    ibv_gid_type_sysfs type;
    REQUIRE(ibv_query_gid_type(fx.ctx, 1, 2, &type) == 0);
    CHECK(type == IBV_GID_TYPE_SYSFS_IB_ROCE_V1);
    CHECK(ibv_query_gid_type(fx.ctx, 1, 256, &type) == -1);

    ibv_gid_entry table[3];
    CHECK(ibv_query_gid_table(fx.ctx, table, 3, 0) == 2);
    CHECK(gid_string(table[0].gid) == "::ffff:192.0.2.1");
    CHECK(table[1].gid_index == 1);
    CHECK(ibv_query_gid_table(fx.ctx, table, 1, 0) == -EINVAL);
}

TEST_CASE("ip6 sets GID 1", "[device][addresses]") {
    SimFixture fx(Settings{{"ip6", "2001:db8::5"}});
    ibv_gid gid;
    REQUIRE(ibv_query_gid(fx.ctx, 1, 1, &gid) == 0);
    CHECK(gid_string(gid) == "2001:db8::5");
}

TEST_CASE("defaults on the inline engine: stable addresses from the device index", "[device][addresses]") {
    SimFixture fx;
    ibv_gid gid;
    REQUIRE(ibv_query_gid(fx.ctx, 1, 0, &gid) == 0);
    CHECK(gid_string(gid) == "::ffff:169.254.1.0");
    REQUIRE(ibv_query_gid(fx.ctx, 1, 1, &gid) == 0);
    CHECK(gid_string(gid) == "fe80::52:44ff:fe4d:0");
    CHECK(fx.device().port.neighbours().addresses().mac == net::MacAddress{0x02, 0x52, 0x44, 0x4d, 0x00, 0x00});
}

TEST_CASE("the emulated sysfs shows both GIDs and their types", "[device][addresses]") {
    SimFixture fx(kAddressed);
    CHECK(sysfs(fx.ctx, "ports/1/gids/0") == "0000:0000:0000:0000:0000:ffff:c000:0201");
    CHECK(sysfs(fx.ctx, "ports/1/gids/1") == "fe80:0000:0000:0000:0000:00ff:fe00:0001");
    CHECK(sysfs(fx.ctx, "ports/1/gid_attrs/types/0") == "RoCE v2");
    CHECK(sysfs(fx.ctx, "ports/1/gid_attrs/types/1") == "RoCE v2");
    CHECK(sysfs(fx.ctx, "ports/1/gids/2") == "0000:0000:0000:0000:0000:0000:0000:0000");
    CHECK(sysfs(fx.ctx, "ports/1/gids/255") == "0000:0000:0000:0000:0000:0000:0000:0000");
    CHECK(sysfs(fx.ctx, "ports/1/gids/256") == "ENOENT");
    CHECK(sysfs(fx.ctx, "ports/1/gids/02") == "ENOENT");
    CHECK(sysfs(fx.ctx, "ports/1/gid_attrs/types/2") == "ENOENT");
    CHECK(sysfs(fx.ctx, "ports/1/gid_attrs/ndevs/0") == "ENOENT");
}

TEST_CASE("RDMA read and atomic limits as mlx5 reports them", "[device][addresses]") {
    SimFixture fx;
    ibv_device_attr a;
    REQUIRE(ibv_query_device(fx.ctx, &a) == 0);
    CHECK(a.max_qp_rd_atom == 16);
    CHECK(a.max_qp_init_rd_atom == 16);
    CHECK(a.max_res_rd_atom == 16 * a.max_qp);
    CHECK(a.atomic_cap == IBV_ATOMIC_HCA);
}

TEST_CASE("an ARP request for the port's address is answered on its sinks and counted", "[device][addresses]") {
    RecordingSink wire; // outlives the fixture, whose port holds it
    SimFixture fx(kAddressed);
    auto& port = fx.device().port;
    {
        std::lock_guard lock(port.mutex());
        port.attach_sink(wire);
    }
    const net::MacAddress peer{0x02, 0, 0, 0, 0, 0x09};
    std::array<std::uint8_t, net::kMinFrameLen> request;
    net::build_arp(request, net::kBroadcastMac, net::arp_request(peer, {192, 0, 2, 9}, {192, 0, 2, 1}));
    fx.offer({request.begin(), request.end()});
    fx.pump_all();
    {
        std::lock_guard lock(port.mutex());
        port.detach_sink(wire);
    }
    REQUIRE(wire.frames.size() == 1);
    const auto reply = net::parse_arp(wire.frames[0]);
    REQUIRE(reply);
    CHECK(reply->op == net::ArpOp::reply);
    CHECK(reply->sender_mac == net::MacAddress{0x02, 0, 0, 0, 0, 0x01});
    CHECK(reply->target_mac == peer);
    CHECK(port.neighbours().counters().arp_requests_answered.get() == 1);
    CHECK(port.neighbours().lookup({192, 0, 2, 9}) == peer);
    CHECK(fx.port().frames.get() == 1);
    CHECK(fx.balanced());
}

TEST_CASE("a sniffer flow sees the ARP request the host answers", "[device][addresses]") {
    SimFixture fx(kAddressed);
    RawQp q(fx.pd);
    MrBuffer buf(fx.pd, 2);
    REQUIRE(post_qp(q.qp, 7, buf.sge(0)) == 0);
    ibv_flow_attr sniffer{};
    sniffer.type = IBV_FLOW_ATTR_SNIFFER;
    sniffer.size = sizeof sniffer;
    sniffer.port = 1;
    ibv_flow* flow = ibv_create_flow(q.qp, &sniffer);
    REQUIRE(flow != nullptr);
    std::array<std::uint8_t, net::kMinFrameLen> request;
    net::build_arp(request, net::kBroadcastMac,
                   net::arp_request({0x02, 0, 0, 0, 0, 0x09}, {192, 0, 2, 9}, {192, 0, 2, 1}));
    fx.offer({request.begin(), request.end()});
    const auto wcs = drain(q.cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].wr_id == 7);
    CHECK(wcs[0].byte_len == net::kMinFrameLen);
    CHECK(std::memcmp(buf.slot(0), request.data(), request.size()) == 0);
    CHECK(fx.device().port.neighbours().counters().arp_requests_answered.get() == 1);
    CHECK(fx.port().sniffer_copies.get() == 1);
    CHECK(drops(fx, datapath::Drop::steering_miss) == 1); // the copy is not the frame's outcome
    CHECK(fx.balanced());
    REQUIRE(ibv_destroy_flow(flow) == 0);
}
