// A program that forks after opening a device (sim/README.md, "Fork"): the
// parent does an RC SEND between two of its own QPs, forks, and the child
// does the same on the inherited context, then leaves through exit(); the
// parent does it once more afterwards. Every SEND is posted before its
// receive: an RNR NAK, retried on the engine's timer, so a device without a
// working engine never completes it. Exit status: 0 when every transfer
// completed within 3 s, 1 when one did not, 2 on a verb error, 3 when the
// child was stuck (killed after 6 s).
// Run: rdmasim run [--trace F ...] -- fork_child
#include <infiniband/verbs.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DIE(what)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "[%d] %s: %s\n", (int)getpid(), what, strerror(errno));                    \
        _exit(2);                                                                                  \
    } while (0)

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void to_rts(struct ibv_qp* qp, uint32_t remote_qpn, const union ibv_gid* gid) {
    struct ibv_qp_attr a;
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
    errno =
        ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
    if (errno) DIE("modify INIT");
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = remote_qpn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = *gid;
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    errno = ibv_modify_qp(qp, &a,
                          IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                              IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (errno) DIE("modify RTR");
    memset(&a, 0, sizeof a);
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    errno = ibv_modify_qp(qp, &a,
                          IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                              IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (errno) DIE("modify RTS");
}

// One SEND between two new QPs through the own GID, posted before the receive.
static int transfer(struct ibv_context* ctx, const char* who) {
    union ibv_gid gid;
    if (ibv_query_gid(ctx, 1, 0, &gid)) DIE("ibv_query_gid");
    struct ibv_pd* pd = ibv_alloc_pd(ctx);
    struct ibv_cq* cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
    if (!cq) DIE("ibv_alloc_pd/ibv_create_cq");
    static char buf[2][64];
    struct ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof buf, IBV_ACCESS_LOCAL_WRITE);
    if (!mr) DIE("ibv_reg_mr");
    struct ibv_qp_init_attr ia;
    memset(&ia, 0, sizeof ia);
    ia.send_cq = ia.recv_cq = cq;
    ia.qp_type = IBV_QPT_RC;
    ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
    ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
    struct ibv_qp* a = ibv_create_qp(pd, &ia);
    struct ibv_qp* b = ibv_create_qp(pd, &ia);
    if (!a || !b) DIE("ibv_create_qp");
    to_rts(a, b->qp_num, &gid);
    to_rts(b, a->qp_num, &gid);
    snprintf(buf[0], sizeof buf[0], "hello from the %s", who);
    struct ibv_sge ss = {(uintptr_t)buf[0], 64, mr->lkey};
    struct ibv_send_wr swr = {.wr_id = 1,
                              .sg_list = &ss,
                              .num_sge = 1,
                              .opcode = IBV_WR_SEND,
                              .send_flags = IBV_SEND_SIGNALED},
                       *bad_s;
    if ((errno = ibv_post_send(a, &swr, &bad_s))) DIE("ibv_post_send");
    usleep(20000); // the receiver answers RNR meanwhile
    struct ibv_sge rs = {(uintptr_t)buf[1], 64, mr->lkey};
    struct ibv_recv_wr rwr = {.wr_id = 2, .sg_list = &rs, .num_sge = 1}, *bad_r;
    if ((errno = ibv_post_recv(b, &rwr, &bad_r))) DIE("ibv_post_recv");
    int got = 0;
    for (const double until = now_s() + 3; got < 2 && now_s() < until;) {
        struct ibv_wc wc;
        const int n = ibv_poll_cq(cq, 1, &wc);
        if (n < 0) DIE("ibv_poll_cq");
        if (n == 1 && wc.status != IBV_WC_SUCCESS) {
            fprintf(stderr, "[%s] completion %llu: %s\n", who, (unsigned long long)wc.wr_id,
                    ibv_wc_status_str(wc.status));
            return 1;
        }
        if (n == 0) usleep(100);
        got += n;
    }
    printf("[%s] qpns 0x%x 0x%x: %d of 2 completions%s\n", who, a->qp_num, b->qp_num, got,
           got == 2 ? "" : " (timed out)");
    fflush(stdout);
    if (ibv_destroy_qp(a) || ibv_destroy_qp(b) || ibv_destroy_cq(cq) || ibv_dereg_mr(mr) ||
        ibv_dealloc_pd(pd))
        DIE("teardown");
    return got == 2 ? 0 : 1;
}

// The child's exit status, or 3 when it is stuck (then killed).
static int wait_child(pid_t pid) {
    int status = 0;
    for (const double until = now_s() + 6; waitpid(pid, &status, WNOHANG) == 0; usleep(10000)) {
        if (now_s() > until) {
            fprintf(stderr, "[parent] child %d stuck: killed\n", (int)pid);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return 3;
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(void) {
    int n = 0;
    struct ibv_device** list = ibv_get_device_list(&n);
    if (!list || n == 0) DIE("ibv_get_device_list");
    struct ibv_context* ctx = ibv_open_device(list[0]);
    if (!ctx) DIE("ibv_open_device");
    if (transfer(ctx, "parent before fork")) return 1;
    const pid_t pid = fork();
    if (pid < 0) DIE("fork");
    if (pid == 0) exit(transfer(ctx, "child")); // exit(): the library's handlers run
    const int rc = wait_child(pid);
    printf("[parent] child exit status %d\n", rc);
    if (rc != 0) return rc;
    if (transfer(ctx, "parent after fork")) return 1;
    ibv_close_device(ctx);
    ibv_free_device_list(list);
    return 0;
}
