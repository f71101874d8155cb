/*
 * test_posix_power.c - power cuts at every point of whole storage runs.
 *
 * The port runs on the power-cut model of port_test_power.c, which keeps
 * what a disk would still hold after losing power (synced bytes, synced
 * directory entries). Before every call that changes the disk, the test
 * builds that image, twice (unsynced bytes dropped; and a torn sector of an
 * unsynced append kept), recovers each with the real port, and requires the
 * state after the last acknowledged batch, or one that batch in flight may
 * leave (its conflicting suffix dropped, its snapshot in place, or all of
 * it). Votes are in that state, so a forgotten vote fails too. No image
 * may be refused: every call of a segment roll (the seal, the new file,
 * wal-newest's write, sync, rename) is a cut point. A third image has its
 * newest segment deleted: its open must be refused (wal-newest names the
 * segment) unless what is left holds every acknowledged batch
 * (check_deleted_newest).
 *
 * The runs cover the first start (the data directory created and synced
 * into its parent; or made before, unsynced, and synced by the open),
 * batches with snapshots, truncations, segment rotation and deletion, and
 * a restart from a crash image with a torn tail: recovery cuts it, then new
 * batches are appended in the same open; and a restart after a node was
 * killed between a batch's write and its fdatasync, whose open must make
 * that batch durable before the node acts on it; and a restart after a
 * batch's fdatasync failed (EIO), whose batch must not come back from the
 * page cache (the model marks its pages clean, unwritten). All along, the
 * durability rules must hold: no rename of a file with unsynced data, and nothing
 * unsynced when an open or a persist returns.
 *
 * usage: test_posix_power SCRATCH_DIR
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "el_error.h"
#include "el_io.h"
#include "el_platform.h"
#include "el_test.h"
#include "el_wal.h"
#include "port_test_util.h"

EL_TEST_MAIN_DEFINITIONS

#define BATCHES 60
#define SEEDS 20
#define DELETION_SEEDS 5 /* check_deleted_newest in the first runs from scratch (time),
			   * and in every run after them */
#define SEGMENT_BYTES 700 /* small: rotation and deletion in every run */

struct run {
	struct pt_model *models; /* models[k]: state after k batches */
	struct pt_batch *batches; /* batches[k]: the k-th batch (1-based) */
	int n;                   /* batches generated so far */
	int acked;               /* batches whose persist returned EL_OK */
	char img[PATH_MAX];      /* where images are built */
	uint64_t rng;
	unsigned checked, torn, failures;
	bool deletions;   /* check_deleted_newest at each cut */
	unsigned deleted, refused; /* images with the newest segment deleted; their opens refused */
	char saved_torn[PATH_MAX]; /* a torn image kept for the restart run */
	bool want_saved;
};

static const char *scratch;
static unsigned total_checked;

/* Is got a state a cut now may leave? */
static bool acceptable(const struct run *r, const struct pt_model *got)
{
	if (pt_model_equal(got, &r->models[r->acked]))
		return true;
	if (r->acked + 1 > r->n)
		return false;
	if (pt_model_equal(got, &r->models[r->acked + 1]))
		return true;
	struct pt_model part;
	for (int stage = 1; stage <= 2; stage++)
		if (pt_model_partial(&r->models[r->acked], &r->batches[r->acked + 1], stage, &part) &&
		    pt_model_equal(got, &part))
			return true;
	return false;
}

static void keep_for_restart(struct run *r)
{
	char cmd[PATH_MAX * 3 + 32];
	r->want_saved = false;
	snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", r->saved_torn, r->img,
		 r->saved_torn);
	if (system(cmd) != 0)
		r->failures++;
}

static void check_image(struct run *r, bool torn)
{
	const int torn_files = pt_power_image(r->img, torn, &r->rng);
	if (torn && torn_files <= 0)
		return; /* nothing unsynced to tear: the clean image covers it */
	/* Keep one torn image, as it is before recovery cuts it, for the
	 * restart run: one whose recovery cuts a tail (warns), as a torn
	 * sector that ends on a whole batch leaves nothing to cut. */
	const bool keep = torn && r->want_saved && r->acked > 2;
	const unsigned long warns = el_log_count(EL_LOG_WARN);
	if (keep)
		keep_for_restart(r);
	struct pt_model got;
	const int rc = pt_open_load(r->img, SEGMENT_BYTES, &got);
	if (keep && el_log_count(EL_LOG_WARN) == warns)
		r->want_saved = true; /* the next one */
	r->checked++;
	r->torn += torn;
	if (rc != EL_OK || !acceptable(r, &got)) {
		if (r->failures++ < 3) {
			printf("  cut %u (%s, %d batches acknowledged): recovery rc %d\n", pt_power_cuts(),
			       torn ? "torn" : "clean", r->acked, rc);
			pt_model_print("want", &r->models[r->acked]);
			if (r->acked < r->n)
				pt_model_print("or  ", &r->models[r->acked + 1]);
			pt_model_print("got ", &got);
			if (getenv("PT_KEEP") != NULL) { /* debugging: keep the image */
				char cmd[PATH_MAX + 64];
				snprintf(cmd, sizeof cmd, "rm -rf /tmp/pw-fail && cp -r '%s' /tmp/pw-fail", r->img);
				if (system(cmd) != 0)
					printf("  cannot keep the image\n");
			}
		}
		return;
	}
}

/* The newest segment in dir, in path; false when there is none. */
static bool newest_segment(const char *dir, char *path, size_t cap)
{
	uint64_t newest = 0, seq;
	DIR *d = opendir(dir);
	for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
		if (el_wal_segment_name(e->d_name, &seq) && seq > newest)
			newest = seq;
	if (d != NULL)
		closedir(d);
	return newest > 0 && el_wal_segment_path(dir, newest, path, cap) == EL_OK;
}

/* The power goes now, and then someone deletes the newest segment (an
 * operator freeing space, a bad restore script): the start must be
 * refused (wal-newest names the segment), unless what is left still holds
 * every acknowledged batch (the segment held none: new, or only the batch
 * in flight), when starting is fine too. Never a start on less. */
static void check_deleted_newest(struct run *r)
{
	char path[PATH_MAX + 40];
	struct pt_model got;
	if (pt_power_image(r->img, false, &r->rng) < 0 || !newest_segment(r->img, path, sizeof path))
		return;
	EL_CHECK(unlink(path) == 0);
	const int rc = pt_open_load(r->img, SEGMENT_BYTES, &got);
	r->deleted++;
	r->refused += rc == EL_ECORRUPT;
	if (rc == EL_ECORRUPT || (rc == EL_OK && acceptable(r, &got)))
		return;
	if (r->failures++ < 3) {
		printf("  cut %u (%d batches acknowledged): %s deleted, yet the open returned %d\n",
		       pt_power_cuts(), r->acked, path, rc);
		pt_model_print("want", &r->models[r->acked]);
		pt_model_print("got ", &got);
	}
}

static void on_cut(void *ctx)
{
	struct run *r = ctx;
	check_image(r, false);
	check_image(r, true);
	if (r->deletions)
		check_deleted_newest(r);
}

static void run_init(struct run *r, const char *tag)
{
	memset(r, 0, sizeof *r);
	r->models = calloc(BATCHES + 1, sizeof *r->models);
	r->batches = calloc(BATCHES + 1, sizeof *r->batches);
	pt_tmpdir(scratch, tag, r->img, sizeof r->img);
	r->rng = 12345;
	r->deletions = true;
	pt_model_init(&r->models[0]);
}

static void run_free(struct run *r)
{
	pt_rmrf(r->img);
	free(r->models);
	free(r->batches);
}

/* Persist BATCHES batches from r->models[0] into an open storage. */
static void run_batches(struct run *r, struct el_storage *st, uint64_t seed)
{
	const struct pt_gen_opts o = { .max_entries = 5, .snapshots = true, .truncations = true };
	for (int k = 1; k <= BATCHES; k++) {
		/* The batch's outcome is known before it is persisted, so a cut
		 * inside the persist can be judged against it. */
		r->models[k] = r->models[k - 1];
		pt_gen_batch(&r->models[k], seed, (uint64_t)k, &o, &r->batches[k]);
		pt_model_apply(&r->models[k], &r->batches[k]);
		r->n = k;
		const int rc = pt_persist(st, &r->batches[k]);
		EL_CHECK_EQ(rc, EL_OK);
		if (rc != EL_OK)
			return;
		r->acked = k;
		pt_power_check_synced("persist");
	}
}

/* Say what the run saw, and check it: no durability rule broken, every
 * image recovered to an acceptable state, at least least images. */
static void finish(const char *what, struct run *r, unsigned least)
{
	const char *v;
	const unsigned nv = pt_power_violations(&v);
	char deleted[96] = "";
	if (r->deletions)
		snprintf(deleted, sizeof deleted, ", %u with the newest segment then deleted "
			 "(%u refused)", r->deleted, r->refused);
	printf("  %s: %u cut points, %u images recovered (%u with a torn sector)%s, %u wrong, "
	       "%u rule violations%s%s\n", what, pt_power_cuts(), r->checked, r->torn, deleted,
	       r->failures, nv, nv ? ", first: " : "", nv ? v : "");
	/* Unhooked before the checks: a failed EL_CHECK returns, and a hook
	 * left behind ran this run's on_cut, its r freed, at the next test's
	 * open (a use after free under mutants 02 and 18). */
	pt_power_end();
	EL_CHECK(nv == 0);
	EL_CHECK(r->failures == 0);
	EL_CHECK(r->checked > least);
	EL_CHECK(r->refused > 0 || !r->deletions);
	total_checked += r->checked;
}

/* First start, then batches; keeps one torn image for the restart run.
 * made: the data directory is made first, never synced into its parent (a
 * start that died right after its mkdir, or a directory made by hand or by
 * systemd), which the open must sync as it would one it made. */
static void power_run_from_scratch(uint64_t seed, const char *saved, bool made)
{
	struct run r;
	char parent[PATH_MAX], dir[PATH_MAX + 8];
	struct el_storage *st = NULL;
	run_init(&r, "power-img");
	r.deletions = seed <= DELETION_SEEDS;
	snprintf(r.saved_torn, sizeof r.saved_torn, "%s", saved);
	r.want_saved = saved[0] != '\0';
	pt_tmpdir(scratch, "power", parent, sizeof parent);
	snprintf(dir, sizeof dir, "%s/data", parent);
	pt_power_begin(parent, dir, on_cut, &r);
	EL_CHECK(!made || mkdir(dir, 0700) == 0); /* beside the model: not synced */
	const struct el_storage_options opt = { .segment_bytes = SEGMENT_BYTES };
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	pt_power_check_synced("open");
	if (st != NULL) {
		run_batches(&r, st, seed);
		el_storage_close(st);
	}
	finish(made ? "from scratch, in a directory made before" : "from scratch", &r, 100);
	struct pt_model got;
	EL_CHECK_EQ(pt_open_load(dir, SEGMENT_BYTES, &got), EL_OK);
	EL_CHECK(pt_model_equal(&got, &r.models[r.acked]));
	pt_rmrf(parent);
	run_free(&r);
}

static void test_power_cut_from_first_start(void)
{
	char saved[PATH_MAX];
	snprintf(saved, sizeof saved, "%s/power-saved-torn", scratch);
	for (uint64_t seed = 1; seed <= SEEDS; seed++)
		power_run_from_scratch(seed, seed == 1 ? saved : "", false);
	power_run_from_scratch(SEEDS + 1, "", true);
}

/* Bytes in the log segments of dir. */
static long dir_bytes(const char *dir)
{
	long total = 0;
	for (uint64_t seq = 1; seq < 64; seq++) {
		char path[PATH_MAX + 40];
		el_wal_segment_path(dir, seq, path, sizeof path);
		const long n = pt_file_size(path);
		total += n > 0 ? n : 0;
	}
	return total;
}

/* Restart from a crash image whose newest segment has a torn tail: the
 * recovery cuts it (durably) and the batches that follow are appended in
 * the same open; a cut anywhere must find them all. */
static void test_power_cut_after_torn_tail_restart(void)
{
	struct run r;
	char parent[PATH_MAX], dir[PATH_MAX + 8], saved[PATH_MAX], cmd[PATH_MAX * 3 + 32];
	struct el_storage *st = NULL;
	snprintf(saved, sizeof saved, "%s/power-saved-torn", scratch);
	struct stat sb;
	EL_CHECK(stat(saved, &sb) == 0);
	run_init(&r, "power-img2");
	pt_tmpdir(scratch, "power2", parent, sizeof parent);
	snprintf(dir, sizeof dir, "%s/data", parent);
	snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", saved, dir);
	EL_CHECK(system(cmd) == 0);
	/* What the restart must recover: the image's state, loaded on a copy. */
	char probe[PATH_MAX + 8];
	snprintf(probe, sizeof probe, "%s/probe", parent);
	snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", saved, probe);
	EL_CHECK(system(cmd) == 0);
	EL_CHECK_EQ(pt_open_load(probe, SEGMENT_BYTES, &r.models[0]), EL_OK);
	pt_rmrf(probe);
	const long before = dir_bytes(dir);
	pt_power_begin(parent, dir, on_cut, &r);
	const struct el_storage_options opt = { .segment_bytes = SEGMENT_BYTES };
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	pt_power_check_synced("open");
	EL_CHECK(dir_bytes(dir) < before); /* the open did cut a torn tail */
	if (st != NULL) {
		struct pt_model loaded;
		EL_CHECK_EQ(pt_load(st, &loaded), EL_OK);
		EL_CHECK(pt_model_equal(&loaded, &r.models[0]));
		run_batches(&r, st, 77);
		el_storage_close(st);
	}
	finish("after a torn-tail restart", &r, 0);
	struct pt_model got;
	EL_CHECK_EQ(pt_open_load(dir, SEGMENT_BYTES, &got), EL_OK);
	EL_CHECK(pt_model_equal(&got, &r.models[r.acked]));
	pt_rmrf(parent);
	pt_rmrf(saved);
	run_free(&r);
}

/* A joiner's first batch: the leader's snapshot, no WAL before it (a
 * restore's seed is the same batch). A cut anywhere in it must recover to
 * the empty state or to the snapshot: never to a snapshot without a WAL
 * batch beside it, which recovery refuses as deleted segments. leftover:
 * over what a first write that failed leaves (a full disk: a first segment
 * of zeros written ahead, no batch), which the daemon takes as empty; the
 * batch of the hard state must still come before the snapshot there. */
static void first_batch_a_snapshot(const char *what, bool leftover)
{
	struct run r;
	char parent[PATH_MAX], dir[PATH_MAX + 8];
	struct el_storage *st = NULL;
	run_init(&r, "power-img3");
	pt_tmpdir(scratch, "power3", parent, sizeof parent);
	snprintf(dir, sizeof dir, "%s/data", parent);
	if (leftover) { /* already there: durable */
		static const uint8_t zeros[4096];
		char seg[PATH_MAX];
		EL_CHECK(mkdir(dir, 0700) == 0);
		EL_CHECK_EQ(el_wal_segment_path(dir, 1, seg, sizeof seg), EL_OK);
		FILE *f = fopen(seg, "wb");
		EL_CHECK(f != NULL); /* returns when not */
		const size_t wrote = fwrite(zeros, 1, sizeof zeros, f);
		fclose(f);
		EL_CHECK(wrote == sizeof zeros);
		EL_CHECK(el_storage_holds_nothing(dir));
	}
	pt_power_begin(parent, dir, on_cut, &r);
	const struct el_storage_options opt = { .segment_bytes = SEGMENT_BYTES };
	EL_CHECK_EQ(el_storage_open(&st, dir, &opt), EL_OK);
	if (st != NULL) {
		struct pt_batch *b = &r.batches[1];
		pt_fill_snapshot(&b->snap, b->snap_data, 50, 3);
		b->has_snap = true;
		b->hs_changed = true;
		b->hs = (struct el_hard_state){ .term = 3, .vote = 0, .commit = 50 };
		b->first = 51;
		b->last = 50;
		r.models[1] = r.models[0];
		pt_model_apply(&r.models[1], b);
		r.n = 1;
		EL_CHECK_EQ(pt_persist(st, b), EL_OK);
		r.acked = 1;
		pt_power_check_synced("persist");
		el_storage_close(st);
	}
	finish(what, &r, 4);
	EL_CHECK(!el_storage_holds_nothing(dir));
	pt_rmrf(parent);
	run_free(&r);
}

static void test_power_cut_first_batch_a_snapshot(void)
{
	first_batch_a_snapshot("first batch a snapshot", false);
	first_batch_a_snapshot("first batch a snapshot, over a failed first write", true);
}

/* An fdatasync that never reaches the disk: the process was killed between
 * a batch's write and its fdatasync (SIGKILL keeps the page cache). */
static int killed_before_sync(int fd)
{
	(void)fd;
	return 0;
}

/* A first batch (term 1, entries 1..3) synced, then a node killed after
 * writing its second (a vote for 3 in term 2, entries 4..5) but before its
 * fdatasync. True when both persists went as planned. */
static bool killed_in_second_batch(const char *dir)
{
	struct el_storage *st = NULL;
	struct pt_batch b = { .hs_changed = true, .hs = { 1, 1, 0 }, .first = 1, .last = 3,
			      .term = 1 };
	if (el_storage_open(&st, dir, NULL) != EL_OK)
		return false;
	bool ok = pt_persist(st, &b) == EL_OK;
	int (*const model_sync)(int) = el_io.fdatasync;
	el_io.fdatasync = killed_before_sync;
	b = (struct pt_batch){ .hs_changed = true, .hs = { 2, 3, 0 }, .first = 4, .last = 5,
			       .term = 2 };
	ok = ok && pt_persist(st, &b) == EL_OK;
	el_io.fdatasync = model_sync;
	el_storage_close(st);
	return ok;
}

/* Restart after a node was killed between a batch's write and its
 * fdatasync: recovery reads that batch from the page cache, which the disk
 * may not hold, and the node acts on it at once (a vote it says it cast,
 * entries it tells the leader it stores). So the open must make what it
 * recovered durable before it returns: a power cut right after it must
 * leave the state it loaded. */
static void test_power_cut_after_killed_batch(void)
{
	char parent[PATH_MAX], dir[PATH_MAX + 8], img[PATH_MAX];
	struct el_storage *st = NULL;
	struct pt_model loaded, got;
	uint64_t rng = 1;
	const char *v;
	pt_tmpdir(scratch, "power5", parent, sizeof parent);
	pt_tmpdir(scratch, "power-img5", img, sizeof img);
	snprintf(dir, sizeof dir, "%s/data", parent);
	pt_power_begin(parent, dir, NULL, NULL);
	const bool killed = killed_in_second_batch(dir);
	pt_model_init(&loaded);
	int rc = el_storage_open(&st, dir, NULL); /* the restart */
	pt_power_check_synced("open");
	if (rc == EL_OK) {
		rc = pt_load(st, &loaded);
		el_storage_close(st);
	}
	const unsigned nv = pt_power_violations(&v);
	const int imaged = pt_power_image(img, false, &rng); /* the power goes now */
	pt_power_end();
	const int img_rc = pt_open_load(img, 0, &got);
	pt_rmrf(parent);
	pt_rmrf(img);
	printf("  after a killed batch: %u rule violations%s%s\n", nv, nv ? ", first: " : "",
	       nv ? v : "");
	EL_CHECK(killed && rc == EL_OK);
	EL_CHECK(loaded.hs.term == 2 && loaded.hs.vote == 3 && loaded.last == 5);
	EL_CHECK_EQ(nv, 0);
	EL_CHECK(imaged >= 0 && img_rc == EL_OK);
	if (!pt_model_equal(&got, &loaded)) {
		pt_model_print("loaded   ", &loaded);
		pt_model_print("power cut", &got);
	}
	EL_CHECK(pt_model_equal(&got, &loaded));
}

/* The power goes now: the state recovered from the image a cut leaves. */
static bool power_cut_state(const char *img, struct pt_model *got)
{
	uint64_t rng = 1;
	pt_model_init(got);
	return pt_power_image(img, false, &rng) >= 0 && pt_open_load(img, 0, got) == EL_OK;
}

/* Restart after a batch's fdatasync failed (EIO): Linux marked its pages
 * clean without writing them, so they stay readable in the page cache,
 * and the restart's own fdatasync on a new descriptor reports nothing
 * (fsyncgate). The failed batch (a vote for 3 in term 2, entries 4..103
 * over several pages) must not be recovered, or the node would act on it
 * (the vote, entries acknowledged to the leader) and a later power cut
 * lose it: a power cut right after the restart, and again after the
 * restart voted for 2 in that term, must leave what the node had loaded
 * and acknowledged since. */
static void test_power_cut_after_failed_sync(void)
{
	char parent[PATH_MAX], dir[PATH_MAX + 8], img[PATH_MAX];
	struct el_storage *st = NULL;
	struct pt_model loaded, after_cut, voted, after_vote;
	pt_tmpdir(scratch, "power6", parent, sizeof parent);
	pt_tmpdir(scratch, "power-img6", img, sizeof img);
	snprintf(dir, sizeof dir, "%s/data", parent);
	pt_power_begin(parent, dir, NULL, NULL);
	struct pt_batch b = { .hs_changed = true, .hs = { 1, 1, 0 }, .first = 1, .last = 3,
			      .term = 1 };
	EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_OK);
	EL_CHECK_EQ(pt_persist(st, &b), EL_OK);
	pt_power_fail_sync(1, EIO);
	b = (struct pt_batch){ .hs_changed = true, .hs = { 2, 3, 0 }, .first = 4, .last = 103,
			       .term = 2 };
	EL_CHECK_EQ(pt_persist(st, &b), EL_EIO);
	el_storage_close(st);
	pt_model_init(&loaded);
	EL_CHECK_EQ(el_storage_open(&st, dir, NULL), EL_OK); /* the restart */
	EL_CHECK_EQ(pt_load(st, &loaded), EL_OK);
	printf("  after a failed fdatasync the restart loaded term %llu, vote %u, log to %llu\n",
	       (unsigned long long)loaded.hs.term, (unsigned)loaded.hs.vote,
	       (unsigned long long)loaded.last);
	EL_CHECK(power_cut_state(img, &after_cut));
	printf("  a power cut then leaves term %llu, vote %u, log to %llu\n",
	       (unsigned long long)after_cut.hs.term, (unsigned)after_cut.hs.vote,
	       (unsigned long long)after_cut.last);
	EL_CHECK(pt_model_equal(&after_cut, &loaded));
	EL_CHECK(loaded.hs.term == 1 && loaded.hs.vote == 1 && loaded.last == 3);
	b = (struct pt_batch){ .hs_changed = true, .hs = { 2, 2, 0 }, .first = 4, .last = 3 };
	EL_CHECK_EQ(pt_persist(st, &b), EL_OK);
	voted = loaded;
	voted.hs = b.hs;
	el_storage_close(st);
	EL_CHECK(power_cut_state(img, &after_vote));
	if (!pt_model_equal(&after_cut, &loaded) || !pt_model_equal(&after_vote, &voted)) {
		pt_model_print("loaded         ", &loaded);
		pt_model_print("power cut      ", &after_cut);
		pt_model_print("voted          ", &voted);
		pt_model_print("power cut after", &after_vote);
	}
	EL_CHECK(pt_model_equal(&after_vote, &voted));
	pt_power_end();
	pt_rmrf(parent);
	pt_rmrf(img);
}

/* Each test, then its power model unhooked: a failed EL_CHECK returns
 * from the test before its own pt_power_end, and a hook left behind would
 * run that test's callback, on its freed or gone run, at the next open. */
#define RUN_UNHOOKED(fn) \
	do { \
		EL_RUN(fn); \
		pt_power_end(); \
	} while (0)

int main(int argc, char **argv)
{
	scratch = argc > 1 ? argv[1] : "/tmp";
	el_log_set_level(getenv("PT_LOG") ? EL_LOG_WARN : EL_LOG_OFF); /* recoveries of torn images warn by design */
	RUN_UNHOOKED(test_power_cut_from_first_start);
	RUN_UNHOOKED(test_power_cut_after_torn_tail_restart);
	RUN_UNHOOKED(test_power_cut_first_batch_a_snapshot);
	RUN_UNHOOKED(test_power_cut_after_killed_batch);
	RUN_UNHOOKED(test_power_cut_after_failed_sync);
	printf("  %u power-cut images recovered and checked in all\n", total_checked);
	return el_test_end();
}
