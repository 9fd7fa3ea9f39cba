/*
 * Target 5 of issue 11, the C side: an unmodified C program on the drop-in
 * libibverbs.so.1 (run it under `rdmasim run --deterministic --pcap FILE`),
 * receiving FRAMES frames through the bench receiver (bench_receiver.h:
 * ibv_start_poll / ibv_next_poll, re-post per round). Its C++ twin,
 * inproc_poll.cpp, does the same work with the library linked in.
 * usage: dropin_poll FRAMES [WQS]
 * prints one JSON object (bench_poll_loop.h).
 */
#include "bench_poll_loop.h"

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: %s FRAMES [WQS]\n", argv[0]);
		return 2;
	}
	const uint64_t frames = strtoull(argv[1], NULL, 10);
	const uint32_t wqs = argc == 3 ? (uint32_t)strtoul(argv[2], NULL, 10) : 4;
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || n < 1) {
		fprintf(stderr, "dropin_poll: no device (%s): run it under `rdmasim run`\n",
			list ? "the list is empty" : strerror(errno));
		return 1;
	}
	struct ibv_context *ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "dropin_poll: ibv_open_device: %s\n", strerror(errno));
		return 1;
	}
	const int rc = bench_poll_loop(ctx, frames, wqs);
	ibv_close_device(ctx);
	return rc;
}
