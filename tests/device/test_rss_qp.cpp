// RSS: indirection tables and RSS QPs (device/README.md, "Indirection tables and RSS QPs"), and frames
// distributed to WQs as an independent Toeplitz model predicts.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "tests/device/verbs_helpers.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

constexpr std::uint64_t kIpv4 = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4;
constexpr std::uint64_t kIpv6 = IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6;
constexpr std::uint64_t kTcp = IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP;
constexpr std::uint64_t kUdp = IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP;

// Toeplitz the slow way, straight from the definition: for every set bit of
// the input (most significant first) xor in the 32 key bits starting there.
std::uint32_t reference_toeplitz(const std::array<std::uint8_t, 40>& key,
                                 const std::vector<std::uint8_t>& input) {
    auto key_bit = [&](std::size_t i) -> std::uint32_t {
        return i / 8 < key.size() ? (key[i / 8] >> (7 - i % 8)) & 1u : 0u;
    };
    std::uint32_t result = 0;
    for (std::size_t bit = 0; bit < input.size() * 8; ++bit) {
        if (((input[bit / 8] >> (7 - bit % 8)) & 1u) == 0) continue;
        std::uint32_t window = 0;
        for (std::size_t k = 0; k < 32; ++k)
            window = window << 1 | key_bit(bit + k);
        result ^= window;
    }
    return result;
}

struct Tuple {
    std::uint32_t src_ip, dst_ip;
    std::uint16_t src_port, dst_port;
};

std::vector<std::uint8_t> hash_input(const Tuple& t, bool with_ports) {
    std::vector<std::uint8_t> in;
    put32(in, t.src_ip);
    put32(in, t.dst_ip);
    if (with_ports) {
        put16(in, t.src_port);
        put16(in, t.dst_port);
    }
    return in;
}

constexpr std::uint32_t ip(std::uint8_t a, std::uint8_t b, std::uint8_t c, std::uint8_t d) {
    return std::uint32_t{a} << 24 | std::uint32_t{b} << 16 | std::uint32_t{c} << 8 | d;
}

ibv_qp* create_qp_errno(ibv_context* ctx, ibv_qp_init_attr_ex a, int& err) {
    errno = 0;
    ibv_qp* qp = ibv_create_qp_ex(ctx, &a);
    err = qp ? 0 : errno;
    return qp;
}

int qp_errno(ibv_context* ctx, const ibv_qp_init_attr_ex& a) {
    int err = 0;
    ibv_qp* qp = create_qp_errno(ctx, a, err);
    if (qp) REQUIRE(ibv_destroy_qp(qp) == 0);
    return err;
}

int table_errno(ibv_context* ctx, ibv_rwq_ind_table_init_attr a) {
    errno = 0;
    ibv_rwq_ind_table* t = ibv_create_rwq_ind_table(ctx, &a);
    if (t == nullptr) return errno == 0 ? -1 : errno;
    REQUIRE(ibv_destroy_rwq_ind_table(t) == 0);
    return 0;
}

} // namespace

TEST_CASE("the test's reference Toeplitz matches the Microsoft verification suite",
          "[device][rss]") {
    const Tuple t{ip(66, 9, 149, 187), ip(161, 142, 100, 80), 2794, 1766};
    CHECK(reference_toeplitz(kMsKey, hash_input(t, false)) == 0x323e8fc2u);
    CHECK(reference_toeplitz(kMsKey, hash_input(t, true)) == 0x51ccc178u);
}

TEST_CASE("ibv_create_rwq_ind_table rules", "[device][rss]") {
    SimFixture fx;
    ibv_device_attr_ex dev;
    REQUIRE(ibv_query_device_ex(fx.ctx, nullptr, &dev) == 0);
    const std::uint32_t max_size = dev.rss_caps.max_rwq_indirection_table_size;
    REQUIRE(max_size > 0);
    std::uint32_t max_log = 0;
    while ((2u << max_log) <= max_size)
        ++max_log;

    ibv_cq* cq = make_cq(fx.ctx);
    ibv_wq* wq = make_wq(fx.pd, cq);
    std::vector<ibv_wq*> entries(std::size_t{2} << max_log, wq);
    ibv_rwq_ind_table_init_attr a{};
    a.ind_tbl = entries.data();

    SECTION("up to the reported size is accepted, above it EINVAL") {
        a.log_ind_tbl_size = max_log;
        CHECK(table_errno(fx.ctx, a) == 0);
        a.log_ind_tbl_size = max_log + 1;
        CHECK(table_errno(fx.ctx, a) == EINVAL);
        a.log_ind_tbl_size = 31;
        CHECK(table_errno(fx.ctx, a) == EINVAL);
        a.log_ind_tbl_size = 0xffffffffu;
        CHECK(table_errno(fx.ctx, a) == EINVAL);
    }
    SECTION("a non-zero comp_mask is EINVAL") {
        a.log_ind_tbl_size = 1;
        a.comp_mask = 1;
        CHECK(table_errno(fx.ctx, a) == EINVAL);
    }
    SECTION("every WQ must belong to the context") {
        OtherContext other;
        ibv_wq* foreign = make_wq(other.pd, other.cq);
        std::vector<ibv_wq*> mixed{wq, foreign};
        a.ind_tbl = mixed.data();
        a.log_ind_tbl_size = 1;
        CHECK(table_errno(fx.ctx, a) == EINVAL);
        // The refused table holds nothing: the WQs can go.
        CHECK(ibv_destroy_wq(foreign) == 0);
    }
    SECTION("a NULL entry is EINVAL") {
        std::vector<ibv_wq*> holes{wq, nullptr};
        a.ind_tbl = holes.data();
        a.log_ind_tbl_size = 1;
        CHECK(table_errno(fx.ctx, a) == EINVAL);
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("ibv_create_qp_ex: RSS configuration rules", "[device][rss]") {
    SimFixture fx;
    ibv_cq* cq = make_cq(fx.ctx);
    std::vector<ibv_wq*> wqs{make_wq(fx.pd, cq), make_wq(fx.pd, cq)};
    std::vector<ibv_wq*> one{wqs[0]};
    ibv_rwq_ind_table* table2 = make_table(fx.ctx, wqs, 1);
    ibv_rwq_ind_table* table1 = make_table(fx.ctx, one, 0);

    SECTION("a Toeplitz QP with IPv4 + TCP fields is accepted") {
        CHECK(qp_errno(fx.ctx, rss_qp_attr(fx.pd, table2, kIpv4 | kTcp)) == 0);
        CHECK(qp_errno(fx.ctx, rss_qp_attr(fx.pd, table2, kIpv6 | kUdp)) == 0);
        CHECK(qp_errno(fx.ctx, rss_qp_attr(fx.pd, table2, IBV_RX_HASH_DST_IPV4)) == 0);
    }
    SECTION("a hash function other than Toeplitz is EOPNOTSUPP") {
        ibv_qp_init_attr_ex a = rss_qp_attr(fx.pd, table2, kIpv4);
        a.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ << 1;
        CHECK(qp_errno(fx.ctx, a) == EOPNOTSUPP);
        a.rx_hash_conf.rx_hash_function = 0;
        CHECK(qp_errno(fx.ctx, a) == EOPNOTSUPP);
    }
    SECTION("a key length other than 40 is EINVAL") {
        for (const std::uint8_t len : {0, 16, 39, 41, 52}) {
            CAPTURE(len);
            ibv_qp_init_attr_ex a = rss_qp_attr(fx.pd, table2, kIpv4);
            a.rx_hash_conf.rx_hash_key_len = len;
            CHECK(qp_errno(fx.ctx, a) == EINVAL);
        }
    }
    SECTION("no hash fields only with a one-entry table") {
        CHECK(qp_errno(fx.ctx, rss_qp_attr(fx.pd, table2, 0)) == EINVAL);
        CHECK(qp_errno(fx.ctx, rss_qp_attr(fx.pd, table1, 0)) == 0);
    }
    SECTION("IPv4 and IPv6 fields mixed is EINVAL") {
        CHECK(qp_errno(fx.ctx, rss_qp_attr(fx.pd, table2, kIpv4 | kIpv6)) == EINVAL);
        CHECK(qp_errno(fx.ctx, rss_qp_attr(fx.pd, table2,
                                           IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV6)) == EINVAL);
    }
    SECTION("TCP and UDP ports both is EINVAL") {
        CHECK(qp_errno(fx.ctx, rss_qp_attr(fx.pd, table2, kIpv4 | kTcp | kUdp)) == EINVAL);
        CHECK(qp_errno(fx.ctx, rss_qp_attr(fx.pd, table2,
                                           IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_UDP)) ==
              EINVAL);
    }
    SECTION("a table from another context is EINVAL") {
        OtherContext other;
        ibv_wq* foreign = make_wq(other.pd, other.cq);
        std::vector<ibv_wq*> f{foreign};
        ibv_rwq_ind_table* ft = make_table(other.ctx, f, 0);
        CHECK(qp_errno(fx.ctx, rss_qp_attr(fx.pd, ft, 0)) == EINVAL);
        REQUIRE(ibv_destroy_rwq_ind_table(ft) == 0);
        REQUIRE(ibv_destroy_wq(foreign) == 0);
    }
    SECTION("RSS on qp types other than RAW_PACKET is EOPNOTSUPP") {
        for (const ibv_qp_type t : {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_XRC_SEND,
                                    IBV_QPT_XRC_RECV, IBV_QPT_DRIVER}) {
            CAPTURE(t);
            ibv_qp_init_attr_ex a = rss_qp_attr(fx.pd, table2, kIpv4);
            a.qp_type = t;
            CHECK(qp_errno(fx.ctx, a) == EOPNOTSUPP);
            // The plain path (comp_mask PD only goes through ibv_create_qp) too,
            // for the types that are not emulated (RC, UC, UD are: test_rc_qp_state;
            // XRC: test_xrc).
            if (t != IBV_QPT_DRIVER) continue;
            ibv_qp_init_attr_ex p{};
            p.qp_type = t;
            p.comp_mask = IBV_QP_INIT_ATTR_PD;
            p.pd = fx.pd;
            p.send_cq = cq;
            p.recv_cq = cq;
            p.cap.max_send_wr = 1;
            p.cap.max_recv_wr = 1;
            p.cap.max_send_sge = 1;
            p.cap.max_recv_sge = 1;
            CHECK(qp_errno(fx.ctx, p) == EOPNOTSUPP);
        }
    }
    REQUIRE(ibv_destroy_rwq_ind_table(table1) == 0);
    REQUIRE(ibv_destroy_rwq_ind_table(table2) == 0);
    for (ibv_wq* wq : wqs)
        REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("frames are spread over WQs as Toeplitz predicts", "[device][rss]") {
    struct Variant {
        const char* name;
        std::uint64_t fields;
        std::uint32_t log_size;
        bool ports;
    };
    const Variant variant = GENERATE(Variant{"IPv4 + TCP, 4 WQs", kIpv4 | kTcp, 2, true},
                                     Variant{"IPv4 only, 8 WQs", kIpv4, 3, false});
    CAPTURE(variant.name);
    SimFixture fx;
    const std::uint32_t n_wqs = 1u << variant.log_size;
    constexpr std::size_t kFrames = 48;
    ibv_cq* cq = make_cq(fx.ctx, 128);
    std::vector<ibv_wq*> wqs;
    for (std::uint32_t i = 0; i < n_wqs; ++i) {
        wqs.push_back(make_wq(fx.pd, cq, kFrames + 4));
        REQUIRE(set_wq_state(wqs.back(), IBV_WQS_RDY) == 0);
    }
    // Every WQ gets a WQE for every frame; wr_id says which buffer slot.
    MrBuffer buf(fx.pd, n_wqs * (kFrames + 2));
    for (std::uint32_t w = 0; w < n_wqs; ++w)
        for (std::size_t k = 0; k < kFrames + 2; ++k) {
            const std::size_t slot = w * (kFrames + 2) + k;
            REQUIRE(post_wq(wqs[w], slot, buf.sge(slot)) == 0);
        }

    std::vector<Frame> frames;
    std::vector<std::uint32_t> expected_wq;
    // The published vector first, then a spread of tuples.
    std::vector<Tuple> tuples{{ip(66, 9, 149, 187), ip(161, 142, 100, 80), 2794, 1766},
                              {ip(199, 92, 111, 2), ip(65, 69, 140, 83), 14230, 4739},
                              {ip(24, 19, 198, 95), ip(12, 22, 207, 184), 12898, 38024}};
    for (std::uint32_t i = 0; tuples.size() < kFrames - 2; ++i)
        tuples.push_back({ip(10, 0, static_cast<std::uint8_t>(i / 7), static_cast<std::uint8_t>(i)),
                          ip(192, 168, 1, static_cast<std::uint8_t>(1 + i % 5)),
                          static_cast<std::uint16_t>(1024 + 37 * i),
                          static_cast<std::uint16_t>(80 + (i % 3) * 363)});
    for (const Tuple& t : tuples) {
        frames.push_back(ipv4_tcp_frame(t.src_ip, t.dst_ip, t.src_port, t.dst_port));
        const std::uint32_t h = reference_toeplitz(kMsKey, hash_input(t, variant.ports));
        expected_wq.push_back(h & (n_wqs - 1));
    }
    // An 802.1Q-tagged copy of the first tuple hashes the same: the parser looks through the tag.
    {
        Frame tagged = frames[0];
        const std::uint8_t tag[4] = {0x81, 0x00, 0x00, 0x05};
        tagged.insert(tagged.begin() + 12, tag, tag + 4);
        frames.push_back(tagged);
        expected_wq.push_back(expected_wq[0]);
    }
    // A frame without IPv4 hashes to 0: entry 0.
    frames.push_back(eth_frame(kDstMac, kSrcMac, 0x88b5, 60));
    expected_wq.push_back(0);
    REQUIRE(frames.size() == kFrames);

    {
        Steering steer(fx.pd, wqs, variant.log_size, variant.fields);
        for (const Frame& f : frames)
            fx.offer(f);
        const auto wcs = drain(cq);
        REQUIRE(wcs.size() == kFrames);
        std::vector<std::uint32_t> per_wq(n_wqs, 0);
        for (std::size_t i = 0; i < kFrames; ++i) {
            CAPTURE(i);
            REQUIRE(wcs[i].status == IBV_WC_SUCCESS);
            const ibv_wq* want = wqs[expected_wq[i]];
            CHECK(wcs[i].qp_num == want->wq_num);
            CHECK(wcs[i].byte_len == frames[i].size());
            CHECK(std::memcmp(buf.slot(wcs[i].wr_id), frames[i].data(), frames[i].size()) == 0);
            // The slot belongs to the WQ the completion names.
            CHECK(wcs[i].wr_id / (kFrames + 2) == expected_wq[i]);
            ++per_wq[expected_wq[i]];
        }
        // The spread is real: more than one WQ got traffic.
        std::size_t used = 0;
        for (const auto n : per_wq)
            used += n != 0;
        CHECK(used > 1);
        CHECK(fx.port().delivered.get() == kFrames);
        CHECK(fx.balanced());
    }
    for (ibv_wq* wq : wqs)
        REQUIRE(ibv_destroy_wq(wq) == 0);
    REQUIRE(ibv_destroy_cq(cq) == 0);
}
