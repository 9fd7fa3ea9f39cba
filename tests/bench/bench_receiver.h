/*
 * The receiver every in-process and drop-in benchmark runs, written once in
 * C (it compiles as C++ too), so that the C program on the drop-in library
 * and the C++ programs linking the library do exactly the same work:
 *
 * a CQ-ex (byte_len, QP number, CVLAN, completion timestamp), one buffer
 * registered as one MR, WQS WQs with CVLAN stripping, FCS scatter and end
 * padding, RDY and filled with DEPTH WQEs of BUF bytes (DEPTH a power of two:
 * a completion's WQ is its wr_id shifted, not divided); an indirection table
 * over them; RSS QPs with the Microsoft key and a flow each, as DPDK's mlx5
 * driver installs them: IPv4/TCP, IPv4/UDP, IPv6/UDP (priority 0) and a
 * catch-all (priority 1). A poll round is one ibv_start_poll / ibv_next_poll
 * / ibv_end_poll pass over every completion there is, then every WQE it
 * completed re-posted, one chain per WQ. Buffer `id` keeps one work request,
 * built at set-up: a completion only links it into its WQ's chain.
 *
 * Errors are printed to stderr naming the verb; the functions return 0 or
 * an errno value.
 */
#ifndef RDMASIM_BENCH_RECEIVER_H
#define RDMASIM_BENCH_RECEIVER_H

#include <infiniband/verbs.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_RX_MAX_WQS 16
#define BENCH_RX_CLASSES 4

struct bench_rx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq_ex *cq;
	uint8_t *mem;
	struct ibv_mr *mr;
	struct ibv_wq *wqs[BENCH_RX_MAX_WQS];
	struct ibv_rwq_ind_table *table;
	struct ibv_qp *qps[BENCH_RX_CLASSES];
	struct ibv_flow *flows[BENCH_RX_CLASSES];
	uint32_t nwqs, depth, depth_log, buf;
	/* Per buffer, its work request and SGE; per WQ, the chain of those a
	 * poll round completed, for the re-post. */
	struct ibv_recv_wr *wr;
	struct ibv_sge *sge;
	struct ibv_recv_wr *head[BENCH_RX_MAX_WQS], *tail[BENCH_RX_MAX_WQS];
	uint64_t completions, errors, bytes;
};

static inline int bench_rx_fail(const char *verb, int err)
{
	fprintf(stderr, "bench receiver: %s: %s\n", verb, strerror(err));
	return err;
}

/* Builds buffer `id`'s work request (WQ id >> depth_log, slot id % depth)
 * and posts it alone. */
static inline int bench_rx_post_one(struct bench_rx *r, uint64_t id)
{
	struct ibv_recv_wr *bad = NULL;
	r->sge[id].addr = (uint64_t)(uintptr_t)(r->mem + id * r->buf);
	r->sge[id].length = r->buf;
	r->sge[id].lkey = r->mr->lkey;
	r->wr[id].wr_id = id;
	r->wr[id].sg_list = &r->sge[id];
	r->wr[id].num_sge = 1;
	r->wr[id].next = NULL;
	return ibv_post_wq_recv(r->wqs[id >> r->depth_log], &r->wr[id], &bad);
}

/* A flow attribute with its specs packed right after it, as verbs lays them out. */
struct bench_rx_flow {
	struct ibv_flow_attr attr;
	uint8_t specs[sizeof(struct ibv_flow_spec_eth) + sizeof(struct ibv_flow_spec_ipv6) +
		      sizeof(struct ibv_flow_spec_tcp_udp)];
};

/* Class c: its flow (zero masks: protocol presence only) and hash fields. */
static inline uint64_t bench_rx_class(int c, struct bench_rx_flow *f)
{
	static const uint64_t fields[] = {
		IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_TCP |
			IBV_RX_HASH_DST_PORT_TCP,
		IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_PORT_UDP |
			IBV_RX_HASH_DST_PORT_UDP,
		IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6 | IBV_RX_HASH_SRC_PORT_UDP |
			IBV_RX_HASH_DST_PORT_UDP,
		IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4};
	struct ibv_flow_spec_eth eth;
	struct ibv_flow_spec_ipv4 v4;
	struct ibv_flow_spec_ipv6 v6;
	struct ibv_flow_spec_tcp_udp l4;
	uint8_t *p = f->specs;
	memset(f, 0, sizeof *f);
	memset(&eth, 0, sizeof eth);
	memset(&v4, 0, sizeof v4);
	memset(&v6, 0, sizeof v6);
	memset(&l4, 0, sizeof l4);
	f->attr.type = IBV_FLOW_ATTR_NORMAL;
	f->attr.port = 1;
	f->attr.priority = c == 3 ? 1 : 0;
	eth.type = IBV_FLOW_SPEC_ETH;
	eth.size = sizeof eth;
	memcpy(p, &eth, sizeof eth);
	p += sizeof eth;
	f->attr.num_of_specs = 1;
	if (c < 3) {
		if (c == 2) {
			v6.type = IBV_FLOW_SPEC_IPV6;
			v6.size = sizeof v6;
			memcpy(p, &v6, sizeof v6);
			p += sizeof v6;
		} else {
			v4.type = IBV_FLOW_SPEC_IPV4;
			v4.size = sizeof v4;
			memcpy(p, &v4, sizeof v4);
			p += sizeof v4;
		}
		l4.type = c == 0 ? IBV_FLOW_SPEC_TCP : IBV_FLOW_SPEC_UDP;
		l4.size = sizeof l4;
		memcpy(p, &l4, sizeof l4);
		p += sizeof l4;
		f->attr.num_of_specs = 3;
	}
	f->attr.size = (uint16_t)(sizeof f->attr + (size_t)(p - f->specs));
	return fields[c];
}

/* Sets everything up on `ctx`; nwqs a power of two up to BENCH_RX_MAX_WQS. */
static inline int bench_rx_open(struct bench_rx *r, struct ibv_context *ctx, uint32_t nwqs,
				uint32_t depth, uint32_t buf)
{
	static uint8_t key[40] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
				  0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
				  0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
				  0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xad, 0x3b, 0xfa};
	struct ibv_cq_init_attr_ex ca;
	struct ibv_rwq_ind_table_init_attr ta;
	uint32_t w, s, log = 0;
	int c;
	memset(r, 0, sizeof *r);
	if (nwqs == 0 || nwqs > BENCH_RX_MAX_WQS || (nwqs & (nwqs - 1)) != 0)
		return bench_rx_fail("WQ count (a power of two up to 16)", EINVAL);
	if (depth == 0 || (depth & (depth - 1)) != 0)
		return bench_rx_fail("WQ depth (a power of two)", EINVAL);
	while ((1u << log) < nwqs)
		++log;
	r->ctx = ctx;
	r->nwqs = nwqs;
	r->depth = depth;
	while ((1u << r->depth_log) < depth)
		++r->depth_log;
	r->buf = buf;
	r->wr = (struct ibv_recv_wr *)calloc((size_t)nwqs * depth, sizeof *r->wr);
	r->sge = (struct ibv_sge *)calloc((size_t)nwqs * depth, sizeof *r->sge);
	if (!r->wr || !r->sge ||
	    posix_memalign((void **)&r->mem, 4096, (size_t)nwqs * depth * buf) != 0)
		return bench_rx_fail("allocating the receive buffers", ENOMEM);
	if (!(r->pd = ibv_alloc_pd(ctx)))
		return bench_rx_fail("ibv_alloc_pd", errno);
	memset(&ca, 0, sizeof ca);
	ca.cqe = nwqs * depth;
	ca.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_CVLAN |
		      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	if (!(r->cq = ibv_create_cq_ex(ctx, &ca)))
		return bench_rx_fail("ibv_create_cq_ex", errno);
	if (!(r->mr = ibv_reg_mr(r->pd, r->mem, (size_t)nwqs * depth * buf, IBV_ACCESS_LOCAL_WRITE)))
		return bench_rx_fail("ibv_reg_mr", errno);
	for (w = 0; w < nwqs; ++w) {
		struct ibv_wq_init_attr wa;
		struct ibv_wq_attr m;
		memset(&wa, 0, sizeof wa);
		wa.wq_type = IBV_WQT_RQ;
		wa.max_wr = depth;
		wa.max_sge = 1;
		wa.pd = r->pd;
		wa.cq = ibv_cq_ex_to_cq(r->cq);
		wa.comp_mask = IBV_WQ_INIT_ATTR_FLAGS;
		wa.create_flags = IBV_WQ_FLAGS_CVLAN_STRIPPING | IBV_WQ_FLAGS_SCATTER_FCS |
				  IBV_WQ_FLAGS_PCI_WRITE_END_PADDING;
		if (!(r->wqs[w] = ibv_create_wq(ctx, &wa)))
			return bench_rx_fail("ibv_create_wq", errno);
		memset(&m, 0, sizeof m);
		m.attr_mask = IBV_WQ_ATTR_STATE;
		m.wq_state = IBV_WQS_RDY;
		if ((c = ibv_modify_wq(r->wqs[w], &m)) != 0)
			return bench_rx_fail("ibv_modify_wq (RDY)", c);
		for (s = 0; s < depth; ++s)
			if ((c = bench_rx_post_one(r, (uint64_t)w * depth + s)) != 0)
				return bench_rx_fail("ibv_post_wq_recv", c);
	}
	memset(&ta, 0, sizeof ta);
	ta.log_ind_tbl_size = log;
	ta.ind_tbl = r->wqs;
	if (!(r->table = ibv_create_rwq_ind_table(ctx, &ta)))
		return bench_rx_fail("ibv_create_rwq_ind_table", errno);
	for (c = 0; c < BENCH_RX_CLASSES; ++c) {
		struct bench_rx_flow f;
		struct ibv_qp_init_attr_ex qa;
		memset(&qa, 0, sizeof qa);
		qa.qp_type = IBV_QPT_RAW_PACKET;
		qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE |
			       IBV_QP_INIT_ATTR_RX_HASH;
		qa.pd = r->pd;
		qa.rwq_ind_tbl = r->table;
		qa.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
		qa.rx_hash_conf.rx_hash_key_len = sizeof key;
		qa.rx_hash_conf.rx_hash_key = key;
		qa.rx_hash_conf.rx_hash_fields_mask = bench_rx_class(c, &f);
		if (!(r->qps[c] = ibv_create_qp_ex(ctx, &qa)))
			return bench_rx_fail("ibv_create_qp_ex (RSS)", errno);
		if (!(r->flows[c] = ibv_create_flow(r->qps[c], &f.attr)))
			return bench_rx_fail("ibv_create_flow", errno);
	}
	return 0;
}

/*
 * One poll round: every completion there is, `seen` called on each while it
 * is current (may be NULL), then the completed WQEs re-posted. Returns the
 * completions polled, or -1 after printing the failing verb.
 */
typedef void (*bench_rx_seen)(void *arg, struct ibv_cq_ex *cq, const uint8_t *bytes);

static inline long bench_rx_poll(struct bench_rx *r, bench_rx_seen seen, void *arg)
{
	struct ibv_poll_cq_attr pa;
	long n = 0;
	uint32_t w;
	int rc;
	memset(&pa, 0, sizeof pa);
	rc = ibv_start_poll(r->cq, &pa);
	if (rc == ENOENT)
		return 0;
	if (rc != 0)
		{
		bench_rx_fail("ibv_start_poll", rc);
		return -1;
	}
	do {
		const uint64_t id = r->cq->wr_id;
		const uint32_t q = (uint32_t)(id >> r->depth_log); /* a division cost case 2 ~2% */
		struct ibv_recv_wr *const wr = &r->wr[id];
		if (r->cq->status == IBV_WC_SUCCESS) {
			const uint32_t len = ibv_wc_read_byte_len(r->cq);
			r->bytes += len;
			if (seen)
				seen(arg, r->cq, r->mem + id * r->buf);
		} else {
			++r->errors;
		}
		wr->next = NULL;
		if (r->tail[q])
			r->tail[q]->next = wr;
		else
			r->head[q] = wr;
		r->tail[q] = wr;
		++n;
	} while ((rc = ibv_next_poll(r->cq)) == 0);
	ibv_end_poll(r->cq);
	if (rc != ENOENT) {
		bench_rx_fail("ibv_next_poll", rc);
		return -1;
	}
	r->completions += (uint64_t)n;
	for (w = 0; w < r->nwqs; ++w) {
		struct ibv_recv_wr *bad = NULL;
		if (!r->head[w])
			continue;
		rc = ibv_post_wq_recv(r->wqs[w], r->head[w], &bad);
		r->head[w] = r->tail[w] = NULL;
		if (rc != 0) {
			bench_rx_fail("ibv_post_wq_recv", rc);
			return -1;
		}
	}
	return n;
}

/* Tears down in reverse order; returns the first destroy verb's error, or 0. */
static inline int bench_rx_close(struct bench_rx *r)
{
	int err = 0, c;
	uint32_t w;
#define BENCH_RX_DESTROY(obj, call, verb)                                                      \
	do {                                                                                   \
		if (obj) {                                                                     \
			const int e = (call);                                                  \
			if (e != 0 && err == 0)                                                \
				err = bench_rx_fail(verb, e);                                  \
		}                                                                              \
	} while (0)
	for (c = BENCH_RX_CLASSES - 1; c >= 0; --c) {
		BENCH_RX_DESTROY(r->flows[c], ibv_destroy_flow(r->flows[c]), "ibv_destroy_flow");
		BENCH_RX_DESTROY(r->qps[c], ibv_destroy_qp(r->qps[c]), "ibv_destroy_qp");
	}
	BENCH_RX_DESTROY(r->table, ibv_destroy_rwq_ind_table(r->table), "ibv_destroy_rwq_ind_table");
	for (w = r->nwqs; w-- > 0;)
		BENCH_RX_DESTROY(r->wqs[w], ibv_destroy_wq(r->wqs[w]), "ibv_destroy_wq");
	BENCH_RX_DESTROY(r->mr, ibv_dereg_mr(r->mr), "ibv_dereg_mr");
	BENCH_RX_DESTROY(r->cq, ibv_destroy_cq(ibv_cq_ex_to_cq(r->cq)), "ibv_destroy_cq");
	BENCH_RX_DESTROY(r->pd, ibv_dealloc_pd(r->pd), "ibv_dealloc_pd");
#undef BENCH_RX_DESTROY
	free(r->mem);
	free(r->wr);
	free(r->sge);
	memset(r, 0, sizeof *r);
	return err;
}

#endif
