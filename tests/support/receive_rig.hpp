// A program's receive set-up, written once for every test that needs one:
// CQ-ex(s), a buffer registered as one MR, N WQs (moved to RDY and filled
// with WQEs), an indirection table over them, an RSS QP and a catch-all flow
// (an ETH spec with all-zero masks). Everything goes through the verbs API,
// is torn down in reverse order, and every destroy must return 0.
//
// Assertions are Catch2's REQUIRE / CHECK unless the includer defines
// RECEIVE_RIG_REQUIRE and RECEIVE_RIG_CHECK first (the fuzz targets do).
#pragma once

#include <infiniband/verbs.h>

#if !defined(RECEIVE_RIG_REQUIRE) && !defined(RECEIVE_RIG_CHECK)
#include <catch2/catch.hpp>
#define RECEIVE_RIG_REQUIRE(cond) REQUIRE(cond)
#define RECEIVE_RIG_CHECK(cond) CHECK(cond)
#elif !defined(RECEIVE_RIG_REQUIRE) || !defined(RECEIVE_RIG_CHECK)
#error "define both RECEIVE_RIG_REQUIRE and RECEIVE_RIG_CHECK, or neither"
#endif

#include <array>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "datapath/toeplitz.hpp"

namespace rdmasim::test {

// The Microsoft RSS verification key (its one home is datapath/toeplitz.hpp;
// this name stays for the tests that use it).
inline constexpr const auto& kMsKey = datapath::kMicrosoftRssKey;

// A flow attribute with one ETH spec, laid out as a program does.
struct EthFlowAttr {
    ibv_flow_attr attr;
    ibv_flow_spec_eth eth;
};

// One ETH spec with all-zero masks: matches every frame.
inline EthFlowAttr catch_all_flow(std::uint16_t priority = 0,
                                  ibv_flow_attr_type type = IBV_FLOW_ATTR_NORMAL) {
    EthFlowAttr f;
    std::memset(&f, 0, sizeof f);
    f.attr.type = type;
    f.attr.size = sizeof f;
    f.attr.priority = priority;
    f.attr.num_of_specs = 1;
    f.attr.port = 1;
    f.eth.type = IBV_FLOW_SPEC_ETH;
    f.eth.size = sizeof f.eth;
    return f;
}

// A raw-packet QP hashing `fields` with Toeplitz over kMsKey, steering to `table`.
inline ibv_qp_init_attr_ex rss_qp_attr(ibv_pd* pd, ibv_rwq_ind_table* table, std::uint64_t fields) {
    ibv_qp_init_attr_ex a{};
    a.qp_type = IBV_QPT_RAW_PACKET;
    a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;
    a.pd = pd;
    a.rwq_ind_tbl = table;
    a.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
    a.rx_hash_conf.rx_hash_key_len = kMsKey.size();
    a.rx_hash_conf.rx_hash_key = const_cast<std::uint8_t*>(kMsKey.data());
    a.rx_hash_conf.rx_hash_fields_mask = fields;
    return a;
}

// A receive WQ's attributes; create flags (and their comp_mask bit) only when given.
inline ibv_wq_init_attr wq_init_attr(ibv_pd* pd, ibv_cq* cq, std::uint32_t max_wr,
                                     std::uint32_t max_sge, std::uint32_t create_flags = 0) {
    ibv_wq_init_attr a{};
    a.wq_type = IBV_WQT_RQ;
    a.max_wr = max_wr;
    a.max_sge = max_sge;
    a.pd = pd;
    a.cq = cq;
    if (create_flags != 0) {
        a.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
        a.create_flags = create_flags;
    }
    return a;
}

inline int set_wq_state(ibv_wq* wq, ibv_wq_state state) {
    ibv_wq_attr a{};
    a.attr_mask = IBV_WQ_ATTR_STATE;
    a.wq_state = state;
    return ibv_modify_wq(wq, &a);
}

// A program's own context and PD on the first device (`only_device`: it must be the only one).
class VerbsDevice {
public:
    explicit VerbsDevice(bool only_device = true) {
        int n = 0;
        ibv_device** list = ibv_get_device_list(&n);
        RECEIVE_RIG_REQUIRE(list != nullptr);
        if (only_device) {
            RECEIVE_RIG_REQUIRE(n == 1);
        } else {
            RECEIVE_RIG_REQUIRE(n >= 1);
        }
        ctx = ibv_open_device(list[0]);
        ibv_free_device_list(list);
        RECEIVE_RIG_REQUIRE(ctx != nullptr);
        pd = ibv_alloc_pd(ctx);
        RECEIVE_RIG_REQUIRE(pd != nullptr);
    }
    ~VerbsDevice() {
        RECEIVE_RIG_CHECK(ibv_dealloc_pd(pd) == 0);
        RECEIVE_RIG_CHECK(ibv_close_device(ctx) == 0);
    }
    VerbsDevice(const VerbsDevice&) = delete;
    VerbsDevice& operator=(const VerbsDevice&) = delete;

    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
};

// What a ReceiveRig sets up. Per-WQ lists apply to WQ w as list[w % size].
struct RigOptions {
    std::uint32_t wqs = 1;           // a power of two: the table covers them all
    std::uint32_t depth = 16;        // WQEs per WQ (max_wr)
    std::uint32_t slot_bytes = 2048; // buffer bytes per WQE; 0: no buffer, no MR
    // SGEs per WQE (max_sge), per WQ (empty: 1); a slot is split evenly between them.
    std::vector<std::uint32_t> sges{};
    // WQ create flags, per WQ (empty: none).
    std::vector<std::uint32_t> wq_flags{};
    std::uint64_t wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM;
    std::uint32_t cqs = 1;         // WQ w completes on CQ w % cqs
    std::uint32_t cqe = 0;         // per CQ; 0: every WQE its WQs can have outstanding
    bool ready = true;             // WQs to RDY
    bool fill = true;              // post every slot (wr_id = w * depth + slot)
    bool rss_qp = true;            // an RSS QP over the table (else the table only)
    bool flow = true;              // the catch-all flow now (else attach_flow() later)
    std::uint64_t hash_fields = 0; // the RSS QP's rx_hash_fields_mask (Toeplitz, kMsKey)
};

// One completion, read from a CQ-ex entry; fields its CQ cannot report stay 0.
struct RigCompletion {
    std::uint64_t wr_id = 0;
    ibv_wc_status status = IBV_WC_GENERAL_ERR;
    int opcode = -1;
    std::uint32_t byte_len = 0;
    std::uint32_t qp_num = 0;
    std::uint16_t cvlan = 0;
    unsigned flags = 0; // wc_flags
    std::uint64_t ts = 0;
    const std::uint8_t* bytes = nullptr; // the WQE's slot, when wr_id names one of the rig's
};

class ReceiveRig {
public:
    ReceiveRig(ibv_context* ctx, ibv_pd* pd, RigOptions o) : ctx_(ctx), pd_(pd), o_(std::move(o)) {
        RECEIVE_RIG_REQUIRE(std::has_single_bit(o_.wqs));
        RECEIVE_RIG_REQUIRE(o_.cqs >= 1);
        RECEIVE_RIG_REQUIRE(o_.wqs % o_.cqs == 0);
        if (o_.slot_bytes != 0) {
            mem_.assign(static_cast<std::size_t>(o_.wqs) * o_.depth * o_.slot_bytes, 0);
            mr_ = ibv_reg_mr(pd_, mem_.data(), mem_.size(), int{IBV_ACCESS_LOCAL_WRITE});
            RECEIVE_RIG_REQUIRE(mr_ != nullptr);
        }
        for (std::uint32_t c = 0; c < o_.cqs; ++c) {
            ibv_cq_init_attr_ex ca{};
            ca.cqe = o_.cqe != 0 ? o_.cqe : o_.depth * (o_.wqs / o_.cqs);
            ca.wc_flags = o_.wc_flags;
            ibv_cq_ex* cq = ibv_create_cq_ex(ctx_, &ca);
            RECEIVE_RIG_REQUIRE(cq != nullptr);
            cqs_.push_back(cq);
        }
        for (std::uint32_t w = 0; w < o_.wqs; ++w) {
            ibv_wq_init_attr wa = wq_init_attr(pd_, ibv_cq_ex_to_cq(cqs_[w % o_.cqs]), o_.depth,
                                               sges_of(w), flags_of(w));
            ibv_wq* wq = ibv_create_wq(ctx_, &wa);
            RECEIVE_RIG_REQUIRE(wq != nullptr);
            wqs_.push_back(wq);
            if (o_.ready) RECEIVE_RIG_REQUIRE(set_wq_state(wq, IBV_WQS_RDY) == 0);
            if (o_.fill)
                for (std::uint32_t s = 0; s < o_.depth; ++s)
                    RECEIVE_RIG_REQUIRE(post(std::uint64_t{w} * o_.depth + s) == 0);
        }
        ibv_rwq_ind_table_init_attr ta{};
        ta.log_ind_tbl_size = static_cast<std::uint32_t>(std::countr_zero(o_.wqs));
        ta.ind_tbl = wqs_.data();
        table_ = ibv_create_rwq_ind_table(ctx_, &ta);
        RECEIVE_RIG_REQUIRE(table_ != nullptr);
        if (!o_.rss_qp) return;
        ibv_qp_init_attr_ex qa = rss_qp_attr(pd_, table_, o_.hash_fields);
        qp_ = ibv_create_qp_ex(ctx_, &qa);
        RECEIVE_RIG_REQUIRE(qp_ != nullptr);
        if (o_.flow) attach_flow();
    }
    ~ReceiveRig() {
        if (flow_ != nullptr) RECEIVE_RIG_CHECK(ibv_destroy_flow(flow_) == 0);
        if (qp_ != nullptr) RECEIVE_RIG_CHECK(ibv_destroy_qp(qp_) == 0);
        RECEIVE_RIG_CHECK(ibv_destroy_rwq_ind_table(table_) == 0);
        for (ibv_wq* wq : wqs_)
            RECEIVE_RIG_CHECK(ibv_destroy_wq(wq) == 0);
        for (ibv_cq_ex* cq : cqs_)
            RECEIVE_RIG_CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
        if (mr_ != nullptr) RECEIVE_RIG_CHECK(ibv_dereg_mr(mr_) == 0);
    }
    ReceiveRig(const ReceiveRig&) = delete;
    ReceiveRig& operator=(const ReceiveRig&) = delete;

    // The catch-all flow on the RSS QP (the default start trigger waits for it).
    void attach_flow() {
        RECEIVE_RIG_REQUIRE(qp_ != nullptr);
        RECEIVE_RIG_REQUIRE(flow_ == nullptr);
        EthFlowAttr fa = catch_all_flow();
        flow_ = ibv_create_flow(qp_, &fa.attr);
        RECEIVE_RIG_REQUIRE(flow_ != nullptr);
    }

    // SGE `part` of slot `id` (slot id = w * depth + s is WQE s of WQ w).
    [[nodiscard]] ibv_sge sge(std::uint64_t id, std::uint32_t part = 0) const {
        const std::uint32_t parts = sges_of(static_cast<std::uint32_t>(id / o_.depth));
        const std::uint32_t len = o_.slot_bytes / parts;
        return {reinterpret_cast<std::uint64_t>(slot(id) + std::size_t{part} * len), len,
                mr_->lkey};
    }
    [[nodiscard]] const std::uint8_t* slot(std::uint64_t id) const {
        return mem_.data() + id * o_.slot_bytes;
    }
    // Posts slot `wr_id` on its WQ with wr_id as the WQE's id; returns the verb's result.
    int post(std::uint64_t wr_id) {
        RECEIVE_RIG_REQUIRE(mr_ != nullptr);
        RECEIVE_RIG_REQUIRE(wr_id < std::uint64_t{o_.wqs} * o_.depth);
        const auto w = static_cast<std::uint32_t>(wr_id / o_.depth);
        std::vector<ibv_sge> sg(sges_of(w));
        for (std::uint32_t i = 0; i < sg.size(); ++i)
            sg[i] = sge(wr_id, i);
        ibv_recv_wr wr{};
        wr.wr_id = wr_id;
        wr.sg_list = sg.data();
        wr.num_sge = static_cast<int>(sg.size());
        ibv_recv_wr* bad = nullptr;
        return ibv_post_wq_recv(wqs_[w], &wr, &bad);
    }
    void repost(std::uint64_t wr_id) { RECEIVE_RIG_REQUIRE(post(wr_id) == 0); }

    // Up to `max` completions from CQ `c` (polling pumps the inline engine).
    std::vector<RigCompletion> poll(std::size_t max = std::numeric_limits<std::size_t>::max(),
                                    std::uint32_t c = 0) {
        std::vector<RigCompletion> out;
        ibv_cq_ex* cq = cqs_.at(c);
        ibv_poll_cq_attr pa{};
        int rc = ibv_start_poll(cq, &pa);
        if (rc == ENOENT) return out;
        RECEIVE_RIG_REQUIRE(rc == 0);
        for (;;) {
            out.push_back(read(cq));
            // Stop with the last entry read still current: end_poll consumes it.
            if (out.size() == max) break;
            if ((rc = ibv_next_poll(cq)) != 0) {
                RECEIVE_RIG_REQUIRE(rc == ENOENT);
                break;
            }
        }
        ibv_end_poll(cq);
        return out;
    }

    [[nodiscard]] ibv_cq_ex* cq(std::size_t i = 0) const { return cqs_.at(i); }
    [[nodiscard]] const std::vector<ibv_cq_ex*>& cqs() const { return cqs_; }
    [[nodiscard]] ibv_wq* wq(std::size_t i = 0) const { return wqs_.at(i); }
    [[nodiscard]] const std::vector<ibv_wq*>& wqs() const { return wqs_; }
    [[nodiscard]] ibv_rwq_ind_table* table() const { return table_; }
    [[nodiscard]] ibv_qp* qp() const { return qp_; }
    [[nodiscard]] ibv_mr* mr() const { return mr_; }
    [[nodiscard]] std::uint32_t depth() const { return o_.depth; }

private:
    [[nodiscard]] std::uint32_t sges_of(std::uint32_t w) const {
        return o_.sges.empty() ? 1 : o_.sges[w % o_.sges.size()];
    }
    [[nodiscard]] std::uint32_t flags_of(std::uint32_t w) const {
        return o_.wq_flags.empty() ? 0 : o_.wq_flags[w % o_.wq_flags.size()];
    }
    [[nodiscard]] RigCompletion read(ibv_cq_ex* cq) const {
        RigCompletion r;
        r.wr_id = cq->wr_id;
        r.status = cq->status;
        r.opcode = ibv_wc_read_opcode(cq);
        r.flags = ibv_wc_read_wc_flags(cq);
        if (cq->read_byte_len != nullptr) r.byte_len = ibv_wc_read_byte_len(cq);
        if (cq->read_qp_num != nullptr) r.qp_num = ibv_wc_read_qp_num(cq);
        if (cq->read_cvlan != nullptr) r.cvlan = ibv_wc_read_cvlan(cq);
        if (cq->read_completion_ts != nullptr) r.ts = ibv_wc_read_completion_ts(cq);
        if (mr_ != nullptr && r.wr_id < std::uint64_t{o_.wqs} * o_.depth) r.bytes = slot(r.wr_id);
        return r;
    }

    ibv_context* ctx_;
    ibv_pd* pd_;
    RigOptions o_;
    std::vector<std::uint8_t> mem_;
    ibv_mr* mr_ = nullptr;
    std::vector<ibv_cq_ex*> cqs_;
    std::vector<ibv_wq*> wqs_;
    ibv_rwq_ind_table* table_ = nullptr;
    ibv_qp* qp_ = nullptr;
    ibv_flow* flow_ = nullptr;
};

} // namespace rdmasim::test
