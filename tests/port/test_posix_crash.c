/*
 * test_posix_crash.c - crash consistency of the WAL. A log written by the
 * real port (real fdatasync, batch by batch, remembering where each
 * acknowledged batch ended) is cut at EVERY byte offset, and bit-flipped at
 * sampled offsets; each damaged copy is recovered. Recovery must return
 * exactly the state after the last batch that lies wholly before the damage:
 * every batch acknowledged before that point, and nothing damaged.
 *
 * usage: test_posix_crash SCRATCH_DIR
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "el_error.h"
#include "el_io.h"
#include "el_platform.h"
#include "el_test.h"
#include "el_wal.h"
#include "port_test_util.h"

EL_TEST_MAIN_DEFINITIONS

#define BATCHES 48

static const char *scratch;
static struct pt_model *models; /* models[k]: state after k batches */
static long ends[BATCHES + 1];  /* ends[k]: log bytes after k batches */
static uint8_t *wal;
static long wal_len;
static char work[PATH_MAX], seg[PATH_MAX + 32];

/* Write the log with the real port, one acknowledged batch at a time. */
static void test_write_log(void)
{
	const struct pt_gen_opts o = { .max_entries = 4, .snapshots = false, .truncations = true };
	char dir[PATH_MAX], path[PATH_MAX];
	struct el_storage *st;
	struct pt_batch b;

	pt_tmpdir(scratch, "crash-src", dir, sizeof dir);
	EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_OK);
	EL_CHECK_EQ(el_wal_segment_path(dir, 1, path, sizeof path), EL_OK);
	pt_model_init(&models[0]);
	ends[0] = 0;
	for (int k = 1; k <= BATCHES; k++) {
		models[k] = models[k - 1];
		pt_gen_batch(&models[k], 7, (uint64_t)k, &o, &b);
		b.hs_changed = true; /* every batch writes something */
		EL_CHECK_EQ(pt_persist(st, &b), EL_OK);
		pt_model_apply(&models[k], &b);
		ends[k] = pt_file_size(path);
		EL_CHECK(ends[k] > ends[k - 1]);
	}
	EL_CHECK_EQ(el_storage_segments(st), 1);
	el_storage_close(st);
	wal_len = ends[BATCHES];
	wal = malloc((size_t)wal_len);
	int fd = open(path, O_RDONLY);
	EL_CHECK(read(fd, wal, (size_t)wal_len) == wal_len);
	close(fd);
	pt_rmrf(dir);
	printf("  log of %d batches, %ld bytes, last index %llu\n", BATCHES, wal_len,
	       (unsigned long long)models[BATCHES].last);
}

static void put_log(const uint8_t *bytes, long len)
{
	int fd = open(seg, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, bytes, (size_t)len) != len)
		perror(seg);
	close(fd);
}

/* Recover work/ and compare with models[k]; the log must be cut to ends[k]. */
static int check_recovers_to(int k, long at)
{
	struct pt_model got;
	int rc = pt_open_load(work, 0, &got);
	if (rc != EL_OK || !pt_model_equal(&got, &models[k]) || pt_file_size(seg) != ends[k]) {
		printf("  damage at %ld: rc %d, want state after batch %d\n", at, rc, k);
		pt_model_print("want", &models[k]);
		pt_model_print("got ", &got);
		return 0;
	}
	return 1;
}

static int batch_of(long off) /* the batch whose bytes hold offset off */
{
	int k = 1;
	while (ends[k] <= off)
		k++;
	return k;
}

static void test_cut_at_every_offset(void)
{
	int k = 0;
	EL_CHECK(wal != NULL);
	for (long cut = 0; cut <= wal_len; cut++) {
		while (k < BATCHES && ends[k + 1] <= cut)
			k++;
		put_log(wal, cut);
		EL_CHECK(check_recovers_to(k, cut));
	}
}

static void test_bit_flips_at_sampled_offsets(void)
{
	uint8_t *copy = malloc((size_t)wal_len);
	uint64_t rng = 99;
	int flips = 0;
	EL_CHECK(wal != NULL && copy != NULL);
	for (long off = 0; off < wal_len; off += 1 + (long)(pt_rand(&rng) % 5), flips++) {
		memcpy(copy, wal, (size_t)wal_len);
		copy[off] ^= (uint8_t)(1u << (pt_rand(&rng) % 8));
		put_log(copy, wal_len);
		if (!check_recovers_to(batch_of(off) - 1, off)) {
			free(copy);
			EL_CHECK(0);
		}
	}
	printf("  %d bit flips recovered to the right prefix\n", flips);
	free(copy);
}

int main(int argc, char **argv)
{
	scratch = argc > 1 ? argv[1] : "/tmp";
	models = calloc(BATCHES + 1, sizeof *models);
	el_log_set_level(EL_LOG_ERROR); /* one truncation line per recovery */
	EL_RUN(test_write_log);
	/* The damaged copies are recovered without fsync: a crash is simulated
	 * by hand here, and thousands of recoveries must stay fast. */
	pt_io_nosync();
	pt_tmpdir(scratch, "crash", work, sizeof work);
	el_wal_segment_path(work, 1, seg, sizeof seg);
	EL_RUN(test_cut_at_every_offset);
	EL_RUN(test_bit_flips_at_sampled_offsets);
	el_io_reset();
	pt_rmrf(work);
	free(models);
	free(wal);
	return el_test_end();
}
