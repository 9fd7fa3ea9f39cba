// The floors of issue 31's targets: what two processes on this machine get
// from the kernel's simplest channel, measured next to the fabric bench.
//   pipe_floor bw MIB    a child writes MIB MiB to a pipe in 64 KiB writes,
//                        the parent reads it: GB/s (10^9 bytes per second)
//   pipe_floor pingpong N   1 byte each way over two pipes, N round trips:
//                        the half round trip in us
// Prints one JSON object on stdout. Both processes block in read/write, as
// a pipe's users do; neither is pinned to a CPU.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kChunk = 64 * 1024 };

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// Moves exactly n bytes (a pipe may take or give fewer at once); exits on error or EOF.
static void full(int fd, char* buf, size_t n, int writing) {
    while (n > 0) {
        ssize_t r = writing ? write(fd, buf, n) : read(fd, buf, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            perror(writing ? "write" : "read");
            _exit(1);
        }
        buf += r;
        n -= (size_t)r;
    }
}

static int bandwidth(long mib) {
    int p[2];
    static char buf[kChunk];
    if (pipe(p) != 0) return perror("pipe"), 1;
    const long chunks = mib * (1024 * 1024 / kChunk);
    const double t0 = now_s();
    pid_t child = fork();
    if (child == 0) {
        close(p[0]);
        memset(buf, 1, sizeof buf);
        for (long i = 0; i < chunks; ++i) full(p[1], buf, kChunk, 1);
        _exit(0);
    }
    close(p[1]);
    for (long i = 0; i < chunks; ++i) full(p[0], buf, kChunk, 0);
    const double s = now_s() - t0;
    waitpid(child, NULL, 0);
    const double bytes = (double)chunks * kChunk;
    printf("{\"floor\": \"pipe_bw\", \"write_bytes\": %d, \"bytes\": %.0f, \"seconds\": %.6f, \"GBps\": %.4f}\n",
           kChunk, bytes, s, bytes / s / 1e9);
    return 0;
}

static int pingpong(long n) {
    int there[2], back[2];
    char c = 0;
    if (pipe(there) != 0 || pipe(back) != 0) return perror("pipe"), 1;
    pid_t child = fork();
    if (child == 0) {
        for (long i = 0; i < n; ++i) {
            full(there[0], &c, 1, 0);
            full(back[1], &c, 1, 1);
        }
        _exit(0);
    }
    for (int i = 0; i < 100; ++i) { // warm-up: both processes running
        full(there[1], &c, 1, 1);
        full(back[0], &c, 1, 0);
    }
    const double t0 = now_s();
    for (long i = 100; i < n; ++i) {
        full(there[1], &c, 1, 1);
        full(back[0], &c, 1, 0);
    }
    const double s = now_s() - t0;
    waitpid(child, NULL, 0);
    printf("{\"floor\": \"pipe_pingpong\", \"round_trips\": %ld, \"seconds\": %.6f, \"half_rtt_us\": %.4f}\n",
           n - 100, s, s / (double)(n - 100) / 2 * 1e6);
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 3 && strcmp(argv[1], "bw") == 0 && atol(argv[2]) > 0) return bandwidth(atol(argv[2]));
    if (argc == 3 && strcmp(argv[1], "pingpong") == 0 && atol(argv[2]) > 100) return pingpong(atol(argv[2]));
    fprintf(stderr, "usage: pipe_floor bw MIB | pipe_floor pingpong ROUND_TRIPS (> 100)\n");
    return 2;
}
