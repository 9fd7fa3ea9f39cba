// rc_peer_gone: when does an RC send give up? Two RC QPs of one device, A
// connected to B through the port's own GID (the packets loop back through
// the port, as on a ConnectX). One message goes from A to B to show the path
// works and to read the clock (its completion timestamp); then
//
//   --case retry: B is destroyed (or moved to ERR or RESET: --peer), so A's
//     next SEND reaches the port and no QP answers. A resends it after each
//     local ACK timeout, 4.096 us * 2^timeout, and after retry_cnt retries
//     completes it with IBV_WC_RETRY_EXC_ERR: (retry_cnt + 1) timeouts after
//     the post.
//   --case rnr: B stays, with no receive posted, and answers each SEND with
//     an RNR NAK carrying its min_rnr_timer. A waits that long before each
//     retry and after rnr_retry retries completes the SEND with
//     IBV_WC_RNR_RETRY_EXC_ERR: rnr_retry RNR waits after the post.
//
// The send is posted at the clock of the warm-up's completions (nothing
// polled in between), so its completion timestamp minus theirs is the time
// it took. Under `rdmasim run --deterministic` that is virtual time.
//
// Prints one line: "CASE: status=STATUS posted_ns=T0 completed_ns=T1
// elapsed_ns=T1-T0 formula_ns=F" (F from the IBA formulas above).
// Exit status: 0 when the send completed with the expected status and A went
// to ERR; 1 otherwise or on an error; 2 for a bad command line.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "rc_example.hpp"

using namespace rc_example;

namespace {

struct Options {
    std::string ib_dev;
    std::string what = "retry"; // retry or rnr
    std::string peer = "destroyed"; // retry: destroyed, error or reset
    int timeout = 10;
    int retry_cnt = 3;
    int rnr_retry = 3;
    int min_rnr_timer = 14; // 1.28 ms
    int wait_s = 60;        // real time allowed for the completion
    int idle_polls = 1000;  // empty polls before the warm-up: the clock runs first
};

// The RNR NAK timer's encodings (IBA vol. 1, table "Encoding for RNR NAK
// Timer Field"), in microseconds; code 0 is the longest.
constexpr std::uint32_t kRnrTimerUs[32] = {
    655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,   320,
    480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240, 15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};

struct Resources {
    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
    ibv_cq_ex* cq = nullptr;
    ibv_qp* a = nullptr;
    ibv_qp* b = nullptr;
    ibv_mr* mr = nullptr;
    std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(8192);

    ~Resources() {
        if (a) ibv_destroy_qp(a);
        if (b) ibv_destroy_qp(b);
        if (mr) ibv_dereg_mr(mr);
        if (cq) ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
        if (pd) ibv_dealloc_pd(pd);
        if (ctx) ibv_close_device(ctx);
    }

    ibv_sge sge(std::size_t at, std::uint32_t len) {
        return {reinterpret_cast<std::uintptr_t>(buf.data() + at), len, mr->lkey};
    }
};

void post_send(Resources& r, std::uint64_t id) {
    ibv_sge sge = r.sge(0, 64);
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    if (int err = ibv_post_send(r.a, &wr, &bad)) fail("ibv_post_send", err);
}

void post_recv(Resources& r) {
    ibv_sge sge = r.sge(4096, 4096);
    ibv_recv_wr wr{};
    wr.wr_id = 100;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (int err = ibv_post_recv(r.b, &wr, &bad)) fail("ibv_post_recv", err);
}

// Polls until `n` completions came (each empty poll lets virtual time pass).
std::vector<Completion> wait_for(ibv_cq_ex* cq, std::size_t n, int wait_s) {
    std::vector<Completion> got;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
    Completion c[4];
    while (got.size() < n) {
        const int k = poll(cq, c, 4);
        got.insert(got.end(), c, c + k);
        if (k == 0 && std::chrono::steady_clock::now() > end)
            throw VerbsError("no completion within " + std::to_string(wait_s) + " s");
    }
    return got;
}

int run(const Options& o) {
    Resources r;
    r.ctx = open_device(o.ib_dev);
    const PortInfo port = query_port(r.ctx, 1, 0);
    r.pd = ibv_alloc_pd(r.ctx);
    if (r.pd == nullptr) fail("ibv_alloc_pd", errno);
    r.cq = create_timestamped_cq(r.ctx, 16);
    r.a = create_rc_qp(r.pd, ibv_cq_ex_to_cq(r.cq), 4, 4);
    r.b = create_rc_qp(r.pd, ibv_cq_ex_to_cq(r.cq), 4, 4);
    r.mr = ibv_reg_mr(r.pd, r.buf.data(), r.buf.size(), IBV_ACCESS_LOCAL_WRITE);
    if (r.mr == nullptr) fail("ibv_reg_mr", errno);

    RcPath path;
    path.mtu = port.active_mtu;
    path.timeout = static_cast<std::uint8_t>(o.timeout);
    path.retry_cnt = static_cast<std::uint8_t>(o.retry_cnt);
    path.rnr_retry = static_cast<std::uint8_t>(o.rnr_retry);
    path.min_rnr_timer = static_cast<std::uint8_t>(o.min_rnr_timer);
    const Endpoint a{r.a->qp_num, 0x1000, port.gid}, b{r.b->qp_num, 0x2000, port.gid};
    connect_rc(r.a, path, b, a.psn);
    connect_rc(r.b, path, a, b.psn);

    // The warm-up, after a while (on the inline engine each empty poll is a
    // tick of virtual time): A -> B works, and its completions give the clock.
    Completion none[1];
    for (int i = 0; i < o.idle_polls; ++i)
        if (poll(r.cq, none, 1) != 0) throw VerbsError("a completion before anything was posted");
    post_recv(r);
    post_send(r, 1);
    std::uint64_t t0 = 0;
    for (const Completion& c : wait_for(r.cq, 2, o.wait_s)) {
        if (c.status != IBV_WC_SUCCESS)
            throw VerbsError("the warm-up message completed with " + status_name(c.status));
        t0 = std::max(t0, c.ts_ns);
    }

    ibv_wc_status expected = IBV_WC_RNR_RETRY_EXC_ERR;
    std::uint64_t formula_ns = std::uint64_t{kRnrTimerUs[o.min_rnr_timer]} * 1000 * o.rnr_retry;
    if (o.what == "retry") {
        expected = IBV_WC_RETRY_EXC_ERR;
        formula_ns = (std::uint64_t{4096} << o.timeout) * (o.retry_cnt + 1);
        if (o.peer == "destroyed") {
            if (int err = ibv_destroy_qp(r.b)) fail("ibv_destroy_qp (B)", err);
            r.b = nullptr;
        } else {
            ibv_qp_attr at{};
            at.qp_state = o.peer == "error" ? IBV_QPS_ERR : IBV_QPS_RESET;
            modify(r.b, at, IBV_QP_STATE, o.peer == "error" ? "ERR" : "RESET");
        }
    }

    post_send(r, 2); // at t0: nothing polled since the warm-up's completions
    const Completion c = wait_for(r.cq, 1, o.wait_s).front();
    std::printf("%s: status=%s posted_ns=%llu completed_ns=%llu elapsed_ns=%llu formula_ns=%llu\n",
                o.what.c_str(), status_name(c.status).c_str(), static_cast<unsigned long long>(t0),
                static_cast<unsigned long long>(c.ts_ns),
                static_cast<unsigned long long>(c.ts_ns - t0),
                static_cast<unsigned long long>(formula_ns));
    if (c.wr_id != 2 || c.status != expected) {
        std::fprintf(stderr, "rc_peer_gone: expected %s for WR 2, got %s for WR %llu\n",
                     status_name(expected).c_str(), status_name(c.status).c_str(),
                     static_cast<unsigned long long>(c.wr_id));
        return 1;
    }
    ibv_qp_attr qa{};
    ibv_qp_init_attr qia{};
    if (int err = ibv_query_qp(r.a, &qa, IBV_QP_STATE, &qia)) fail("ibv_query_qp (A)", err);
    if (qa.qp_state != IBV_QPS_ERR) {
        std::fprintf(stderr, "rc_peer_gone: A is in state %d after the error, not ERR\n",
                     qa.qp_state);
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"rc_peer_gone: an RC send to a peer that is gone (retry) or has no receive (rnr)"};
    Options o;
    app.add_option("-d,--ib-dev", o.ib_dev, "RDMA device (default: the first)");
    app.add_option("--case", o.what, "retry (no QP answers) or rnr (no receive posted)")
        ->check(CLI::IsMember({"retry", "rnr"}));
    app.add_option("--peer", o.peer, "retry: the responder destroyed, in ERR or in RESET")
        ->check(CLI::IsMember({"destroyed", "error", "reset"}));
    app.add_option("--timeout", o.timeout, "local ACK timeout: 4.096 us * 2^TIMEOUT")
        ->check(CLI::Range(1, 31));
    app.add_option("--retry-cnt", o.retry_cnt, "retries after a timeout")->check(CLI::Range(0, 7));
    app.add_option("--rnr-retry", o.rnr_retry, "retries after an RNR NAK (7 would be for ever)")
        ->check(CLI::Range(0, 6));
    app.add_option("--min-rnr-timer", o.min_rnr_timer, "the responder's RNR NAK timer code")
        ->check(CLI::Range(0, 31));
    app.add_option("--idle-polls", o.idle_polls, "empty polls of the CQ before the warm-up")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--wait-s", o.wait_s, "real seconds to wait for the completion")
        ->check(CLI::PositiveNumber);
    return parse_and_run(app, argc, argv, "rc_peer_gone", [&] { return run(o); });
}
