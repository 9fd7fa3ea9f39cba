// Device, port, GID and P_Key queries (device/README.md, "Device and port"), and capability
// profiles that turn an offload off.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "tests/device/verbs_helpers.hpp"

using namespace rdmasim::test;

namespace {

constexpr std::uint64_t kAllHashFields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
                                         IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 |
                                         IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP |
                                         IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;

ibv_device_attr_ex query_ex(ibv_context* ctx) {
    ibv_device_attr_ex a;
    std::memset(&a, 0, sizeof a);
    REQUIRE(ibv_query_device_ex(ctx, nullptr, &a) == 0);
    return a;
}

// The op the inline wrapper calls, with a caller-chosen attr_size.
int query_ex_op(ibv_context* ctx, const ibv_query_device_ex_input* input, void* attr,
                std::size_t attr_size) {
    verbs_context* v = verbs_get_ctx(ctx);
    REQUIRE(v != nullptr);
    REQUIRE(v->query_device_ex != nullptr);
    return v->query_device_ex(ctx, input, static_cast<ibv_device_attr_ex*>(attr), attr_size);
}

} // namespace

TEST_CASE("ibv_query_device reports a CA with every limit non-zero", "[device][query]") {
    SimFixture fx;
    ibv_device_attr a;
    std::memset(&a, 0, sizeof a);
    REQUIRE(ibv_query_device(fx.ctx, &a) == 0);
    CHECK(a.node_guid != 0);
    CHECK(a.vendor_id != 0);
    CHECK(a.phys_port_cnt == 1);
    CHECK(a.max_mr_size != 0);
    CHECK(a.max_qp > 0);
    CHECK(a.max_qp_wr > 0);
    CHECK(a.max_sge > 0);
    CHECK(a.max_sge_rd > 0);
    CHECK(a.max_cq > 0);
    CHECK(a.max_cqe > 0);
    CHECK(a.max_mr > 0);
    CHECK(a.max_pd > 0);
    CHECK(a.max_qp_rd_atom > 0);
    CHECK(a.max_ee_rd_atom > 0);
    CHECK(a.max_res_rd_atom > 0);
    CHECK(a.max_qp_init_rd_atom > 0);
    CHECK(a.max_ee_init_rd_atom > 0);
    CHECK(a.max_ee > 0);
    CHECK(a.max_rdd > 0);
    CHECK(a.max_mw > 0);
    CHECK(a.max_raw_ipv6_qp > 0);
    CHECK(a.max_raw_ethy_qp > 0);
    CHECK(a.max_mcast_grp > 0);
    CHECK(a.max_mcast_qp_attach > 0);
    CHECK(a.max_total_mcast_qp_attach > 0);
    CHECK(a.max_ah > 0);
    CHECK(a.max_fmr > 0);
    CHECK(a.max_map_per_fmr > 0);
    CHECK(a.max_srq > 0);
    CHECK(a.max_srq_wr > 0);
    CHECK(a.max_srq_sge > 0);
    CHECK(a.max_pkeys > 0);

    ibv_device* dev = fx.ctx->device;
    CHECK(dev->node_type == IBV_NODE_CA);
    CHECK(dev->transport_type == IBV_TRANSPORT_IB);
    CHECK(ibv_get_device_guid(dev) == a.node_guid);
}

TEST_CASE("ibv_query_device_ex reports the raw-packet offloads and RSS", "[device][query]") {
    SimFixture fx;
    const ibv_device_attr_ex a = query_ex(fx.ctx);

    ibv_device_attr small;
    REQUIRE(ibv_query_device(fx.ctx, &small) == 0);
    CHECK(std::memcmp(&small, &a.orig_attr, sizeof small) == 0);

    CHECK(a.raw_packet_caps ==
          (IBV_RAW_PACKET_CAP_CVLAN_STRIPPING | IBV_RAW_PACKET_CAP_SCATTER_FCS |
           IBV_RAW_PACKET_CAP_IP_CSUM | IBV_RAW_PACKET_CAP_DELAY_DROP));
    CHECK((a.device_cap_flags_ex & IBV_DEVICE_PCI_WRITE_END_PADDING) != 0);
    CHECK((a.device_cap_flags_ex & IBV_DEVICE_RAW_SCATTER_FCS) != 0);
    CHECK(a.rss_caps.supported_qpts == (1u << IBV_QPT_RAW_PACKET));
    CHECK(a.rss_caps.rx_hash_function == IBV_RX_HASH_FUNC_TOEPLITZ);
    CHECK(a.rss_caps.rx_hash_fields_mask == kAllHashFields);
    CHECK(a.rss_caps.max_rwq_indirection_tables > 0);
    CHECK(a.rss_caps.max_rwq_indirection_table_size > 0);
    CHECK(a.max_wq_type_rq > 0);
}

TEST_CASE("ibv_query_device_ex refuses a non-zero input comp_mask", "[device][query]") {
    SimFixture fx;
    ibv_query_device_ex_input in{};
    in.comp_mask = 1;
    ibv_device_attr_ex a;
    CHECK(ibv_query_device_ex(fx.ctx, &in, &a) == EINVAL);
    // The provider op itself refuses it too (programs may call through the table).
    CHECK(query_ex_op(fx.ctx, &in, &a, sizeof a) == EINVAL);
    in.comp_mask = 0;
    CHECK(query_ex_op(fx.ctx, &in, &a, sizeof a) == 0);
}

TEST_CASE("ibv_query_device_ex fills a short struct only up to attr_size", "[device][query]") {
    SimFixture fx;
    const ibv_device_attr_ex full = query_ex(fx.ctx);
    constexpr std::uint8_t kGuard = 0xa5;

    // Sizes an older program would pass: the legacy struct, up to a field, one byte short.
    const std::size_t sizes[] = {sizeof(ibv_device_attr), offsetof(ibv_device_attr_ex, odp_caps),
                                 offsetof(ibv_device_attr_ex, rss_caps),
                                 offsetof(ibv_device_attr_ex, raw_packet_caps),
                                 sizeof(ibv_device_attr_ex) - 1};
    for (const std::size_t size : sizes) {
        CAPTURE(size);
        std::vector<std::uint8_t> buf(sizeof(ibv_device_attr_ex) + 64, kGuard);
        REQUIRE(query_ex_op(fx.ctx, nullptr, buf.data(), size) == 0);
        CHECK(std::memcmp(buf.data(), &full, size) == 0);
        bool guards_intact = true;
        for (std::size_t i = size; i < buf.size(); ++i)
            guards_intact &= buf[i] == kGuard;
        CHECK(guards_intact);
    }

    // Shorter than the legacy struct: refused, and nothing written.
    std::vector<std::uint8_t> tiny(sizeof(ibv_device_attr_ex), kGuard);
    CHECK(query_ex_op(fx.ctx, nullptr, tiny.data(), sizeof(ibv_device_attr) - 1) == EINVAL);
    bool untouched = true;
    for (const auto b : tiny)
        untouched &= b == kGuard;
    CHECK(untouched);

    // A larger struct (a newer program) gets what the device knows, and nothing past it is harmed.
    std::vector<std::uint8_t> big(sizeof(ibv_device_attr_ex) + 64, kGuard);
    REQUIRE(query_ex_op(fx.ctx, nullptr, big.data(), sizeof(ibv_device_attr_ex) + 32) == 0);
    CHECK(std::memcmp(big.data(), &full, sizeof full) == 0);
    bool tail_intact = true;
    for (std::size_t i = sizeof(ibv_device_attr_ex) + 32; i < big.size(); ++i)
        tail_intact &= big[i] == kGuard;
    CHECK(tail_intact);
}

TEST_CASE("ibv_query_port: port 1 active, Ethernet link layer", "[device][query]") {
    SimFixture fx;
    ibv_port_attr p;
    std::memset(&p, 0, sizeof p);
    REQUIRE(ibv_query_port(fx.ctx, 1, &p) == 0);
    CHECK(p.state == IBV_PORT_ACTIVE);
    CHECK(p.link_layer == IBV_LINK_LAYER_ETHERNET);
    CHECK(p.gid_tbl_len >= 1);
    CHECK(p.pkey_tbl_len >= 1);
    CHECK(p.max_msg_sz == 1u << 30); // mlx5's; the responder refuses longer RETHs (datapath/README.md)
    CHECK(p.active_mtu != 0);

    CHECK(ibv_query_port(fx.ctx, 2, &p) == EINVAL);
    CHECK(ibv_query_port(fx.ctx, 0, &p) == EINVAL);
}

TEST_CASE("GIDs 0 and 1 and P_Key 0 are readable; indexes past the tables are not", "[device][query]") {
    SimFixture fx;
    ibv_gid gid;
    for (int i = 0; i < 2; ++i) {
        std::memset(&gid, 0, sizeof gid);
        REQUIRE(ibv_query_gid(fx.ctx, 1, i, &gid) == 0);
        bool nonzero = false;
        for (const auto b : gid.raw)
            nonzero |= b != 0;
        CHECK(nonzero);
    }
    ibv_gid other;
    CHECK(ibv_query_gid(fx.ctx, 1, 256, &other) != 0);
    CHECK(ibv_query_gid(fx.ctx, 2, 0, &other) != 0);

    __be16 pkey = 0;
    REQUIRE(ibv_query_pkey(fx.ctx, 1, 0, &pkey) == 0);
    CHECK(be16toh(pkey) == 0xffff);
    CHECK(ibv_query_pkey(fx.ctx, 1, 1, &pkey) != 0);
}

TEST_CASE("a capability turned off disappears from the query and from ibv_create_wq",
          "[device][query]") {
    struct Case {
        const char* key;
        std::uint32_t raw_packet_cap;  // removed from raw_packet_caps (0: none)
        std::uint64_t device_cap_flag; // removed from device_cap_flags_ex (0: none)
        std::uint32_t wq_flag;         // refused by ibv_create_wq
    };
    const Case cases[] = {
        {"caps.cvlan_stripping", IBV_RAW_PACKET_CAP_CVLAN_STRIPPING, 0,
         IBV_WQ_FLAGS_CVLAN_STRIPPING},
        {"caps.scatter_fcs", IBV_RAW_PACKET_CAP_SCATTER_FCS, IBV_DEVICE_RAW_SCATTER_FCS,
         IBV_WQ_FLAGS_SCATTER_FCS},
        {"caps.delay_drop", IBV_RAW_PACKET_CAP_DELAY_DROP, 0, IBV_WQ_FLAGS_DELAY_DROP},
        {"caps.pci_write_end_padding", 0, IBV_DEVICE_PCI_WRITE_END_PADDING,
         IBV_WQ_FLAGS_PCI_WRITE_END_PADDING},
    };
    for (const Case& c : cases) {
        CAPTURE(c.key);
        SimFixture fx(Settings{{c.key, "off"}});
        const ibv_device_attr_ex a = query_ex(fx.ctx);
        if (c.raw_packet_cap) CHECK((a.raw_packet_caps & c.raw_packet_cap) == 0);
        if (c.device_cap_flag) CHECK((a.device_cap_flags_ex & c.device_cap_flag) == 0);
        // The others are still there.
        CHECK((a.raw_packet_caps & IBV_RAW_PACKET_CAP_IP_CSUM) != 0);

        ibv_cq* cq = make_cq(fx.ctx);
        ibv_wq_init_attr attr = wq_attr(fx.pd, cq);
        attr.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
        attr.create_flags = c.wq_flag;
        errno = 0;
        CHECK(ibv_create_wq(fx.ctx, &attr) == nullptr);
        CHECK(errno == EOPNOTSUPP);

        REQUIRE(ibv_destroy_cq(cq) == 0);
    }
}

TEST_CASE("with every capability on, each offload flag creates a WQ", "[device][query]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    for (const std::uint32_t flag : {IBV_WQ_FLAGS_CVLAN_STRIPPING, IBV_WQ_FLAGS_SCATTER_FCS,
                                     IBV_WQ_FLAGS_DELAY_DROP, IBV_WQ_FLAGS_PCI_WRITE_END_PADDING}) {
        CAPTURE(flag);
        ibv_wq_init_attr attr = wq_attr(fx.pd, cq);
        attr.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
        attr.create_flags = flag;
        ibv_wq* wq = ibv_create_wq(fx.ctx, &attr);
        REQUIRE(wq != nullptr);
        CHECK(ibv_destroy_wq(wq) == 0);
    }
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("IP checksum offload turned off disappears from both capability words",
          "[device][query]") {
    SimFixture fx(Settings{{"caps.ip_csum", "off"}});
    const ibv_device_attr_ex a = query_ex(fx.ctx);
    CHECK((a.raw_packet_caps & IBV_RAW_PACKET_CAP_IP_CSUM) == 0);
    CHECK((a.orig_attr.device_cap_flags & IBV_DEVICE_RAW_IP_CSUM) == 0);
    CHECK((a.raw_packet_caps & IBV_RAW_PACKET_CAP_SCATTER_FCS) != 0);
}
