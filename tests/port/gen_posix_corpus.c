/*
 * gen_posix_corpus.c - seed inputs for fuzz_posix_storage: directories
 * written by the real storage (appends, truncations, hard states, a
 * snapshot, wal-newest), packed in the fuzz input layout. usage:
 * gen_posix_corpus OUTDIR
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_bytes.h"
#include "el_crc32c.h"
#include "el_error.h"
#include "el_wal.h"
#include "port_test_util.h"

static size_t slurp(const char *path, uint8_t *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n = f ? fread(buf, 1, cap, f) : 0;
	if (f)
		fclose(f);
	return n;
}

static void seed(const char *out, int k, bool snapshots)
{
	const struct pt_gen_opts o = { .max_entries = 4, .snapshots = snapshots, .truncations = true };
	static uint8_t input[1 << 20], snap[70000], wal[1 << 19];
	char dir[PATH_MAX], path[PATH_MAX + 64];
	struct el_storage *st;
	struct pt_model m;
	struct pt_batch b;

	pt_tmpdir("/tmp", "gen-corpus", dir, sizeof dir);
	pt_model_init(&m);
	if (el_storage_open(&st, dir, NULL) != EL_OK)
		exit(1);
	for (uint64_t i = 0; i < (uint64_t)(10 + 15 * k); i++) {
		pt_gen_batch(&m, (uint64_t)k, i, &o, &b);
		b.hs_changed = true;
		if (pt_persist(st, &b) != EL_OK)
			exit(1);
		pt_model_apply(&m, &b);
	}
	el_storage_close(st);
	snprintf(path, sizeof path, "%s/snapshot", dir);
	size_t sn = slurp(path, snap, sizeof snap);
	el_wal_segment_path(dir, 1, path, sizeof path);
	size_t wn = slurp(path, wal, sizeof wal);
	size_t n = 0;
	input[n++] = (uint8_t)((sn ? 2 : 0) | (k >= 4 ? 8 : 0));
	if (sn) {
		el_put16(input + n, (uint16_t)sn);
		memcpy(input + n + 2, snap, sn);
		n += 2 + sn;
	}
	if (k >= 4) /* wal-newest naming segment 1 (there), or 2 (gone: refused) */
		input[n++] = (uint8_t)(k - 3);
	memcpy(input + n, wal, wn);
	n += wn;
	if (k == 0) { /* seed 0 ends in a zero-length record whose CRC matches */
		memset(input + n, 0, 4);
		el_put32(input + n + 4, el_crc32c(0, input + n, 4));
		n += 8;
	}
	snprintf(path, sizeof path, "%s/seed-%d", out, k);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(input, 1, n, f) != n)
		exit(1);
	fclose(f);
	pt_rmrf(dir);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	for (int k = 0; k < 6; k++)
		seed(argv[1], k, k % 2 == 1);
	return 0;
}
