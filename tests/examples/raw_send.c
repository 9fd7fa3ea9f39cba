/*
 * raw_send: send the frames of a capture on a raw-packet QP, written against
 * the system <infiniband/verbs.h> and libpcap and nothing else. The sending
 * half of a raw-packet program (rss_receive.c is the receiving half).
 *
 *   open device -> CQ -> PD -> raw-packet QP (RESET -> INIT -> RTR -> RTS)
 *   -> a ring of send buffers in one MR -> per frame: copy, ibv_post_send
 *   (signaled every N) -> wait for the last completions
 *
 * Run it on rdmasim (the other end: rss_receive under a second rdmasim run
 * with the same --wire):
 *   rdmasim run --wire ptp:///tmp/w/sock -- ./raw_send --pcap traffic.pcap --gap-us 200
 * Options: --pcap FILE (required, Ethernet), --count N (stop after N frames,
 *          default: the whole file), --gap-us N (pause between frames,
 *          default 0), --signal N (one signaled send every N, default 16),
 *          --wait (after set-up, print "ready" and wait for a line on
 *          stdin before sending: lets a test start the peer first).
 * Exit status: 0 when every frame of the capture (up to --count) was posted
 * and every send completion came back IBV_WC_SUCCESS.
 */
#include <infiniband/verbs.h>
#include <pcap/pcap.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 64   /* send WQEs, and buffers, in flight */
#define SLOT 9600 /* bytes per buffer: a jumbo frame with its header and a tag */

static void die(const char *what, int err)
{
	fprintf(stderr, "raw_send: %s: %s\n", what, strerror(err));
	exit(1);
}

static void sleep_us(unsigned us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/*
 * Completions come back in order, one per signaled send, each covering the
 * unsignaled sends posted before it: `batches` remembers how many.
 */
struct inflight {
	unsigned batches[RING], head, tail; /* sends per signaled WR, oldest first */
	unsigned outstanding;               /* sends not known to be complete */
	unsigned errors;
};

static void wait_completion(struct ibv_cq *cq, struct inflight *f)
{
	struct ibv_wc wc;
	int n;
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		;
	if (n < 0)
		die("ibv_poll_cq", EIO);
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "raw_send: send %" PRIu64 ": %s\n", wc.wr_id, ibv_wc_status_str(wc.status));
		f->errors++;
	}
	f->outstanding -= f->batches[f->head++ % RING];
}

/* The next record that can be sent whole; records cut by the capture or too long are skipped. */
static int next_record(pcap_t *pcap, struct pcap_pkthdr **hdr, const u_char **data, unsigned long *skipped)
{
	int rc;
	while ((rc = pcap_next_ex(pcap, hdr, data)) == 1) {
		if ((*hdr)->caplen == (*hdr)->len && (*hdr)->caplen <= SLOT)
			return 1;
		(*skipped)++;
	}
	return rc;
}

int main(int argc, char **argv)
{
	const char *path = NULL;
	unsigned long count = 0;
	unsigned gap_us = 0, signal_every = 16, wait = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pcap") && i + 1 < argc)
			path = argv[++i];
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			count = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--gap-us") && i + 1 < argc)
			gap_us = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--signal") && i + 1 < argc)
			signal_every = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--wait"))
			wait = 1;
		else {
			fprintf(stderr, "usage: %s --pcap FILE [--count N] [--gap-us N] [--signal N] [--wait]\n", argv[0]);
			return 2;
		}
	}
	if (!path) {
		fprintf(stderr, "raw_send: --pcap FILE is required\n");
		return 2;
	}
	/* At least one signaled send per ring's worth, or a full ring has nothing to wait for. */
	if (signal_every == 0 || signal_every > RING)
		die("--signal must be 1..64", EINVAL);

	/* 1. The capture: Ethernet frames only. */
	char errbuf[PCAP_ERRBUF_SIZE];
	pcap_t *pcap = pcap_open_offline(path, errbuf);
	if (!pcap) {
		fprintf(stderr, "raw_send: %s\n", errbuf);
		return 1;
	}
	if (pcap_datalink(pcap) != DLT_EN10MB) {
		fprintf(stderr, "raw_send: %s: link type %s, not Ethernet\n", path,
			pcap_datalink_val_to_name(pcap_datalink(pcap)));
		return 1;
	}

	/* 2. The first device, a CQ and a PD. */
	int ndev = 0;
	struct ibv_device **list = ibv_get_device_list(&ndev);
	if (!list || ndev == 0)
		die("ibv_get_device_list", list ? ENODEV : errno);
	struct ibv_context *ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device", errno);
	printf("device %s\n", ibv_get_device_name(list[0]));
	ibv_free_device_list(list);
	struct ibv_cq *cq = ibv_create_cq(ctx, RING, NULL, NULL, 0);
	if (!cq)
		die("ibv_create_cq", errno);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd", errno);

	/* 3. A raw-packet QP, moved to RTS: only then may it send. */
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_send_wr = RING, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);
	if (!qp)
		die("ibv_create_qp", errno);
	struct ibv_qp_attr ma = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int err = ibv_modify_qp(qp, &ma, IBV_QP_STATE | IBV_QP_PORT);
	if (err)
		die("ibv_modify_qp INIT", err);
	ma.qp_state = IBV_QPS_RTR;
	if ((err = ibv_modify_qp(qp, &ma, IBV_QP_STATE)))
		die("ibv_modify_qp RTR", err);
	ma.qp_state = IBV_QPS_RTS;
	if ((err = ibv_modify_qp(qp, &ma, IBV_QP_STATE)))
		die("ibv_modify_qp RTS", err);

	/* 4. One MR over a ring of buffers: a buffer is free again once a later signaled send completed. */
	uint8_t *mem = aligned_alloc(4096, (size_t)RING * SLOT);
	if (!mem)
		die("aligned_alloc", ENOMEM);
	struct ibv_mr *mr = ibv_reg_mr(pd, mem, (size_t)RING * SLOT, 0);
	if (!mr)
		die("ibv_reg_mr", errno);

	if (wait) {
		char line[16];
		printf("ready\n");
		fflush(stdout);
		if (!fgets(line, sizeof line, stdin))
			die("waiting on stdin", EPIPE);
	}

	/*
	 * 5. Send: copy, post, one signaled send every N and the last one
	 * signaled too (a record is read ahead to know it is the last); never
	 * more than RING sends outstanding, so a buffer is free when reused.
	 */
	unsigned long sent = 0, skipped = 0;
	uint64_t bytes = 0;
	struct inflight f = { .head = 0 };
	unsigned unsignaled = 0;
	struct pcap_pkthdr *hdr;
	const u_char *data;
	int rc = (count == 0 || sent < count) ? next_record(pcap, &hdr, &data, &skipped) : 0;
	while (rc == 1) {
		if (f.outstanding == RING)
			wait_completion(cq, &f);
		uint8_t *buf = mem + (sent % RING) * SLOT;
		const uint32_t len = hdr->caplen;
		memcpy(buf, data, len);
		rc = (count == 0 || sent + 1 < count) ? next_record(pcap, &hdr, &data, &skipped) : 0;
		struct ibv_sge sge = { (uintptr_t)buf, len, mr->lkey };
		struct ibv_send_wr wr = { .wr_id = sent, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND };
		unsignaled++;
		if (unsignaled == signal_every || rc != 1) {
			wr.send_flags = IBV_SEND_SIGNALED;
			f.batches[f.tail++ % RING] = unsignaled;
			unsignaled = 0;
		}
		struct ibv_send_wr *bad;
		if ((err = ibv_post_send(qp, &wr, &bad)))
			die("ibv_post_send", err);
		f.outstanding++;
		sent++;
		bytes += len;
		if (gap_us && rc == 1)
			sleep_us(gap_us);
	}
	if (rc == PCAP_ERROR) {
		fprintf(stderr, "raw_send: %s: %s\n", path, pcap_geterr(pcap));
		f.errors++;
	}
	while (f.outstanding)
		wait_completion(cq, &f);
	printf("sent %lu frames (%" PRIu64 " bytes), %lu skipped, %u errors\n", sent, bytes, skipped,
	       f.errors);

	/* 7. Tear down in reverse order. */
	ibv_dereg_mr(mr);
	ibv_destroy_qp(qp);
	ibv_dealloc_pd(pd);
	ibv_destroy_cq(cq);
	ibv_close_device(ctx);
	free(mem);
	pcap_close(pcap);
	return f.errors == 0 && (count == 0 || sent == count) ? 0 : 1;
}
