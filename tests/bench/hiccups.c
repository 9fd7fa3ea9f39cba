/*
 * What a thread that never sleeps loses on this machine: it spins on one
 * CPU reading the clock, and every gap between two reads longer than
 * THRESHOLD_NS is time the CPU was taken from it (an interrupt, the
 * scheduler tick, a host taking the vCPU away). The floor under target 7b
 * (issue 11): a paced frame due during a gap is late by the rest of it.
 *
 * usage: hiccups SECONDS [THRESHOLD_NS] [CPU]   (defaults 1, 2000, not pinned)
 * JSON: seconds, gaps, per_s, lost_fraction (time in gaps), p50_us,
 * p99_us, max_us (gap lengths).
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_probe.h"

enum { MAX_GAPS = 1 << 20 };

int main(int argc, char **argv)
{
	const double seconds = argc > 1 ? strtod(argv[1], NULL) : 1.0;
	const int64_t threshold = argc > 2 ? strtoll(argv[2], NULL, 10) : 2000;
	if (argc > 4 || seconds <= 0 || seconds > 600 || threshold <= 0) {
		fprintf(stderr, "usage: %s SECONDS [THRESHOLD_NS] [CPU]\n", argv[0]);
		return 2;
	}
	if (argc > 3) {
		const int err = probe_pin_self(atoi(argv[3]));
		if (err != 0) {
			fprintf(stderr, "hiccups: CPU %s: %s\n", argv[3], strerror(err));
			return 1;
		}
	}
	uint32_t *gaps = malloc(MAX_GAPS * sizeof *gaps);
	if (gaps == NULL) {
		fprintf(stderr, "hiccups: out of memory\n");
		return 1;
	}
	size_t n = 0;
	int64_t lost = 0;
	const int64_t start = probe_now_ns(), end = start + (int64_t)(seconds * 1e9);
	for (int64_t prev = start, t; (t = probe_now_ns()) < end; prev = t) {
		if (t - prev > threshold) {
			lost += t - prev;
			if (n < MAX_GAPS)
				gaps[n++] = probe_clamp_ns(t - prev);
		}
	}
	probe_sort(gaps, n);
	printf("{\"seconds\": %.3f, \"gaps\": %zu, \"per_s\": %.1f, \"lost_fraction\": %.5f, "
	       "\"p50_us\": %.2f, \"p99_us\": %.2f, \"max_us\": %.2f}\n",
	       seconds, n, (double)n / seconds, (double)lost / (seconds * 1e9), probe_quantile_us(gaps, n, 0.5),
	       probe_quantile_us(gaps, n, 0.99), probe_quantile_us(gaps, n, 1.0));
	free(gaps);
	return 0;
}
