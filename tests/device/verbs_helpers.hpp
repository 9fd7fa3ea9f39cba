// Small helpers the device tests share: frames built byte by byte, a
// registered buffer, and the verbs calls every test repeats (create a CQ or a
// WQ, move it to RDY, post one receive, a steered WQ, frames through a WQ of
// their own). They call verbs exactly as a program does. The pieces a receive
// set-up is made of (the RSS key, the catch-all flow attribute, RSS QP and WQ
// attributes and state, a context and PD) come from
// tests/support/receive_rig.hpp; reading a CQ (drain, seen) from
// tests/support/completions.hpp; raw-packet QPs from tests/support/raw_qp.hpp.
#pragma once

#include <infiniband/verbs.h>

#include <catch2/catch.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "datapath/counters.hpp"
#include "tests/support/completions.hpp"
#include "tests/support/raw_qp.hpp"
#include "tests/support/receive_rig.hpp"
#include "tests/support/sim_fixture.hpp"

namespace rdmasim::test {

using Frame = std::vector<std::uint8_t>;
// SimFixture({{"k", "v"}}) is ambiguous with the deleted copy constructor; spell the type.
using Settings = std::vector<std::pair<std::string, std::string>>;
using Mac = std::array<std::uint8_t, 6>;

inline constexpr Mac kDstMac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
inline constexpr Mac kSrcMac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};

inline void put16(Frame& f, std::uint16_t v) {
    f.push_back(static_cast<std::uint8_t>(v >> 8));
    f.push_back(static_cast<std::uint8_t>(v));
}
inline void put32(Frame& f, std::uint32_t v) {
    put16(f, static_cast<std::uint16_t>(v >> 16));
    put16(f, static_cast<std::uint16_t>(v));
}

// An Ethernet II frame: dst, src, ether type, then `payload_len` bytes of a pattern.
inline Frame eth_frame(const Mac& dst, const Mac& src, std::uint16_t ether_type,
                       std::size_t payload_len = 46) {
    Frame f(dst.begin(), dst.end());
    f.insert(f.end(), src.begin(), src.end());
    put16(f, ether_type);
    for (std::size_t i = 0; i < payload_len; ++i)
        f.push_back(static_cast<std::uint8_t>(i));
    return f;
}

// Ethernet + IPv4 (20-byte header, valid checksum) + TCP (20-byte header) +
// `payload_len` bytes. Addresses are host-order integers (a.b.c.d = 0xaabbccdd).
inline Frame ipv4_tcp_frame(std::uint32_t src_ip, std::uint32_t dst_ip, std::uint16_t src_port,
                            std::uint16_t dst_port, const Mac& dst_mac = kDstMac,
                            std::size_t payload_len = 16) {
    Frame f(dst_mac.begin(), dst_mac.end());
    f.insert(f.end(), kSrcMac.begin(), kSrcMac.end());
    put16(f, 0x0800);
    const std::size_t ip_at = f.size();
    f.push_back(0x45);
    f.push_back(0);
    put16(f, static_cast<std::uint16_t>(20 + 20 + payload_len));
    put16(f, 0x1234); // id
    put16(f, 0x4000); // DF, offset 0
    f.push_back(64);  // ttl
    f.push_back(6);   // TCP
    put16(f, 0);      // checksum, below
    put32(f, src_ip);
    put32(f, dst_ip);
    std::uint32_t sum = 0;
    for (std::size_t i = 0; i < 20; i += 2)
        sum += static_cast<std::uint32_t>(f[ip_at + i] << 8 | f[ip_at + i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    const auto csum = static_cast<std::uint16_t>(~sum);
    f[ip_at + 10] = static_cast<std::uint8_t>(csum >> 8);
    f[ip_at + 11] = static_cast<std::uint8_t>(csum);
    put16(f, src_port);
    put16(f, dst_port);
    put32(f, 1); // seq
    put32(f, 0); // ack
    f.push_back(0x50);
    f.push_back(0x18); // PSH ACK
    put16(f, 0xffff);  // window
    put16(f, 0);       // checksum (not checked by these tests)
    put16(f, 0);       // urgent
    for (std::size_t i = 0; i < payload_len; ++i)
        f.push_back(static_cast<std::uint8_t>(0xa0 + i));
    return f;
}

// A buffer registered with LOCAL_WRITE on `pd`; slot(i) is the i-th 2 KiB slot.
class MrBuffer {
public:
    static constexpr std::uint32_t kSlot = 2048;
    MrBuffer(ibv_pd* pd, std::size_t slots) : bytes_(slots * kSlot, 0) {
        mr_ = ibv_reg_mr(pd, bytes_.data(), bytes_.size(), int{IBV_ACCESS_LOCAL_WRITE});
        REQUIRE(mr_ != nullptr);
    }
    ~MrBuffer() {
        if (mr_) ibv_dereg_mr(mr_);
    }
    MrBuffer(const MrBuffer&) = delete;
    MrBuffer& operator=(const MrBuffer&) = delete;

    [[nodiscard]] ibv_sge sge(std::size_t i) const {
        return {reinterpret_cast<std::uint64_t>(bytes_.data() + i * kSlot), kSlot, mr_->lkey};
    }
    [[nodiscard]] const std::uint8_t* slot(std::size_t i) const {
        return bytes_.data() + i * kSlot;
    }
    [[nodiscard]] ibv_mr* mr() const { return mr_; }

private:
    std::vector<std::uint8_t> bytes_;
    ibv_mr* mr_ = nullptr;
};

// An 802.1Q-tagged Ethernet frame (TPID 0x8100, `tci`) carrying `ether_type`.
inline Frame vlan_frame(std::uint16_t tci, std::uint16_t ether_type = 0x88b5,
                        std::size_t payload_len = 46) {
    Frame f(kDstMac.begin(), kDstMac.end());
    f.insert(f.end(), kSrcMac.begin(), kSrcMac.end());
    put16(f, 0x8100);
    put16(f, tci);
    put16(f, ether_type);
    for (std::size_t i = 0; i < payload_len; ++i)
        f.push_back(static_cast<std::uint8_t>(i));
    return f;
}

// Matches frames to `dst` (every frame when dst is null: all-zero masks).
inline EthFlowAttr eth_flow(const Mac* dst = nullptr, std::uint16_t priority = 0,
                            ibv_flow_attr_type type = IBV_FLOW_ATTR_NORMAL) {
    EthFlowAttr f = catch_all_flow(priority, type);
    if (dst != nullptr) {
        std::memcpy(f.eth.val.dst_mac, dst->data(), 6);
        std::memset(f.eth.mask.dst_mac, 0xff, 6);
    }
    return f;
}

inline ibv_flow* make_flow(ibv_qp* qp, EthFlowAttr f) {
    ibv_flow* flow = ibv_create_flow(qp, &f.attr);
    REQUIRE(flow != nullptr);
    return flow;
}

inline ibv_rwq_ind_table* make_table(ibv_context* ctx, std::vector<ibv_wq*>& wqs,
                                     std::uint32_t log_size) {
    REQUIRE(wqs.size() == (std::size_t{1} << log_size));
    ibv_rwq_ind_table_init_attr a{};
    a.log_ind_tbl_size = log_size;
    a.ind_tbl = wqs.data();
    ibv_rwq_ind_table* t = ibv_create_rwq_ind_table(ctx, &a);
    REQUIRE(t != nullptr);
    return t;
}

// How frames reach WQs: an indirection table over them, an RSS QP and a flow
// rule that takes every frame. Torn down in reverse order.
class Steering {
public:
    Steering(ibv_pd* pd, std::vector<ibv_wq*> wqs, std::uint32_t log_size = 0,
             std::uint64_t fields = 0)
        : wqs_(std::move(wqs)) {
        table_ = make_table(pd->context, wqs_, log_size);
        ibv_qp_init_attr_ex a = rss_qp_attr(pd, table_, fields);
        qp_ = ibv_create_qp_ex(pd->context, &a);
        REQUIRE(qp_ != nullptr);
        flow_ = make_flow(qp_, eth_flow());
    }
    ~Steering() {
        CHECK(ibv_destroy_flow(flow_) == 0);
        CHECK(ibv_destroy_qp(qp_) == 0);
        CHECK(ibv_destroy_rwq_ind_table(table_) == 0);
    }
    Steering(const Steering&) = delete;
    Steering& operator=(const Steering&) = delete;
    [[nodiscard]] ibv_rwq_ind_table* table() const { return table_; }
    [[nodiscard]] ibv_qp* qp() const { return qp_; }

private:
    std::vector<ibv_wq*> wqs_;
    ibv_rwq_ind_table* table_ = nullptr;
    ibv_qp* qp_ = nullptr;
    ibv_flow* flow_ = nullptr;
};

// A second context on the fixture's device: objects from it belong to "another context".
class OtherContext : public VerbsDevice {
public:
    OtherContext() : VerbsDevice(false) {
        cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
        REQUIRE(cq != nullptr);
    }
    ~OtherContext() { CHECK(ibv_destroy_cq(cq) == 0); }
    OtherContext(const OtherContext&) = delete;
    OtherContext& operator=(const OtherContext&) = delete;

    ibv_cq* cq = nullptr;
};

inline ibv_cq* make_cq(ibv_context* ctx, int cqe = 64) {
    ibv_cq* cq = ibv_create_cq(ctx, cqe, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    return cq;
}

inline ibv_wq_init_attr wq_attr(ibv_pd* pd, ibv_cq* cq, std::uint32_t max_wr = 16,
                                std::uint32_t max_sge = 1) {
    return wq_init_attr(pd, cq, max_wr, max_sge);
}

inline ibv_wq* make_wq(ibv_pd* pd, ibv_cq* cq, std::uint32_t max_wr = 16,
                       std::uint32_t max_sge = 1) {
    ibv_wq_init_attr a = wq_attr(pd, cq, max_wr, max_sge);
    ibv_wq* wq = ibv_create_wq(pd->context, &a);
    REQUIRE(wq != nullptr);
    return wq;
}

inline int post_wq(ibv_wq* wq, std::uint64_t wr_id, ibv_sge sge) {
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_wq_recv(wq, &wr, &bad);
}

inline int post_qp(ibv_qp* qp, std::uint64_t wr_id, ibv_sge sge) {
    ibv_recv_wr wr{};
    wr.wr_id = wr_id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    return ibv_post_recv(qp, &wr, &bad);
}

// Steers every frame to the ready `wq` (an RSS QP of `pd`), offers `f` with a
// WQE (wr_id 7) on an MR of `mr_pd`, and checks that it arrives on `cq` as it
// was sent: the whole frame, unchanged (no tag stripped, no FCS).
inline void check_passes_unchanged(SimFixture& fx, ibv_pd* pd, ibv_pd* mr_pd, ibv_wq* wq,
                                   ibv_cq* cq, const Frame& f) {
    MrBuffer buf(mr_pd, 1);
    Steering steer(pd, {wq});
    REQUIRE(post_wq(wq, 7, buf.sge(0)) == 0);
    fx.offer(f);
    const auto wcs = drain(cq);
    REQUIRE(wcs.size() == 1);
    CHECK(wcs[0].status == IBV_WC_SUCCESS);
    CHECK(wcs[0].wr_id == 7);
    CHECK(wcs[0].byte_len == f.size());
    CHECK(wcs[0].qp_num == wq->wq_num);
    CHECK(std::memcmp(buf.slot(0), f.data(), f.size()) == 0);
    CHECK(fx.balanced());
}

// A plain raw-packet QP with its own CQ, moved RESET -> INIT (with IBV_QP_PORT,
// as mlx5 programs do) -> RTR -> RTS.
class RawQp {
public:
    explicit RawQp(ibv_pd* pd, std::uint32_t depth = 16, std::uint32_t create_flags = 0) {
        cq = make_cq(pd->context, 64);
        qp = make_raw_qp(pd, cq, cq,
                         {.send_wr = depth, .recv_wr = depth, .create_flags = create_flags});
        raw_qp_to_rts(qp);
        REQUIRE(qp->state == IBV_QPS_RTS);
    }
    ~RawQp() {
        CHECK(ibv_destroy_qp(qp) == 0);
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    RawQp(const RawQp&) = delete;
    RawQp& operator=(const RawQp&) = delete;

    ibv_cq* cq = nullptr;
    ibv_qp* qp = nullptr;
};

inline std::uint64_t drops(SimFixture& fx, datapath::Drop d) {
    return fx.port().drops[static_cast<std::size_t>(d)].get();
}

// A WQ in RDY (created with `create_flags`) behind an RSS QP and a catch-all
// flow, with a CQ of its own (64 entries); the WQ takes 16 WQEs of one SGE.
struct SteeredWq {
    explicit SteeredWq(ibv_pd* pd, std::uint32_t create_flags = 0) {
        cq = make_cq(pd->context, 64);
        ibv_wq_init_attr a = wq_init_attr(pd, cq, 16, 1, create_flags);
        wq = ibv_create_wq(pd->context, &a);
        REQUIRE(wq != nullptr);
        REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
        steering = std::make_unique<Steering>(pd, std::vector<ibv_wq*>{wq});
    }
    ~SteeredWq() {
        steering.reset();
        CHECK(ibv_destroy_wq(wq) == 0);
        CHECK(ibv_destroy_cq(cq) == 0);
    }
    SteeredWq(const SteeredWq&) = delete;
    SteeredWq& operator=(const SteeredWq&) = delete;

    ibv_cq* cq = nullptr;
    ibv_wq* wq = nullptr;
    std::unique_ptr<Steering> steering;
};

// Completes `frames` frames on `cq` through a WQ of their own (one WQE each,
// wr_id 0, 1, ...; steered to by a catch-all flow), then removes the WQ and
// its steering: what they left on `cq` (completions, an overrun) stays, and
// nothing else uses the CQ.
inline void complete_through_wq(SimFixture& fx, ibv_cq* cq, std::uint32_t frames) {
    ibv_wq* wq = make_wq(fx.pd, cq, frames);
    REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
    MrBuffer buf(fx.pd, frames);
    for (std::uint32_t i = 0; i < frames; ++i)
        REQUIRE(post_wq(wq, i, buf.sge(i)) == 0);
    {
        Steering steer(fx.pd, {wq});
        for (std::uint32_t i = 0; i < frames; ++i)
            fx.offer(eth_frame(kDstMac, kSrcMac, 0x88b5));
        fx.pump_all();
    }
    REQUIRE(ibv_destroy_wq(wq) == 0);
}

} // namespace rdmasim::test
