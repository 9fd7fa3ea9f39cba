/*
 * rss_receive: the canonical raw-packet receive set-up, written against the
 * system <infiniband/verbs.h> and nothing else. Start here when porting a
 * receiver to rdmasim (or to real hardware: nothing in it is emulator-only).
 *
 *   query caps -> CQ-ex with CVLAN -> N WQs with all four offload flags
 *   -> RDY -> MR -> post -> indirection table -> RSS QP -> catch-all flow
 *   -> poll, check each frame's FCS, re-post
 *
 * Run it on rdmasim:  rdmasim run --pcap traffic.pcap -- ./rss_receive --frames 300
 * Options: --wqs N (default 4), --frames N (stop after N frames),
 *          --dump FILE (one line per completion), --idle-ms N (give up after
 *          N ms without a completion, default 5000).
 * Exit status: 0 when N frames arrived and every FCS checked out.
 */
#include <infiniband/verbs.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 512
#define BUF 2048

/*
 * Microsoft's RSS verification key. The project's one copy is
 * rdmasim::datapath::kMicrosoftRssKey (datapath/toeplitz.hpp), but this example
 * is C built against the system headers only, so it carries its own.
 */
static uint8_t rss_key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
	0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
	0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
	0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

static void die(const char *what, int err)
{
	fprintf(stderr, "rss_receive: %s: %s\n", what, strerror(err));
	exit(1);
}

/* Ethernet CRC-32 (reflected 0xEDB88320), bit by bit: slow and obviously right. */
static uint32_t crc32_eth(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & -(c & 1u));
	}
	return ~c;
}

/* The FCS covers the frame as it was on the wire: put a stripped tag back. */
static int fcs_matches(const uint8_t *data, uint32_t len, int tagged, uint16_t tci)
{
	static uint8_t wire[BUF + 8];
	uint32_t n = 0;

	if (tagged) {
		memcpy(wire, data, 12);
		wire[12] = 0x81;
		wire[13] = 0x00;
		wire[14] = tci >> 8;
		wire[15] = tci & 0xff;
		memcpy(wire + 16, data + 12, len - 4 - 12);
		n = len - 4 + 4;
	} else {
		memcpy(wire, data, len - 4);
		n = len - 4;
	}
	uint32_t want = crc32_eth(wire, n);
	const uint8_t *f = data + len - 4; /* least significant byte first */
	uint32_t got = f[0] | f[1] << 8 | f[2] << 16 | (uint32_t)f[3] << 24;
	return want == got;
}

/*
 * A completion says which TCI was stripped but not whether a tag was: a
 * stripped priority tag (TCI 0) reads back like no tag at all. So with TCI 0
 * both readings are tried.
 */
static int fcs_ok(const uint8_t *data, uint32_t len, uint16_t tci)
{
	if (len < 4 + 12)
		return 0;
	if (tci)
		return fcs_matches(data, len, 1, tci);
	return fcs_matches(data, len, 0, 0) || fcs_matches(data, len, 1, 0);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	unsigned nwq = 4, want = 0, idle_ms = 5000;
	const char *dump_path = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--wqs") && i + 1 < argc)
			nwq = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--frames") && i + 1 < argc)
			want = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--dump") && i + 1 < argc)
			dump_path = argv[++i];
		else if (!strcmp(argv[i], "--idle-ms") && i + 1 < argc)
			idle_ms = (unsigned)atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--wqs N] [--frames N] [--dump FILE] [--idle-ms N]\n", argv[0]);
			return 2;
		}
	}
	if (nwq == 0 || nwq > 64 || (nwq & (nwq - 1)))
		die("--wqs must be a power of two up to 64", EINVAL);

	int ndev = 0;
	struct ibv_device **list = ibv_get_device_list(&ndev);
	if (!list || ndev == 0)
		die("ibv_get_device_list", list ? ENODEV : errno);
	struct ibv_context *ctx = ibv_open_device(list[0]);
	if (!ctx)
		die("ibv_open_device", errno);
	printf("device %s\n", ibv_get_device_name(list[0]));
	ibv_free_device_list(list);

	/* 1. What the device can do. */
	struct ibv_device_attr_ex attr;
	int err = ibv_query_device_ex(ctx, NULL, &attr);
	if (err)
		die("ibv_query_device_ex", err);
	uint32_t flags = 0;
	if (attr.raw_packet_caps & IBV_RAW_PACKET_CAP_CVLAN_STRIPPING)
		flags |= IBV_WQ_FLAGS_CVLAN_STRIPPING;
	if (attr.raw_packet_caps & IBV_RAW_PACKET_CAP_SCATTER_FCS)
		flags |= IBV_WQ_FLAGS_SCATTER_FCS;
	if (attr.raw_packet_caps & IBV_RAW_PACKET_CAP_DELAY_DROP)
		flags |= IBV_WQ_FLAGS_DELAY_DROP;
	if (attr.device_cap_flags_ex & IBV_DEVICE_PCI_WRITE_END_PADDING)
		flags |= IBV_WQ_FLAGS_PCI_WRITE_END_PADDING;
	if (!(flags & IBV_WQ_FLAGS_SCATTER_FCS))
		die("device lacks FCS scatter", EOPNOTSUPP);

	/* 2. One CQ for every WQ, reporting the stripped VLAN tag. */
	struct ibv_cq_init_attr_ex cq_attr = {
		.cqe = RING * nwq,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_CVLAN,
	};
	struct ibv_cq_ex *cq = ibv_create_cq_ex(ctx, &cq_attr);
	if (!cq)
		die("ibv_create_cq_ex", errno);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd", errno);
	size_t bytes = (size_t)nwq * RING * BUF;
	uint8_t *mem = aligned_alloc(4096, bytes);
	if (!mem)
		die("aligned_alloc", ENOMEM);
	struct ibv_mr *mr = ibv_reg_mr(pd, mem, bytes, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr", errno);

	/* 3. Receive WQs with every offload flag, moved to RDY and filled. */
	struct ibv_wq *wq[64];
	for (unsigned w = 0; w < nwq; w++) {
		struct ibv_wq_init_attr wa = {
			.wq_type = IBV_WQT_RQ, .max_wr = RING, .max_sge = 1, .pd = pd,
			.cq = ibv_cq_ex_to_cq(cq), .comp_mask = IBV_WQ_INIT_ATTR_FLAGS,
			.create_flags = flags,
		};
		wq[w] = ibv_create_wq(ctx, &wa);
		if (!wq[w])
			die("ibv_create_wq", errno);
		struct ibv_wq_attr ma = { .attr_mask = IBV_WQ_ATTR_STATE, .wq_state = IBV_WQS_RDY };
		if ((err = ibv_modify_wq(wq[w], &ma)))
			die("ibv_modify_wq", err);
		for (unsigned s = 0; s < RING; s++) {
			uint64_t id = (uint64_t)w * RING + s;
			struct ibv_sge sge = { (uintptr_t)(mem + id * BUF), BUF, mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;
			if ((err = ibv_post_wq_recv(wq[w], &wr, &bad)))
				die("ibv_post_wq_recv", err);
		}
	}

	/* 4. RSS: an indirection table over the WQs, hashing IPv4 addresses and TCP ports. */
	unsigned log_size = 0;
	while ((1u << log_size) < nwq)
		log_size++;
	struct ibv_rwq_ind_table_init_attr ta = { .log_ind_tbl_size = log_size, .ind_tbl = wq };
	struct ibv_rwq_ind_table *table = ibv_create_rwq_ind_table(ctx, &ta);
	if (!table)
		die("ibv_create_rwq_ind_table", errno);
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH,
		.pd = pd,
		.rwq_ind_tbl = table,
		.rx_hash_conf = {
			.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
			.rx_hash_key_len = sizeof(rss_key),
			.rx_hash_key = rss_key,
			.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
					       IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP,
		},
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &qa);
	if (!qp)
		die("ibv_create_qp_ex", errno);

	/* 5. A catch-all flow: an ETH spec with all-zero masks matches every frame. */
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
	} fa = { /* no padding: both structs are 4-byte aligned, 20 + 40 bytes */
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(fa), .num_of_specs = 1, .port = 1 },
		.eth = { .type = IBV_FLOW_SPEC_ETH, .size = sizeof(struct ibv_flow_spec_eth) },
	};
	struct ibv_flow *flow = ibv_create_flow(qp, &fa.attr);
	if (!flow)
		die("ibv_create_flow", errno);
	/* Set up: frames arriving from now on are received (a peer may start sending). */
	printf("ready: %u WQs\n", nwq);
	fflush(stdout);

	/* 6. Poll, check, re-post. */
	FILE *dump = dump_path ? fopen(dump_path, "w") : NULL;
	if (dump_path && !dump)
		die(dump_path, errno);
	unsigned got = 0, bad_fcs = 0, errors = 0;
	double last = now_ms();
	while (!want || got + errors < want) {
		struct ibv_poll_cq_attr pa = { 0 };
		if (ibv_start_poll(cq, &pa)) {
			if (now_ms() - last > idle_ms)
				break;
			continue;
		}
		do {
			uint64_t id = cq->wr_id;
			unsigned w = (unsigned)(id / RING);
			if (cq->status != IBV_WC_SUCCESS) {
				errors++;
				if (dump)
					fprintf(dump, "wq=%u status=%s\n", w, ibv_wc_status_str(cq->status));
			} else {
				uint32_t len = ibv_wc_read_byte_len(cq);
				uint16_t tci = ibv_wc_read_cvlan(cq);
				const uint8_t *data = mem + id * BUF;
				int ok = fcs_ok(data, len, tci);
				bad_fcs += !ok;
				got++;
				if (dump) {
					fprintf(dump, "wq=%u qpn=%u len=%u tci=%u fcs=%s data=", w,
						ibv_wc_read_qp_num(cq), len, tci, ok ? "ok" : "bad");
					for (uint32_t i = 0; i < len; i++)
						fprintf(dump, "%02x", data[i]);
					fputc('\n', dump);
				}
			}
			struct ibv_sge sge = { (uintptr_t)(mem + id * BUF), BUF, mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *badwr;
			if ((err = ibv_post_wq_recv(wq[w], &wr, &badwr)))
				die("ibv_post_wq_recv", err);
		} while (ibv_next_poll(cq) == 0);
		ibv_end_poll(cq);
		last = now_ms();
	}
	if (dump)
		fclose(dump);
	printf("received %u frames, %u error completions, %u bad FCS\n", got, errors, bad_fcs);

	/* 7. Tear down in reverse order. */
	ibv_destroy_flow(flow);
	ibv_destroy_qp(qp);
	ibv_destroy_rwq_ind_table(table);
	for (unsigned w = 0; w < nwq; w++)
		ibv_destroy_wq(wq[w]);
	ibv_dereg_mr(mr);
	ibv_dealloc_pd(pd);
	ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	ibv_close_device(ctx);
	free(mem);
	return (bad_fcs == 0 && (!want || got + errors == want)) ? 0 : 1;
}
