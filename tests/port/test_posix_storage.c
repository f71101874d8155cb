/*
 * test_posix_storage.c - unit tests of port/posix: CRC-32C vectors, WAL
 * records, snapshot files, the steps of a file replaced whole (snapshot,
 * wal-newest: the order of the calls, each one failing), the storage round
 * trip, hard state, truncation, segment rotation and deletion (also over an empty newest segment), a
 * damaged sealed segment, FIFOs under the data directory's names (refused,
 * never waited on), a directory left at snapshot.tmp, what holds nothing of a cluster
 * (el_storage_holds_nothing), the directory lock, and the clock/seed/log
 * services (a logged message stays one line).
 *
 * usage: test_posix_storage SCRATCH_DIR
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "el_crc32c.h"
#include "el_dirlock.h"
#include "el_error.h"
#include "el_io.h"
#include "el_platform.h"
#include "el_snapshot_file.h"
#include "el_storage.h"
#include "el_test.h"
#include "el_wal.h"
#include "el_wal_record.h"
#include "port_test_util.h"

EL_TEST_MAIN_DEFINITIONS

static const char *scratch;
static char dir[PATH_MAX];

static void fresh_dir(const char *tag) { pt_tmpdir(scratch, tag, dir, sizeof dir); }

static void test_crc32c_vectors(void)
{
	uint8_t buf[32];
	EL_CHECK_EQ(el_crc32c(0, "123456789", 9), 0xe3069283u);
	memset(buf, 0, sizeof buf); /* RFC 3720 B.4 */
	EL_CHECK_EQ(el_crc32c(0, buf, 32), 0x8a9136aau);
	memset(buf, 0xff, sizeof buf);
	EL_CHECK_EQ(el_crc32c(0, buf, 32), 0x62a8ab43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	EL_CHECK_EQ(el_crc32c(0, buf, 32), 0x46dd794eu);
	/* Chaining equals one pass. */
	EL_CHECK_EQ(el_crc32c(el_crc32c(0, buf, 10), buf + 10, 22), 0x46dd794eu);
	EL_CHECK_EQ(el_crc32c(0, buf, 0), 0u);
}

static void test_record_round_trip(void)
{
	uint8_t buf[EL_REC_SIZE_MAX];
	struct el_entry e, out;
	struct el_rec rec, got;
	size_t n, used;

	pt_fill_entry(&e, 77, 5);
	e.len = EL_ENTRY_DATA_MAX; /* the largest record */
	rec = (struct el_rec){ .type = EL_REC_ENTRY, .entry = &e };
	n = el_rec_encode(&rec, buf);
	EL_CHECK_EQ(n, EL_REC_SIZE_MAX);
	EL_CHECK_EQ(el_rec_decode(buf, n, &got, &out, &used), EL_OK);
	EL_CHECK_EQ(used, n);
	EL_CHECK_EQ(got.type, EL_REC_ENTRY);
	EL_CHECK(got.entry == &out);
	EL_CHECK_EQ(out.index, 77);
	EL_CHECK_EQ(out.term, 5);
	EL_CHECK_EQ(out.len, EL_ENTRY_DATA_MAX);
	EL_CHECK(memcmp(out.data, e.data, e.len) == 0);

	rec = (struct el_rec){ .type = EL_REC_HARD_STATE, .hs = { 9, 3, 41 } };
	n = el_rec_encode(&rec, buf);
	EL_CHECK_EQ(el_rec_decode(buf, n, &got, &out, &used), EL_OK);
	EL_CHECK(got.hs.term == 9 && got.hs.vote == 3 && got.hs.commit == 41);
	e.len = EL_ENTRY_DATA_MAX + 1;
	rec = (struct el_rec){ .type = EL_REC_ENTRY, .entry = &e };
	EL_CHECK_EQ(el_rec_encode(&rec, buf), 0);
}

static void test_record_rejects_damage(void)
{
	uint8_t buf[EL_REC_SIZE_MAX], bad[EL_REC_SIZE_MAX];
	struct el_entry e, out;
	struct el_rec rec = { .type = EL_REC_ENTRY, .entry = &e }, got;
	size_t n, used;

	pt_fill_entry(&e, 12, 3);
	n = el_rec_encode(&rec, buf);
	for (size_t cut = 0; cut < n; cut++) /* every torn length */
		EL_CHECK_EQ(el_rec_decode(buf, cut, &got, &out, &used), EL_ECORRUPT);
	for (size_t bit = 0; bit < n * 8; bit++) { /* every single-bit flip */
		memcpy(bad, buf, n);
		bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		EL_CHECK_EQ(el_rec_decode(bad, n, &got, &out, &used), EL_ECORRUPT);
	}
	memset(bad, 0, sizeof bad); /* a zero-filled tail */
	EL_CHECK_EQ(el_rec_decode(bad, sizeof bad, &got, &out, &used), EL_ECORRUPT);
	/* A valid checksum over an unknown type is still refused. */
	memcpy(bad, buf, n);
	bad[EL_REC_HEADER] = 99;
	uint32_t crc = el_crc32c(el_crc32c(0, bad, 4), bad + EL_REC_HEADER, n - EL_REC_HEADER);
	memcpy(bad + 4, &crc, 4); /* host is little-endian in CI */
	EL_CHECK_EQ(el_rec_decode(bad, n, &got, &out, &used), EL_ECORRUPT);
	bad[EL_REC_HEADER] = EL_REC_ENTRY;
	crc = el_crc32c(el_crc32c(0, bad, 4), bad + EL_REC_HEADER, n - EL_REC_HEADER);
	memcpy(bad + 4, &crc, 4);
	EL_CHECK_EQ(el_rec_decode(bad, n, &got, &out, &used), EL_OK);
}

static void test_valid_end_stops_at_incomplete_batch(void)
{
	uint8_t buf[4 * EL_REC_SIZE_MAX];
	struct el_entry e;
	struct el_rec rec = { .type = EL_REC_ENTRY, .entry = &e };
	size_t n = 0, end1, stop;

	pt_fill_entry(&e, 1, 1);
	n += el_rec_encode(&rec, buf + n);
	rec = (struct el_rec){ .type = EL_REC_BATCH_END, .value = 1 };
	n += el_rec_encode(&rec, buf + n);
	end1 = n;
	pt_fill_entry(&e, 2, 1);
	rec = (struct el_rec){ .type = EL_REC_ENTRY, .entry = &e };
	n += el_rec_encode(&rec, buf + n); /* no BATCH_END: incomplete */
	EL_CHECK_EQ(el_wal_valid_end(buf, n, &stop), end1);
	EL_CHECK_EQ(stop, n);
	buf[end1 + 9] ^= 1;
	EL_CHECK_EQ(el_wal_valid_end(buf, n, &stop), end1);
	EL_CHECK_EQ(stop, end1);
}

static void test_segment_names(void)
{
	char path[64];
	uint64_t seq;
	EL_CHECK_EQ(el_wal_segment_path("d", 0x1a, path, sizeof path), EL_OK);
	EL_CHECK(strcmp(path, "d/wal-000000000000001a.log") == 0);
	EL_CHECK(el_wal_segment_name(path + 2, &seq) && seq == 0x1a);
	EL_CHECK(!el_wal_segment_name("wal-000000000000001A.log", &seq));
	EL_CHECK(!el_wal_segment_name("wal-1a.log", &seq));
	EL_CHECK(!el_wal_segment_name("wal-000000000000001a.logx", &seq));
	EL_CHECK_EQ(el_wal_segment_path("d", 1, path, 10), EL_EINVAL);
}

static void test_snapshot_file_round_trip_and_damage(void)
{
	struct el_snapshot_meta m, got;
	static uint8_t data[512], out[EL_SNAPSHOT_MAX];
	char path[PATH_MAX + 16];
	bool found;
	int dfd;

	fresh_dir("snapfile");
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	EL_CHECK_EQ(el_snapshot_file_read(dir, &got, out, &found), EL_OK);
	EL_CHECK(!found);
	pt_fill_snapshot(&m, data, 321, 4);
	EL_CHECK_EQ(el_snapshot_file_write(dir, dfd, &m, data), EL_OK);
	EL_CHECK_EQ(el_snapshot_file_read(dir, &got, out, &found), EL_OK);
	EL_CHECK(found);
	EL_CHECK(memcmp(&got, &m, sizeof m) == 0);
	EL_CHECK(memcmp(out, data, m.len) == 0);
	close(dfd);

	/* Any flipped bit makes it corrupt, and open refuses to start. */
	snprintf(path, sizeof path, "%s/snapshot", dir);
	long size = pt_file_size(path);
	for (long off = 0; off < size; off += 7) {
		int fd = open(path, O_RDWR);
		uint8_t b;
		EL_CHECK(pread(fd, &b, 1, off) == 1);
		b ^= 0x10;
		EL_CHECK(pwrite(fd, &b, 1, off) == 1);
		EL_CHECK_EQ(el_snapshot_file_read(dir, &got, out, &found), EL_ECORRUPT);
		b ^= 0x10;
		EL_CHECK(pwrite(fd, &b, 1, off) == 1);
		close(fd);
	}
	EL_CHECK(truncate(path, size - 1) == 0);
	struct pt_model model;
	unsigned long errors = el_log_count(EL_LOG_ERROR);
	EL_CHECK_EQ(pt_open_load(dir, 0, &model), EL_ECORRUPT);
	EL_CHECK(el_log_count(EL_LOG_ERROR) > errors);
	EL_CHECK(truncate(path, 0) == 0);
	EL_CHECK_EQ(pt_open_load(dir, 0, &model), EL_ECORRUPT);
	pt_rmrf(dir);
}

/* The el_io calls of a file replaced whole, one word each in one line
 * ("open snapshot.tmp", "fsync-dir"), and an error planted at the Nth of
 * them: a write's ENOSPC, any other's EIO. */
static struct el_io trace_real;
static char trace[512];
static int trace_dir_fd, trace_calls, trace_fail_at;

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static bool trace_call(const char *what, const char *a, const char *b)
{
	const size_t used = strlen(trace);
	snprintf(trace + used, sizeof trace - used, "%s%s%s%s%s%s", used ? ", " : "", what,
		 a ? " " : "", a ? base_name(a) : "", b ? " " : "", b ? base_name(b) : "");
	if (++trace_calls != trace_fail_at)
		return false;
	errno = strcmp(what, "write") == 0 ? ENOSPC : EIO;
	return true;
}

static int tr_open(const char *path, int flags, mode_t mode)
{
	return trace_call("open", path, NULL) ? -1 : trace_real.open(path, flags, mode);
}
static ssize_t tr_write(int fd, const void *buf, size_t len)
{
	return trace_call("write", NULL, NULL) ? -1 : trace_real.write(fd, buf, len);
}
static ssize_t tr_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return trace_call("pwrite", NULL, NULL) ? -1 : trace_real.pwrite(fd, buf, len, off);
}
static int tr_fsync(int fd)
{
	const bool fail = trace_call(fd == trace_dir_fd ? "fsync-dir" : "fsync", NULL, NULL);
	return fail ? -1 : trace_real.fsync(fd);
}
static int tr_fdatasync(int fd)
{
	return trace_call("fdatasync", NULL, NULL) ? -1 : trace_real.fdatasync(fd);
}
static int tr_rename(const char *from, const char *to)
{
	return trace_call("rename", from, to) ? -1 : trace_real.rename(from, to);
}
static int tr_ftruncate(int fd, off_t len)
{
	return trace_call("ftruncate", NULL, NULL) ? -1 : trace_real.ftruncate(fd, len);
}
static int tr_unlink(const char *path)
{
	return trace_call("unlink", path, NULL) ? -1 : trace_real.unlink(path);
}

/* Writes the older (newer = 0) or the newer contents of one file. */
typedef int (*replace_fn)(int dir_fd, int newer);
/* 1: the file holds the newer contents, 0: the older, -1: neither. */
typedef int (*holds_fn)(void);

/* A file replaced with each of its calls failing in turn. The calls come in
 * the order want says; a failed one is neither retried nor followed by
 * another (the storage fails for good, README); code and line say what
 * failed; the file holds the older contents until the rename, and the temp
 * file is left as it is (the open removes it). */
static void check_replace_steps(const char *tmp_name, replace_fn replace, holds_fn holds,
				const char *want, const char *const *failures)
{
	char tmp[PATH_MAX + 32];
	snprintf(tmp, sizeof tmp, "%s/%s", dir, tmp_name);
	trace_dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
	EL_CHECK(trace_dir_fd >= 0);
	trace_real = el_io;
	for (int fail_at = 0, calls = 1; fail_at <= calls; fail_at++) {
		EL_CHECK_EQ(replace(trace_dir_fd, 0), EL_OK);
		trace[0] = '\0';
		trace_calls = 0;
		trace_fail_at = fail_at;
		el_io = (struct el_io){ tr_open, tr_write, tr_pwrite, tr_fsync, tr_fdatasync,
					tr_rename, tr_ftruncate, tr_unlink };
		const int rc = replace(trace_dir_fd, 1);
		el_io = trace_real;
		if (fail_at == 0) {
			EL_CHECK_EQ(rc, EL_OK);
			EL_CHECK_EQ(strcmp(trace, want), 0);
			EL_CHECK_EQ(holds(), 1);
			calls = trace_calls;
			continue;
		}
		EL_CHECK_EQ(trace_calls, fail_at);
		EL_CHECK_EQ(strncmp(trace, want, strlen(trace)), 0);
		const char *line = failures[fail_at - 1];
		EL_CHECK_EQ(rc, strstr(line, strerror(ENOSPC)) ? EL_ENOSPC : EL_EIO);
		EL_CHECK_EQ(strcmp(el_io_last_failure(), line), 0);
		EL_CHECK_EQ(holds(), fail_at == calls ? 1 : 0); /* the directory fsync failed */
		EL_CHECK_EQ(pt_file_size(tmp) >= 0, fail_at > 1 && fail_at < calls);
	}
	close(trace_dir_fd);
}

static int snapshot_replace(int dir_fd, int newer)
{
	static uint8_t data[512];
	struct el_snapshot_meta m;
	pt_fill_snapshot(&m, data, newer ? 20 : 10, 2);
	return el_snapshot_file_write(dir, dir_fd, &m, data);
}

static int snapshot_holds(void)
{
	static uint8_t out[EL_SNAPSHOT_MAX];
	struct el_snapshot_meta m;
	bool found;
	if (el_snapshot_file_read(dir, &m, out, &found) != EL_OK || !found)
		return -1;
	return m.index == 20 ? 1 : m.index == 10 ? 0 : -1;
}

static int newest_replace(int dir_fd, int newer)
{
	return el_wal_newest_write(dir, dir_fd, newer ? 7 : 3);
}

static int newest_holds(void)
{
	uint64_t seq;
	bool found;
	if (el_wal_newest_read(dir, &seq, &found) != EL_OK || !found)
		return -1;
	return seq == 7 ? 1 : seq == 3 ? 0 : -1;
}

/* The line el_io_last_failure gives when each step of what fails. */
static void failure_lines(const char *const *what, int n, const char *tmp_name,
			  char (*lines)[PATH_MAX + 64], const char **out)
{
	for (int i = 0; i < n; i++) {
		const bool dir_sync = strcmp(what[i], "directory fsync") == 0;
		snprintf(lines[i], sizeof lines[i], "%s of %s%s%s: %s", what[i], dir,
			 dir_sync ? "" : "/", dir_sync ? "" : tmp_name,
			 strerror(strcmp(what[i], "write") == 0 ? ENOSPC : EIO));
		out[i] = lines[i];
	}
}

/* DIR/snapshot and DIR/wal-newest are replaced the same way, step for step
 * (el_io_replace_file): the order of the calls and what each failure
 * returns and says, for every call. */
static void test_replace_file_steps(void)
{
	static const char *const snap[7] = { "create", "write", "write", "write", "fsync",
					     "rename", "directory fsync" };
	static const char *const newest[5] = { "create", "write", "fsync", "rename",
					       "directory fsync" };
	char lines[7][PATH_MAX + 64];
	const char *failures[7];

	fresh_dir("replace");
	failure_lines(snap, 7, EL_SNAPSHOT_TMP, lines, failures);
	check_replace_steps(EL_SNAPSHOT_TMP, snapshot_replace, snapshot_holds,
			    "open snapshot.tmp, write, write, write, fsync, "
			    "rename snapshot.tmp snapshot, fsync-dir", failures);
	failure_lines(newest, 5, EL_WAL_NEWEST_TMP, lines, failures);
	check_replace_steps(EL_WAL_NEWEST_TMP, newest_replace, newest_holds,
			    "open wal-newest.tmp, write, fsync, rename wal-newest.tmp wal-newest, "
			    "fsync-dir", failures);
	pt_rmrf(dir);
}

/* Run the workload for n batches, checking every batch persists. */
static int run_batches(struct el_storage *st, struct pt_model *m, uint64_t seed, uint64_t from,
		       uint64_t n, const struct pt_gen_opts *o)
{
	struct pt_batch b;
	for (uint64_t i = from; i < from + n; i++) {
		pt_gen_batch(m, seed, i, o, &b);
		int rc = pt_persist(st, &b);
		if (rc != EL_OK)
			return rc;
		pt_model_apply(m, &b);
	}
	return EL_OK;
}

static void test_storage_round_trip(void)
{
	const struct pt_gen_opts o = { .max_entries = 8, .snapshots = false, .truncations = true };
	struct el_storage *st;
	struct pt_model m, got;

	fresh_dir("roundtrip");
	pt_model_init(&m);
	EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_OK);
	EL_CHECK_EQ(pt_load(st, &got), EL_OK); /* empty directory: empty state */
	EL_CHECK(pt_model_equal(&got, &m));
	EL_CHECK_EQ(run_batches(st, &m, 1, 0, 300, &o), EL_OK);
	EL_CHECK_EQ(el_storage_last_index(st), m.last);
	el_storage_close(st);
	/* A half-written snapshot.tmp (crash during a snapshot) is discarded. */
	char tmp[PATH_MAX + 16];
	snprintf(tmp, sizeof tmp, "%s/snapshot.tmp", dir);
	int fd = open(tmp, O_WRONLY | O_CREAT, 0600);
	EL_CHECK(fd >= 0 && write(fd, "junk", 4) == 4);
	close(fd);
	EL_CHECK_EQ(pt_open_load(dir, 0, &got), EL_OK);
	EL_CHECK(pt_model_equal(&got, &m));
	EL_CHECK_EQ(pt_file_size(tmp), -1);
	/* Reopen, go on, reopen again. */
	EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_OK);
	EL_CHECK_EQ(run_batches(st, &m, 1, 300, 100, &o), EL_OK);
	el_storage_close(st);
	EL_CHECK_EQ(pt_open_load(dir, 0, &got), EL_OK);
	EL_CHECK(pt_model_equal(&got, &m));
	pt_rmrf(dir);
}

static const struct el_entry *fill_term_ctx(void *ctx, uint64_t index)
{
	static struct el_entry e;
	pt_fill_entry(&e, index, *(uint64_t *)ctx);
	return &e;
}

static int put(struct el_storage *st, uint64_t first, uint64_t last, uint64_t term,
	       const struct el_hard_state *hs)
{
	struct el_storage_batch b = { .hs = hs, .first = first, .last = last,
				      .entry = fill_term_ctx, .ctx = &term };
	return el_storage_persist(st, &b);
}

static void test_truncation_and_hard_state(void)
{
	struct el_storage *st;
	struct pt_model got;
	struct el_hard_state hs = { 2, 7, 3 };

	fresh_dir("trunc");
	EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_OK);
	EL_CHECK_EQ(put(st, 1, 10, 1, &hs), EL_OK);
	hs = (struct el_hard_state){ 3, 0, 3 };
	EL_CHECK_EQ(put(st, 6, 8, 3, &hs), EL_OK); /* overwrite 6..10 with 6..8 */
	EL_CHECK_EQ(el_storage_last_index(st), 8);
	/* A gap and a write below the log are refused, and nothing changes. */
	EL_CHECK_EQ(put(st, 10, 12, 3, NULL), EL_EINVAL);
	EL_CHECK_EQ(put(st, 0, 2, 3, NULL), EL_EINVAL);
	EL_CHECK_EQ(el_storage_failed(st), 0);
	EL_CHECK_EQ(put(st, 9, 8, 3, NULL), EL_OK); /* nothing to do: no write */
	el_storage_close(st);
	EL_CHECK_EQ(pt_open_load(dir, 0, &got), EL_OK);
	EL_CHECK_EQ(got.last, 8);
	EL_CHECK_EQ(got.terms[4], 1);
	EL_CHECK_EQ(got.terms[5], 3);
	EL_CHECK_EQ(got.terms[7], 3);
	EL_CHECK(got.hs.term == 3 && got.hs.vote == 0 && got.hs.commit == 3);

	/* Dropping a suffix without new entries (first > last) is durable too. */
	EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_OK);
	EL_CHECK_EQ(put(st, 5, 4, 3, NULL), EL_OK);
	EL_CHECK_EQ(el_storage_last_index(st), 4);
	el_storage_close(st);
	EL_CHECK_EQ(pt_open_load(dir, 0, &got), EL_OK);
	EL_CHECK_EQ(got.last, 4);
	pt_rmrf(dir);
}

/* Entries 1..last of term 5, one a batch, the first with the hard state
 * (term 5, vote 2), the others with none. */
static void write_log(struct el_storage *st, uint64_t last)
{
	const struct el_hard_state hs = { 5, 2, 0 };
	EL_CHECK_EQ(put(st, 1, 1, 5, &hs), EL_OK);
	for (uint64_t i = 2; i <= last; i++)
		EL_CHECK_EQ(put(st, i, i, 5, NULL), EL_OK);
}

/* A compaction's batch: the snapshot at index (of term), nothing else; the
 * log goes to last. */
static int compact(struct el_storage *st, uint64_t index, uint64_t term, uint64_t last)
{
	static struct el_snapshot_meta snap;
	static uint8_t data[512];
	pt_fill_snapshot(&snap, data, index, term);
	const struct el_storage_batch b = { .snapshot = &snap, .snapshot_data = data,
					    .first = last + 1, .last = last };
	return el_storage_persist(st, &b);
}

/* dir (segments of 1024 bytes) reopens with the snapshot at index, the log
 * to last and the hard state of term 5, vote 2. */
static void check_compacted(uint64_t index, uint64_t last)
{
	struct pt_model got;
	EL_CHECK_EQ(pt_open_load(dir, 1024, &got), EL_OK);
	EL_CHECK(got.have_snap && got.snap_index == index);
	EL_CHECK_EQ(got.last, last);
	EL_CHECK(got.hs.term == 5 && got.hs.vote == 2);
}

/* Hard state written once, then only entries: rotation and deletion of old
 * segments must keep it (each segment starts with the hard state). */
static void test_rotation_and_deletion_keep_hard_state(void)
{
	const struct el_storage_options opt = { .segment_bytes = 1024 };
	struct el_storage *st;
	struct pt_model got;

	fresh_dir("rotate");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	write_log(st, 200);
	unsigned segs = el_storage_segments(st);
	EL_CHECK(segs > 10);
	el_storage_close(st);
	EL_CHECK_EQ(pt_open_load(dir, 1024, &got), EL_OK);
	EL_CHECK_EQ(got.last, 200);
	EL_CHECK(got.hs.term == 5 && got.hs.vote == 2);

	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	EL_CHECK_EQ(el_storage_segments(st), segs);
	EL_CHECK_EQ(compact(st, 190, 5, 200), EL_OK);
	EL_CHECK(el_storage_segments(st) <= 3);
	el_storage_close(st);
	check_compacted(190, 200);
	pt_rmrf(dir);
}

/* A crash between a rotation's new segment and its first batch leaves the
 * newest segment empty (a torn first batch is cut to nothing likewise); it
 * holds no hard state yet. A snapshot alone (a compaction: no entries, no
 * hard state change) after that restart must not delete the older segments:
 * they hold the only copy of the term and the vote. */
static void test_snapshot_over_empty_newest_segment_keeps_hard_state(void)
{
	const struct el_storage_options opt = { .segment_bytes = 1024 };
	struct el_storage *st;
	char path[PATH_MAX];

	fresh_dir("emptynewest");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	write_log(st, 100);
	const unsigned segs = el_storage_segments(st);
	EL_CHECK(segs > 3);
	el_storage_close(st);
	EL_CHECK_EQ(el_wal_segment_path(dir, segs + 1, path, sizeof path), EL_OK);
	const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	EL_CHECK(fd >= 0);
	close(fd);

	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	EL_CHECK_EQ(compact(st, 100, 5, 100), EL_OK);
	el_storage_close(st);
	check_compacted(100, 100);
	pt_rmrf(dir);
}

/* Opening dir is refused as corrupt, and the error line says want. */
static bool open_refused_saying(const struct el_storage_options *opt, const char *want)
{
	char path[PATH_MAX + 8], text[4096] = "";
	struct el_storage *st = NULL;
	snprintf(path, sizeof path, "%s.log", dir);
	fflush(stderr);
	const int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 2);
	const int rc = el_storage_open(&st, dir, opt);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	FILE *f = fopen(path, "r");
	const size_t n = f != NULL ? fread(text, 1, sizeof text - 1, f) : 0;
	if (f != NULL)
		fclose(f);
	text[n] = '\0';
	unlink(path);
	if (st != NULL)
		el_storage_close(st);
	return rc == EL_ECORRUPT && st == NULL && strstr(text, want) != NULL;
}

/* The WAL segments beside a snapshot deleted or emptied (an operator
 * "cleaning up", a bad copy): they hold the term, the vote and the newest
 * entries, and no crash leaves a snapshot without a WAL batch (the first
 * snapshot comes after one), so the start is refused, not run on the
 * snapshot alone (an outside tester lost an acknowledged grant and saw
 * tokens go back that way). */
static void test_snapshot_without_wal_refuses_start(void)
{
	const struct el_storage_options opt = { .segment_bytes = 1 << 20 };
	struct el_storage *st;
	struct el_snapshot_meta snap;
	static uint8_t data[512];
	struct el_hard_state hs = { 4, 2, 0 };
	char path[PATH_MAX + 40];

	for (int emptied = 0; emptied <= 1; emptied++) {
		fresh_dir("nowal");
		EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
		EL_CHECK_EQ(put(st, 1, 1, 4, &hs), EL_OK);
		for (uint64_t i = 2; i <= 30; i++)
			EL_CHECK_EQ(put(st, i, i, 4, NULL), EL_OK);
		pt_fill_snapshot(&snap, data, 20, 4);
		struct el_storage_batch b = { .snapshot = &snap, .snapshot_data = data,
					      .first = 31, .last = 30 };
		EL_CHECK_EQ(el_storage_persist(st, &b), EL_OK);
		EL_CHECK_EQ(el_storage_segments(st), 1);
		el_storage_close(st);
		el_wal_segment_path(dir, 1, path, sizeof path);
		EL_CHECK(emptied ? truncate(path, 0) == 0 : unlink(path) == 0);
		EL_CHECK(open_refused_saying(&opt, "no WAL batch"));
		pt_rmrf(dir);
	}
}

/* The snapshot file deleted after compaction dropped the segments it
 * covered: refused, and the message names the missing snapshot (it used to
 * blame the WAL: "entry at offset 29 does not continue the log"). */
static void test_deleted_snapshot_is_named(void)
{
	const struct el_storage_options opt = { .segment_bytes = 1024 };
	struct el_storage *st;
	struct el_snapshot_meta snap;
	static uint8_t data[512];
	char path[PATH_MAX + 16];

	fresh_dir("nosnap");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	for (uint64_t i = 1; i <= 200; i++)
		EL_CHECK_EQ(put(st, i, i, 5, NULL), EL_OK);
	pt_fill_snapshot(&snap, data, 190, 5);
	struct el_storage_batch b = { .snapshot = &snap, .snapshot_data = data, .first = 201,
				      .last = 200 };
	EL_CHECK_EQ(el_storage_persist(st, &b), EL_OK);
	el_storage_close(st);
	snprintf(path, sizeof path, "%s/snapshot", dir);
	EL_CHECK(unlink(path) == 0);
	EL_CHECK(open_refused_saying(&opt, "no snapshot file"));
	pt_rmrf(dir);
}

/* DIR/wal-newest (port/posix/wal_newest.c), spelled out here so that these
 * tests build on the tree before it, to show they fail there. */
#define NEWEST_FILE "wal-newest"

static void newest_path(char *out, size_t cap)
{
	snprintf(out, cap, "%s/" NEWEST_FILE, dir);
}

/* The line wal-newest holds for segment seq, built here from its format
 * ("newest wal-<16 hex>.log crc32c CHECK\n", CHECK the CRC-32C of what
 * comes before " crc32c"), not by the port's own code. */
static void newest_line(uint64_t seq, char *line, size_t cap)
{
	char head[40];
	snprintf(head, sizeof head, "newest wal-%016llx.log", (unsigned long long)seq);
	snprintf(line, cap, "%s crc32c %08x\n", head, (unsigned)el_crc32c(0, head, strlen(head)));
}

static void put_newest(const char *text)
{
	char path[PATH_MAX + 16];
	newest_path(path, sizeof path);
	FILE *f = fopen(path, "w");
	const bool ok = f != NULL && fputs(text, f) >= 0;
	if (f != NULL)
		fclose(f);
	EL_CHECK(ok);
}

static bool newest_names(uint64_t seq)
{
	char path[PATH_MAX + 16], want[80], text[128] = "";
	newest_path(path, sizeof path);
	newest_line(seq, want, sizeof want);
	FILE *f = fopen(path, "r");
	const size_t n = f != NULL ? fread(text, 1, sizeof text - 1, f) : 0;
	if (f != NULL)
		fclose(f);
	text[n] = '\0';
	return strcmp(text, want) == 0;
}

/* The newest segment deleted while older ones remain (an operator freeing
 * space, a bad restore script, file system damage): the older segments are
 * whole and their batch numbers run on, so nothing else sees it, and the
 * node started on a shorter log and an older term and vote than it
 * acknowledged (it could vote twice in one term, drop entries it told the
 * leader it stored). Refused, naming the missing file. Every segment
 * deleted, with no snapshot: refused too (it started as a new, empty node)
 * and not taken for a directory that holds nothing (the daemon would let
 * --bootstrap or --join run over it). */
static void test_deleted_newest_segment_refuses_start(void)
{
	const struct el_storage_options opt = { .segment_bytes = 1024 };
	struct el_storage *st;
	char path[PATH_MAX], want[PATH_MAX + 16];

	fresh_dir("newestgone");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	write_log(st, 100);
	const unsigned segs = el_storage_segments(st);
	el_storage_close(st);
	EL_CHECK(segs > 3);
	EL_CHECK_EQ(el_wal_segment_path(dir, segs, path, sizeof path), EL_OK);
	EL_CHECK(pt_file_size(path) > 0);
	EL_CHECK(unlink(path) == 0);
	snprintf(want, sizeof want, "%s is missing", path);
	EL_CHECK(open_refused_saying(&opt, want));
	EL_CHECK(!el_storage_holds_nothing(dir));
	for (uint64_t seq = 1; seq < segs; seq++) {
		EL_CHECK_EQ(el_wal_segment_path(dir, seq, path, sizeof path), EL_OK);
		EL_CHECK(unlink(path) == 0);
	}
	EL_CHECK(open_refused_saying(&opt, want));
	EL_CHECK(!el_storage_holds_nothing(dir));
	pt_rmrf(dir);
}

/* A crash in a roll after the new segment was created, before wal-newest
 * named it, leaves the file naming the one before, and the new segment
 * empty: the start goes on (no false refusal), and brings the file up to
 * the new segment before the next batch goes there, or deleting that
 * segment, batches and all, would go unseen. A directory of the release
 * before has no wal-newest: it starts, and gets one. */
static void test_newest_segment_file_behind_or_missing(void)
{
	const struct el_storage_options opt = { .segment_bytes = 1024 };
	struct el_storage *st;
	struct pt_model got;
	char path[PATH_MAX], want[PATH_MAX + 16];

	fresh_dir("newestbehind");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	write_log(st, 100);
	const unsigned segs = el_storage_segments(st);
	el_storage_close(st);
	EL_CHECK(newest_names(segs));
	EL_CHECK_EQ(el_wal_segment_path(dir, segs + 1, path, sizeof path), EL_OK);
	const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	EL_CHECK(fd >= 0);
	close(fd);
	st = NULL;
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	EL_CHECK(newest_names(segs + 1));
	if (st == NULL)
		return;
	EL_CHECK_EQ(el_storage_last_index(st), 100);
	EL_CHECK_EQ(put(st, 101, 101, 5, NULL), EL_OK);
	EL_CHECK_EQ(el_storage_segments(st), segs + 1);
	el_storage_close(st);
	EL_CHECK(unlink(path) == 0);
	snprintf(want, sizeof want, "%s is missing", path);
	EL_CHECK(open_refused_saying(&opt, want));

	pt_rmrf(dir);
	fresh_dir("newestupgrade");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	write_log(st, 100);
	EL_CHECK_EQ(el_storage_segments(st), segs);
	el_storage_close(st);
	newest_path(want, sizeof want);
	EL_CHECK(unlink(want) == 0); /* as the release before left it */
	EL_CHECK_EQ(pt_open_load(dir, 1024, &got), EL_OK);
	EL_CHECK(got.last == 100 && got.hs.term == 5 && got.hs.vote == 2);
	EL_CHECK(newest_names(segs));
	EL_CHECK_EQ(el_wal_segment_path(dir, segs, path, sizeof path), EL_OK);
	EL_CHECK(unlink(path) == 0);
	snprintf(want, sizeof want, "%s is missing", path);
	EL_CHECK(open_refused_saying(&opt, want));
	pt_rmrf(dir);
}

/* wal-newest damaged (a flipped bit, garbage, not a regular file) is not
 * read as some number: refused, naming it; removed, the start goes on and
 * writes it anew. */
static void test_newest_segment_file_damaged(void)
{
	const struct el_storage_options opt = { .segment_bytes = 1024 };
	struct el_storage *st;
	char line[80], path[PATH_MAX + 16], want[PATH_MAX + 32];

	fresh_dir("newestdamaged");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	write_log(st, 20);
	const unsigned segs = el_storage_segments(st);
	el_storage_close(st);
	newest_path(path, sizeof path);
	snprintf(want, sizeof want, "%s is damaged", path);
	newest_line(segs, line, sizeof line);
	line[strlen(line) - 2] ^= 1; /* the checksum's last digit */
	put_newest(line);
	EL_CHECK(open_refused_saying(&opt, want));
	EL_CHECK(!el_storage_holds_nothing(dir));
	newest_line(segs, line, sizeof line);
	line[21] = line[21] == '0' ? '1' : '0'; /* a digit of the number */
	put_newest(line);
	EL_CHECK(open_refused_saying(&opt, want));
	newest_line(segs, line, sizeof line);
	line[strlen(line) - 1] = '\0'; /* no newline */
	put_newest(line);
	EL_CHECK(open_refused_saying(&opt, want));
	EL_CHECK(unlink(path) == 0 && mkdir(path, 0700) == 0);
	EL_CHECK(open_refused_saying(&opt, want));
	EL_CHECK(rmdir(path) == 0);
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	el_storage_close(st);
	EL_CHECK(newest_names(segs));
	pt_rmrf(dir);
}

/* A snapshot one below a sealed segment's last index still needs that
 * segment (it holds the entry right after the snapshot): it must stay. */
static void test_snapshot_below_sealed_segment_keeps_it(void)
{
	const struct el_storage_options opt = { .segment_bytes = 1024 };
	struct el_storage *st;
	struct pt_model got;
	struct el_snapshot_meta snap;
	static uint8_t data[512];
	uint64_t sealed_last = 0; /* last index of the first sealed segment */

	fresh_dir("seal");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	for (uint64_t i = 1; i <= 60; i++) {
		const unsigned before = el_storage_segments(st);
		EL_CHECK_EQ(put(st, i, i, 3, NULL), EL_OK);
		if (sealed_last == 0 && el_storage_segments(st) > before && i > 1)
			sealed_last = i - 1;
	}
	EL_CHECK(sealed_last > 2);
	pt_fill_snapshot(&snap, data, sealed_last - 1, 3);
	struct el_storage_batch b = { .snapshot = &snap, .snapshot_data = data, .first = 61, .last = 60 };
	EL_CHECK_EQ(el_storage_persist(st, &b), EL_OK);
	el_storage_close(st);
	EL_CHECK_EQ(pt_open_load(dir, 1024, &got), EL_OK);
	EL_CHECK(got.have_snap && got.snap_index == sealed_last - 1);
	EL_CHECK_EQ(got.last, 60);
	pt_rmrf(dir);
}

/* A zero-length record whose checksum matches (the CRC of its length field
 * alone) at the very end of an exactly sized buffer: refused, and nothing
 * past the buffer is read (ASan sees any over-read in the sanitized run). */
static void test_zero_length_record_at_buffer_end(void)
{
	uint8_t *buf = malloc(EL_REC_HEADER);
	struct el_rec rec;
	struct el_entry entry;
	size_t used = 0;
	EL_CHECK(buf != NULL); /* returns when not */
	memset(buf, 0, 4);
	const uint32_t crc = el_crc32c(0, buf, 4);
	for (int i = 0; i < 4; i++)
		buf[4 + i] = (uint8_t)(crc >> (8 * i));
	EL_CHECK_EQ(el_rec_decode(buf, EL_REC_HEADER, &rec, &entry, &used), EL_ECORRUPT);
	EL_CHECK_EQ(used, 0);
	free(buf);
}

/* Group commit: a whole batch (hard state, truncation, 64 entries) costs one
 * write and one fdatasync; a new segment adds two directory fsyncs and the
 * wal-newest file (its write, fsync and rename: per roll, never per batch),
 * and a batch past the file's end one write of the zeros ahead (el_wal.h);
 * an empty batch touches nothing. */
static void test_one_sync_per_batch(void)
{
	const struct el_storage_options opt = { .segment_bytes = 8192 };
	struct el_storage *st;
	struct el_hard_state hs = { 1, 1, 0 };

	fresh_dir("groupcommit");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	pt_fault_count_only();
	EL_CHECK_EQ(put(st, 1, 64, 1, &hs), EL_OK); /* creates segment 1 */
	EL_CHECK_EQ(pt_fault_calls(PT_OP_PWRITE), 2); /* the zeros ahead, the batch */
	EL_CHECK_EQ(pt_fault_calls(PT_OP_FDATASYNC), 1);
	EL_CHECK_EQ(pt_fault_calls(PT_OP_FSYNC), 3); /* directory, wal-newest.tmp, directory */
	EL_CHECK_EQ(pt_fault_calls(PT_OP_WRITE), 1); /* wal-newest's line */
	EL_CHECK_EQ(pt_fault_calls(PT_OP_RENAME), 1);
	pt_fault_count_only();
	hs = (struct el_hard_state){ 2, 0, 59 };
	EL_CHECK_EQ(put(st, 60, 62, 2, &hs), EL_OK); /* truncate + append + hard state */
	EL_CHECK_EQ(pt_fault_calls(PT_OP_PWRITE), 1); /* within the zeros written ahead */
	EL_CHECK_EQ(pt_fault_calls(PT_OP_FDATASYNC), 1);
	EL_CHECK_EQ(pt_fault_calls(PT_OP_FSYNC) + pt_fault_calls(PT_OP_WRITE) +
		    pt_fault_calls(PT_OP_RENAME) + pt_fault_calls(PT_OP_OPEN), 0);
	pt_fault_count_only();
	EL_CHECK_EQ(put(st, 63, 62, 2, NULL), EL_OK);
	EL_CHECK_EQ(pt_fault_calls(PT_OP_PWRITE) + pt_fault_calls(PT_OP_FDATASYNC) +
		    pt_fault_calls(PT_OP_FSYNC), 0);
	el_io_reset();
	el_storage_close(st);
	pt_rmrf(dir);
}

static void flip_byte(const char *path, long off)
{
	int fd = open(path, O_RDWR);
	uint8_t b = 0;
	if (pread(fd, &b, 1, off) == 1) {
		b ^= 0x40;
		if (pwrite(fd, &b, 1, off) != 1)
			perror(path);
	}
	close(fd);
}

/* A segment's bytes (free them), *size of them; NULL when unreadable. */
static uint8_t *read_segment(const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY);
	const long n = pt_file_size(path);
	uint8_t *b = fd >= 0 && n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (b != NULL && read(fd, b, (size_t)n) != n) {
		free(b);
		b = NULL;
	}
	if (fd >= 0)
		close(fd);
	*size = b != NULL ? (size_t)n : 0;
	return b;
}

/* Where a segment's whole batches end; the zeros written ahead follow. */
static long data_end(const char *path)
{
	size_t size, stop = 0, end = 0;
	uint8_t *b = read_segment(path, &size);
	if (b != NULL)
		end = el_wal_valid_end(b, size, &stop);
	free(b);
	return (long)end;
}

/* The zeros ahead (el_wal.h): a segment's file is longer than its batches,
 * the zeros are no damage (nothing cut, nothing logged), and the next batch
 * after a restart goes where the data ends, inside the file. */
static void test_zeros_ahead_are_not_a_torn_tail(void)
{
	const struct el_storage_options opt = { .segment_bytes = 1 << 20 };
	struct el_storage *st;
	struct pt_model got;
	char path[PATH_MAX];
	const struct el_hard_state hs = { 1, 0, 0 };

	fresh_dir("ahead");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	EL_CHECK_EQ(put(st, 1, 10, 1, &hs), EL_OK);
	const long end = (long)el_storage_segment_bytes(st);
	el_storage_close(st);
	EL_CHECK_EQ(el_wal_segment_path(dir, 1, path, sizeof path), EL_OK);
	const long size = pt_file_size(path);
	EL_CHECK_EQ(data_end(path), end);
	EL_CHECK_EQ(size, EL_WAL_EXTEND_BYTES);
	EL_CHECK(end > 0 && end < size);
	const unsigned long warns = el_log_count(EL_LOG_WARN);
	EL_CHECK_EQ(pt_open_load(dir, 1 << 20, &got), EL_OK);
	EL_CHECK_EQ(got.last, 10);
	EL_CHECK_EQ(el_log_count(EL_LOG_WARN), warns);
	EL_CHECK_EQ(pt_file_size(path), size);
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	EL_CHECK_EQ(put(st, 11, 20, 1, NULL), EL_OK);
	el_storage_close(st);
	EL_CHECK_EQ(pt_file_size(path), size);
	EL_CHECK(data_end(path) > end);
	EL_CHECK_EQ(pt_open_load(dir, 1 << 20, &got), EL_OK);
	EL_CHECK_EQ(got.last, 20);
	EL_CHECK_EQ(el_log_count(EL_LOG_WARN), warns);
	pt_rmrf(dir);
}

/* Overwrite len bytes at off of path with byte v (0: cut a batch short). */
static void smudge(const char *path, long off, size_t len, uint8_t v)
{
	uint8_t b[64];
	memset(b, v, sizeof b);
	const int fd = open(path, O_WRONLY);
	EL_CHECK(fd >= 0 && len <= sizeof b && pwrite(fd, b, len, off) == (ssize_t)len);
	if (fd >= 0)
		close(fd);
}

/* What el_storage_holds_nothing calls empty (the daemon bootstraps over
 * it): no directory, none of its files, a first segment of zeros (a full
 * disk's first write), with a batch cut short (a crash in it) or with
 * batches of a zero hard state alone (a crash before a first snapshot).
 * Whatever made something durable is state: a batch with a term or an
 * entry, even behind a damaged record, a second segment, a segment not the
 * first, a snapshot. */
static void test_holds_nothing(void)
{
	const struct el_storage_options opt = { .segment_bytes = 1 << 20 };
	const struct el_hard_state hs = { 1, 0, 0 };
	struct el_storage *st;
	char seg[PATH_MAX], seg2[PATH_MAX], gone[PATH_MAX + 8];
	fresh_dir("nothing");
	snprintf(gone, sizeof gone, "%s/gone", dir);
	EL_CHECK(el_storage_holds_nothing(gone));
	EL_CHECK(el_storage_holds_nothing(dir));
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	el_storage_close(st);
	EL_CHECK(el_storage_holds_nothing(dir)); /* LOCK only */
	const struct el_hard_state zero = { 0, 0, 0 }, voted = { 1, 2, 0 };
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	EL_CHECK_EQ(put(st, 1, 0, 0, &zero), EL_OK);
	EL_CHECK_EQ(put(st, 1, 0, 0, &zero), EL_OK);
	el_storage_close(st);
	EL_CHECK(el_storage_holds_nothing(dir)); /* two batches, hard states of zeros */
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	EL_CHECK_EQ(put(st, 1, 0, 0, &voted), EL_OK);
	el_storage_close(st);
	EL_CHECK(!el_storage_holds_nothing(dir)); /* a vote */
	pt_rmrf(dir);
	fresh_dir("nothing");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	EL_CHECK_EQ(put(st, 1, 1, 1, &hs), EL_OK);
	const long end = (long)el_storage_segment_bytes(st);
	el_storage_close(st);
	EL_CHECK_EQ(el_wal_segment_path(dir, 1, seg, sizeof seg), EL_OK);
	EL_CHECK(!el_storage_holds_nothing(dir)); /* one whole batch */
	smudge(seg, 10, 1, 0xee); /* a damaged record before the batch's end */
	EL_CHECK(!el_storage_holds_nothing(dir));
	smudge(seg, end - 8, 8, 0); /* its BATCH_END cut short */
	EL_CHECK(el_storage_holds_nothing(dir));
	smudge(seg, 0, 64, 0);
	EL_CHECK(el_storage_holds_nothing(dir)); /* zeros written ahead only */
	EL_CHECK_EQ(el_wal_segment_path(dir, 2, seg2, sizeof seg2), EL_OK);
	EL_CHECK(rename(seg, seg2) == 0);
	EL_CHECK(!el_storage_holds_nothing(dir)); /* not the first segment */
	int fd = open(seg, O_WRONLY | O_CREAT, 0600);
	EL_CHECK(fd >= 0);
	close(fd);
	EL_CHECK(!el_storage_holds_nothing(dir)); /* two segments */
	EL_CHECK(unlink(seg2) == 0);
	EL_CHECK(el_storage_holds_nothing(dir));
	char snap[PATH_MAX + 16];
	snprintf(snap, sizeof snap, "%s/snapshot", dir);
	fd = open(snap, O_WRONLY | O_CREAT, 0600);
	EL_CHECK(fd >= 0);
	close(fd);
	EL_CHECK(!el_storage_holds_nothing(dir));
	pt_rmrf(dir);
}

static void test_corrupt_sealed_segment_refuses_start(void)
{
	const struct el_storage_options opt = { .segment_bytes = 512 };
	struct el_storage *st;
	struct pt_model got;
	char path[PATH_MAX];

	const struct el_hard_state hs = { 1, 0, 0 };
	fresh_dir("sealed");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	for (uint64_t i = 1; i <= 40; i++)
		EL_CHECK_EQ(put(st, i, i, 1, i == 1 ? &hs : NULL), EL_OK);
	EL_CHECK(el_storage_segments(st) >= 3);
	el_storage_close(st);
	EL_CHECK_EQ(el_wal_segment_path(dir, 2, path, sizeof path), EL_OK);
	const long sealed_end = data_end(path);
	flip_byte(path, sealed_end / 2); /* in its batches */
	EL_CHECK_EQ(pt_open_load(dir, 512, &got), EL_ECORRUPT);
	flip_byte(path, sealed_end / 2);
	EL_CHECK_EQ(pt_open_load(dir, 512, &got), EL_OK);
	/* Sealed, it kept only its batches (an earlier release opens it); zeros
	 * after them (a crash before that cut) are no damage, anything else is. */
	EL_CHECK_EQ(pt_file_size(path), sealed_end);
	EL_CHECK(truncate(path, sealed_end + 4096) == 0);
	EL_CHECK_EQ(pt_open_load(dir, 512, &got), EL_OK);
	EL_CHECK_EQ(got.last, 40);
	flip_byte(path, sealed_end + 100);
	EL_CHECK_EQ(pt_open_load(dir, 512, &got), EL_ECORRUPT);
	EL_CHECK(truncate(path, sealed_end) == 0);
	EL_CHECK_EQ(pt_open_load(dir, 512, &got), EL_OK);
	EL_CHECK_EQ(got.last, 40);
	/* A torn tail in the newest segment is cut, logged, and the rest kept. */
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	unsigned last_seq = el_storage_segments(st);
	el_storage_close(st);
	EL_CHECK_EQ(el_wal_segment_path(dir, last_seq, path, sizeof path), EL_OK);
	long size = data_end(path); /* the zeros after it are cut with the tail */
	EL_CHECK(truncate(path, size - 3) == 0);
	unsigned long warns = el_log_count(EL_LOG_WARN);
	EL_CHECK_EQ(pt_open_load(dir, 512, &got), EL_OK);
	EL_CHECK_EQ(el_log_count(EL_LOG_WARN), warns + 1);
	EL_CHECK_EQ(got.last, 39);
	EL_CHECK(pt_file_size(path) < size - 3); /* the torn batch is gone from disk */
	EL_CHECK_EQ(pt_open_load(dir, 512, &got), EL_OK);
	EL_CHECK_EQ(el_log_count(EL_LOG_WARN), warns + 1); /* nothing left to cut */
	pt_rmrf(dir);
}

/* Where batch k (from 1) of a segment begins: just after the BATCH_END of
 * batch k - 1. */
static long batch_start(const char *path, unsigned k)
{
	size_t size, off = 0, used;
	uint8_t *b = read_segment(path, &size);
	struct el_rec rec;
	struct el_entry e;
	unsigned ends = 0;
	while (b != NULL && ends + 1 < k &&
	       el_rec_decode(b + off, size - off, &rec, &e, &used) == EL_OK) {
		off += used;
		ends += rec.type == EL_REC_BATCH_END;
	}
	const long at = b != NULL && ends + 1 == k ? (long)off : -1;
	free(b);
	return at;
}

/* In the newest segment, damage with a whole later batch after it is not a
 * torn write (only the batch being written when the power went can tear):
 * cutting there would drop synced, maybe acknowledged entries, so the node
 * refuses to start; damage in the last batch alone is a torn tail, cut. */
static void test_corrupt_newest_segment_before_synced_batches(void)
{
	const struct el_storage_options opt = { .segment_bytes = 1 << 20 };
	struct el_storage *st;
	struct pt_model got;
	char path[PATH_MAX];
	const struct el_hard_state hs = { 1, 0, 0 };

	fresh_dir("newest");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	for (uint64_t i = 1; i <= 40; i++)
		EL_CHECK_EQ(put(st, i, i, 1, i == 1 ? &hs : NULL), EL_OK);
	EL_CHECK_EQ(el_storage_segments(st), 1);
	el_storage_close(st);
	EL_CHECK_EQ(el_wal_segment_path(dir, 1, path, sizeof path), EL_OK);
	const long b20 = batch_start(path, 20), b39 = batch_start(path, 39),
		   b40 = batch_start(path, 40);
	EL_CHECK(b20 > 0 && b39 > b20 && b40 > b39);
	const long probes[] = { b20 + 2, b20 + 10, b39 + 10 }; /* length field, payload */
	for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
		flip_byte(path, probes[i]);
		EL_CHECK_EQ(pt_open_load(dir, 1 << 20, &got), EL_ECORRUPT);
		flip_byte(path, probes[i]);
	}
	EL_CHECK_EQ(pt_open_load(dir, 1 << 20, &got), EL_OK);
	EL_CHECK_EQ(got.last, 40); /* refused, nothing was cut */
	flip_byte(path, b40 + 10);
	unsigned long warns = el_log_count(EL_LOG_WARN);
	EL_CHECK_EQ(pt_open_load(dir, 1 << 20, &got), EL_OK);
	EL_CHECK_EQ(got.last, 39);
	EL_CHECK_EQ(el_log_count(EL_LOG_WARN), warns + 1);
	pt_rmrf(dir);
}

/* Zeros over path[from, to) (a lost block, a damaged run); the old bytes
 * back in *saved (free them) for put_back. */
static uint8_t *zero_run(const char *path, long from, long to)
{
	size_t size;
	uint8_t *saved = read_segment(path, &size);
	uint8_t *zeros = calloc(1, (size_t)(to - from));
	const int fd = open(path, O_WRONLY);
	const bool ok = saved != NULL && zeros != NULL && fd >= 0 && to <= (long)size &&
			pwrite(fd, zeros, (size_t)(to - from), from) == to - from;
	if (fd >= 0)
		close(fd);
	free(zeros);
	if (!ok)
		printf("  FAIL: cannot zero %s [%ld, %ld)\n", path, from, to);
	el_test_current_failed |= !ok;
	return saved;
}

static void put_back(const char *path, uint8_t *saved, size_t size)
{
	const int fd = open(path, O_WRONLY | O_TRUNC);
	EL_CHECK(fd >= 0 && write(fd, saved, size) == (ssize_t)size);
	if (fd >= 0)
		close(fd);
	free(saved);
}

/* Zeros in the middle of the newest segment with a whole batch two or more
 * after them are not the zeros written ahead, nor a torn write: a batch is
 * written only after the one before it was synced, so only the last one
 * can tear, and its own zeros ahead lie after it. The start is refused,
 * naming the file and the offset, nothing cut; zeros over the start of the
 * last batch alone (its end reached the disk, its start did not: a torn
 * write) are cut as before. */
static void test_zero_run_in_newest_segment(void)
{
	const struct el_storage_options opt = { .segment_bytes = 1 << 20 };
	const struct el_hard_state hs = { 1, 0, 0 };
	struct el_storage *st;
	struct pt_model got;
	char path[PATH_MAX], want[PATH_MAX + 64];

	fresh_dir("zerorun");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	for (uint64_t i = 1; i <= 200; i++)
		EL_CHECK_EQ(put(st, i, i, 1, i == 1 ? &hs : NULL), EL_OK);
	el_storage_close(st);
	EL_CHECK_EQ(el_wal_segment_path(dir, 1, path, sizeof path), EL_OK);
	const size_t size = (size_t)pt_file_size(path);
	const long b50 = batch_start(path, 50), b51 = batch_start(path, 51),
		   b200 = batch_start(path, 200), end = data_end(path);
	EL_CHECK(b50 > 0 && b51 > b50 && b200 > 8192 && end > b200);
	const long runs[][3] = { /* from, to, where recovery stops */
		{ b50 + 3, b50 + 3 + 512, b50 },   /* a sector inside batch 50 */
		{ b50, b51, b50 },                 /* exactly batch 50 */
		{ 4096, 8192, -1 },                /* a page-aligned block */
	};
	for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
		uint8_t *saved = zero_run(path, runs[i][0], runs[i][1]);
		snprintf(want, sizeof want, "%s is corrupt at offset ", path);
		if (runs[i][2] >= 0)
			snprintf(want, sizeof want, "%s is corrupt at offset %ld,", path, runs[i][2]);
		EL_CHECK(open_refused_saying(&opt, want));
		EL_CHECK_EQ(pt_file_size(path), (long)size); /* nothing cut */
		put_back(path, saved, size);
	}
	EL_CHECK_EQ(pt_open_load(dir, 1 << 20, &got), EL_OK);
	EL_CHECK_EQ(got.last, 200);
	free(zero_run(path, b200, b200 + 20)); /* the last batch torn */
	EL_CHECK_EQ(pt_open_load(dir, 1 << 20, &got), EL_OK);
	EL_CHECK_EQ(got.last, 199);
	pt_rmrf(dir);
}

/* A sealed segment is synced whole before the next one exists, and every
 * batch is numbered one more than the one before it. Zeros over its last
 * batch (a lost block, starting where that batch did) pass for the zeros
 * an earlier release left after a sealed segment's batches: the batch
 * numbers in the next segment tell the loss, and the start is refused
 * instead of starting without the entries (no later batch carries one
 * that would not continue the log). */
static void test_zeroed_tail_of_sealed_segment(void)
{
	const struct el_storage_options opt = { .segment_bytes = 512 };
	struct el_storage *st;
	struct pt_model got;
	char path[PATH_MAX], want[PATH_MAX + 64];
	uint64_t i = 1;

	fresh_dir("sealedzeros");
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	const struct el_hard_state hs = { 1, 0, 0 };
	EL_CHECK_EQ(put(st, 1, 1, 1, &hs), EL_OK);
	while (el_storage_segments(st) < 2 || el_storage_segment_bytes(st) < 512) {
		i++;
		EL_CHECK_EQ(put(st, i, i, 1, NULL), EL_OK); /* fills segment 2 */
	}
	for (uint64_t term = 2; term <= 4; term++) { /* segment 3: votes, no entry */
		const struct el_hard_state voted = { term, 2, 0 };
		EL_CHECK_EQ(put(st, i + 1, i, 1, &voted), EL_OK);
	}
	EL_CHECK_EQ(el_storage_segments(st), 3);
	el_storage_close(st);
	EL_CHECK_EQ(pt_open_load(dir, 512, &got), EL_OK);
	EL_CHECK(got.last == i && got.hs.term == 4);
	EL_CHECK_EQ(el_wal_segment_path(dir, 2, path, sizeof path), EL_OK);
	const size_t size = (size_t)pt_file_size(path);
	EL_CHECK_EQ(data_end(path), (long)size); /* sealed: only its batches */
	unsigned last = 1;
	while (batch_start(path, last + 1) > 0 && batch_start(path, last + 1) < (long)size)
		last++;
	const long from = batch_start(path, last); /* where its last batch begins */
	EL_CHECK(last > 1 && from > 0);
	uint8_t *saved = zero_run(path, from, (long)size);
	EL_CHECK_EQ(el_wal_segment_path(dir, 3, want, sizeof want), EL_OK);
	strncat(want, ": batch ", sizeof want - strlen(want) - 1);
	EL_CHECK(open_refused_saying(&opt, want));
	put_back(path, saved, size);
	EL_CHECK_EQ(pt_open_load(dir, 512, &got), EL_OK);
	EL_CHECK_EQ(got.last, i);
	pt_rmrf(dir);
}

/* A snapshot from a leader whose history differs from our stored suffix:
 * even when the batch after the snapshot never reaches the disk, the old
 * suffix must not come back next to the new snapshot. */
static void test_installed_snapshot_drops_conflicting_suffix(void)
{
	struct el_storage *st;
	struct pt_model got;
	struct el_snapshot_meta snap;
	static uint8_t data[512];
	struct el_hard_state hs = { 1, 1, 2 };

	fresh_dir("install");
	EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_OK);
	EL_CHECK_EQ(put(st, 1, 10, 1, &hs), EL_OK);
	pt_fill_snapshot(&snap, data, 6, 2);
	hs = (struct el_hard_state){ 2, 0, 6 };
	uint64_t term = 2;
	struct el_storage_batch b = { .snapshot = &snap, .snapshot_data = data, .hs = &hs,
				      .first = 7, .last = 9, .entry = fill_term_ctx, .ctx = &term };
	/* pwrite #1: the suffix drop; #2: the batch after the snapshot. */
	pt_fault_arm(PT_OP_PWRITE, 2, EIO);
	EL_CHECK_EQ(el_storage_persist(st, &b), EL_EIO);
	el_io_reset();
	EL_CHECK_EQ(el_storage_persist(st, &b), EL_EIO); /* sticky */
	el_storage_close(st);
	EL_CHECK_EQ(pt_open_load(dir, 0, &got), EL_OK);
	EL_CHECK(got.have_snap && got.snap_index == 6 && got.snap_term == 2);
	EL_CHECK_EQ(got.last, 6);
	EL_CHECK(got.hs.term == 2 && got.hs.vote == 0 && got.hs.commit == 6);

	EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_OK);
	EL_CHECK_EQ(el_storage_persist(st, &b), EL_OK);
	el_storage_close(st);
	EL_CHECK_EQ(pt_open_load(dir, 0, &got), EL_OK);
	EL_CHECK_EQ(got.last, 9);
	EL_CHECK_EQ(got.terms[0], 2);
	pt_rmrf(dir);
}

/* fn's answer, asked in a child whose alarm turns a call that never returns
 * into false here rather than a stuck suite. */
static bool in_child(bool (*fn)(void))
{
	fflush(stdout);
	fflush(stderr);
	const pid_t pid = fork();
	if (pid == 0) {
		alarm(20);
		_exit(fn() ? 0 : 1);
	}
	int status = 0;
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

static bool open_refused(void)
{
	struct el_storage *st = NULL;
	return el_storage_open(&st, dir, NULL) == EL_ECORRUPT;
}

static bool lock_not_held(void) { return el_dirlock_holder(dir) == -1; }

/* A FIFO where the snapshot or a segment belongs (a damaged or tampered
 * directory): the start is refused as corrupt, not left waiting for ever
 * in open(2) for a writer that never comes. A FIFO named LOCK holds no
 * pid: asking who holds the directory must not wait either. */
static void test_fifo_in_data_dir_is_refused(void)
{
	char path[PATH_MAX + 40];
	fresh_dir("fifo");
	snprintf(path, sizeof path, "%s/" EL_SNAPSHOT_FILE, dir);
	EL_CHECK(mkfifo(path, 0600) == 0);
	EL_CHECK(in_child(open_refused));
	EL_CHECK(unlink(path) == 0);
	EL_CHECK_EQ(el_wal_segment_path(dir, 1, path, sizeof path), EL_OK);
	EL_CHECK(mkfifo(path, 0600) == 0);
	EL_CHECK(in_child(open_refused));
	EL_CHECK(!el_storage_holds_nothing(dir));
	EL_CHECK(unlink(path) == 0);
	snprintf(path, sizeof path, "%s/LOCK", dir);
	EL_CHECK(unlink(path) == 0); /* the refused opens made it */
	EL_CHECK(mkfifo(path, 0600) == 0);
	EL_CHECK(in_child(lock_not_held));
	pt_rmrf(dir);
}

/* A snapshot with the entries 1..5 it covers, as the Raft core persists one. */
static int put_snapshot(struct el_storage *st, uint64_t index)
{
	static struct el_snapshot_meta meta;
	static uint8_t data[512];
	pt_fill_snapshot(&meta, data, index, 1);
	const struct el_storage_batch b = { .snapshot = &meta, .snapshot_data = data,
					    .first = index + 1, .last = index };
	return el_storage_persist(st, &b);
}

/* DIR/snapshot.tmp is where a snapshot is written before its rename; a
 * crash leaves a file there, which the open removes. A directory by that
 * name (never left by a crash: made by hand, or a restore gone wrong) made
 * every later snapshot fail (its create: EISDIR), and a failed snapshot
 * stops the node, over and over at each restart, hours after a start that
 * looked fine. An empty one is removed at the open; one with something in
 * it is not ours to delete: the open refuses, naming it. */
static void test_snapshot_tmp_directory(void)
{
	const struct el_hard_state hs = { 1, 0, 0 };
	struct el_storage *st;
	struct pt_model got;
	char tmp[PATH_MAX + 16], inner[PATH_MAX + 32];

	fresh_dir("snaptmp");
	snprintf(tmp, sizeof tmp, "%s/" EL_SNAPSHOT_TMP, dir);
	snprintf(inner, sizeof inner, "%s/keep", tmp);
	EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_OK);
	EL_CHECK_EQ(put(st, 1, 5, 1, &hs), EL_OK);
	el_storage_close(st);
	EL_CHECK(mkdir(tmp, 0700) == 0);
	EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_OK);
	EL_CHECK_EQ(pt_file_size(tmp), -1); /* removed at the open */
	EL_CHECK_EQ(put_snapshot(st, 5), EL_OK);
	EL_CHECK_EQ(put(st, 6, 7, 1, NULL), EL_OK);
	el_storage_close(st);
	EL_CHECK_EQ(pt_open_load(dir, 0, &got), EL_OK);
	EL_CHECK(got.have_snap && got.snap_index == 5 && got.last == 7);
	/* Not empty: kept as it is, and the start refused. */
	EL_CHECK(mkdir(tmp, 0700) == 0);
	int fd = open(inner, O_WRONLY | O_CREAT, 0600);
	EL_CHECK(fd >= 0);
	close(fd);
	const unsigned long errors = el_log_count(EL_LOG_ERROR);
	EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_ECORRUPT);
	EL_CHECK(el_log_count(EL_LOG_ERROR) > errors);
	EL_CHECK_EQ(pt_file_size(inner), 0);
	EL_CHECK(unlink(inner) == 0 && rmdir(tmp) == 0);
	EL_CHECK_EQ(pt_open_load(dir, 0, &got), EL_OK);
	EL_CHECK(got.have_snap && got.snap_index == 5 && got.last == 7);
	pt_rmrf(dir);
}

static void test_dir_lock(void)
{
	struct el_storage *a, *b;
	int status;
	pid_t pid;

	fresh_dir("lock");
	EL_CHECK_EQ(el_storage_open(&a, dir, NULL), EL_OK);
	unsigned long errors = el_log_count(EL_LOG_ERROR);
	EL_CHECK_EQ(el_storage_open(&b, dir, NULL), EL_ELOCKED);
	EL_CHECK(b == NULL);
	EL_CHECK_EQ(el_log_count(EL_LOG_ERROR), errors + 1);
	pid = fork();
	if (pid == 0) /* another process: refused as well */
		_exit(el_storage_open(&b, dir, NULL) == EL_ELOCKED ? 0 : 1);
	EL_CHECK(waitpid(pid, &status, 0) == pid);
	EL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* LOCK removed while a holds it (a "stale pidfile" cleaned up): the
	 * directory's own lock still refuses another open, here and in
	 * another process, and the holder is known, its pid not */
	char lock[PATH_MAX + 8];
	snprintf(lock, sizeof lock, "%s/LOCK", dir);
	EL_CHECK_EQ(unlink(lock), 0);
	EL_CHECK_EQ(el_dirlock_holder(dir), 0);
	EL_CHECK_EQ(el_storage_open(&b, dir, NULL), EL_ELOCKED);
	pid = fork();
	if (pid == 0)
		_exit(el_storage_open(&b, dir, NULL) == EL_ELOCKED ? 0 : 1);
	EL_CHECK(waitpid(pid, &status, 0) == pid);
	EL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EL_CHECK(access(lock, F_OK) != 0); /* refused without making a new LOCK */
	el_storage_close(a);
	EL_CHECK_EQ(el_dirlock_holder(dir), -1);
	/* a process of the previous release locks LOCK alone: still refused */
	const int old = open(lock, O_RDWR | O_CREAT, 0600);
	EL_CHECK(old >= 0 && flock(old, LOCK_EX | LOCK_NB) == 0);
	EL_CHECK_EQ(el_storage_open(&b, dir, NULL), EL_ELOCKED);
	close(old);
	EL_CHECK_EQ(el_storage_open(&b, dir, NULL), EL_OK);
	EL_CHECK_EQ(el_dirlock_holder(dir), (long)getpid());
	el_storage_close(b);
	pt_rmrf(dir);
}

static void test_platform_services(void)
{
	uint64_t a, b, t0 = el_now_ms();
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	nanosleep(&ts, NULL);
	uint64_t t1 = el_now_ms();
	EL_CHECK(t1 >= t0 + 19 && t1 < t0 + 5000);
	EL_CHECK_EQ(el_random_seed(&a), EL_OK);
	EL_CHECK_EQ(el_random_seed(&b), EL_OK);
	EL_CHECK(a != b);
	unsigned long infos = el_log_count(EL_LOG_INFO), debugs = el_log_count(EL_LOG_DEBUG);
	el_log(EL_LOG_INFO, "test line %d", 1);
	el_log(EL_LOG_DEBUG, "dropped below the level");
	EL_CHECK_EQ(el_log_count(EL_LOG_INFO), infos + 1);
	EL_CHECK_EQ(el_log_count(EL_LOG_DEBUG), debugs + 1);
}

/* What el_log writes of msg (as its one argument), into out (size bytes). */
static void log_line(const char *msg, char *out, size_t size)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/log-escape.txt", scratch);
	const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	const int saved = dup(2);
	EL_CHECK(fd >= 0 && saved >= 0);
	fflush(stderr);
	EL_CHECK_EQ(dup2(fd, 2), 2);
	el_log(EL_LOG_WARN, "%s", msg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	const ssize_t n = pread(fd, out, size - 1, 0);
	close(fd);
	unlink(path);
	EL_CHECK(n > 0); /* returns when not */
	out[n] = '\0';
}

static void log_escaped_utf8(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92" },
		{ "a\xc2\x85" "b", "a\\xc2\\x85b" },            /* NEL, a C1 newline */
		{ "a\xc2\x9b" "2J", "a\\xc2\\x9b2J" },          /* CSI, a C1 escape */
		{ "a\xe2\x80\xa8" "b", "a\\xe2\\x80\\xa8b" }, /* LINE SEPARATOR */
		{ "a\xe2\x80\xa9" "b", "a\\xe2\\x80\\xa9b" }, /* PARAGRAPH SEPARATOR */
		{ "a\xc0\x8a" "b", "a\\xc0\\x8ab" },            /* overlong newline */
		{ "a\xed\xa0\x80" "b", "a\\xed\\xa0\\x80b" }, /* a surrogate */
		{ "a\xff\xfe" "b", "a\\xff\\xfeb" },
		{ "a\xe2\x82", "a\\xe2\\x82" },                /* cut short at the end */
		{ "\xc2\xa0ok", "\xc2\xa0ok" },                  /* U+00A0 is printable */
		{ "a\\x0ab", "a\\x5cx0ab" },                     /* a backslash: no fake escape */
		{ "a\xe2\x80\xae" "b", "a\\xe2\\x80\\xaeb" },   /* RIGHT-TO-LEFT OVERRIDE */
		{ "a\xe2\x81\xa6" "b", "a\\xe2\\x81\\xa6b" },   /* LEFT-TO-RIGHT ISOLATE */
		{ "a\xef\xbb\xbf" "b", "a\\xef\\xbb\\xbfb" },   /* BYTE ORDER MARK */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char msg[64], out[512], want[256];
		snprintf(msg, sizeof msg, "name %s", cases[i].in);
		log_line(msg, out, sizeof out);
		snprintf(want, sizeof want, ": name %s\n", cases[i].want);
		if (strstr(out, want) == NULL)
			printf("case %zu: got [%s] want [%s]\n", i, out, want);
		EL_CHECK(strstr(out, want) != NULL);
	}
}

/* A message naming a client's string stays one line: newlines, ESC and DEL
 * come out as \xHH, so a name cannot forge a line ("\n<0>...") of its own;
 * so do C1 controls (NEL), U+2028/U+2029 and bytes that are not UTF-8,
 * while well-formed UTF-8 text stays as it is. */
static void test_log_escapes_control_bytes(void)
{
	char out[1024];
	log_line("refused x\n<0>edgelock node1: error: FORGED\x1b[2J\x7f\ty", out, sizeof out);
	EL_CHECK(strchr(out, '\n') == out + strlen(out) - 1); /* only the line's own end */
	EL_CHECK(strchr(out, 0x1b) == NULL && strchr(out, 0x7f) == NULL && strchr(out, '\t') == NULL);
	EL_CHECK(strstr(out, "refused x\\x0a<0>edgelock node1: error: FORGED\\x1b[2J\\x7f\\x09y\n") != NULL);
	log_escaped_utf8();
}

/* A name as a log field: in quotes, or as hex when a quote or a NUL in it
 * would end the quoted field early; cut to what out holds. */
static void test_log_name_field(void)
{
	char out[EL_LOG_NAME_CAP(8)];
	EL_CHECK_EQ(strcmp(el_log_name(out, sizeof out, "a/b", 3), "'a/b'"), 0);
	EL_CHECK_EQ(strcmp(el_log_name(out, sizeof out, "", 0), "''"), 0);
	EL_CHECK_EQ(strcmp(el_log_name(out, sizeof out, "a'b", 3), "hex:612762"), 0);
	EL_CHECK_EQ(strcmp(el_log_name(out, sizeof out, "a\0b", 3), "hex:610062"), 0);
	EL_CHECK_EQ(strcmp(el_log_name(out, sizeof out, "12345678'", 9), "hex:3132333435363738"), 0);
	char small[6];
	EL_CHECK_EQ(strcmp(el_log_name(small, sizeof small, "abcdef", 6), "'abc'"), 0);
	EL_CHECK_EQ(strcmp(el_log_name(small, 4, "abcdef", 6), ""), 0);
}

int main(int argc, char **argv)
{
	scratch = argc > 1 ? argv[1] : "/tmp";
	EL_RUN(test_crc32c_vectors);
	EL_RUN(test_record_round_trip);
	EL_RUN(test_record_rejects_damage);
	EL_RUN(test_valid_end_stops_at_incomplete_batch);
	EL_RUN(test_segment_names);
	EL_RUN(test_snapshot_file_round_trip_and_damage);
	EL_RUN(test_replace_file_steps);
	EL_RUN(test_storage_round_trip);
	EL_RUN(test_truncation_and_hard_state);
	EL_RUN(test_rotation_and_deletion_keep_hard_state);
	EL_RUN(test_snapshot_over_empty_newest_segment_keeps_hard_state);
	EL_RUN(test_snapshot_below_sealed_segment_keeps_it);
	EL_RUN(test_zero_length_record_at_buffer_end);
	EL_RUN(test_one_sync_per_batch);
	EL_RUN(test_zeros_ahead_are_not_a_torn_tail);
	EL_RUN(test_holds_nothing);
	EL_RUN(test_corrupt_sealed_segment_refuses_start);
	EL_RUN(test_snapshot_without_wal_refuses_start);
	EL_RUN(test_deleted_snapshot_is_named);
	EL_RUN(test_deleted_newest_segment_refuses_start);
	EL_RUN(test_newest_segment_file_behind_or_missing);
	EL_RUN(test_newest_segment_file_damaged);
	EL_RUN(test_corrupt_newest_segment_before_synced_batches);
	EL_RUN(test_zero_run_in_newest_segment);
	EL_RUN(test_zeroed_tail_of_sealed_segment);
	EL_RUN(test_installed_snapshot_drops_conflicting_suffix);
	EL_RUN(test_fifo_in_data_dir_is_refused);
	EL_RUN(test_snapshot_tmp_directory);
	EL_RUN(test_dir_lock);
	EL_RUN(test_platform_services);
	EL_RUN(test_log_escapes_control_bytes);
	EL_RUN(test_log_name_field);
	return el_test_end();
}
