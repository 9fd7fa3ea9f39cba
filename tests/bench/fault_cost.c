/*
 * What a first touch of fresh anonymous memory costs on this machine: the
 * measurement behind net::HugeBuffer (tests/bench/RESULTS.md, twelfth
 * pass). Maps MIB mebibytes three times and writes one byte per 4 KiB page
 * of each, timing the writes:
 *   plain      ordinary pages: one page fault per 4 KiB;
 *   populate   the same, after madvise(MADV_POPULATE_WRITE) (Linux 5.14;
 *              the madvise call is timed too): the faults in one system call;
 *   huge       2 MiB aligned, after madvise(MADV_HUGEPAGE): one fault per
 *              2 MiB where transparent huge pages are "always" or "madvise".
 *
 * usage: fault_cost [MIB]   (default 64)
 * JSON: mib, then per mode ns_per_4k (the time over the number of 4 KiB
 * pages) and the page faults the process took meanwhile (getrusage minflt).
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MADV_* */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_probe.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

enum { PAGE = 4096, HUGE_PAGE = 2 << 20 };

static long minor_faults(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* len bytes, 2 MiB aligned (the slack unmapped), or NULL. */
static uint8_t *map_aligned(size_t len)
{
	uint8_t *p = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	const uintptr_t base = (uintptr_t)p;
	const uintptr_t aligned = (base + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
	if (aligned > base)
		munmap(p, aligned - base);
	if (base + HUGE_PAGE > aligned)
		munmap((uint8_t *)aligned + len, base + HUGE_PAGE - aligned);
	return (uint8_t *)aligned;
}

/* Map, advise (mode), touch every 4 KiB page; prints one JSON member. */
static int run(const char *mode, size_t len, int last)
{
	uint8_t *p = map_aligned(len);
	if (p == NULL) {
		perror("fault_cost: mmap");
		return 1;
	}
	const long f0 = minor_faults();
	const int64_t t0 = probe_now_ns();
	int advice_failed = 0;
	if (strcmp(mode, "populate") == 0)
		advice_failed = madvise(p, len, MADV_POPULATE_WRITE) != 0;
	else if (strcmp(mode, "huge") == 0)
		advice_failed = madvise(p, len, MADV_HUGEPAGE) != 0;
	for (size_t off = 0; off < len; off += PAGE)
		((volatile uint8_t *)p)[off] = 1;
	const int64_t ns = probe_now_ns() - t0;
	const long faults = minor_faults() - f0;
	printf("\"%s\": {\"ns_per_4k\": %.0f, \"faults\": %ld, \"advice_failed\": %s}%s", mode,
	       (double)ns / (double)(len / PAGE), faults, advice_failed ? "true" : "false",
	       last ? "" : ", ");
	munmap(p, len);
	return 0;
}

int main(int argc, char **argv)
{
	const unsigned long mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	if (argc > 2 || mib == 0 || mib > 65536 || mib % 2 != 0) {
		fprintf(stderr, "usage: %s [MIB]  (an even number, default 64)\n", argv[0]);
		return 2;
	}
	const size_t len = (size_t)mib << 20;
	printf("{\"mib\": %lu, ", mib);
	if (run("plain", len, 0) || run("populate", len, 0) || run("huge", len, 1))
		return 1;
	printf("}\n");
	return 0;
}
