/*
 * port_test_util.h - helpers shared by the port/posix tests: scratch
 * directories, a deterministic workload of ready batches and the model of
 * what storage must hold after each, a visitor that loads storage into such
 * a model while checking every entry's bytes, and an I/O seam that fails the
 * Nth call of one operation.
 */
#ifndef PORT_TEST_UTIL_H
#define PORT_TEST_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "el_raft.h"
#include "el_storage.h"

/* ---- scratch directories ---- */

/* A fresh directory under base (mkdtemp); the path is static per call site
 * buffer given. Returns buf. */
char *pt_tmpdir(const char *base, const char *tag, char *buf, size_t cap);
void pt_rmrf(const char *path);
/* Copy every regular file of dir `from` into the (existing) dir `to`. */
void pt_copy_dir(const char *from, const char *to);
long pt_file_size(const char *path);

/* ---- the model ---- */

#define PT_LOG_MAX 2048

struct pt_model {
	bool have_snap;
	uint64_t snap_index, snap_term;
	struct el_hard_state hs;
	uint64_t last;                /* entries (snap_index, last] */
	uint64_t terms[PT_LOG_MAX];   /* term of index snap_index + 1 + i */
};

/* One batch of the workload and the model before it. */
struct pt_batch {
	struct el_snapshot_meta snap;
	uint8_t snap_data[512];
	bool has_snap;
	bool snap_conflicts;          /* a snapshot that replaces our history */
	bool hs_changed;
	struct el_hard_state hs;
	uint64_t first, last;
	uint64_t term;                /* of the new entries */
	struct el_entry scratch;
};

/* Entry bytes are a pure function of (index, term), so a load can check them. */
void pt_fill_entry(struct el_entry *e, uint64_t index, uint64_t term);
void pt_fill_snapshot(struct el_snapshot_meta *m, uint8_t *data, uint64_t index, uint64_t term);

void pt_model_init(struct pt_model *m);
uint64_t pt_model_term(const struct pt_model *m, uint64_t index);
/* The next batch for (seed, number), from model m; options bound the shape. */
struct pt_gen_opts {
	unsigned max_entries;   /* entries per batch: 0..max_entries */
	bool snapshots;
	bool truncations;
};
void pt_gen_batch(const struct pt_model *m, uint64_t seed, uint64_t number,
		  const struct pt_gen_opts *o, struct pt_batch *b);
/* Apply a whole batch to m. */
void pt_model_apply(struct pt_model *m, const struct pt_batch *b);
/* The states a crash inside batch b may leave (b's snapshot is written
 * before its WAL batch): stage 1 = conflicting suffix dropped, stage 2 =
 * snapshot also in place. False when b has no such stage. */
bool pt_model_partial(const struct pt_model *m, const struct pt_batch *b, int stage,
		      struct pt_model *out);
bool pt_model_equal(const struct pt_model *a, const struct pt_model *b);
void pt_model_print(const char *label, const struct pt_model *m);

/* Persist b to st (el_storage_persist). */
int pt_persist(struct el_storage *st, struct pt_batch *b);

/* Load st into *out, checking entry bytes, snapshot bytes, contiguity and
 * that the hard state is consistent with the log. EL_ECORRUPT on a bad one. */
int pt_load(struct el_storage *st, struct pt_model *out);
/* Open dir, load, close. */
int pt_open_load(const char *dir, uint64_t segment_bytes, struct pt_model *out);

/* ---- fault injection through el_io ---- */

enum pt_op { PT_OP_PWRITE, PT_OP_WRITE, PT_OP_FDATASYNC, PT_OP_FSYNC, PT_OP_OPEN,
	     PT_OP_RENAME, PT_OP_FTRUNCATE, PT_OP_UNLINK, PT_OP_COUNT };
extern const char *const pt_op_names[PT_OP_COUNT];
/* Fail the nth (1-based) call of op with err from now on; a failed write
 * writes half its bytes first, like a device that fills up mid-write.
 * Every later call of op fails too (a dead disk stays dead). */
void pt_fault_arm(enum pt_op op, unsigned nth, int err);
/* Fail only the nth call of op: later calls succeed again (a transient
 * fault), so a port that retries would get away with it. */
void pt_fault_arm_once(enum pt_op op, unsigned nth, int err);
/* Every write and pwrite writes only part of its bytes, without an error. */
void pt_fault_short_writes(void);
/* Counts calls of every op since the last arm; no failure. */
void pt_fault_count_only(void);
unsigned pt_fault_calls(enum pt_op op);
bool pt_fault_fired(void);
/* fsync and fdatasync become no-ops (fast tests that crash by hand). */
void pt_io_nosync(void);

/* ---- the power-cut model (port_test_power.c) ---- */

/* Called before every call that changes the disk, with the model paused. */
typedef void (*pt_power_cut_fn)(void *ctx);
/* Watch dir (the data directory) inside parent; files already there count
 * as durable. Replaces el_io; syncs go to the model, not the disk. */
void pt_power_begin(const char *parent, const char *dir, pt_power_cut_fn fn, void *ctx);
void pt_power_end(void);
unsigned pt_power_cuts(void);
/* Broken durability rules so far, and the first one's description. */
unsigned pt_power_violations(const char **first);
/* The nth file sync (fsync or fdatasync of a file) from now fails with err
 * as Linux fails one: the pages it was to write are marked clean, not
 * written, stay readable, and no later sync writes them unless written
 * again. */
void pt_power_fail_sync(unsigned nth, int err);
/* Record a violation when anything is unsynced now (after a success). */
void pt_power_check_synced(const char *when);
/* Build the power-cut image of the data directory in out; torn keeps a torn
 * sector of unsynced appended bytes. Returns files with a torn tail, or -1. */
int pt_power_image(const char *out, bool torn, uint64_t *rng);

/* Small deterministic PRNG (splitmix64). */
uint64_t pt_rand(uint64_t *state);

#endif /* PORT_TEST_UTIL_H */
