/*
 * Target 5 of issue 11: what both dropin_poll (C, the drop-in library) and
 * inproc_poll (C++, the library linked in) run once they have a context:
 * the bench receiver over WQS WQs (256 WQEs of 2 KiB each) polled until
 * FRAMES completions, then one JSON line: frames, errors, bytes, seconds
 * (first poll to the last completion), ns_per_frame, and the same span in
 * this process's CPU time (cpu_seconds, cpu_ns_per_frame: on a shared
 * machine, the time the work took). Returns the exit status.
 */
#ifndef RDMASIM_BENCH_POLL_LOOP_H
#define RDMASIM_BENCH_POLL_LOOP_H

#include <time.h>

#include "bench_receiver.h"

static inline double bench_clock(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int bench_poll_loop(struct ibv_context *ctx, uint64_t frames, uint32_t wqs)
{
	struct bench_rx rx;
	uint64_t empty = 0;
	int rc = bench_rx_open(&rx, ctx, wqs, 256, 2048);
	if (rc != 0) {
		bench_rx_close(&rx);
		return 1;
	}
	const double t0 = bench_clock(CLOCK_MONOTONIC), cpu0 = bench_clock(CLOCK_PROCESS_CPUTIME_ID);
	/* The inline engine pulls frames when the program polls: a million empty
	 * rounds in a row means the capture has ended short of FRAMES. */
	while (rx.completions < frames && empty < 1000000) {
		const long got = bench_rx_poll(&rx, NULL, NULL);
		if (got < 0) {
			bench_rx_close(&rx);
			return 1;
		}
		empty = got == 0 ? empty + 1 : 0;
	}
	const double secs = bench_clock(CLOCK_MONOTONIC) - t0;
	const double cpu = bench_clock(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
	const uint64_t done = rx.completions, errors = rx.errors, bytes = rx.bytes;
	rc = bench_rx_close(&rx) != 0;
	printf("{\"frames\": %llu, \"errors\": %llu, \"bytes\": %llu, \"seconds\": %.6f, "
	       "\"ns_per_frame\": %.2f, \"cpu_seconds\": %.6f, \"cpu_ns_per_frame\": %.2f}\n",
	       (unsigned long long)done, (unsigned long long)errors, (unsigned long long)bytes, secs,
	       done ? secs * 1e9 / (double)done : 0.0, cpu, done ? cpu * 1e9 / (double)done : 0.0);
	if (done < frames) {
		fprintf(stderr, "bench poll loop: %llu of %llu frames arrived\n",
			(unsigned long long)done, (unsigned long long)frames);
		return 1;
	}
	return rc;
}

#endif
