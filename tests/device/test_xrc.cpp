// XRC (device/README.md, "XRC"): domains opened per file and shared,
// XRC SRQs, XRC INI and TGT QPs and their state masks, and traffic: an INI
// QP's requests land in the XRC SRQ their WR names, through the TGT QP, and
// complete on that SRQ's CQ; a bad SRQ number is an invalid request.
// Also ATOMIC WRITE (device/README.md, "Atomic write") over RC.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/device/ib_qp_helpers.hpp"
#include "tests/support/sim_fixture.hpp"

using namespace rdmasim;
using namespace rdmasim::test;

namespace {

constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                           IBV_ACCESS_REMOTE_ATOMIC;

// A temporary file, its fd open read-only (the domain's key is its inode).
struct TempFile {
    TempFile() {
        char name[] = "/tmp/rdmasim-xrcd-XXXXXX";
        fd = ::mkstemp(name);
        REQUIRE(fd >= 0);
        path = name;
    }
    ~TempFile() {
        ::close(fd);
        ::unlink(path.c_str());
    }
    int fd = -1;
    std::string path;
};

ibv_xrcd* open_xrcd(ibv_context* ctx, int fd, int oflags,
                    std::uint32_t mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS) {
    ibv_xrcd_init_attr a{};
    a.comp_mask = mask;
    a.fd = fd;
    a.oflags = oflags;
    return ibv_open_xrcd(ctx, &a);
}

ibv_srq* xrc_srq(ibv_pd* pd, ibv_xrcd* xrcd, ibv_cq* cq, std::uint32_t mask = 0) {
    ibv_srq_init_attr_ex a{};
    a.attr.max_wr = 16;
    a.attr.max_sge = 1;
    a.srq_type = IBV_SRQT_XRC;
    a.pd = pd;
    a.xrcd = xrcd;
    a.cq = cq;
    a.comp_mask = mask ? mask
                       : IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
                             IBV_SRQ_INIT_ATTR_CQ;
    return ibv_create_srq_ex(pd->context, &a);
}

ibv_qp* xrc_tgt(ibv_context* ctx, ibv_xrcd* xrcd) {
    ibv_qp_init_attr_ex a{};
    a.qp_type = IBV_QPT_XRC_RECV;
    a.comp_mask = IBV_QP_INIT_ATTR_XRCD;
    a.xrcd = xrcd;
    return ibv_create_qp_ex(ctx, &a);
}

ibv_qp* xrc_ini(ibv_pd* pd, ibv_cq* cq, std::uint64_t send_ops = 0) {
    ibv_qp_init_attr_ex a{};
    a.qp_type = IBV_QPT_XRC_SEND;
    a.comp_mask = IBV_QP_INIT_ATTR_PD | (send_ops ? IBV_QP_INIT_ATTR_SEND_OPS_FLAGS : 0);
    a.send_ops_flags = send_ops;
    a.pd = pd;
    a.send_cq = cq;
    a.sq_sig_all = 1;
    a.cap.max_send_wr = 8;
    a.cap.max_send_sge = 1;
    return ibv_create_qp_ex(pd->context, &a);
}

// pyverbs' masks for XRC (pyverbs/qp.pyx, _get_comp_mask), as the suite walks them.
constexpr int kInit = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrTgt = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                        IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtrIni = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
constexpr int kRtsTgt = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN;
constexpr int kRtsIni = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC;

// RESET -> RTS toward `dest` at the port's own GID.
void connect(ibv_qp* qp, std::uint32_t dest, ibv_context* ctx) {
    const bool tgt = qp->qp_type == IBV_QPT_XRC_RECV;
    ibv_gid own{};
    REQUIRE(ibv_query_gid(ctx, 1, 0, &own) == 0);
    ibv_qp_attr a = good_attr(IBV_QPS_INIT);
    a.qp_access_flags = tgt ? kAllAccess : 0;
    REQUIRE(ibv_modify_qp(qp, &a, kInit) == 0);
    a = good_attr(IBV_QPS_RTR);
    a.ah_attr.grh.dgid = own;
    a.dest_qp_num = dest;
    a.rq_psn = 0x300;
    REQUIRE(ibv_modify_qp(qp, &a, tgt ? kRtrTgt : kRtrIni) == 0);
    a = good_attr(IBV_QPS_RTS);
    a.sq_psn = 0x300;
    a.timeout = 10;
    REQUIRE(ibv_modify_qp(qp, &a, tgt ? kRtsTgt : kRtsIni) == 0);
}

void post_srq(ibv_srq* srq, void* buf, std::uint32_t len, std::uint32_t lkey, std::uint64_t id) {
    ibv_sge s{reinterpret_cast<std::uint64_t>(buf), len, lkey};
    ibv_recv_wr r{};
    r.wr_id = id;
    r.sg_list = &s;
    r.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    REQUIRE(ibv_post_srq_recv(srq, &r, &bad) == 0);
}

int send_to(ibv_qp* ini, std::uint32_t srqn, ibv_sge s, std::uint64_t id,
            ibv_wr_opcode op = IBV_WR_SEND) {
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.qp_type.xrc.remote_srqn = srqn;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(ini, &wr, &bad);
}

std::uint32_t srq_num(ibv_srq* srq) {
    std::uint32_t n = 0;
    REQUIRE(ibv_get_srq_num(srq, &n) == 0);
    return n;
}

} // namespace

TEST_CASE("ibv_open_xrcd: fd and oflags as the kernel takes them; EBUSY while used", "[xrc]") {
    SimFixture fx;
    ibv_device_attr dattr{};
    REQUIRE(ibv_query_device(fx.ctx, &dattr) == 0);
    CHECK((dattr.device_cap_flags & IBV_DEVICE_XRC) != 0);
    errno = 0;
    CHECK(open_xrcd(fx.ctx, -1, O_CREAT, IBV_XRCD_INIT_ATTR_FD) == nullptr); // OFLAGS missing
    CHECK(errno == EINVAL);
    errno = 0;
    CHECK(open_xrcd(fx.ctx, -1, 0) == nullptr); // no file, no O_CREAT: nothing to find
    CHECK(errno == EAGAIN);
    ibv_xrcd* priv = open_xrcd(fx.ctx, -1, O_CREAT);
    REQUIRE(priv != nullptr);
    CHECK(priv->context == fx.ctx);

    TempFile file;
    errno = 0;
    CHECK(open_xrcd(fx.ctx, file.fd, 0) == nullptr);
    CHECK(errno == EAGAIN);
    ibv_xrcd* first = open_xrcd(fx.ctx, file.fd, O_CREAT);
    REQUIRE(first != nullptr);
    errno = 0;
    CHECK(open_xrcd(fx.ctx, file.fd, O_CREAT | O_EXCL) == nullptr); // exists already
    CHECK(errno == EINVAL);
    ibv_xrcd* second = open_xrcd(fx.ctx, file.fd, 0); // the same file's domain
    REQUIRE(second != nullptr);
    CHECK(second != first);
    errno = 0;
    CHECK(open_xrcd(fx.ctx, 1000, O_CREAT) == nullptr);
    CHECK(errno == EBADF);

    ibv_cq* cq = ibv_create_cq(fx.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    ibv_srq* srq = xrc_srq(fx.pd, first, cq);
    REQUIRE(srq != nullptr);
    CHECK(srq_num(srq) != 0);
    CHECK(ibv_close_xrcd(first) == EBUSY);
    CHECK(ibv_destroy_cq(cq) == EBUSY);
    CHECK(ibv_destroy_srq(srq) == 0);
    CHECK(ibv_close_xrcd(first) == 0);
    CHECK(ibv_close_xrcd(second) == 0);
    CHECK(ibv_close_xrcd(priv) == 0);
    // The file's last handle closed: its domain went, O_CREAT is needed again.
    errno = 0;
    CHECK(open_xrcd(fx.ctx, file.fd, 0) == nullptr);
    CHECK(errno == EAGAIN);
    CHECK(ibv_destroy_cq(cq) == 0);
}

TEST_CASE("XRC SRQ and QPs: what each needs, what each refuses", "[xrc]") {
    SimFixture fx;
    ibv_xrcd* xrcd = open_xrcd(fx.ctx, -1, O_CREAT);
    REQUIRE(xrcd != nullptr);
    ibv_cq* cq = ibv_create_cq(fx.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    errno = 0;
    CHECK(xrc_srq(fx.pd, xrcd, cq,
                  IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD) ==
          nullptr); // no CQ
    CHECK(errno == EINVAL);

    errno = 0;
    ibv_qp_init_attr_ex bad{};
    bad.qp_type = IBV_QPT_XRC_RECV;
    bad.comp_mask = IBV_QP_INIT_ATTR_PD;
    bad.pd = fx.pd;
    CHECK(ibv_create_qp_ex(fx.ctx, &bad) == nullptr); // a TGT QP needs its domain
    CHECK(errno == EINVAL);

    ibv_qp* tgt = xrc_tgt(fx.ctx, xrcd);
    REQUIRE(tgt != nullptr);
    CHECK(tgt->qp_type == IBV_QPT_XRC_RECV);
    CHECK(tgt->pd == nullptr);
    CHECK(tgt->send_cq == nullptr);
    CHECK(ibv_close_xrcd(xrcd) == EBUSY);
    ibv_qp* ini = xrc_ini(fx.pd, cq);
    REQUIRE(ini != nullptr);
    ibv_qp_attr qa{};
    ibv_qp_init_attr qi{};
    REQUIRE(ibv_query_qp(ini, &qa, IBV_QP_CAP, &qi) == 0);
    CHECK(qi.qp_type == IBV_QPT_XRC_SEND);
    CHECK(qi.cap.max_recv_wr == 0); // no receive queue
    CHECK(qi.cap.max_send_wr >= 8);

    // Neither takes receives; a TGT QP sends nothing.
    std::uint8_t byte = 0;
    ibv_sge s{reinterpret_cast<std::uint64_t>(&byte), 1, 0};
    ibv_recv_wr r{};
    r.sg_list = &s;
    r.num_sge = 1;
    ibv_recv_wr* bad_r = nullptr;
    CHECK(ibv_post_recv(ini, &r, &bad_r) == EINVAL);
    CHECK(ibv_post_recv(tgt, &r, &bad_r) == EINVAL);

    // The state masks: RC's for INI without the responder's attributes,
    // TGT's RTS needs only the timeout and the (unused) send PSN.
    connect(tgt, ini->qp_num, fx.ctx);
    connect(ini, tgt->qp_num, fx.ctx);
    CHECK(send_to(tgt, 1, s, 1) == EINVAL);
    ibv_qp_attr extra = good_attr(IBV_QPS_RTS);
    CHECK(ibv_modify_qp(tgt, &extra, IBV_QP_STATE | IBV_QP_RETRY_CNT) == EINVAL); // no send side
    CHECK(ibv_modify_qp(ini, &extra, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER) == EINVAL); // no receive side

    CHECK(ibv_destroy_qp(ini) == 0);
    CHECK(ibv_destroy_qp(tgt) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
    CHECK(ibv_close_xrcd(xrcd) == 0);
}

TEST_CASE("XRC traffic: each request lands in the SRQ it names, on that SRQ's CQ", "[xrc]") {
    SimFixture fx;
    TempFile file;
    ibv_xrcd* xrcd = open_xrcd(fx.ctx, file.fd, O_CREAT);
    ibv_xrcd* again = open_xrcd(fx.ctx, file.fd, 0); // the TGT QP opens the domain by its file
    ibv_xrcd* other = open_xrcd(fx.ctx, -1, O_CREAT);
    REQUIRE(xrcd != nullptr);
    REQUIRE(again != nullptr);
    REQUIRE(other != nullptr);
    ibv_pd* pd2 = ibv_alloc_pd(fx.ctx);
    REQUIRE(pd2 != nullptr);
    ibv_cq* send_cq = ibv_create_cq(fx.ctx, 64, nullptr, nullptr, 0);
    ibv_cq* cq_a = ibv_create_cq(fx.ctx, 64, nullptr, nullptr, 0);
    ibv_cq* cq_b = ibv_create_cq(fx.ctx, 64, nullptr, nullptr, 0);
    REQUIRE((send_cq && cq_a && cq_b));
    ibv_srq* srq_a = xrc_srq(fx.pd, xrcd, cq_a);
    ibv_srq* srq_b = xrc_srq(pd2, xrcd, cq_b); // another PD: its receives and memory are pd2's
    ibv_srq* foreign = xrc_srq(fx.pd, other, cq_a);
    REQUIRE((srq_a && srq_b && foreign));
    std::vector<std::uint8_t> src(64), dst_a(64), dst_b(64), remote(64);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i + 1);
    ibv_mr* mr_src = ibv_reg_mr(fx.pd, src.data(), src.size(), kAllAccess);
    ibv_mr* mr_a = ibv_reg_mr(fx.pd, dst_a.data(), dst_a.size(), kAllAccess);
    ibv_mr* mr_b = ibv_reg_mr(pd2, dst_b.data(), dst_b.size(), kAllAccess);
    ibv_mr* mr_remote = ibv_reg_mr(pd2, remote.data(), remote.size(), kAllAccess);
    REQUIRE((mr_src && mr_a && mr_b && mr_remote));

    ibv_qp* tgt = xrc_tgt(fx.ctx, again);
    ibv_qp* ini = xrc_ini(fx.pd, send_cq, IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE);
    REQUIRE((tgt && ini));
    connect(tgt, ini->qp_num, fx.ctx);
    connect(ini, tgt->qp_num, fx.ctx);

    post_srq(srq_a, dst_a.data(), 64, mr_a->lkey, 0xa);
    post_srq(srq_b, dst_b.data(), 64, mr_b->lkey, 0xb);
    // ibv_post_send names SRQ b, ibv_wr_set_xrc_srqn SRQ a.
    REQUIRE(send_to(ini, srq_num(srq_b), {reinterpret_cast<std::uint64_t>(src.data()), 10, mr_src->lkey},
                    1) == 0);
    ibv_qp_ex* x = ibv_qp_to_qp_ex(ini);
    REQUIRE(x != nullptr);
    REQUIRE(x->wr_set_xrc_srqn != nullptr);
    ibv_wr_start(x);
    x->wr_id = 2;
    ibv_wr_send(x);
    ibv_wr_set_xrc_srqn(x, srq_num(srq_a));
    ibv_wr_set_sge(x, mr_src->lkey, reinterpret_cast<std::uint64_t>(src.data()) + 10, 20);
    REQUIRE(ibv_wr_complete(x) == 0);

    const auto tx = wait_for(send_cq, 2);
    REQUIRE(tx.size() == 2);
    CHECK(tx[0].status == IBV_WC_SUCCESS);
    CHECK(tx[1].status == IBV_WC_SUCCESS);
    const auto rx_b = wait_for(cq_b, 1);
    REQUIRE(rx_b.size() == 1);
    CHECK(rx_b[0].status == IBV_WC_SUCCESS);
    CHECK(rx_b[0].wr_id == 0xb);
    CHECK(rx_b[0].byte_len == 10);
    CHECK(rx_b[0].qp_num == tgt->qp_num);
    CHECK(std::memcmp(dst_b.data(), src.data(), 10) == 0);
    const auto rx_a = wait_for(cq_a, 1);
    REQUIRE(rx_a.size() == 1);
    CHECK(rx_a[0].wr_id == 0xa);
    CHECK(rx_a[0].byte_len == 20);
    CHECK(std::memcmp(dst_a.data(), src.data() + 10, 20) == 0);

    // An RDMA WRITE is checked against the named SRQ's PD: pd2's MR through SRQ b.
    ibv_wr_start(x);
    x->wr_id = 3;
    ibv_wr_rdma_write(x, mr_remote->rkey, reinterpret_cast<std::uint64_t>(remote.data()));
    ibv_wr_set_xrc_srqn(x, srq_num(srq_b));
    ibv_wr_set_sge(x, mr_src->lkey, reinterpret_cast<std::uint64_t>(src.data()), 8);
    REQUIRE(ibv_wr_complete(x) == 0);
    auto w = wait_for(send_cq, 1);
    REQUIRE(w.size() == 1);
    CHECK(w[0].status == IBV_WC_SUCCESS);
    CHECK(w[0].opcode == IBV_WC_RDMA_WRITE);
    CHECK(std::memcmp(remote.data(), src.data(), 8) == 0);

    SECTION("through SRQ a (fx.pd) the same rkey is a remote access error") {
        ibv_wr_start(x);
        x->wr_id = 4;
        ibv_wr_rdma_write(x, mr_remote->rkey, reinterpret_cast<std::uint64_t>(remote.data()));
        ibv_wr_set_xrc_srqn(x, srq_num(srq_a));
        ibv_wr_set_sge(x, mr_src->lkey, reinterpret_cast<std::uint64_t>(src.data()), 8);
        REQUIRE(ibv_wr_complete(x) == 0);
        w = wait_for(send_cq, 1);
        REQUIRE(w.size() == 1);
        CHECK(w[0].status == IBV_WC_REM_ACCESS_ERR);
    }
    for (const bool unknown : {false, true}) {
        // An SRQ of another domain is an invalid request; so is an unknown number.
        DYNAMIC_SECTION("XRCETH naming " << (unknown ? "no SRQ" : "another domain's SRQ")) {
        const std::uint32_t srqn = unknown ? 0xfffffeu : srq_num(foreign);
        REQUIRE(send_to(ini, srqn, {reinterpret_cast<std::uint64_t>(src.data()), 4, mr_src->lkey}, 5) == 0);
        w = wait_for(send_cq, 1);
        REQUIRE(w.size() == 1);
        CHECK(w[0].status == IBV_WC_REM_INV_REQ_ERR);
        CHECK(ini->state == IBV_QPS_ERR);
        CHECK(tgt->state == IBV_QPS_ERR);
        CHECK(wait_for(cq_a, 1, 100).empty()); // nothing received anywhere
        }
    }

    CHECK(ibv_destroy_qp(ini) == 0);
    CHECK(ibv_destroy_qp(tgt) == 0);
    for (ibv_mr* m : {mr_src, mr_a, mr_b, mr_remote}) CHECK(ibv_dereg_mr(m) == 0);
    for (ibv_srq* s : {srq_a, srq_b, foreign}) CHECK(ibv_destroy_srq(s) == 0);
    for (ibv_cq* c : {send_cq, cq_a, cq_b}) CHECK(ibv_destroy_cq(c) == 0);
    CHECK(ibv_dealloc_pd(pd2) == 0);
    for (ibv_xrcd* d : {xrcd, again, other}) CHECK(ibv_close_xrcd(d) == 0);
}

TEST_CASE("ATOMIC WRITE: 8 bytes placed, IBV_WC_ATOMIC_WRITE, remote write access checked",
          "[atomic_write]") {
    SimFixture fx;
    ibv_cq* cq = ibv_create_cq(fx.ctx, 64, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    auto make = [&](std::uint64_t ops) {
        ibv_qp_init_attr_ex a{};
        a.qp_type = IBV_QPT_RC;
        a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        a.send_ops_flags = ops;
        a.pd = fx.pd;
        a.send_cq = a.recv_cq = cq;
        a.cap.max_send_wr = a.cap.max_recv_wr = 8;
        a.cap.max_send_sge = a.cap.max_recv_sge = 1;
        return ibv_create_qp_ex(fx.ctx, &a);
    };
    ibv_qp* a = make(IBV_QP_EX_WITH_ATOMIC_WRITE | IBV_QP_EX_WITH_SEND);
    ibv_qp* b = make(IBV_QP_EX_WITH_SEND);
    REQUIRE((a && b));
    ibv_gid own{};
    REQUIRE(ibv_query_gid(fx.ctx, 1, 0, &own) == 0);
    for (auto [qp, dest] : {std::pair{a, b}, std::pair{b, a}}) {
        ibv_qp_attr at = good_attr(IBV_QPS_INIT);
        at.qp_access_flags = kAllAccess;
        REQUIRE(ibv_modify_qp(qp, &at, init_mask(IBV_QPT_RC)) == 0);
        at = good_attr(IBV_QPS_RTR);
        at.ah_attr.grh.dgid = own;
        at.dest_qp_num = dest->qp_num;
        REQUIRE(ibv_modify_qp(qp, &at, rtr_mask(IBV_QPT_RC)) == 0);
        at = good_attr(IBV_QPS_RTS);
        at.sq_psn = at.rq_psn;
        at.timeout = 10;
        REQUIRE(ibv_modify_qp(qp, &at, rts_mask(IBV_QPT_RC)) == 0);
    }
    alignas(8) std::uint8_t target[16] = {};
    ibv_mr* writable = ibv_reg_mr(fx.pd, target, sizeof target, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    REQUIRE(writable != nullptr);
    ibv_qp_ex* x = ibv_qp_to_qp_ex(a);
    REQUIRE(x->wr_atomic_write != nullptr);
    const std::uint8_t value[8] = {1, 2, 3, 4, 5, 6, 7, 8};

    ibv_wr_start(x);
    x->wr_id = 7;
    x->wr_flags = IBV_SEND_SIGNALED;
    ibv_wr_atomic_write(x, writable->rkey, reinterpret_cast<std::uint64_t>(target + 8), value);
    REQUIRE(ibv_wr_complete(x) == 0);
    auto wc = wait_for(cq, 1);
    REQUIRE(wc.size() == 1);
    CHECK(wc[0].status == IBV_WC_SUCCESS);
    CHECK(wc[0].opcode == IBV_WC_ATOMIC_WRITE);
    CHECK(wc[0].wr_id == 7);
    CHECK(std::memcmp(target + 8, value, 8) == 0);
    CHECK(std::all_of(target, target + 8, [](std::uint8_t v) { return v == 0; }));
    {
        std::lock_guard lock(fx.device().port.mutex());
        CHECK(fx.device().port.roce().counters().qps.read_responses_sent.get() == 1); // the answer
    }

    SECTION("a misaligned address is refused at posting") {
        ibv_wr_start(x);
        ibv_wr_atomic_write(x, writable->rkey, reinterpret_cast<std::uint64_t>(target + 4), value);
        CHECK(ibv_wr_complete(x) == EINVAL);
    }
    SECTION("ibv_post_send cannot carry it") {
        ibv_send_wr wr{};
        wr.opcode = IBV_WR_ATOMIC_WRITE;
        wr.wr.atomic.remote_addr = reinterpret_cast<std::uint64_t>(target);
        ibv_send_wr* bad = nullptr;
        CHECK(ibv_post_send(a, &wr, &bad) == EINVAL);
    }
    SECTION("an MR without remote write: IBV_WC_REM_ACCESS_ERR, nothing written") {
        ibv_mr* ro = ibv_reg_mr(fx.pd, target, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
        REQUIRE(ro != nullptr);
        ibv_wr_start(x);
        x->wr_id = 8;
        x->wr_flags = IBV_SEND_SIGNALED;
        ibv_wr_atomic_write(x, ro->rkey, reinterpret_cast<std::uint64_t>(target), value);
        REQUIRE(ibv_wr_complete(x) == 0);
        wc = wait_for(cq, 1);
        REQUIRE(wc.size() >= 1);
        CHECK(wc[0].status == IBV_WC_REM_ACCESS_ERR);
        CHECK(target[0] == 0);
        CHECK(ibv_dereg_mr(ro) == 0);
        wait_for(cq, 8, 100); // b's flushes, if any
    }
    SECTION("UC and XRC QPs have no atomic write") {
        ibv_qp_init_attr_ex u{};
        u.qp_type = IBV_QPT_UC;
        u.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
        u.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE;
        u.pd = fx.pd;
        u.send_cq = u.recv_cq = cq;
        u.cap.max_send_wr = u.cap.max_recv_wr = 1;
        errno = 0;
        CHECK(ibv_create_qp_ex(fx.ctx, &u) == nullptr);
        CHECK(errno == EOPNOTSUPP);
        errno = 0;
        CHECK(xrc_ini(fx.pd, cq, IBV_QP_EX_WITH_ATOMIC_WRITE) == nullptr);
        CHECK(errno == EOPNOTSUPP);
    }
    CHECK(ibv_destroy_qp(a) == 0);
    CHECK(ibv_destroy_qp(b) == 0);
    CHECK(ibv_dereg_mr(writable) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
}
