/*
 * test_posix_crash.c - crash consistency of the WAL. A log written by the
 * real port (real fdatasync, batch by batch, remembering where each
 * acknowledged batch ended) is cut at EVERY byte offset, and bit-flipped at
 * sampled offsets; each damaged copy is recovered. After a cut, or a flip in
 * the last batch (what a torn write can do), recovery must return exactly
 * the state after the last batch that lies wholly before the damage: every
 * batch acknowledged before that point, and nothing damaged. A flip with a
 * whole batch after it damaged synced, maybe acknowledged, records: recovery
 * must refuse (EL_ECORRUPT) and leave the file as it was. The log
 * file also holds the zeros written ahead of the next batch (el_wal.h):
 * the cuts and flips run over its batches, and each cut copy is tested as
 * it is and with those zeros after it.
 *
 * usage: test_posix_crash SCRATCH_DIR
 */
#include <fcntl.h>
#include <stdbool.h>
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
		ends[k] = (long)el_storage_segment_bytes(st);
		EL_CHECK(ends[k] > ends[k - 1]);
		EL_CHECK(pt_file_size(path) >= ends[k]); /* zeros written ahead */
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

#define AHEAD 4096 /* zeros after a cut copy, as the log writes ahead */

/* The segment: len bytes, then `zeros` zero bytes. */
static void put_log(const uint8_t *bytes, long len, long zeros)
{
	static const uint8_t z[AHEAD];
	int fd = open(seg, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, bytes, (size_t)len) != len || write(fd, z, (size_t)zeros) != zeros)
		perror(seg);
	close(fd);
}

/* Recover work/ and compare with models[k]; the log file must then be
 * `size` bytes long (cut to ends[k], or kept with only zeros after it). */
static int check_recovers_to(int k, long at, long size)
{
	struct pt_model got;
	int rc = pt_open_load(work, 0, &got);
	if (rc != EL_OK || !pt_model_equal(&got, &models[k]) || pt_file_size(seg) != size) {
		printf("  damage at %ld: rc %d, want state after batch %d, a file of %ld bytes, "
		       "got %ld\n", at, rc, k, size, pt_file_size(seg));
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

static bool all_zero(const uint8_t *b, long n)
{
	for (long i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

/* Every cut, bare (appended log) and followed by zeros (the log writes
 * zeros ahead and overwrites them): zeros right after the last whole batch
 * stay, anything else after it is cut off. */
static void test_cut_at_every_offset(void)
{
	int k = 0;
	EL_CHECK(wal != NULL);
	for (long cut = 0; cut <= wal_len; cut++) {
		while (k < BATCHES && ends[k + 1] <= cut)
			k++;
		put_log(wal, cut, 0);
		EL_CHECK(check_recovers_to(k, cut, all_zero(wal + ends[k], cut - ends[k]) ? cut
											    : ends[k]));
		/* The zeros may finish a batch whose last bytes are zeros (a
		 * BATCH_END's high sequence bytes): the very bytes it had. */
		int j = k;
		while (j < BATCHES && ends[j + 1] <= cut + AHEAD && all_zero(wal + cut, ends[j + 1] - cut))
			j++;
		put_log(wal, cut, AHEAD);
		EL_CHECK(check_recovers_to(j, cut, j > k || all_zero(wal + ends[k], cut - ends[k])
							   ? cut + AHEAD : ends[k]));
	}
}

/* Recovery refuses, naming the damage, and leaves the file of size bytes. */
static int check_refused(long at, long size)
{
	struct pt_model got;
	const int rc = pt_open_load(work, 0, &got);
	if (rc == EL_ECORRUPT && pt_file_size(seg) == size)
		return 1;
	printf("  damage at %ld before a whole batch: rc %d, file %ld bytes; want EL_ECORRUPT "
	       "and %ld bytes\n", at, rc, pt_file_size(seg), size);
	return 0;
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
		const long zeros = flips % 2 ? AHEAD : 0;
		put_log(copy, wal_len, zeros);
		const int k = batch_of(off);
		if (k < BATCHES ? !check_refused(off, wal_len + zeros)
				: !check_recovers_to(k - 1, off, ends[k - 1])) {
			free(copy);
			EL_CHECK(0);
		}
	}
	printf("  %d bit flips: refused before a whole batch, else cut to the right prefix\n",
	       flips);
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
