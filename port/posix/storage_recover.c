/*
 * storage_recover.c - opening a data directory: read the snapshot, read every
 * WAL segment, keep the log up to the last whole batch, cut a torn or corrupt
 * tail off the newest segment (one log line), and replay the records into the
 * final log: entries at or below the snapshot are ignored, TRUNCATE drops a
 * suffix, the last HARD_STATE wins. Zeros after the last whole batch are the
 * space written ahead for the next ones (el_wal.h), not damage.
 *
 * A damaged sealed segment (any but the newest) is not a torn write: it was
 * fully synced before its successor was created. Cutting there would silently
 * drop acknowledged entries and votes, so the node refuses to start instead.
 * The same holds inside the newest segment when an intact batch two or more
 * batches later follows the damage (synced_batch_after): a torn write spoils
 * only the one batch being written when the power went. And batch numbers
 * run on across segments (check_batch_seq): a jump is synced batches lost.
 * The newest segment deleted leaves whole older ones and no jump: DIR/
 * wal-newest names it (check_newest_segment). A leftover snapshot.tmp or
 * wal-newest.tmp is removed first (remove_tmp_files).
 *
 * el_storage_holds_nothing tells, without opening, a directory whose files
 * never made anything durable (a first write that failed) from one with
 * state, so that the daemon treats it as the empty directory it recovers as.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "el_bytes.h"
#include "el_error.h"
#include "el_io.h"
#include "el_platform.h"
#include "el_snapshot_file.h"
#include "el_storage_impl.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Sequence numbers of the segments in dir, sorted. */
static int list_segments(const char *dir, uint64_t **out, size_t *n_out)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	uint64_t *seqs = NULL, seq;
	size_t n = 0, cap = 0;

	if (!d)
		return EL_EIO;
	while ((de = readdir(d)) != NULL) {
		if (!el_wal_segment_name(de->d_name, &seq))
			continue;
		if (n == cap) {
			uint64_t *s = realloc(seqs, (cap = cap ? 2 * cap : 16) * sizeof *s);
			if (!s) {
				free(seqs);
				closedir(d);
				return EL_EIO;
			}
			seqs = s;
		}
		seqs[n++] = seq;
	}
	closedir(d);
	if (n > 0)
		qsort(seqs, n, sizeof *seqs, cmp_u64);
	*out = seqs;
	*n_out = n;
	return EL_OK;
}

/* O_NONBLOCK: a FIFO under a segment's name (a damaged directory) would
 * otherwise block the open for ever, waiting for a writer; it is refused. */
static int read_whole(const char *path, uint8_t **buf_out, size_t *len_out)
{
	struct stat sb;
	uint8_t *buf;
	size_t n = 0;
	int fd = el_io.open(path, O_RDONLY | O_NONBLOCK, 0);

	if (fd < 0 || fstat(fd, &sb) != 0) {
		el_log(EL_LOG_ERROR, "wal: cannot read %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return EL_EIO;
	}
	if (!S_ISREG(sb.st_mode)) {
		el_log(EL_LOG_ERROR, "wal: %s is not a regular file; refusing to start", path);
		close(fd);
		return EL_ECORRUPT;
	}
	buf = malloc((size_t)sb.st_size + 1);
	while (buf && n < (size_t)sb.st_size) {
		ssize_t got = read(fd, buf + n, (size_t)sb.st_size - n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	close(fd);
	if (!buf || n != (size_t)sb.st_size) {
		el_log(EL_LOG_ERROR, "wal: cannot read %s", path);
		free(buf);
		return EL_EIO;
	}
	*buf_out = buf;
	*len_out = n;
	return EL_OK;
}

static int replay_entry(struct el_storage *st, const struct el_entry *e, const uint8_t *rec)
{
	uint64_t base = el_storage__base(st);
	if (e->index <= base)
		return EL_OK; /* covered by the snapshot */
	if (e->index != st->last + 1)
		return EL_ECORRUPT;
	if (el_storage__reserve(st, e->index, true) != EL_OK)
		return EL_EIO;
	st->terms[e->index - base - 1] = e->term;
	st->locs[e->index - base - 1] = rec;
	st->last = e->index;
	return EL_OK;
}

/* Does the batch numbered seq (its BATCH_END at off) follow the last one
 * read? Every batch is numbered one more than the one before it and a
 * segment is sealed only once its batches are synced, so a gap is synced
 * batches lost: damage at the end of the segment before (zeros there pass
 * for the zeros written ahead that an earlier release kept in sealed
 * segments), whose entries would silently be gone when no later batch
 * carries an entry. Not when everything read so far lies at or below the
 * snapshot: a covered segment whose deletion a power cut undid may come
 * back there, and nothing of it counts. */
static int check_batch_seq(const struct el_storage *st, const char *path, size_t off,
			   uint64_t seq)
{
	if (st->batch_seq == 0 || seq == st->batch_seq + 1 || st->last == el_storage__base(st))
		return EL_OK;
	el_log(EL_LOG_ERROR, "wal: %s: batch %llu at offset %zu follows batch %llu: the batches "
	       "between them were synced and are lost (damage at the end of the segment before "
	       "it); refusing to start", path, (unsigned long long)seq, off,
	       (unsigned long long)st->batch_seq);
	return EL_ECORRUPT;
}

/* Apply the records of buf[0, len) (whole batches) to the recovered state. */
static int replay(struct el_storage *st, const char *path, const uint8_t *buf, size_t len,
		  uint64_t *max_index)
{
	struct el_rec rec = { 0 };
	struct el_entry e;
	size_t off = 0, used;

	while (off < len) {
		int rc = el_rec_decode(buf + off, len - off, &rec, &e, &used);
		if (rc == EL_OK && rec.type == EL_REC_ENTRY) {
			rc = replay_entry(st, &e, buf + off);
			if (e.index > *max_index)
				*max_index = e.index;
		} else if (rc == EL_OK && rec.type == EL_REC_TRUNCATE) {
			uint64_t base = el_storage__base(st);
			if (rec.value <= st->last)
				st->last = rec.value > base ? rec.value - 1 : base;
		} else if (rc == EL_OK && rec.type == EL_REC_HARD_STATE) {
			st->hs = rec.hs;
		} else if (rc == EL_OK && rec.type == EL_REC_BATCH_END) {
			if (check_batch_seq(st, path, off, rec.value) != EL_OK)
				return EL_ECORRUPT;
			st->batch_seq = rec.value;
		}
		if (rc == EL_EIO)
			return rc; /* out of memory */
		if (rc != EL_OK && rec.type == EL_REC_ENTRY && !st->have_snap && st->last == 0) {
			el_log(EL_LOG_ERROR, "wal: %s: the log starts at index %llu and there is no "
			       "snapshot file before it: %s/" EL_SNAPSHOT_FILE " was deleted or lost; "
			       "refusing to start", path, (unsigned long long)e.index, st->dir);
			return EL_ECORRUPT;
		}
		if (rc != EL_OK) {
			el_log(EL_LOG_ERROR, "wal: %s: entry at offset %zu does not continue the log; "
			       "refusing to start", path, off);
			return EL_ECORRUPT;
		}
		off += used;
	}
	return EL_OK;
}

/* Cut the newest segment back to its last whole batch, durably. */
static int cut_tail(const char *path, size_t valid, size_t len)
{
	int fd, rc = EL_OK;
	el_log(EL_LOG_WARN, "wal: %s: torn or corrupt record at the tail; truncating %zu bytes "
	       "at offset %zu (a write a crash interrupted, so never acknowledged; unless "
	       "the disk damaged synced bytes: then compare with the other members)", path,
	       len - valid, valid);
	fd = el_io.open(path, O_WRONLY, 0);
	if (fd < 0)
		return el_io_error(errno);
	if (el_io.ftruncate(fd, (off_t)valid) != 0 || el_io.fsync(fd) != 0) {
		rc = el_io_error(errno);
		el_log(EL_LOG_ERROR, "wal: cannot truncate %s: %s", path, strerror(errno));
	}
	close(fd);
	return rc;
}

/* True when buf[from, len) is all zero bytes: no record, torn or whole. */
static bool zeros_from(const uint8_t *buf, size_t from, size_t len)
{
	for (size_t i = from; i < len; i++)
		if (buf[i] != 0)
			return false;
	return true;
}

#define BATCH_END_BYTES (EL_REC_HEADER + 9u) /* type byte, seq u64 */

/* An intact BATCH_END record at buf[off] (its sequence in *seq)? Only its
 * fixed shape is decoded, so a scan may try every offset. */
static bool batch_end_at(const uint8_t *buf, size_t off, size_t len, uint64_t *seq)
{
	struct el_rec rec;
	struct el_entry entry;
	size_t used;
	if (off + BATCH_END_BYTES > len || el_get32(buf + off) != BATCH_END_BYTES - EL_REC_HEADER ||
	    buf[off + EL_REC_HEADER] != EL_REC_BATCH_END ||
	    el_rec_decode(buf + off, BATCH_END_BYTES, &rec, &entry, &used) != EL_OK ||
	    rec.type != EL_REC_BATCH_END)
		return false;
	*seq = rec.value;
	return true;
}

/* Is there an intact BATCH_END after the damage at stop, of a batch at least
 * two after the last whole one before it? A batch is written only after the
 * one before has been fdatasynced (storage_persist.c), so a crash tears at
 * most one batch: such a later batch proves the damaged one had been
 * synced, and perhaps acknowledged. Every byte offset is tried, since the
 * damage may be in a length field; this costs one pass over the tail. */
static bool synced_batch_after(const uint8_t *buf, size_t valid, size_t stop, size_t len,
			       uint64_t prev_seq, size_t *at)
{
	uint64_t last = prev_seq, seq;
	if (valid >= BATCH_END_BYTES && batch_end_at(buf, valid - BATCH_END_BYTES, valid, &seq))
		last = seq;
	for (size_t off = stop + 1; off + BATCH_END_BYTES <= len; off++)
		if (batch_end_at(buf, off, len, &seq) && seq >= last + 2) {
			*at = off;
			return true;
		}
	return false;
}

static int keep_buffer(struct el_storage *st, uint8_t *buf)
{
	uint8_t **b = realloc(st->seg_bufs, (st->n_seg_bufs + 1) * sizeof *b);
	if (!b) {
		free(buf);
		return EL_EIO;
	}
	st->seg_bufs = b;
	st->seg_bufs[st->n_seg_bufs++] = buf;
	return EL_OK;
}

static int recover_segment(struct el_storage *st, uint64_t seq, bool newest)
{
	char path[PATH_MAX];
	uint8_t *buf;
	size_t len, stop, valid, keep;
	uint64_t max_index = 0;
	int rc;

	if (el_wal_segment_path(st->dir, seq, path, sizeof path) != EL_OK)
		return EL_EINVAL;
	rc = read_whole(path, &buf, &len);
	if (rc != EL_OK)
		return rc;
	valid = el_wal_valid_end(buf, len, &stop);
	/* the file's bytes to keep: the zeros written ahead of the next batch
	 * (el_wal.h) stay, anything else after the batches does not */
	keep = zeros_from(buf, valid, len) ? len : valid;
	size_t later = 0;
	if (keep < len && newest && synced_batch_after(buf, valid, stop, len, st->batch_seq, &later)) {
		el_log(EL_LOG_ERROR, "wal: %s is corrupt at offset %zu, and a whole batch follows at "
		       "offset %zu: the damaged records were synced and may have been acknowledged, "
		       "so they are not cut; refusing to start", path, stop, later);
		free(buf);
		return EL_ECORRUPT;
	}
	uint8_t *kept = realloc(buf, valid + 1); /* not the zeros: the log keeps it */
	if (kept != NULL)
		buf = kept;
	rc = keep_buffer(st, buf);
	if (rc != EL_OK)
		return rc;
	if (keep < len && !newest) {
		el_log(EL_LOG_ERROR, "wal: sealed segment %s is corrupt at offset %zu; "
		       "refusing to start", path, stop < len ? stop : valid);
		return EL_ECORRUPT;
	}
	rc = replay(st, path, buf, valid, &max_index);
	if (rc == EL_OK && keep < len)
		rc = cut_tail(path, valid, len);
	if (rc == EL_OK)
		rc = el_wal_add_segment(&st->wal, seq, max_index, valid, keep);
	return rc;
}

/* A newer snapshot than the log's last batch (a crash between the snapshot
 * rename and the WAL batch) still rules: it is committed state. */
static void reconcile_hard_state(struct el_storage *st)
{
	if (!st->have_snap)
		return;
	if (st->hs.term < st->snap.term) {
		st->hs.term = st->snap.term; /* never voted in a term we never saw */
		st->hs.vote = 0;
	}
	if (st->hs.commit < st->snap.index)
		st->hs.commit = st->snap.index;
}

/* DIR/snapshot.tmp and DIR/wal-newest.tmp are files being written before
 * their rename (el_io_replace_file): a file there is what a crash left,
 * garbage. A directory by such a name no crash leaves (made by
 * hand, a restore gone wrong), but it makes every write of that file fail
 * (its create: EISDIR) and stop the node, at each restart again, long
 * after a start that looked fine. An empty one is removed; one with
 * something in it is not ours to delete (etcd refuses the same way when an
 * orphaned temp file will not go): the start is refused, naming it. */
static int remove_tmp(const struct el_storage *st, const char *name, const char *what)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s/%s", st->dir, name) >= (int)sizeof tmp)
		return EL_EINVAL;
	if (unlink(tmp) == 0) {
		el_log(EL_LOG_INFO, "removed %s left by an interrupted write of %s", tmp, what);
		return EL_OK;
	}
	if (errno != EISDIR && errno != EPERM) /* EPERM: POSIX's unlink of a directory */
		return EL_OK; /* none; or a read-only disk, where nothing is written */
	if (rmdir(tmp) == 0) {
		el_log(EL_LOG_WARN, "removed the empty directory %s: %s is written there "
		       "before its rename", tmp, what);
		return EL_OK;
	}
	if (errno == ENOTDIR)
		return EL_OK; /* a file after all, which this user may not delete */
	el_log(EL_LOG_ERROR, "%s is a directory that cannot be removed (%s): %s is written "
	       "there before its rename, so every write of it would fail; move it out of the "
	       "data directory; refusing to start", tmp, strerror(errno), what);
	return EL_ECORRUPT;
}

static int remove_tmp_files(const struct el_storage *st)
{
	const int rc = remove_tmp(st, EL_SNAPSHOT_TMP, "the snapshot");
	return rc != EL_OK ? rc : remove_tmp(st, EL_WAL_NEWEST_TMP, "wal-newest");
}

/*
 * DIR/wal-newest names the newest segment, written before that segment's
 * first batch (wal_newest.c). Naming one newer than the newest here (or
 * any, with none here) means a segment that may hold batches, and with them
 * acknowledged entries and this node's newest term and vote, is gone: no
 * crash leaves that (the new segment's entry is synced before the file
 * names it; compaction deletes only older segments). Starting on the older
 * ones would let the node vote twice in one term and forget entries it
 * told the leader it stored, so the start is refused. Naming an older one
 * is a crash between a roll and its file's rename (the newest is then
 * empty), or a release before this one rolled: *stale, and the open brings
 * the file up to the newest, as it writes it where there is none (a
 * directory of the release before), before any batch goes there.
 */
static int check_newest_segment(const struct el_storage *st, uint64_t newest, size_t n,
				bool *stale)
{
	char path[PATH_MAX];
	uint64_t marked = 0;
	bool found = false;
	if (snprintf(path, sizeof path, "%s/" EL_WAL_NEWEST_FILE, st->dir) >= (int)sizeof path)
		return EL_EINVAL;
	const int rc = el_wal_newest_read(st->dir, &marked, &found);
	if (rc == EL_EIO)
		el_log(EL_LOG_ERROR, "wal: cannot read %s: %s", path, strerror(errno));
	if (rc == EL_ECORRUPT)
		el_log(EL_LOG_ERROR, "wal: %s is damaged (not the one line \"newest "
		       "wal-<16 hex>.log crc32c CHECK\", or not a regular file): it names the "
		       "newest WAL segment, so that a deleted one is seen; refusing to start. If no "
		       "wal-*.log file was removed, remove it and start again (it is written anew)",
		       path);
	if (rc != EL_OK)
		return rc;
	if (found && (n == 0 || marked > newest)) {
		char seg[PATH_MAX];
		if (el_wal_segment_path(st->dir, marked, seg, sizeof seg) != EL_OK)
			snprintf(seg, sizeof seg, "segment %llu", (unsigned long long)marked);
		el_log(EL_LOG_ERROR, "wal: %s is missing (%s names it as the newest WAL segment; "
		       "%s): it was deleted (a crash never leaves this), and it may hold "
		       "acknowledged entries and this node's newest term and vote; starting on "
		       "what is left would forget them (a vote given twice in one term, entries "
		       "lost): refusing to start. Wipe this node's data directory and add it "
		       "back as a new member (docs/operations.md, \"A damaged data directory\")",
		       seg, path, n == 0 ? "no segment is left" : "older ones are there");
		return EL_ECORRUPT;
	}
	*stale = n > 0 && (!found || marked < newest);
	if (n > 0 && !found)
		el_log(EL_LOG_INFO, "wal: %s written, naming the newest segment (none there: a "
		       "directory of an earlier release, or a crash in its first roll)", path);
	return EL_OK;
}

static int recover_segments(struct el_storage *st, bool *stale, uint64_t *newest)
{
	uint64_t *seqs = NULL;
	size_t n = 0;
	int rc = list_segments(st->dir, &seqs, &n);
	for (size_t i = 0; rc == EL_OK && i < n; i++)
		rc = recover_segment(st, seqs[i], i + 1 == n);
	*newest = n > 0 ? seqs[n - 1] : 0;
	free(seqs);
	if (rc != EL_OK)
		return rc;
	if (st->have_snap && st->batch_seq == 0) {
		el_log(EL_LOG_ERROR, "storage %s: a snapshot (index %llu) and no WAL batch: the "
		       "WAL segments (wal-*.log), which hold this node's term, vote and newest "
		       "entries, were deleted or emptied (a crash never leaves this); starting "
		       "would forget acknowledged writes and votes: refusing to start", st->dir,
		       (unsigned long long)st->snap.index);
		return EL_ECORRUPT;
	}
	return check_newest_segment(st, *newest, n, stale);
}

int el_storage__recover(struct el_storage *st)
{
	uint64_t newest = 0;
	bool stale = false;
	int rc;

	st->snap_data = malloc(EL_SNAPSHOT_MAX);
	if (!st->snap_data)
		return EL_EIO;
	rc = remove_tmp_files(st);
	if (rc != EL_OK)
		return rc;
	rc = el_snapshot_file_read(st->dir, &st->snap, st->snap_data, &st->have_snap);
	if (rc != EL_OK)
		return rc;
	st->last = el_storage__base(st);
	rc = recover_segments(st, &stale, &newest);
	if (rc != EL_OK)
		return rc;
	reconcile_hard_state(st);
	st->recovered = true;
	el_log(EL_LOG_INFO, "storage %s: snapshot at %llu, log to %llu, term %llu, %zu segment(s)",
	       st->dir, (unsigned long long)el_storage__base(st), (unsigned long long)st->last,
	       (unsigned long long)st->hs.term, st->wal.n_segs);
	rc = el_wal_open_last(&st->wal);
	if (rc == EL_OK && stale)
		rc = el_wal_newest_write(st->dir, st->dir_fd, newest);
	return rc;
}

/* Does the segment at path hold nothing: its whole batches only hard
 * states of zeros (no term, no vote, no commit), and no BATCH_END after
 * them, not even behind damage (a whole batch there may have been synced)? */
static bool segment_holds_nothing(const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0, stop = 0, used;
	struct el_rec rec;
	struct el_entry e;
	uint64_t seq;
	bool nothing = read_whole(path, &buf, &len) == EL_OK;
	const size_t valid = nothing ? el_wal_valid_end(buf, len, &stop) : 0;
	for (size_t off = 0; nothing && off < valid; off += used)
		nothing = el_rec_decode(buf + off, valid - off, &rec, &e, &used) == EL_OK &&
			  (rec.type == EL_REC_BATCH_END ||
			   (rec.type == EL_REC_HARD_STATE && rec.hs.term == 0 && rec.hs.vote == 0 &&
			    rec.hs.commit == 0));
	for (size_t off = valid; nothing && off + BATCH_END_BYTES <= len; off++)
		nothing = !batch_end_at(buf, off, len, &seq);
	free(buf);
	return nothing;
}

/*
 * A vote, a term and an entry are acknowledged only once the batch that
 * holds them is synced, whole, BATCH_END and all; a node's first snapshot
 * file (a bootstrap's configuration, a restore's, a joiner's) comes after
 * a batch of the hard state it had, zeros for a new node
 * (wal_before_first_snapshot); segments are deleted only below a
 * snapshot. So a directory with no snapshot file, and no segment but the
 * first, whose whole batches hold only hard states of zeros, never made
 * anything durable: what a first write that failed (a full disk) or a
 * crash before the first snapshot leaves. Recovery would start it as term
 * 0 with an empty log and no configuration, as an empty directory.
 * Anything else (a snapshot, a second segment, a segment whose number is
 * not 1, any other record, a file that cannot be read, a wal-newest that
 * names a segment not there or is damaged) is taken as state.
 */
bool el_storage_holds_nothing(const char *dir)
{
	char path[PATH_MAX];
	struct stat sb;
	uint64_t *seqs = NULL;
	size_t n = 0;
	if (snprintf(path, sizeof path, "%s/" EL_SNAPSHOT_FILE, dir) >= (int)sizeof path ||
	    lstat(path, &sb) == 0 || errno != ENOENT)
		return false;
	if (list_segments(dir, &seqs, &n) != EL_OK)
		return errno == ENOENT; /* no directory: nothing */
	const bool first_only = n == 1 && seqs[0] == 1;
	uint64_t marked = 0;
	bool found = false;
	/* DIR/wal-newest naming a segment that is gone (or damaged): segments
	 * were deleted, state */
	const bool deleted = el_wal_newest_read(dir, &marked, &found) != EL_OK ||
			     (found && (n == 0 || marked > seqs[n - 1]));
	free(seqs);
	if (deleted)
		return false;
	if (n == 0)
		return true;
	return first_only && el_wal_segment_path(dir, 1, path, sizeof path) == EL_OK &&
	       segment_holds_nothing(path);
}
