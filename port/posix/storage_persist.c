/*
 * storage_persist.c - steps 1-2 of the ready loop: the snapshot file, then
 * one WAL batch [HARD_STATE] [TRUNCATE] ENTRY... BATCH_END and one fdatasync.
 * Any write or sync error makes the storage fail for good (sticky): after a
 * failed fsync the kernel may have dropped the dirty pages while marking them
 * clean, so a retry that "succeeds" proves nothing (fsyncgate).
 */
#include <errno.h>
#include <string.h>

#include "el_error.h"
#include "el_io.h"
#include "el_platform.h"
#include "el_snapshot_file.h"
#include "el_storage_impl.h"

/* What an operator does about a failure depends on its cause: a node
 * restarted on a disk still full fails again (and systemd restarts it every
 * RestartSec), so space comes first; out of descriptors is a limit, and the
 * disk is fine; anything else a restart recovers from what is on disk. A
 * one-shot tool (opt.offline: edgelockd restore) says what to do itself. */
static const char *advice(const struct el_storage *st, int err)
{
	if (st->offline)
		return "";
	if (err == ENOSPC || err == EDQUOT)
		return "free space on its file system FIRST, then restart the node (it recovers "
		       "from disk; restarted on a disk still full it fails again)";
	if (err == EROFS)
		return EL_STORAGE_ROFS_WHY " FIRST, then restart the node (on a read-only file "
		       "system the restart fails too)";
	if (err == EMFILE)
		return "this is the process's open-files limit (RLIMIT_NOFILE, LimitNOFILE= under "
		       "systemd), not the disk: raise it, then restart the node (it recovers "
		       "from disk)";
	if (err == ENFILE)
		return "this is the system's open-files table (fs.file-max), not the disk: free "
		       "descriptors or raise it, then restart the node (it recovers from disk)";
	return "restart the node to recover from disk";
}

static int sticky(struct el_storage *st, int rc)
{
	if (rc == EL_ENOSPC || rc == EL_EIO) {
		const int err = el_io_last_errno();
		st->failed = rc;
		el_log(EL_LOG_ERROR, "storage %s failed (%s: %s); no further batch is acknowledged%s%s",
		       st->dir, rc == EL_ENOSPC ? "disk full" : err == EMFILE || err == ENFILE
		       ? "out of file descriptors" : "I/O error", el_io_last_failure(),
		       st->offline ? "" : "; ", advice(st, err));
	}
	return rc;
}

static uint64_t term_at(const struct el_storage *st, uint64_t index)
{
	uint64_t base = el_storage__base(st);
	if (index == base)
		return st->have_snap ? st->snap.term : 0;
	return index > base && index <= st->last ? st->terms[index - base - 1] : 0;
}

/* One batch of its own, synced now: [HARD_STATE] [rec] BATCH_END (the hard
 * state opens every segment, so a new one gets it). */
static int own_batch(struct el_storage *st, const struct el_rec *rec)
{
	struct el_rec end = { .type = EL_REC_BATCH_END, .value = st->batch_seq + 1 };
	int rc = EL_OK;

	if (el_wal_wants_segment(&st->wal) && (rc = el_wal_new_segment(&st->wal)) != EL_OK)
		return rc;
	if (st->wal.segs[st->wal.n_segs - 1].size == 0) {
		struct el_rec hs = { .type = EL_REC_HARD_STATE, .hs = st->hs };
		rc = el_wal_add(&st->wal, &hs);
	}
	if (rc == EL_OK && rec != NULL)
		rc = el_wal_add(&st->wal, rec);
	if (rc == EL_OK)
		rc = el_wal_add(&st->wal, &end);
	if (rc == EL_OK)
		rc = el_wal_commit(&st->wal);
	if (rc == EL_OK)
		st->batch_seq++;
	return rc;
}

/* Stored entries after a new snapshot that do not continue it (it came from
 * a leader whose log differs) must be gone from disk BEFORE the snapshot
 * file names the new history, or a crash in between would mix the two. */
static int drop_conflicting_suffix(struct el_storage *st, const struct el_snapshot_meta *m)
{
	const struct el_rec rec = { .type = EL_REC_TRUNCATE, .value = m->index + 1 };

	if (st->last <= m->index || term_at(st, m->index) == m->term)
		return EL_OK;
	const int rc = own_batch(st, &rec);
	if (rc == EL_OK)
		st->last = m->index;
	return rc;
}

/* A WAL batch exists before any snapshot file does: a node's first
 * snapshot (a joiner's from its leader, a restore's) comes after a batch
 * of the hard state alone. So a snapshot with no WAL batch beside it never
 * comes from a crash: it means the segments, which hold the term, the vote
 * and the newest entries, were deleted or emptied, and recovery refuses
 * it (storage_recover.c) rather than start without them. No batch yet,
 * not no segment: a first write that failed (a full disk) leaves a
 * segment of zeros, on which a restore or a joiner may run again. */
static int wal_before_first_snapshot(struct el_storage *st)
{
	return st->batch_seq == 0 ? own_batch(st, NULL) : EL_OK;
}

/* Step 1: the snapshot, then forget stored entries it covers. */
static int persist_snapshot(struct el_storage *st, const struct el_snapshot_meta *m,
			    const uint8_t *data)
{
	uint64_t base = el_storage__base(st), keep;
	int rc;

	/* The same snapshot again (a restored replica re-offers the one it
	 * loaded): it is on disk already. */
	if (st->have_snap && m->index == base && m->term == st->snap.term)
		return EL_OK;
	rc = wal_before_first_snapshot(st);
	if (rc == EL_OK)
		rc = drop_conflicting_suffix(st, m);
	if (rc == EL_OK)
		rc = el_snapshot_file_write(st->dir, st->dir_fd, m, data);
	if (rc != EL_OK)
		return rc;
	/* Shift the term table so index m->index + 1 comes first. */
	keep = st->last > m->index ? st->last - m->index : 0;
	if (keep > 0)
		memmove(st->terms, st->terms + (m->index - base), keep * sizeof *st->terms);
	st->snap = *m;
	st->have_snap = true;
	if (st->last < m->index)
		st->last = m->index;
	return EL_OK;
}

static int check_batch(const struct el_storage *st, const struct el_storage_batch *b)
{
	uint64_t base = el_storage__base(st), last = st->last;
	if (b->snapshot) {
		if (b->snapshot->index < base ||
		    (b->snapshot->index == base && st->have_snap && b->snapshot->term != st->snap.term))
			return EL_EINVAL;
		base = b->snapshot->index;
		if (last < base)
			last = base;
	}
	if (b->first > b->last)
		return EL_OK;
	if (b->first <= base || b->first > last + 1 || !b->entry)
		return EL_EINVAL;
	for (uint64_t i = b->first; i <= b->last; i++) {
		const struct el_entry *e = b->entry(b->ctx, i);
		if (!e || e->index != i || e->len > EL_ENTRY_DATA_MAX)
			return EL_EINVAL;
	}
	return EL_OK;
}

/* Step 2 into the WAL buffer: hard state, truncation, entries, end. */
static int build_batch(struct el_storage *st, const struct el_storage_batch *b,
		       const struct el_hard_state *hs)
{
	struct el_rec rec = { .type = EL_REC_HARD_STATE, .hs = *hs };
	int rc = EL_OK;

	if (b->hs || st->wal.segs[st->wal.n_segs - 1].size == 0)
		rc = el_wal_add(&st->wal, &rec);
	if (rc == EL_OK && b->first <= st->last && b->first > el_storage__base(st)) {
		rec = (struct el_rec){ .type = EL_REC_TRUNCATE, .value = b->first };
		rc = el_wal_add(&st->wal, &rec);
	}
	for (uint64_t i = b->first; rc == EL_OK && i <= b->last; i++) {
		const struct el_entry *e = b->entry(b->ctx, i);
		if (!e || e->index != i)
			return EL_EINVAL;
		rec = (struct el_rec){ .type = EL_REC_ENTRY, .entry = e };
		rc = el_wal_add(&st->wal, &rec);
	}
	if (rc == EL_OK) {
		rec = (struct el_rec){ .type = EL_REC_BATCH_END, .value = st->batch_seq + 1 };
		rc = el_wal_add(&st->wal, &rec);
	}
	return rc;
}

/* The batch is durable: mirror it in memory. */
static int note_batch(struct el_storage *st, const struct el_storage_batch *b,
		      const struct el_hard_state *hs)
{
	uint64_t base = el_storage__base(st);
	st->hs = *hs;
	st->batch_seq++;
	if (b->first <= st->last && b->first > base)
		st->last = b->first - 1;
	if (b->first > b->last)
		return EL_OK;
	if (el_storage__reserve(st, b->last, false) != EL_OK)
		return EL_EIO;
	for (uint64_t i = b->first; i <= b->last; i++)
		st->terms[i - base - 1] = b->entry(b->ctx, i)->term;
	st->last = b->last;
	return EL_OK;
}

static bool batch_empty(const struct el_storage *st, const struct el_storage_batch *b)
{
	return !b->hs && b->first > b->last && b->first > st->last;
}

int el_storage_persist(struct el_storage *st, const struct el_storage_batch *b)
{
	struct el_hard_state hs;
	int rc;

	if (st->failed)
		return st->failed;
	if ((rc = check_batch(st, b)) != EL_OK)
		return rc;
	el_storage__free_recovery(st);
	if (b->snapshot && (rc = persist_snapshot(st, b->snapshot, b->snapshot_data)) != EL_OK)
		return sticky(st, rc);
	if (batch_empty(st, b))
	{
		if (b->snapshot)
			el_wal_drop_covered(&st->wal, b->snapshot->index);
		return EL_OK;
	}
	hs = b->hs ? *b->hs : st->hs;
	if (el_wal_wants_segment(&st->wal) && (rc = el_wal_new_segment(&st->wal)) != EL_OK)
		return sticky(st, rc);
	rc = build_batch(st, b, &hs);
	if (rc == EL_OK)
		rc = el_wal_commit(&st->wal);
	if (rc == EL_OK)
		rc = note_batch(st, b, &hs);
	if (rc != EL_OK) {
		st->wal.len = 0;
		return sticky(st, rc == EL_EINVAL ? EL_EIO : rc);
	}
	if (b->snapshot)
		el_wal_drop_covered(&st->wal, b->snapshot->index);
	return EL_OK;
}
