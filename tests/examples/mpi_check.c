/* An MPI program as people write them, every byte checked: a send/receive
 * ping-pong between rank pairs (0-1, 2-3, ...) from 1 byte to 4 MiB, an
 * allreduce and an alltoall. Rank 0 prints each ping-pong size's median half
 * round trip (after untimed ones: the first messages set up connections) and
 * bandwidth, then "mpi_check: OK ranks=N". Any wrong byte:
 * a message naming it, and MPI_Abort (status 2).
 *
 * usage: mpi_check [MAX_BYTES] (default 4194304; needs an even rank count)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, ranks;

static void fail(const char* what, long where, int got, int want) {
    fprintf(stderr, "mpi_check: rank %d: %s: byte %ld is %d, expected %d\n", rank, what, where, got,
            want);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* The byte `i` of message `iter` of size `size` sent by rank `from`. */
static unsigned char pattern(int from, long size, int iter, long i) {
    return (unsigned char)(from * 131 + size * 7 + iter * 17 + i * 31 + (i >> 8));
}

static void fill(unsigned char* b, int from, long size, int iter) {
    for (long i = 0; i < size; ++i)
        b[i] = pattern(from, size, iter, i);
}

static void check(const unsigned char* b, int from, long size, int iter, const char* what) {
    for (long i = 0; i < size; ++i)
        if (b[i] != pattern(from, size, iter, i)) fail(what, i, b[i], pattern(from, size, iter, i));
}

static int cmp_double(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* One size: `warmup` round trips, then `iters` timed ones (the median is
 * returned), every message checked on arrival. */
static double pingpong(long size, int warmup, int iters, unsigned char* out, unsigned char* in) {
    const int peer = rank ^ 1;
    double times[64];
    for (int it = -warmup; it < iters; ++it) {
        fill(out, rank, size, it);
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        if (rank % 2 == 0) {
            MPI_Send(out, (int)size, MPI_BYTE, peer, it + warmup, MPI_COMM_WORLD);
            MPI_Recv(in, (int)size, MPI_BYTE, peer, it + warmup, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(in, (int)size, MPI_BYTE, peer, it + warmup, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(out, (int)size, MPI_BYTE, peer, it + warmup, MPI_COMM_WORLD);
        }
        if (it >= 0) times[it] = (MPI_Wtime() - t0) / 2;
        check(in, peer, size, it, "ping-pong");
    }
    qsort(times, (size_t)iters, sizeof times[0], cmp_double);
    return times[iters / 2];
}

static void allreduce(void) {
    enum { n = 1 << 18 };
    int64_t* v = malloc(n * sizeof *v);
    int64_t* sum = malloc(n * sizeof *sum);
    for (long i = 0; i < n; ++i)
        v[i] = (int64_t)rank * 1000003 + i;
    MPI_Allreduce(v, sum, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    const int64_t ranks_sum = (int64_t)ranks * (ranks - 1) / 2;
    for (long i = 0; i < n; ++i)
        if (sum[i] != ranks_sum * 1000003 + (int64_t)ranks * i)
            fail("allreduce", i, (int)sum[i], 0);
    free(v);
    free(sum);
}

static void alltoall(void) {
    const long block = 64 * 1024;
    unsigned char* out = malloc((size_t)(block * ranks));
    unsigned char* in = malloc((size_t)(block * ranks));
    for (int d = 0; d < ranks; ++d)
        fill(out + d * block, rank, block, d);
    MPI_Alltoall(out, (int)block, MPI_BYTE, in, (int)block, MPI_BYTE, MPI_COMM_WORLD);
    for (int s = 0; s < ranks; ++s)
        check(in + s * block, s, block, rank, "alltoall");
    free(out);
    free(in);
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const long max = argc > 1 ? atol(argv[1]) : 4L << 20;
    if (ranks % 2 != 0 || max < 1) {
        if (rank == 0)
            fprintf(stderr, "mpi_check: needs an even number of ranks and MAX_BYTES >= 1\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    unsigned char* out = malloc((size_t)max);
    unsigned char* in = malloc((size_t)max);
    /* UCX connects lazily: its first messages take a slower path while the
     * connection is set up. Untimed round trips first, so the 1 B figure
     * is not theirs. */
    (void)pingpong(1, 500, 1, out, in);
    for (long size = 1; size <= max; size *= 4) {
        const int small = size <= 65536;
        const double half = pingpong(size, small ? 20 : 2, small ? 21 : 5, out, in);
        if (rank == 0)
            printf("pingpong %8ld B: half round trip %10.1f us, %9.2f MB/s\n", size, half * 1e6,
                   size / half / 1e6);
        if (size < max && size * 4 > max) size = max / 4; /* end on max itself */
    }
    allreduce();
    alltoall();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("mpi_check: OK ranks=%d\n", ranks);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
