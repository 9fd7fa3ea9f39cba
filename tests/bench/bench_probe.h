/*
 * What the suite's machine probes share (handoff_floor, hiccups,
 * fault_cost, datapath_bench's latency mode): the clock, nanosecond samples
 * and their quantiles, and where two busy threads go. C, compiles as C++
 * too; a C includer defines _GNU_SOURCE first (CPU_SET, sched_setaffinity).
 */
#ifndef RDMASIM_BENCH_PROBE_H
#define RDMASIM_BENCH_PROBE_H

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline int64_t probe_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A duration in nanoseconds as a sample: 0 below, UINT32_MAX (4.3 s) above. */
static inline uint32_t probe_clamp_ns(int64_t ns)
{
	return ns < 0 ? 0 : ns > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

static inline int probe_by_value(const void *a, const void *b)
{
	const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

static inline void probe_sort(uint32_t *v, size_t n)
{
	qsort(v, n, sizeof *v, probe_by_value);
}

/* The p-quantile of sorted v, in microseconds (0 for no sample). */
static inline double probe_quantile_us(const uint32_t *v, size_t n, double p)
{
	return n ? (double)v[(size_t)(p * (double)(n - 1))] / 1e3 : 0.0;
}

/* The first two CPUs this process may run on, in cpus[0] and cpus[1]: 1
 * when there are two, else 0 (the probes then leave placement alone). */
static inline int probe_two_cpus(int cpus[2])
{
	cpu_set_t allowed;
	int n = 0;
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
		return 0;
	for (int c = 0; c < CPU_SETSIZE && n < 2; ++c)
		if (CPU_ISSET(c, &allowed))
			cpus[n++] = c;
	return n == 2;
}

/* Runs the calling thread on `cpu` only: 0, or an errno value. */
static inline int probe_pin_self(int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return sched_setaffinity(0, sizeof one, &one) == 0 ? 0 : errno;
}

#endif
