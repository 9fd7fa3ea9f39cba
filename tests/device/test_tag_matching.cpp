// Tag-matching SRQs (device/README.md, "Tag matching"; datapath/README.md,
// "Tag matching"): tm_caps, ibv_create_srq_ex with IBV_SRQT_TM and its
// checks, ibv_post_srq_ops (ADD, DEL, SYNC, their completions and errnos),
// and RC traffic between two QPs of one device: EAGER into the matched
// tagged buffer, unexpected and NO_TAG messages into ordinary WQEs with
// their header, the phase (SYNC_REQ on an ADD out of sync), masks, a
// message over several packets, and RNDV (the receiver's READ, its FIN).
#include <catch2/catch.hpp>

#include <endian.h>
#include <infiniband/tm_types.h>
#include <infiniband/verbs.h>

#include <cstring>
#include <vector>

#include "tests/device/ib_qp_helpers.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

struct Buf {
    Buf(ibv_pd* pd, std::size_t n) : bytes(n, 0) {
        mr = ibv_reg_mr(pd, bytes.data(), n, kAccess);
        REQUIRE(mr != nullptr);
    }
    ~Buf() { CHECK(ibv_dereg_mr(mr) == 0); }
    ibv_sge sge(std::uint32_t len, std::size_t at = 0) {
        return {reinterpret_cast<std::uint64_t>(bytes.data() + at), len, mr->lkey};
    }
    std::vector<std::uint8_t> bytes;
    ibv_mr* mr = nullptr;
};

struct Wc {
    std::uint64_t wr_id;
    int status;
    int opcode;
    unsigned flags;
    std::uint32_t byte_len;
    std::uint64_t tag;
    std::uint32_t priv;
};

ibv_cq_ex* make_cq_ex(ibv_context* ctx) {
    ibv_cq_init_attr_ex a{};
    a.cqe = 256;
    a.wc_flags = std::uint64_t{IBV_WC_EX_WITH_TM_INFO} | IBV_WC_STANDARD_FLAGS;
    ibv_cq_ex* cq = ibv_create_cq_ex(ctx, &a);
    REQUIRE(cq != nullptr);
    return cq;
}

// Polls (each empty poll lets the inline engine run) until `n` came.
std::vector<Wc> poll_ex(ibv_cq_ex* cq, std::size_t n, int tries = 100000) {
    std::vector<Wc> out;
    for (int i = 0; i < tries && out.size() < n; ++i) {
        ibv_poll_cq_attr pa{};
        if (ibv_start_poll(cq, &pa) != 0) continue;
        int more = 0;
        while (more == 0) {
            ibv_wc_tm_info tm{};
            ibv_wc_read_tm_info(cq, &tm);
            out.push_back({cq->wr_id, cq->status, ibv_wc_read_opcode(cq), ibv_wc_read_wc_flags(cq),
                           ibv_wc_read_byte_len(cq), tm.tag, tm.priv});
            more = ibv_next_poll(cq);
        }
        ibv_end_poll(cq);
    }
    return out;
}

ibv_srq* make_tm_srq(ibv_context* ctx, ibv_pd* pd, ibv_cq_ex* cq, std::uint32_t tags = 16) {
    ibv_srq_init_attr_ex a{};
    a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ |
                  IBV_SRQ_INIT_ATTR_TM;
    a.srq_type = IBV_SRQT_TM;
    a.pd = pd;
    a.cq = ibv_cq_ex_to_cq(cq);
    a.attr.max_wr = 64;
    a.attr.max_sge = 1;
    a.tm_cap.max_num_tags = tags;
    a.tm_cap.max_ops = 16;
    return ibv_create_srq_ex(ctx, &a);
}

int add_tag(ibv_srq* srq, std::uint64_t tag, std::uint64_t mask, ibv_sge sge, std::uint64_t id,
            std::uint32_t* handle = nullptr, int flags = IBV_OPS_SIGNALED, std::uint32_t unexp = 0) {
    ibv_ops_wr w{};
    w.wr_id = id;
    w.opcode = IBV_WR_TAG_ADD;
    w.flags = flags;
    w.tm.unexpected_cnt = unexp;
    w.tm.add.recv_wr_id = id + 1000;
    w.tm.add.sg_list = &sge;
    w.tm.add.num_sge = 1;
    w.tm.add.tag = tag;
    w.tm.add.mask = mask;
    ibv_ops_wr* bad = nullptr;
    const int err = ibv_post_srq_ops(srq, &w, &bad);
    if (handle) *handle = w.tm.handle;
    return err;
}

int simple_op(ibv_srq* srq, ibv_ops_wr_opcode op, std::uint64_t id, std::uint32_t handle = 0,
              int flags = IBV_OPS_SIGNALED, std::uint32_t unexp = 0) {
    ibv_ops_wr w{};
    w.wr_id = id;
    w.opcode = op;
    w.flags = flags;
    w.tm.handle = handle;
    w.tm.unexpected_cnt = unexp;
    ibv_ops_wr* bad = nullptr;
    return ibv_post_srq_ops(srq, &w, &bad);
}

void post_srq(ibv_srq* srq, ibv_sge sge, std::uint64_t id) {
    ibv_recv_wr r{};
    r.wr_id = id;
    r.sg_list = &sge;
    r.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    REQUIRE(ibv_post_srq_recv(srq, &r, &bad) == 0);
}

void write_tmh(std::uint8_t* p, std::uint8_t op, std::uint64_t tag, std::uint32_t app_ctx) {
    ibv_tmh h{};
    h.opcode = op;
    h.app_ctx = htobe32(app_ctx);
    h.tag = htobe64(tag);
    std::memcpy(p, &h, sizeof h);
}

void connect(ibv_qp* a, ibv_qp* b, ibv_context* ctx) {
    ibv_gid own{};
    REQUIRE(ibv_query_gid(ctx, 1, 0, &own) == 0);
    ibv_qp_attr at = good_attr(IBV_QPS_INIT);
    REQUIRE(ibv_modify_qp(a, &at, init_mask(IBV_QPT_RC)) == 0);
    at = good_attr(IBV_QPS_RTR);
    at.ah_attr.grh.dgid = own;
    at.dest_qp_num = b->qp_num;
    at.rq_psn = 0x100;
    REQUIRE(ibv_modify_qp(a, &at, rtr_mask(IBV_QPT_RC)) == 0);
    at = good_attr(IBV_QPS_RTS);
    at.sq_psn = 0x100;
    at.timeout = 10;
    REQUIRE(ibv_modify_qp(a, &at, rts_mask(IBV_QPT_RC)) == 0);
}

// A sender (ordinary RC QP) and a receiver whose QP takes its receives from a
// tag-matching SRQ; the receiver's QP, SRQ and operations share one CQ-ex.
struct TmPair {
    explicit TmPair(SimFixture& fx) : fx(fx), send(fx.pd, IBV_QPT_RC, 16) {
        cq = make_cq_ex(fx.ctx);
        srq = make_tm_srq(fx.ctx, fx.pd, cq);
        REQUIRE(srq != nullptr);
        ibv_qp_init_attr a{};
        a.qp_type = IBV_QPT_RC;
        a.send_cq = ibv_cq_ex_to_cq(cq);
        a.recv_cq = ibv_cq_ex_to_cq(cq);
        a.srq = srq;
        qp = ibv_create_qp(fx.pd, &a); // no send queue of its own: the rendezvous has its slots
        REQUIRE(qp != nullptr);
        connect(send.qp, qp, fx.ctx);
        connect(qp, send.qp, fx.ctx);
    }
    ~TmPair() {
        CHECK(ibv_destroy_qp(qp) == 0);
        CHECK(ibv_destroy_srq(srq) == 0);
        CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
    }
    void send_msg(ibv_sge s, std::uint64_t id = 7) {
        ibv_send_wr wr{};
        wr.wr_id = id;
        wr.sg_list = &s;
        wr.num_sge = 1;
        wr.opcode = IBV_WR_SEND;
        wr.send_flags = IBV_SEND_SIGNALED;
        ibv_send_wr* bad = nullptr;
        REQUIRE(ibv_post_send(send.qp, &wr, &bad) == 0);
    }
    SimFixture& fx;
    IbQp send;
    ibv_cq_ex* cq = nullptr;
    ibv_srq* srq = nullptr;
    ibv_qp* qp = nullptr;
};

} // namespace

TEST_CASE("tm_caps as mlx5 reports them; IBV_SRQT_TM creation checks", "[tm]") {
    SimFixture fx;
    ibv_device_attr_ex d{};
    REQUIRE(ibv_query_device_ex(fx.ctx, nullptr, &d) == 0);
    CHECK(d.tm_caps.flags == IBV_TM_CAP_RC);
    CHECK(d.tm_caps.max_num_tags == 127);
    CHECK(d.tm_caps.max_ops == 32768);
    CHECK(d.tm_caps.max_sge == 1);
    CHECK(d.tm_caps.max_rndv_hdr_size == 64);

    ibv_cq_ex* cq = make_cq_ex(fx.ctx);
    ibv_srq* srq = make_tm_srq(fx.ctx, fx.pd, cq, 127);
    REQUIRE(srq != nullptr);
    CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == EBUSY); // the SRQ's operations complete there
    CHECK(ibv_destroy_srq(srq) == 0);
    errno = 0;
    CHECK(make_tm_srq(fx.ctx, fx.pd, cq, 128) == nullptr); // above max_num_tags
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(make_tm_srq(fx.ctx, fx.pd, cq, 0) == nullptr);
    CHECK(errno == EINVAL);
    // mlx5_create_srq_ex: the CQ must be extended (the TM information is read from it).
    ibv_cq* plain = ibv_create_cq(fx.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(plain != nullptr);
    ibv_srq_init_attr_ex a{};
    a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
    a.srq_type = IBV_SRQT_TM;
    a.pd = fx.pd;
    a.cq = plain;
    a.attr.max_wr = 8;
    a.attr.max_sge = 1;
    a.tm_cap.max_num_tags = 4;
    a.tm_cap.max_ops = 4;
    errno = 0;
    CHECK(ibv_create_srq_ex(fx.ctx, &a) == nullptr);
    CHECK(errno == EINVAL);
    a.cq = nullptr;
    errno = 0;
    CHECK(ibv_create_srq_ex(fx.ctx, &a) == nullptr);
    CHECK(errno == EINVAL);
    a.cq = ibv_cq_ex_to_cq(cq);
    a.tm_cap.max_ops = 32769;
    errno = 0;
    CHECK(ibv_create_srq_ex(fx.ctx, &a) == nullptr);
    CHECK(errno == EINVAL);
    a.srq_type = static_cast<ibv_srq_type>(7);
    errno = 0;
    CHECK(ibv_create_srq_ex(fx.ctx, &a) == nullptr);
    CHECK(errno == EINVAL);
    CHECK(ibv_destroy_cq(plain) == 0);
    CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
}

TEST_CASE("ibv_post_srq_ops: ADD, DEL, SYNC complete on the SRQ's CQ; errnos as mlx5", "[tm]") {
    SimFixture fx;
    ibv_cq_ex* cq = make_cq_ex(fx.ctx);
    ibv_srq* srq = make_tm_srq(fx.ctx, fx.pd, cq, 2);
    REQUIRE(srq != nullptr);
    Buf b(fx.pd, 64);
    std::uint32_t h1 = 99, h2 = 99;
    REQUIRE(add_tag(srq, 1, ~0ull, b.sge(64), 10, &h1) == 0);
    REQUIRE(add_tag(srq, 2, ~0ull, b.sge(64), 11, &h2, 0) == 0); // unsignalled: no completion
    CHECK(h1 != h2);
    CHECK(add_tag(srq, 3, ~0ull, b.sge(64), 12) == ENOMEM); // the list (2 tags) is full
    auto wc = poll_ex(cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].wr_id == 10);
    CHECK(wc[0].opcode == IBV_WC_TM_ADD);
    CHECK(wc[0].status == IBV_WC_SUCCESS);
    CHECK(wc[0].flags == 0);
    REQUIRE(simple_op(srq, IBV_WR_TAG_DEL, 20, h1) == 0);
    REQUIRE(simple_op(srq, IBV_WR_TAG_DEL, 21, h1) == 0); // gone already: IBV_WC_TM_ERR
    REQUIRE(simple_op(srq, IBV_WR_TAG_SYNC, 22, 0, IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC, 0) == 0);
    wc = poll_ex(cq, 3);
    REQUIRE(wc.size() == 3);
    CHECK(wc[0].opcode == IBV_WC_TM_DEL);
    CHECK(wc[0].status == IBV_WC_SUCCESS);
    CHECK(wc[1].wr_id == 21);
    CHECK(wc[1].status == IBV_WC_TM_ERR);
    CHECK(wc[2].opcode == IBV_WC_TM_SYNC);
    CHECK(wc[2].wr_id == 22);
    // Checks: more than max_sge SGEs, a bad opcode, a handle outside the list.
    ibv_sge two[2] = {b.sge(8), b.sge(8, 8)};
    ibv_ops_wr w{};
    w.opcode = IBV_WR_TAG_ADD;
    w.tm.add.sg_list = two;
    w.tm.add.num_sge = 2;
    ibv_ops_wr* bad = nullptr;
    CHECK(ibv_post_srq_ops(srq, &w, &bad) == EINVAL);
    CHECK(bad == &w);
    w.opcode = static_cast<ibv_ops_wr_opcode>(9);
    CHECK(ibv_post_srq_ops(srq, &w, &bad) == EINVAL);
    CHECK(simple_op(srq, IBV_WR_TAG_DEL, 1, 2) == EINVAL);
    CHECK(ibv_post_srq_ops(srq, &w, nullptr) == EINVAL);
    // A basic SRQ has no tag list (mlx5: no command QP).
    ibv_srq_init_attr ba{};
    ba.attr.max_wr = 4;
    ba.attr.max_sge = 1;
    ibv_srq* basic = ibv_create_srq(fx.pd, &ba);
    REQUIRE(basic != nullptr);
    CHECK(simple_op(basic, IBV_WR_TAG_SYNC, 1) == EINVAL);
    CHECK(ibv_destroy_srq(basic) == 0);
    CHECK(ibv_destroy_srq(srq) == 0);
    CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cq)) == 0);
}

TEST_CASE("EAGER: a matched tag's data lands without its TMH; masks; the oldest match wins",
          "[tm][traffic]") {
    SimFixture fx;
    TmPair p(fx);
    Buf src(fx.pd, 4096), t1(fx.pd, 4096), t2(fx.pd, 4096);
    for (std::size_t i = 0; i < src.bytes.size(); ++i) src.bytes[i] = static_cast<std::uint8_t>(i * 3 + 1);
    REQUIRE(add_tag(p.srq, 0x500, 0xff00, t1.sge(4096), 1) == 0); // matches 0x5xx
    REQUIRE(add_tag(p.srq, 0x500, 0xff00, t2.sge(4096), 2) == 0);
    REQUIRE(poll_ex(p.cq, 2).size() == 2);
    // 3000 bytes: three packets at MTU 1024.
    write_tmh(src.bytes.data(), IBV_TMH_EAGER, 0x5ab, 0xc0ffee);
    p.send_msg(src.sge(3000));
    REQUIRE(wait_for(p.send.cq, 1).size() == 1);
    auto wc = poll_ex(p.cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].status == IBV_WC_SUCCESS);
    CHECK(wc[0].opcode == IBV_WC_TM_RECV);
    CHECK(wc[0].flags == (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID));
    CHECK(wc[0].wr_id == 1001); // the entry's recv_wr_id: the first added
    CHECK(wc[0].byte_len == 3000 - sizeof(ibv_tmh));
    CHECK(wc[0].tag == 0x5ab);
    CHECK(wc[0].priv == 0xc0ffee);
    CHECK(std::memcmp(t1.bytes.data(), src.bytes.data() + 16, 3000 - 16) == 0);
    CHECK(t2.bytes[0] == 0);
    // The second entry is next; a tag outside the mask is unexpected.
    write_tmh(src.bytes.data(), IBV_TMH_EAGER, 0x501, 1);
    p.send_msg(src.sge(100));
    wc = poll_ex(p.cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].wr_id == 1002);
}

TEST_CASE("Unexpected and NO_TAG messages take ordinary WQEs whole; the phase and SYNC",
          "[tm][traffic]") {
    SimFixture fx;
    TmPair p(fx);
    Buf src(fx.pd, 256), tagged(fx.pd, 256), plain(fx.pd, 256);
    std::fill(src.bytes.begin(), src.bytes.end(), 0x63);
    REQUIRE(add_tag(p.srq, 1, 0xffff, tagged.sge(256), 1) == 0);
    REQUIRE(poll_ex(p.cq, 1).size() == 1);
    post_srq(p.srq, plain.sge(256), 50);
    post_srq(p.srq, plain.sge(256), 51);
    write_tmh(src.bytes.data(), IBV_TMH_EAGER, 0x1234, 0);
    p.send_msg(src.sge(128));
    auto wc = poll_ex(p.cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].opcode == IBV_WC_TM_RECV);
    CHECK(wc[0].flags == 0); // unexpected: no MATCH, no DATA_VALID
    CHECK(wc[0].wr_id == 50);
    CHECK(wc[0].byte_len == 128);
    CHECK(wc[0].tag == 0);
    CHECK(std::memcmp(plain.bytes.data(), src.bytes.data(), 128) == 0); // the TMH stays
    // Out of phase: an ADD asks for a sync, and matching waits for it.
    Buf t2(fx.pd, 256);
    REQUIRE(add_tag(p.srq, 2, 0xffff, t2.sge(256), 2) == 0);
    wc = poll_ex(p.cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].opcode == IBV_WC_TM_ADD);
    CHECK(wc[0].flags == IBV_WC_TM_SYNC_REQ);
    write_tmh(src.bytes.data(), IBV_TMH_EAGER, 2, 0);
    p.send_msg(src.sge(64));
    wc = poll_ex(p.cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].wr_id == 51); // unexpected again: tag 2, added out of phase, waits for the sync
    CHECK(wc[0].flags == 0);
    REQUIRE(simple_op(p.srq, IBV_WR_TAG_SYNC, 9, 0, IBV_OPS_SIGNALED | IBV_OPS_TM_SYNC, 2) == 0);
    wc = poll_ex(p.cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].opcode == IBV_WC_TM_SYNC);
    CHECK(wc[0].flags == 0);
    write_tmh(src.bytes.data(), IBV_TMH_EAGER, 2, 0);
    p.send_msg(src.sge(64));
    wc = poll_ex(p.cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].wr_id == 1002); // in sync: matched
    CHECK(wc[0].flags == (IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID));
    // NO_TAG: an ordinary WQE, IBV_WC_TM_NO_TAG, header kept; tag 1 stays posted.
    post_srq(p.srq, plain.sge(256), 52);
    std::fill(plain.bytes.begin(), plain.bytes.end(), 0);
    write_tmh(src.bytes.data(), IBV_TMH_NO_TAG, 1, 0);
    p.send_msg(src.sge(80));
    wc = poll_ex(p.cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].opcode == IBV_WC_TM_NO_TAG);
    CHECK(wc[0].wr_id == 52);
    CHECK(wc[0].flags == 0);
    CHECK(wc[0].byte_len == 80);
    CHECK(std::memcmp(plain.bytes.data(), src.bytes.data(), 80) == 0);
}

TEST_CASE("RNDV: the receiver reads the sender's buffer, completes twice, answers with a FIN",
          "[tm][traffic]") {
    SimFixture fx;
    TmPair p(fx);
    Buf hdr(fx.pd, 64), data(fx.pd, 5000), tagged(fx.pd, 8192), fin(fx.pd, 64);
    for (std::size_t i = 0; i < data.bytes.size(); ++i) data.bytes[i] = static_cast<std::uint8_t>(i * 5 + 2);
    REQUIRE(add_tag(p.srq, 77, ~0ull, tagged.sge(8192), 1) == 0);
    REQUIRE(poll_ex(p.cq, 1).size() == 1);
    // The sender's receive for the FIN.
    ibv_sge fs = fin.sge(64);
    ibv_recv_wr r{};
    r.wr_id = 300;
    r.sg_list = &fs;
    r.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    REQUIRE(ibv_post_recv(p.send.qp, &r, &bad) == 0);
    write_tmh(hdr.bytes.data(), IBV_TMH_RNDV, 77, 0xabc);
    ibv_rvh rvh{htobe64(reinterpret_cast<std::uint64_t>(data.bytes.data())), htobe32(data.mr->rkey),
                htobe32(5000)};
    std::memcpy(hdr.bytes.data() + sizeof(ibv_tmh), &rvh, sizeof rvh);
    p.send_msg(hdr.sge(64), 7);
    auto wc = poll_ex(p.cq, 2);
    REQUIRE(wc.size() == 2);
    CHECK(wc[0].opcode == IBV_WC_TM_RECV);
    CHECK(wc[0].status == IBV_WC_SUCCESS);
    CHECK(wc[0].flags == IBV_WC_TM_MATCH);
    CHECK(wc[0].wr_id == 1001);
    CHECK(wc[0].tag == 77);
    CHECK(wc[0].priv == 0xabc);
    CHECK(wc[1].opcode == IBV_WC_TM_RECV);
    CHECK(wc[1].status == IBV_WC_SUCCESS);
    CHECK(wc[1].flags == IBV_WC_TM_DATA_VALID);
    CHECK(wc[1].wr_id == 1001);
    CHECK(wc[1].byte_len == 5000);
    CHECK(std::memcmp(tagged.bytes.data(), data.bytes.data(), 5000) == 0);
    // The sender: its SEND's completion and the FIN in its receive.
    const auto sw = wait_for(p.send.cq, 2);
    REQUIRE(sw.size() == 2);
    const ibv_wc& rx = sw[0].opcode == IBV_WC_RECV ? sw[0] : sw[1];
    CHECK(rx.wr_id == 300);
    CHECK(rx.status == IBV_WC_SUCCESS);
    CHECK(rx.byte_len == sizeof(ibv_tmh));
    ibv_tmh got{};
    std::memcpy(&got, fin.bytes.data(), sizeof got);
    CHECK(got.opcode == IBV_TMH_FIN);
    CHECK(be64toh(got.tag) == 77);
    CHECK(be32toh(got.app_ctx) == 0xabc);
    // Data longer than the tagged buffer: software's rendezvous (one completion).
    Buf small(fx.pd, 100);
    REQUIRE(add_tag(p.srq, 78, ~0ull, small.sge(100), 2) == 0);
    REQUIRE(poll_ex(p.cq, 1).size() == 1);
    write_tmh(hdr.bytes.data(), IBV_TMH_RNDV, 78, 0);
    p.send_msg(hdr.sge(64), 8);
    wc = poll_ex(p.cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].status == IBV_WC_TM_RNDV_INCOMPLETE);
    CHECK(wc[0].wr_id == 1002);
    CHECK(poll_ex(p.cq, 1, 2000).empty());
}
