/*
 * Heap allocations of a whole process, for the benchmark suite (issue 11,
 * target 6): LD_PRELOAD this library and every malloc, calloc, realloc,
 * posix_memalign, aligned_alloc and memalign call, whoever makes it (C++
 * operator new, libpcap, zlib, spdlog), is counted before glibc serves it.
 *   rdmasim_alloc_count()       the count so far (a program may look it up
 *                               with dlsym(RTLD_DEFAULT, ...) to count a window)
 *   RDMASIM_ALLOC_REPORT=PREFIX at exit, each process writes its final count
 *                               and its executable to PREFIX.PID ("COUNT EXE\n"):
 *                               under `rdmasim run` both rdmasim and the program
 *                               it starts exit, and each has its own count
 *                               (one file for all let the last to exit win)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

static atomic_ullong allocations;

static void counted(void)
{
	atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
}

__attribute__((visibility("default"))) unsigned long long rdmasim_alloc_count(void)
{
	return atomic_load_explicit(&allocations, memory_order_relaxed);
}

void *malloc(size_t size)
{
	counted();
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	counted();
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	counted();
	return __libc_realloc(p, size);
}

void *memalign(size_t align, size_t size)
{
	counted();
	return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	counted();
	return __libc_memalign(align, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0)
		return EINVAL;
	counted();
	void *p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

/* Written with open/write: stdio may allocate, and this runs last. */
__attribute__((destructor)) static void report(void)
{
	const char *prefix = getenv("RDMASIM_ALLOC_REPORT");
	if (!prefix || !*prefix)
		return;
	const unsigned long long count = rdmasim_alloc_count();
	char path[4096], exe[2048], line[2200];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[len < 0 ? 0 : len] = '\0';
	if (snprintf(path, sizeof path, "%s.%ld", prefix, (long)getpid()) >= (int)sizeof path)
		return;
	const int n = snprintf(line, sizeof line, "%llu %s\n", count, exe);
	const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || n <= 0 || write(fd, line, (size_t)n) != n)
		fprintf(stderr, "alloc_count: %s: %s\n", path, strerror(errno));
	if (fd >= 0)
		close(fd);
}
