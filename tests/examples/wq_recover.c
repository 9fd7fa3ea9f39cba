/*
 * wq_recover: a receiver that survives the errors real hardware raises
 * rarely, written against the system <infiniband/verbs.h> alone. It is the
 * program the CI recipe of the top README ("Testing RDMA code in CI") runs
 * under a fault plan, so that its error paths run on every commit:
 *
 *   - ibv_create_wq failing with ENOMEM or EAGAIN (a transient shortage of
 *     device memory): retried a few times, with a growing pause;
 *   - IBV_EVENT_WQ_FATAL (the WQ went to IBV_WQS_ERR): the event is acked,
 *     the WQEs still posted come back flushed (IBV_WC_WR_FLUSH_ERR) and are
 *     drained from the CQ, then the flow, the RSS QP, the indirection table
 *     and the WQ are destroyed and built again, and receiving goes on.
 *
 * Frames that arrive while the WQ is down are lost, as on real hardware
 * (rdmasim counts them as wq_not_ready or steering_miss drops).
 *
 * Run it on rdmasim:
 *   rdmasim run --deterministic --pcap traffic.pcap \
 *       --faults 'wq-fatal:wq=0,after=100; verb-fail:create_wq,nth=2,errno=ENOMEM' \
 *       -- ./wq_recover --min-frames 200
 * Options: --min-frames N (default 1), --idle-ms N (stop after N ms without
 *          a completion, default 2000).
 * Prints:  received N frames, R recoveries, F flushed, T create_wq retries
 * Exit status: 0 when at least N frames arrived, every completion was a
 * success or a flush of a fatal WQ, and every fatal WQ was recovered.
 */
#include <infiniband/verbs.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING 256    /* WQEs per WQ */
#define BUF 10240   /* bytes per WQE: a 9000-byte jumbo frame fits */
#define TRIES 5     /* ibv_create_wq attempts before giving up */

static void die(const char *what, int err)
{
	fprintf(stderr, "wq_recover: %s: %s\n", what, strerror(err));
	exit(1);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Microsoft's RSS verification key: an RSS QP needs some 40-byte key. */
static uint8_t rss_key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

/* Everything built on the WQ: torn down and rebuilt as one. */
struct rx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *mem;
	struct ibv_wq *wq;
	struct ibv_rwq_ind_table *table;
	struct ibv_qp *qp;
	struct ibv_flow *flow;
	unsigned outstanding; /* WQEs posted and not completed yet */
	unsigned retries;     /* ibv_create_wq calls that failed and were retried */
};

static void post(struct rx *rx, uint64_t slot)
{
	struct ibv_sge sge = { (uintptr_t)(rx->mem + slot * BUF), BUF, rx->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;
	int err = ibv_post_wq_recv(rx->wq, &wr, &bad);
	if (err)
		die("ibv_post_wq_recv", err);
	rx->outstanding++;
}

/* ENOMEM and EAGAIN may pass: try again, waiting a little longer each time. */
static struct ibv_wq *create_wq_retrying(struct rx *rx)
{
	struct ibv_wq_init_attr wa = {
		.wq_type = IBV_WQT_RQ, .max_wr = RING, .max_sge = 1, .pd = rx->pd, .cq = rx->cq,
	};
	for (int attempt = 1;; attempt++) {
		struct ibv_wq *wq = ibv_create_wq(rx->ctx, &wa);
		if (wq)
			return wq;
		int err = errno;
		if ((err != ENOMEM && err != EAGAIN) || attempt == TRIES)
			die("ibv_create_wq", err);
		fprintf(stderr, "wq_recover: ibv_create_wq: %s, retrying\n", strerror(err));
		rx->retries++;
		usleep(1000u * attempt);
	}
}

/* WQ (RDY, filled) -> one-entry indirection table -> RSS QP -> catch-all flow. */
static void build(struct rx *rx)
{
	rx->wq = create_wq_retrying(rx);
	struct ibv_wq_attr ma = { .attr_mask = IBV_WQ_ATTR_STATE, .wq_state = IBV_WQS_RDY };
	int err = ibv_modify_wq(rx->wq, &ma);
	if (err)
		die("ibv_modify_wq", err);
	for (uint64_t slot = 0; slot < RING; slot++)
		post(rx, slot);

	struct ibv_rwq_ind_table_init_attr ta = { .log_ind_tbl_size = 0, .ind_tbl = &rx->wq };
	rx->table = ibv_create_rwq_ind_table(rx->ctx, &ta);
	if (!rx->table)
		die("ibv_create_rwq_ind_table", errno);
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH,
		.pd = rx->pd,
		.rwq_ind_tbl = rx->table,
		.rx_hash_conf = { /* one WQ: nothing to hash */
			.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
			.rx_hash_key_len = sizeof(rss_key),
			.rx_hash_key = rss_key,
		},
	};
	rx->qp = ibv_create_qp_ex(rx->ctx, &qa);
	if (!rx->qp)
		die("ibv_create_qp_ex", errno);
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
	} fa = { /* all-zero masks: every frame */
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(fa), .num_of_specs = 1, .port = 1 },
		.eth = { .type = IBV_FLOW_SPEC_ETH, .size = sizeof(struct ibv_flow_spec_eth) },
	};
	rx->flow = ibv_create_flow(rx->qp, &fa.attr);
	if (!rx->flow)
		die("ibv_create_flow", errno);
}

/* In reverse order of build(); each destroy fails only while something still uses the object. */
static void tear_down(struct rx *rx)
{
	int err;
	if ((err = ibv_destroy_flow(rx->flow)))
		die("ibv_destroy_flow", err);
	if ((err = ibv_destroy_qp(rx->qp)))
		die("ibv_destroy_qp", err);
	if ((err = ibv_destroy_rwq_ind_table(rx->table)))
		die("ibv_destroy_rwq_ind_table", err);
	if ((err = ibv_destroy_wq(rx->wq)))
		die("ibv_destroy_wq", err);
	rx->outstanding = 0; /* a destroyed WQ's WQEs vanish without completions */
}

struct tally {
	unsigned received, flushed, bad;
};

/*
 * Takes up to `max` completions; re-posts a buffer after each success while
 * the WQ is healthy (`repost`).
 */
static int poll_once(struct rx *rx, struct tally *t, int max, int repost)
{
	static struct ibv_wc wc[RING];
	int n = ibv_poll_cq(rx->cq, max, wc);
	if (n < 0)
		die("ibv_poll_cq", EIO);
	for (int i = 0; i < n; i++) {
		rx->outstanding--;
		if (wc[i].status == IBV_WC_SUCCESS) {
			t->received++;
			if (repost)
				post(rx, wc[i].wr_id);
		} else if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
			t->flushed++;
		} else {
			fprintf(stderr, "wq_recover: completion %s\n", ibv_wc_status_str(wc[i].status));
			t->bad++;
			if (repost)
				post(rx, wc[i].wr_id);
		}
	}
	return n;
}

/*
 * IBV_EVENT_WQ_FATAL: every WQE still posted completes with
 * IBV_WC_WR_FLUSH_ERR. Take them all (destroying the WQ would discard them
 * unseen), a ring's worth per poll so that the WQ is back soon, then
 * rebuild. The event must be acked before ibv_destroy_wq, which waits for it.
 */
static void recover(struct rx *rx, struct tally *t)
{
	double start = now_ms();
	while (rx->outstanding > 0) {
		if (poll_once(rx, t, RING, 0) == 0 && now_ms() - start > 5000)
			die("draining the fatal WQ's flushed completions", ETIMEDOUT);
	}
	tear_down(rx);
	build(rx);
}

int main(int argc, char **argv)
{
	unsigned min_frames = 1, idle_ms = 2000;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--min-frames") && i + 1 < argc)
			min_frames = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--idle-ms") && i + 1 < argc)
			idle_ms = (unsigned)atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--min-frames N] [--idle-ms N]\n", argv[0]);
			return 2;
		}
	}

	struct rx rx = { 0 };
	int ndev = 0;
	struct ibv_device **list = ibv_get_device_list(&ndev);
	if (!list || ndev == 0)
		die("ibv_get_device_list", list ? ENODEV : errno);
	rx.ctx = ibv_open_device(list[0]);
	if (!rx.ctx)
		die("ibv_open_device", errno);
	ibv_free_device_list(list);
	/* Async events are checked between polls, never waited for. */
	int fl = fcntl(rx.ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(rx.ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		die("fcntl(async_fd, O_NONBLOCK)", errno);

	rx.pd = ibv_alloc_pd(rx.ctx);
	if (!rx.pd)
		die("ibv_alloc_pd", errno);
	rx.cq = ibv_create_cq(rx.ctx, 2 * RING, NULL, NULL, 0);
	if (!rx.cq)
		die("ibv_create_cq", errno);
	rx.mem = aligned_alloc(4096, (size_t)RING * BUF);
	if (!rx.mem)
		die("aligned_alloc", ENOMEM);
	rx.mr = ibv_reg_mr(rx.pd, rx.mem, (size_t)RING * BUF, IBV_ACCESS_LOCAL_WRITE);
	if (!rx.mr)
		die("ibv_reg_mr", errno);
	build(&rx);

	struct tally t = { 0 };
	unsigned fatal = 0, recoveries = 0;
	double last = now_ms();
	for (;;) {
		struct ibv_async_event ev;
		if (ibv_get_async_event(rx.ctx, &ev) == 0) {
			enum ibv_event_type type = ev.event_type;
			int ours = type == IBV_EVENT_WQ_FATAL && ev.element.wq == rx.wq;
			ibv_ack_async_event(&ev);
			if (ours) {
				fatal++;
				recover(&rx, &t);
				recoveries++;
				last = now_ms();
				continue;
			}
			if (type != IBV_EVENT_PORT_ERR && type != IBV_EVENT_PORT_ACTIVE)
				die(ibv_event_type_str(type), EIO); /* CQ overrun, device fatal: give up */
		} else if (errno != EAGAIN) {
			die("ibv_get_async_event", errno);
		}
		if (poll_once(&rx, &t, 32, 1) > 0)
			last = now_ms();
		else if (now_ms() - last > idle_ms)
			break;
	}
	printf("received %u frames, %u recoveries, %u flushed, %u create_wq retries\n", t.received,
	       recoveries, t.flushed, rx.retries);

	tear_down(&rx);
	ibv_dereg_mr(rx.mr);
	ibv_destroy_cq(rx.cq);
	ibv_dealloc_pd(rx.pd);
	ibv_close_device(rx.ctx);
	free(rx.mem);
	return (t.received >= min_frames && t.bad == 0 && recoveries == fatal) ? 0 : 1;
}
