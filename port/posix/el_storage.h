/*
 * el_storage.h - durable Raft storage on Linux: a data directory holding
 *
 *   LOCK                 flock()ed by the one process using the directory
 *   snapshot             the latest snapshot (el_snapshot_file.h), replaced
 *                        by write-temp, fsync, rename, fsync-directory
 *   wal-<seq>.log        write-ahead log segments (el_wal.h, el_wal_record.h)
 *
 * The hard state lives in the WAL, as a record of the ready batch that
 * changed it, so entries and hard state share ONE fdatasync per batch; each
 * segment starts with the hard state current when it was begun, so deleting
 * old segments never loses it.
 *
 * Use: el_storage_open() recovers the directory; el_storage_load() hands the
 * recovered state to a visitor in the order el_raft_load_* wants (snapshot,
 * entries in index order, hard state); then each ready batch goes through
 * el_storage_persist() (or el_storage_persist_ready(), el_storage_raft.h).
 *
 * Failure is sticky: once a write or fsync fails (EL_ENOSPC, EL_EIO), every
 * later call returns that code; the caller must stop sending and advancing,
 * and restart, which recovers from what is really on disk (after an fsync
 * error the page cache cannot be trusted, so it is never retried).
 */
#ifndef EL_STORAGE_H
#define EL_STORAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "el_raft.h"

struct el_storage;

/* What to do about a read-only file system, said by a storage failure
 * (exit 3) and by edgelockd's start on a read-only data_dir (exit 2). */
#define EL_STORAGE_ROFS_WHY "the file system went read-only (the kernel does that on a " \
	"disk error: an SD card's, say): check the disk and the kernel log, repair and " \
	"remount it read-write"

struct el_storage_options {
	uint64_t segment_bytes; /* start a new segment past this; 0: 4 MiB */
	/* A one-shot tool (edgelockd restore), not a running node: a failure's
	 * log line names the cause only, with no advice to restart a node. */
	bool offline;
};

/* Lock and recover dir (created when missing). EL_ELOCKED when another
 * process holds it, EL_ECORRUPT when the snapshot or a sealed log segment
 * is damaged (the message names the file), EL_EIO, EL_ENOSPC. */
int el_storage_open(struct el_storage **out, const char *dir,
		    const struct el_storage_options *opt);
void el_storage_close(struct el_storage *st);

/* What el_storage_load hands back; a callback's error stops the load. */
struct el_storage_visitor {
	void *ctx;
	int (*snapshot)(void *ctx, const struct el_snapshot_meta *meta, const uint8_t *data);
	int (*entry)(void *ctx, const struct el_entry *e);
	int (*hard_state)(void *ctx, const struct el_hard_state *hs);
};

/* Visit the recovered state: the snapshot (if any), every entry after it in
 * order, then the hard state (always). Only before the first persist. */
int el_storage_load(struct el_storage *st, const struct el_storage_visitor *v);

/* Steps 1-2 of the ready loop (el_raft.h), independent of the replica. */
struct el_storage_batch {
	const struct el_snapshot_meta *snapshot; /* NULL: none */
	const uint8_t *snapshot_data;
	const struct el_hard_state *hs;          /* NULL: unchanged */
	uint64_t first;                          /* drop stored entries >= first, */
	uint64_t last;                           /* then store first..last */
	const struct el_entry *(*entry)(void *ctx, uint64_t index);
	void *ctx;
};

/* Persist a batch: snapshot file, then one WAL batch, one fdatasync.
 * 0 means everything is on disk. EL_EINVAL (nothing written) for a batch
 * that does not fit the stored log; EL_ENOSPC/EL_EIO are sticky. */
int el_storage_persist(struct el_storage *st, const struct el_storage_batch *b);

/* As el_storage_options.offline, from now on: a --bootstrap says itself
 * what to do when its first batch fails, then leaves the advice to storage. */
void el_storage_set_offline(struct el_storage *st, bool offline);

/* True when dir holds nothing of a cluster: no snapshot file, and at most
 * the first WAL segment, whose whole batches hold only hard states of zeros
 * (a first write that failed, or a crash before the first snapshot).
 * Opening it would recover term 0 and an empty log, as from an empty
 * directory. Read only: no lock taken, nothing changed. */
bool el_storage_holds_nothing(const char *dir);

/* The sticky error, or 0. */
int el_storage_failed(const struct el_storage *st);
uint64_t el_storage_last_index(const struct el_storage *st);
struct el_hard_state el_storage_hard_state(const struct el_storage *st);
/* Segment files currently on disk (tests, metrics). */
unsigned el_storage_segments(const struct el_storage *st);
/* Bytes of whole batches in the newest segment; its file is longer, the
 * rest zeros written ahead (el_wal.h). Tests. */
uint64_t el_storage_segment_bytes(const struct el_storage *st);

#endif /* EL_STORAGE_H */
