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
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { RING = 4096 }; /* a power of two, more than can fall behind in a stall */

struct shared {
	_Alignas(64) _Atomic uint64_t head; /* producer's: items pushed */
	_Alignas(64) _Atomic uint64_t tail; /* consumer's: items taken */
	_Alignas(64) uint32_t ring[RING];
	uint64_t items, gap_ns;
	int64_t first_ns; /* item 0's due time, set before the producer starts */
	uint32_t *entry;  /* ns late pushing, per item (producer's) */
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

static uint32_t clamp_ns(int64_t ns)
{
	return ns < 0 ? 0 : ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

static void *produce(void *arg)
{
	struct shared *s = arg;
	for (uint64_t i = 0; i < s->items; ++i) {
		const int64_t due = s->first_ns + (int64_t)(i * s->gap_ns);
		int64_t now;
		while ((now = now_ns()) < due)
			relax();
		s->entry[i] = clamp_ns(now - due);
		while (i - atomic_load_explicit(&s->tail, memory_order_acquire) >= RING)
			relax(); /* the consumer is a ring behind: wait for it */
		s->ring[i % RING] = (uint32_t)i;
		atomic_store_explicit(&s->head, i + 1, memory_order_release);
	}
	return NULL;
}

static int by_value(const void *a, const void *b)
{
	const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* The p-quantile of sorted v, in microseconds: as datapath_bench's. */
static double quantile_us(const uint32_t *v, uint64_t n, double p)
{
	return v[(uint64_t)(p * (double)(n - 1))] / 1e3;
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
	s.first_ns = now_ns() + 1000000; /* 1 ms: the thread is running by then */
	int cpus[2], ncpus = 0;
	cpu_set_t allowed, one;
	CPU_ZERO(&allowed);
	if (sched_getaffinity(0, sizeof allowed, &allowed) == 0)
		for (int c = 0; c < CPU_SETSIZE && ncpus < 2; ++c)
			if (CPU_ISSET(c, &allowed))
				cpus[ncpus++] = c;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (ncpus == 2) {
		CPU_ZERO(&one);
		CPU_SET(cpus[1], &one);
		pthread_attr_setaffinity_np(&attr, sizeof one, &one);
		CPU_ZERO(&one);
		CPU_SET(cpus[0], &one);
		if (sched_setaffinity(0, sizeof one, &one) != 0) {
			fprintf(stderr, "handoff_floor: sched_setaffinity: %s\n", strerror(errno));
			return 1;
		}
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
		const int64_t now = now_ns();
		for (; t < h; ++t) {
			const uint32_t i = s.ring[t % RING];
			late[i] = clamp_ns(now - (s.first_ns + (int64_t)(i * s.gap_ns)));
		}
		atomic_store_explicit(&s.tail, t, memory_order_release);
	}
	pthread_join(producer, NULL);
	char placed[32];
	snprintf(placed, sizeof placed, "%d,%d", ncpus == 2 ? cpus[0] : -1, ncpus == 2 ? cpus[1] : -1);
	qsort(late, s.items, sizeof *late, by_value);
	qsort(s.entry, s.items, sizeof *s.entry, by_value);
	printf("{\"items\": %llu, \"p50_us\": %.2f, \"p99_us\": %.2f, \"max_us\": %.2f, "
	       "\"entry_p99_us\": %.2f, \"cpus\": \"%s\"}\n",
	       (unsigned long long)s.items, quantile_us(late, s.items, 0.5),
	       quantile_us(late, s.items, 0.99), quantile_us(late, s.items, 1.0),
	       quantile_us(s.entry, s.items, 0.99), ncpus == 2 ? placed : "unpinned");
	free(late);
	free(s.entry);
	return 0;
}
