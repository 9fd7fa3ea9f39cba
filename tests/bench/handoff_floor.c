/*
 * The baseline of target 7 (issue 11): the least any two-thread engine pays
 * on this machine to hand a paced frame to a busy-polling receiver, with no
 * rdmasim code. A producer thread spins until item i is due (GAP_NS * i
 * after the first, an absolute schedule, as the thread engine paces) and
 * pushes i into a single-producer single-consumer ring; the main thread
 * busy-polls the ring and takes, per item, the time from when it was due to
 * when it saw it. What the machine adds to that (its scheduler, a nested
 * guest's host taking a vCPU away) is in both this and datapath_bench
 * latency, run alternately by bench.py.
 *
 * Where the process may use two CPUs or more, the consumer runs on the
 * first and the producer on the second, as datapath_bench latency places its
 * receiver and the engine (left to the scheduler, the two spinning threads
 * sometimes share one CPU, taking turns of milliseconds).
 *
 * usage: handoff_floor ITEMS GAP_NS
 * JSON: items, p50_us, p99_us, max_us, entry_p99_us (how late the producer
 * pushed, p99: its share), cpus ("consumer,producer" or "unpinned").
 */
#define _GNU_SOURCE /* sched_getaffinity, pthread_attr_setaffinity_np */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_probe.h"

enum { RING = 4096 }; /* a power of two, more than can fall behind in a stall */

struct shared {
	_Alignas(64) _Atomic uint64_t head; /* producer's: items pushed */
	_Alignas(64) _Atomic uint64_t tail; /* consumer's: items taken */
	_Alignas(64) uint32_t ring[RING];
	uint64_t items, gap_ns;
	int64_t first_ns; /* item 0's due time, set before the producer starts */
	uint32_t *entry;  /* ns late pushing, per item (producer's) */
};

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

static void *produce(void *arg)
{
	struct shared *s = arg;
	for (uint64_t i = 0; i < s->items; ++i) {
		const int64_t due = s->first_ns + (int64_t)(i * s->gap_ns);
		int64_t now;
		while ((now = probe_now_ns()) < due)
			relax();
		s->entry[i] = probe_clamp_ns(now - due);
		while (i - atomic_load_explicit(&s->tail, memory_order_acquire) >= RING)
			relax(); /* the consumer is a ring behind: wait for it */
		s->ring[i % RING] = (uint32_t)i;
		atomic_store_explicit(&s->head, i + 1, memory_order_release);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static struct shared s;
	if (argc != 3 || (s.items = strtoull(argv[1], NULL, 10)) == 0 ||
	    (s.gap_ns = strtoull(argv[2], NULL, 10)) == 0) {
		fprintf(stderr, "usage: %s ITEMS GAP_NS\n", argv[0]);
		return 2;
	}
	uint32_t *late = calloc(s.items, sizeof *late);
	s.entry = calloc(s.items, sizeof *s.entry);
	if (late == NULL || s.entry == NULL) {
		fprintf(stderr, "handoff_floor: out of memory\n");
		return 1;
	}
	s.first_ns = probe_now_ns() + 1000000; /* 1 ms: the thread is running by then */
	/* The consumer (this thread) on the first CPU, the producer on the second. */
	int cpus[2];
	char placed[32] = "unpinned";
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (probe_two_cpus(cpus)) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpus[1], &one);
		pthread_attr_setaffinity_np(&attr, sizeof one, &one);
		const int err = probe_pin_self(cpus[0]);
		if (err != 0) {
			fprintf(stderr, "handoff_floor: sched_setaffinity: %s\n", strerror(err));
			return 1;
		}
		snprintf(placed, sizeof placed, "%d,%d", cpus[0], cpus[1]);
	}
	pthread_t producer;
	const int rc = pthread_create(&producer, &attr, produce, &s);
	pthread_attr_destroy(&attr);
	if (rc != 0) {
		fprintf(stderr, "handoff_floor: pthread_create: %s\n", strerror(rc));
		return 1;
	}
	for (uint64_t t = 0; t < s.items;) {
		const uint64_t h = atomic_load_explicit(&s.head, memory_order_acquire);
		if (h == t) {
			relax();
			continue;
		}
		const int64_t now = probe_now_ns();
		for (; t < h; ++t) {
			const uint32_t i = s.ring[t % RING];
			late[i] = probe_clamp_ns(now - (s.first_ns + (int64_t)(i * s.gap_ns)));
		}
		atomic_store_explicit(&s.tail, t, memory_order_release);
	}
	pthread_join(producer, NULL);
	probe_sort(late, s.items);
	probe_sort(s.entry, s.items);
	printf("{\"items\": %llu, \"p50_us\": %.2f, \"p99_us\": %.2f, \"max_us\": %.2f, "
	       "\"entry_p99_us\": %.2f, \"cpus\": \"%s\"}\n",
	       (unsigned long long)s.items, probe_quantile_us(late, s.items, 0.5),
	       probe_quantile_us(late, s.items, 0.99), probe_quantile_us(late, s.items, 1.0),
	       probe_quantile_us(s.entry, s.items, 0.99), placed);
	free(late);
	free(s.entry);
	return 0;
}
