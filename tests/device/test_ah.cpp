// Address handles (device/README.md, "Address handles"): ibv_create_ah's
// checks, the PD reference, and ibv_init_ah_from_wc / ibv_create_ah_from_wc
// reading the GRH slot of a UD receive (IPv6 GRH, or RoCE v2's IPv4 header
// in its last 20 bytes).
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cstring>

#include "tests/support/sim_fixture.hpp"

using namespace rdmasim::test;

namespace {

ibv_ah_attr roce_attr() {
    ibv_ah_attr a{};
    a.is_global = 1;
    a.port_num = 1;
    a.grh.sgid_index = 0;
    a.grh.hop_limit = 64;
    a.grh.dgid.raw[0] = 0xfe;
    a.grh.dgid.raw[1] = 0x80;
    a.grh.dgid.raw[15] = 7;
    return a;
}

// A RoCE v2 IPv4 header from `src` to `dst` (network-order bytes) with a
// valid checksum, in the last 20 bytes of `grh`; the first 20 are garbage.
void put_ipv4(ibv_grh& grh, const std::uint8_t src[4], const std::uint8_t dst[4]) {
    auto* raw = reinterpret_cast<std::uint8_t*>(&grh);
    std::memset(raw, 0xcc, 20);
    std::uint8_t* ip = raw + 20;
    std::memset(ip, 0, 20);
    ip[0] = 0x45;
    ip[1] = 0x28; // TOS
    ip[3] = 60;
    ip[8] = 33; // TTL
    ip[9] = 17; // UDP
    std::memcpy(ip + 12, src, 4);
    std::memcpy(ip + 16, dst, 4);
    std::uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2) sum += static_cast<std::uint32_t>(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    ip[10] = static_cast<std::uint8_t>(~sum >> 8);
    ip[11] = static_cast<std::uint8_t>(~sum);
}

// The port's first IPv4-mapped RoCE v2 GID, if it has one.
int v4_gid_index(ibv_context* ctx, ibv_gid& gid) {
    ibv_port_attr port{};
    REQUIRE(ibv_query_port(ctx, 1, &port) == 0);
    for (int i = 0; i < port.gid_tbl_len; ++i) {
        ibv_gid_entry e{};
        if (ibv_query_gid_ex(ctx, 1, static_cast<std::uint32_t>(i), &e, 0) != 0) continue;
        static const std::uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && std::memcmp(e.gid.raw, prefix, 12) == 0) {
            gid = e.gid;
            return i;
        }
    }
    return -1;
}

} // namespace

TEST_CASE("ibv_create_ah: RoCE needs a GRH, port 1 and a GID index in the table", "[ah]") {
    SimFixture fx;
    ibv_port_attr port{};
    REQUIRE(ibv_query_port(fx.ctx, 1, &port) == 0);
    ibv_ah_attr a = roce_attr();
    ibv_ah* ah = ibv_create_ah(fx.pd, &a);
    REQUIRE(ah != nullptr);
    CHECK(ah->context == fx.ctx);
    CHECK(ah->pd == fx.pd);
    CHECK(ibv_dealloc_pd(fx.pd) == EBUSY);
    CHECK(ibv_destroy_ah(ah) == 0);
    const auto fails = [&](auto change) {
        ibv_ah_attr b = roce_attr();
        change(b);
        errno = 0;
        ibv_ah* bad = ibv_create_ah(fx.pd, &b);
        const int e = errno;
        if (bad) ibv_destroy_ah(bad);
        return bad == nullptr ? e : 0;
    };
    CHECK(fails([](ibv_ah_attr& b) { b.is_global = 0; }) == EINVAL);
    CHECK(fails([](ibv_ah_attr& b) { b.port_num = 2; }) == EINVAL);
    CHECK(fails([](ibv_ah_attr& b) { b.port_num = 0; }) == EINVAL);
    // gid_tbl_len is 256 (a uint8_t index is always inside): an empty entry is ENODATA.
    REQUIRE(port.gid_tbl_len == 256);
    CHECK(fails([](ibv_ah_attr& b) { b.grh.sgid_index = 2; }) == ENODATA);
    CHECK(fails([](ibv_ah_attr& b) { b.dlid = 0x1234; }) == 0); // the LID means nothing on RoCE
    errno = 0;
    CHECK(ibv_create_ah(nullptr, &a) == nullptr);
    CHECK(errno == EINVAL);
}

TEST_CASE("ibv_init_ah_from_wc: an IPv6 GRH", "[ah]") {
    SimFixture fx;
    ibv_gid own{};
    REQUIRE(ibv_query_gid(fx.ctx, 1, 0, &own) == 0);
    ibv_grh grh{};
    grh.version_tclass_flow = htonl(6u << 28 | 0x12u << 20 | 0xabcde);
    grh.next_hdr = 17; // UDP: RoCE v2
    grh.hop_limit = 9;
    grh.sgid.raw[0] = 0xfe;
    grh.sgid.raw[1] = 0x80;
    grh.sgid.raw[15] = 0x99;
    grh.dgid = own;
    ibv_wc wc{};
    wc.wc_flags = IBV_WC_GRH;
    wc.sl = 3;
    ibv_ah_attr a{};
    REQUIRE(ibv_init_ah_from_wc(fx.ctx, 1, &wc, &grh, &a) == 0);
    CHECK(a.is_global == 1);
    CHECK(a.port_num == 1);
    CHECK(a.sl == 3);
    CHECK(std::memcmp(&a.grh.dgid, &grh.sgid, 16) == 0);
    CHECK(a.grh.sgid_index == 0);
    CHECK(a.grh.hop_limit == 9);
    CHECK(a.grh.traffic_class == 0x12);
    CHECK(a.grh.flow_label == 0xabcde);
    ibv_ah* ah = ibv_create_ah_from_wc(fx.pd, &wc, &grh, 1);
    REQUIRE(ah != nullptr);
    CHECK(ibv_destroy_ah(ah) == 0);
    SECTION("a GID the port does not have, or a multicast one") {
        grh.dgid.raw[15] ^= 1;
        CHECK(ibv_init_ah_from_wc(fx.ctx, 1, &wc, &grh, &a) == -1);
        grh.dgid.raw[0] = 0xff;
        errno = 0;
        CHECK(ibv_init_ah_from_wc(fx.ctx, 1, &wc, &grh, &a) == -1);
        CHECK(errno == EINVAL);
    }
    SECTION("a next header that is neither UDP nor the BTH") {
        grh.next_hdr = 6;
        errno = 0;
        CHECK(ibv_init_ah_from_wc(fx.ctx, 1, &wc, &grh, &a) == -1);
        CHECK(errno == EPROTONOSUPPORT);
    }
    SECTION("without IBV_WC_GRH the AH is not global") {
        wc.wc_flags = 0;
        REQUIRE(ibv_init_ah_from_wc(fx.ctx, 1, &wc, &grh, &a) == 0);
        CHECK(a.is_global == 0);
        errno = 0;
        CHECK(ibv_create_ah_from_wc(fx.pd, &wc, &grh, 1) == nullptr);
        CHECK(errno == EINVAL);
    }
}

TEST_CASE("ibv_init_ah_from_wc: RoCE v2 over IPv4 (the header in the last 20 bytes)", "[ah]") {
    SimFixture fx;
    ibv_gid own{};
    const int index = v4_gid_index(fx.ctx, own);
    const std::uint8_t peer[4] = {192, 0, 2, 77};
    const std::uint8_t unknown[4] = {192, 0, 2, 250};
    ibv_wc wc{};
    wc.wc_flags = IBV_WC_GRH;
    ibv_grh grh{};
    ibv_ah_attr a{};
    // A destination that is not the port's: no GID matches.
    put_ipv4(grh, peer, unknown);
    if (index < 0 || std::memcmp(own.raw + 12, unknown, 4) != 0)
        CHECK(ibv_init_ah_from_wc(fx.ctx, 1, &wc, &grh, &a) == -1);
    // A multicast destination is EINVAL.
    const std::uint8_t group[4] = {239, 1, 1, 1};
    put_ipv4(grh, peer, group);
    errno = 0;
    CHECK(ibv_init_ah_from_wc(fx.ctx, 1, &wc, &grh, &a) == -1);
    CHECK(errno == EINVAL);
    if (index >= 0) {
        // To the port's own IPv4 address: the sender's address as an
        // IPv4-mapped GID, the port's GID index, TTL and TOS.
        put_ipv4(grh, peer, own.raw + 12);
        REQUIRE(ibv_init_ah_from_wc(fx.ctx, 1, &wc, &grh, &a) == 0);
        CHECK(a.is_global == 1);
        CHECK(a.grh.sgid_index == index);
        CHECK(a.grh.dgid.raw[10] == 0xff);
        CHECK(a.grh.dgid.raw[11] == 0xff);
        CHECK(std::memcmp(a.grh.dgid.raw + 12, peer, 4) == 0);
        CHECK(a.grh.hop_limit == 33);
        CHECK(a.grh.traffic_class == 0x28);
    }
}
