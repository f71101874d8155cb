/*
 * test_posix_faults.c - storage faults through the el_io seam. ENOSPC and EIO
 * are injected into the Nth write, pwrite, fdatasync, fsync, open and rename
 * of a workload with hard-state changes, truncations, snapshots and segment
 * rotation. Each must: fail that persist with the matching code, log an
 * error, stay failed without touching the disk again (no fsync retry), and
 * leave a directory that recovers every acknowledged batch. Its one log line
 * says what to do about the cause (test_failure_messages). A data
 * directory already there still opens when its parent cannot be synced; one
 * the open made does not (test_parent_sync_failure).
 *
 * usage: test_posix_faults SCRATCH_DIR
 */
#include <errno.h>
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

#define SEGMENT_BYTES 2048
#define MAX_BATCHES 400

static const char *scratch;
static const struct pt_gen_opts opts = { .max_entries = 6, .snapshots = true, .truncations = true };

static unsigned total_calls(void)
{
	unsigned n = 0;
	for (int op = 0; op < PT_OP_COUNT; op++)
		n += pt_fault_calls((enum pt_op)op);
	return n;
}

/* Does the recovered state match the acknowledged one, or one of the
 * failed batch's crash stages (its conflicting suffix dropped, its
 * snapshot in place)? Never the failed WAL batch itself: it is cut off
 * again when it fails (wal.c), so that a restart cannot read it from the
 * page cache, where a failed fdatasync leaves it unwritten (fsyncgate). */
static bool acceptable(const struct pt_model *got, const struct pt_model *acked,
		       const struct pt_batch *failed)
{
	struct pt_model alt;
	if (pt_model_equal(got, acked))
		return true;
	for (int stage = 1; stage <= 2; stage++)
		if (pt_model_partial(acked, failed, stage, &alt) && pt_model_equal(got, &alt))
			return true;
	return false;
}

/* After recovery the node goes on: one more batch persists and reloads. */
static int resume(const char *dir, struct pt_model *m, uint64_t seed)
{
	const struct el_storage_options o = { .segment_bytes = SEGMENT_BYTES };
	struct el_storage *st;
	struct pt_batch b;
	struct pt_model got;
	int rc = el_storage_open(&st, dir, &o);
	if (rc != EL_OK)
		return rc;
	pt_gen_batch(m, seed, 100000, &opts, &b);
	rc = pt_persist(st, &b);
	el_storage_close(st);
	pt_model_apply(m, &b);
	if (rc == EL_OK)
		rc = pt_open_load(dir, SEGMENT_BYTES, &got);
	return rc == EL_OK && !pt_model_equal(&got, m) ? EL_ECORRUPT : rc;
}

/* One run: fault op's nth call (only that one when once) with err. Returns
 * false on any violation. */
static bool run_fault(enum pt_op op, unsigned nth, int err, bool once, uint64_t seed)
{
	const struct el_storage_options o = { .segment_bytes = SEGMENT_BYTES };
	const int want = err == ENOSPC ? EL_ENOSPC : EL_EIO;
	static struct pt_model acked, got;
	struct el_storage *st;
	struct pt_batch b;
	char dir[PATH_MAX];
	int rc = EL_OK;
	unsigned long errors = el_log_count(EL_LOG_ERROR);

	pt_tmpdir(scratch, "fault", dir, sizeof dir);
	pt_model_init(&acked);
	if (el_storage_open(&st, dir, &o) != EL_OK)
		return false;
	if (once)
		pt_fault_arm_once(op, nth, err);
	else
		pt_fault_arm(op, nth, err);
	for (uint64_t i = 0; i < MAX_BATCHES && rc == EL_OK; i++) {
		pt_gen_batch(&acked, seed, i, &opts, &b);
		rc = pt_persist(st, &b);
		if (rc == EL_OK)
			pt_model_apply(&acked, &b);
	}
	if (once && !pt_fault_fired() && rc == EL_OK) { /* fewer calls than nth in the run */
		el_storage_close(st);
		el_io_reset();
		pt_rmrf(dir);
		return true;
	}
	bool ok = pt_fault_fired() && rc == want && el_storage_failed(st) == want &&
		  el_log_count(EL_LOG_ERROR) > errors;
	/* Sticky: later batches fail the same way and never reach the disk. */
	unsigned calls = total_calls();
	struct pt_batch next;
	pt_gen_batch(&acked, seed, 5000, &opts, &next);
	ok = ok && pt_persist(st, &next) == want && pt_persist(st, &b) == want &&
	     total_calls() == calls;
	el_storage_close(st);
	el_io_reset();
	rc = pt_open_load(dir, SEGMENT_BYTES, &got);
	ok = ok && rc == EL_OK && acceptable(&got, &acked, &b);
	ok = ok && resume(dir, &got, seed) == EL_OK;
	if (!ok) {
		printf("  %s #%u%s %s: persist rc %d, reload rc %d\n", pt_op_names[op], nth,
		       once ? " (once)" : "", strerror(err), el_storage_failed(st) ? want : 0, rc);
		pt_model_print("acked", &acked);
		pt_model_print("got  ", &got);
	}
	pt_rmrf(dir);
	return ok;
}

static void sweep(enum pt_op op)
{
	static const unsigned nths[] = { 1, 2, 3, 5, 8, 13 };
	static const int errs[] = { ENOSPC, EIO };
	/* A dead disk (every later call fails too) and a transient fault (the
	 * next call would succeed: the persist that saw the failure must still
	 * fail, and so must every later one, without trying again). */
	for (unsigned e = 0; e < 2; e++)
		for (unsigned i = 0; i < sizeof nths / sizeof nths[0]; i++)
			EL_CHECK(run_fault(op, nths[i], errs[e], false, 1000 + nths[i]));
	/* Transient: every call up to the 40th in turn, so each kind of call
	 * (a segment's directory fsync, a snapshot's file and directory fsync)
	 * gets its failure that the next call would not repeat. */
	for (unsigned nth = 1; nth <= 40; nth++)
		EL_CHECK(run_fault(op, nth, EIO, true, 1000 + nth));
}

static void test_fault_pwrite(void) { sweep(PT_OP_PWRITE); }
static void test_fault_fdatasync(void) { sweep(PT_OP_FDATASYNC); }
static void test_fault_fsync(void) { sweep(PT_OP_FSYNC); }
static void test_fault_write(void) { sweep(PT_OP_WRITE); }
static void test_fault_open(void) { sweep(PT_OP_OPEN); }
static void test_fault_rename(void) { sweep(PT_OP_RENAME); }

/* A fault during recovery (cutting a torn tail) fails the open cleanly. */
static void test_fault_while_cutting_tail(void)
{
	const struct el_storage_options o = { .segment_bytes = SEGMENT_BYTES };
	struct el_storage *st;
	struct pt_model m, got;
	struct pt_batch b;
	char dir[PATH_MAX];

	pt_tmpdir(scratch, "fault-cut", dir, sizeof dir);
	pt_model_init(&m);
	EL_CHECK_EQ(el_storage_open(&st, dir, &o), EL_OK);
	for (uint64_t i = 0; i < 5; i++) {
		pt_gen_batch(&m, 3, i, &opts, &b);
		b.hs_changed = true;
		EL_CHECK_EQ(pt_persist(st, &b), EL_OK);
		pt_model_apply(&m, &b);
	}
	/* Half a batch on disk, as a crash in its write leaves it (a failed
	 * write is cut off again by the storage itself). */
	const long end = (long)el_storage_segment_bytes(st);
	el_storage_close(st);
	char seg[PATH_MAX + 32] = "";
	for (uint64_t seq = 1; seq < 64; seq++) {
		char path[PATH_MAX + 32];
		if (el_wal_segment_path(dir, seq, path, sizeof path) == EL_OK && pt_file_size(path) >= 0)
			snprintf(seg, sizeof seg, "%s", path);
	}
	static const uint8_t half[40] = { 30, 0, 0, 0, 0xab, 0xab, 0xab, 0xab, 1 };
	const int fd = open(seg, O_WRONLY);
	EL_CHECK(fd >= 0 && pwrite(fd, half, sizeof half, end) == (ssize_t)sizeof half);
	if (fd >= 0)
		close(fd);
	pt_fault_arm(PT_OP_FTRUNCATE, 1, EIO);
	EL_CHECK_EQ(pt_open_load(dir, SEGMENT_BYTES, &got), EL_EIO);
	el_io_reset();
	EL_CHECK_EQ(pt_open_load(dir, SEGMENT_BYTES, &got), EL_OK);
	EL_CHECK(pt_model_equal(&got, &m));
	pt_rmrf(dir);
}

/* Deleting covered segments may fail (EIO, EROFS ...): that is harmless,
 * recovery ignores covered entries, so the node keeps acknowledging. */
/* Writes that return fewer bytes without an error: every batch must still
 * persist whole and reload. */
static void test_short_writes_are_continued(void)
{
	const struct el_storage_options o = { .segment_bytes = SEGMENT_BYTES };
	static struct pt_model m, got;
	struct el_storage *st;
	struct pt_batch b;
	char dir[PATH_MAX];
	pt_tmpdir(scratch, "short", dir, sizeof dir);
	pt_model_init(&m);
	EL_CHECK_EQ(el_storage_open(&st, dir, &o), EL_OK);
	pt_fault_short_writes();
	for (uint64_t i = 0; i < 120; i++) {
		pt_gen_batch(&m, 4242, i, &opts, &b);
		EL_CHECK_EQ(pt_persist(st, &b), EL_OK);
		pt_model_apply(&m, &b);
	}
	EL_CHECK(pt_fault_calls(PT_OP_PWRITE) > 120); /* the writes were cut */
	el_storage_close(st);
	el_io_reset();
	EL_CHECK_EQ(pt_open_load(dir, SEGMENT_BYTES, &got), EL_OK);
	EL_CHECK(pt_model_equal(&got, &m));
	pt_rmrf(dir);
}

/* The parent of a data directory that is already there may not sync (a
 * squashfs root above a mounted data partition: EINVAL; read-only: EROFS;
 * anything else is warned about): the open goes on, as it did before it
 * synced that parent. A directory the open made itself must be synced into
 * its parent, so there the failure fails the open. */
static void test_parent_sync_failure(void)
{
	static const int errs[] = { EINVAL, EROFS, EIO };
	struct el_storage *st = NULL;
	char dir[PATH_MAX], made[PATH_MAX + 8];

	pt_tmpdir(scratch, "fault-parent", dir, sizeof dir);
	for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
		pt_fault_arm_once(PT_OP_FSYNC, 1, errs[i]);
		EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_OK);
		EL_CHECK(pt_fault_fired());
		el_storage_close(st);
	}
	snprintf(made, sizeof made, "%s/new", dir);
	pt_fault_arm_once(PT_OP_FSYNC, 1, EIO);
	EL_CHECK_EQ(el_storage_open(&st, made, NULL), EL_EIO);
	EL_CHECK(pt_fault_fired() && st == NULL);
	el_io_reset();
	pt_rmrf(dir);
}

static void test_unlink_failure_is_not_fatal(void)
{
	const struct el_storage_options o = { .segment_bytes = 512 };
	struct el_storage *st;
	struct pt_model m, got;
	struct pt_batch b;
	char dir[PATH_MAX];
	unsigned segs = 0;

	pt_tmpdir(scratch, "fault-unlink", dir, sizeof dir);
	pt_model_init(&m);
	EL_CHECK_EQ(el_storage_open(&st, dir, &o), EL_OK);
	pt_fault_arm(PT_OP_UNLINK, 1, EIO);
	for (uint64_t i = 0; i < 300; i++) {
		pt_gen_batch(&m, 11, i, &opts, &b);
		EL_CHECK_EQ(pt_persist(st, &b), EL_OK);
		pt_model_apply(&m, &b);
	}
	EL_CHECK(pt_fault_fired());
	EL_CHECK_EQ(el_storage_failed(st), 0);
	segs = el_storage_segments(st);
	el_storage_close(st);
	el_io_reset();
	EL_CHECK_EQ(pt_open_load(dir, 512, &got), EL_OK);
	EL_CHECK(pt_model_equal(&got, &m));
	/* With unlink working again, the next snapshot deletes the backlog. */
	EL_CHECK_EQ(el_storage_open(&st, dir, &o), EL_OK);
	for (uint64_t i = 300; i < 600 && el_storage_segments(st) >= segs; i++) {
		pt_gen_batch(&m, 11, i, &opts, &b);
		EL_CHECK_EQ(pt_persist(st, &b), EL_OK);
		pt_model_apply(&m, &b);
	}
	EL_CHECK(el_storage_segments(st) < segs);
	el_storage_close(st);
	EL_CHECK_EQ(pt_open_load(dir, 512, &got), EL_OK);
	EL_CHECK(pt_model_equal(&got, &m));
	pt_rmrf(dir);
}

/* The failure's line says what to do about its cause: free space first on a
 * full disk, the open-files limit (not the disk) at EMFILE, a restart for an
 * I/O error; a one-shot tool (opt.offline, edgelockd restore) gets no
 * advice to restart a node. The log goes to stderr: caught in a file. */
static bool failure_says(enum pt_op op, int err, bool offline, const char *want,
			 const char *not_want)
{
	const struct el_storage_options o = { .segment_bytes = SEGMENT_BYTES, .offline = offline };
	struct el_storage *st;
	struct pt_model m;
	struct pt_batch b;
	char dir[PATH_MAX], path[PATH_MAX + 8], line[2048] = "";
	pt_tmpdir(scratch, "say", dir, sizeof dir);
	snprintf(path, sizeof path, "%s.log", dir);
	pt_model_init(&m);
	if (el_storage_open(&st, dir, &o) != EL_OK)
		return false;
	fflush(stderr);
	const int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 2);
	el_log_set_level(EL_LOG_ERROR);
	pt_fault_arm(op, 1, err);
	for (uint64_t i = 0; i < MAX_BATCHES && el_storage_failed(st) == 0; i++) {
		pt_gen_batch(&m, 77, i, &opts, &b);
		if (pt_persist(st, &b) == EL_OK)
			pt_model_apply(&m, &b);
	}
	el_log_set_level(EL_LOG_OFF);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(fd);
	el_storage_close(st);
	el_io_reset();
	FILE *f = fopen(path, "r");
	const bool read = f != NULL && fgets(line, sizeof line, f) != NULL;
	if (f != NULL)
		fclose(f);
	const bool ok = read && strstr(line, want) != NULL &&
			(not_want == NULL || strstr(line, not_want) == NULL);
	if (!ok)
		printf("  %s %s%s: want \"%s\"%s%s, got: %s\n", pt_op_names[op], strerror(err),
		       offline ? " (offline)" : "", want, not_want ? ", not " : "",
		       not_want ? not_want : "", line);
	unlink(path);
	pt_rmrf(dir);
	return ok;
}

static void test_failure_messages(void)
{
	EL_CHECK(failure_says(PT_OP_PWRITE, ENOSPC, false, "free space on its file system FIRST, "
			      "then restart the node", NULL));
	EL_CHECK(failure_says(PT_OP_OPEN, EMFILE, false, "open-files limit (RLIMIT_NOFILE, "
			      "LimitNOFILE= under systemd), not the disk", "disk full"));
	EL_CHECK(failure_says(PT_OP_OPEN, ENFILE, false, "out of file descriptors", NULL));
	EL_CHECK(failure_says(PT_OP_FDATASYNC, EIO, false, "restart the node to recover from disk",
			      NULL));
	EL_CHECK(failure_says(PT_OP_PWRITE, ENOSPC, true, "disk full", "restart"));
	/* a read-only remount: a plain restart fails too, so the repair first */
	EL_CHECK(failure_says(PT_OP_PWRITE, EROFS, false, "remount it read-write FIRST",
			      "recover from disk"));
}

int main(int argc, char **argv)
{
	scratch = argc > 1 ? argv[1] : "/tmp";
	el_log_set_level(EL_LOG_OFF); /* hundreds of expected error lines */
	/* Faults, not power cuts, are tested here (test_posix_power.c does those):
	 * the syncs that succeed need not reach the disk, which keeps it fast. */
	pt_io_nosync();
	EL_RUN(test_fault_pwrite);
	EL_RUN(test_fault_fdatasync);
	EL_RUN(test_fault_fsync);
	EL_RUN(test_fault_write);
	EL_RUN(test_fault_open);
	EL_RUN(test_fault_rename);
	EL_RUN(test_fault_while_cutting_tail);
	EL_RUN(test_parent_sync_failure);
	EL_RUN(test_unlink_failure_is_not_fatal);
	EL_RUN(test_short_writes_are_continued);
	EL_RUN(test_failure_messages);
	return el_test_end();
}
