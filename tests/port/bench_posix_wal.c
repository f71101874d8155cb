/*
 * bench_posix_wal.c - fsync-batched append throughput and latency of the
 * storage on the filesystem of SCRATCH_DIR: batches of 1, 8 and 64 entries
 * (64-byte commands), one el_storage_persist (one fdatasync) each. Prints
 * records/s and the p50/p99 latency of a persist; never fails on speed.
 *
 * usage: bench_posix_wal SCRATCH_DIR [SECONDS_PER_SIZE]
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>

#include "el_error.h"
#include "el_platform.h"
#include "el_storage.h"
#include "port_test_util.h"

#define MAX_SAMPLES 200000

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const struct el_entry *bench_entry(void *ctx, uint64_t index)
{
	struct el_entry *e = ctx;
	e->index = index;
	return e;
}

static const char *fs_name(unsigned long magic)
{
	switch (magic) {
	case 0xef53: return "ext2/3/4";
	case 0x01021994: return "tmpfs";
	case 0x58465342: return "xfs";
	case 0x9123683e: return "btrfs";
	case 0x794c7630: return "overlayfs";
	default: return "other";
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int run(const char *scratch, unsigned batch, double seconds, double *lat)
{
	char dir[PATH_MAX];
	struct el_storage *st;
	struct el_entry e = { .term = 1, .type = EL_ENTRY_NORMAL, .len = 64 };
	struct el_hard_state hs = { 1, 1, 0 };
	struct el_storage_batch b = { .hs = &hs, .entry = bench_entry, .ctx = &e };
	size_t n = 0;
	uint64_t last = 0;

	memset(e.data, 0xab, e.len);
	pt_tmpdir(scratch, "bench", dir, sizeof dir);
	if (el_storage_open(&st, dir, NULL) != EL_OK)
		return -1;
	double start = now_s(), end = start + seconds;
	while (n < MAX_SAMPLES && now_s() < end) {
		b.first = last + 1;
		b.last = last + batch;
		hs.commit = last; /* a leader's batch moves commit too */
		double t0 = now_s();
		if (el_storage_persist(st, &b) != EL_OK)
			break;
		lat[n++] = now_s() - t0;
		last += batch;
	}
	double total = now_s() - start;
	el_storage_close(st);
	pt_rmrf(dir);
	qsort(lat, n, sizeof *lat, cmp_double);
	printf("batch %3u: %8.0f records/s  %7.0f persists/s  p50 %7.1f us  p99 %7.1f us  (%zu persists)\n",
	       batch, (double)last / total, (double)n / total, lat[n / 2] * 1e6,
	       lat[n * 99 / 100] * 1e6, n);
	return 0;
}

int main(int argc, char **argv)
{
	const char *scratch = argc > 1 ? argv[1] : ".";
	double seconds = argc > 2 ? atof(argv[2]) : 2.0;
	static const unsigned sizes[] = { 1, 8, 64 };
	struct statfs sf;
	double *lat = malloc(MAX_SAMPLES * sizeof *lat);

	if (!lat)
		return 1;
	el_log_set_level(EL_LOG_WARN);
	if (statfs(scratch, &sf) == 0)
		printf("WAL append benchmark on %s (%s, magic 0x%lx), one fdatasync per persist, "
		       "%.1f s per batch size\n", scratch, fs_name((unsigned long)sf.f_type),
		       (unsigned long)sf.f_type, seconds);
	for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		run(scratch, sizes[i], seconds, lat);
	free(lat);
	return 0;
}
