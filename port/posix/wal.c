/*
 * wal.c - appending batches to WAL segments, rotating and deleting them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "el_assert.h"
#include "el_error.h"
#include "el_io.h"
#include "el_platform.h"
#include "el_wal.h"

#define SEG_PREFIX "wal-"
#define SEG_SUFFIX ".log"
#define SEG_NAME_LEN (4 + 16 + 4)

int el_wal_segment_path(const char *dir, uint64_t seq, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/" SEG_PREFIX "%016" PRIx64 SEG_SUFFIX, dir, seq);
	return (n < 0 || (size_t)n >= cap) ? EL_EINVAL : EL_OK;
}

bool el_wal_segment_name(const char *name, uint64_t *seq)
{
	uint64_t v = 0;
	if (strlen(name) != SEG_NAME_LEN || strncmp(name, SEG_PREFIX, 4) != 0 ||
	    strcmp(name + 20, SEG_SUFFIX) != 0)
		return false;
	for (int i = 4; i < 20; i++) {
		char c = name[i];
		int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
		if (d < 0)
			return false;
		v = (v << 4) | (uint64_t)d;
	}
	*seq = v;
	return true;
}

void el_wal_init(struct el_wal *w, const char *dir, int dir_fd, uint64_t segment_bytes)
{
	memset(w, 0, sizeof *w);
	w->dir = dir;
	w->dir_fd = dir_fd;
	w->fd = -1;
	w->segment_bytes = segment_bytes;
	/* Zeros past a segment's size would only be cut again: small segments
	 * (tests) write ahead less. */
	const uint64_t page = 4096;
	w->extend_bytes = (segment_bytes + page - 1) / page * page;
	if (w->extend_bytes > EL_WAL_EXTEND_BYTES)
		w->extend_bytes = EL_WAL_EXTEND_BYTES;
	if (w->extend_bytes == 0)
		w->extend_bytes = page;
}

int el_wal_add_segment(struct el_wal *w, uint64_t seq, uint64_t max_index, uint64_t size,
		       uint64_t alloc)
{
	EL_ASSERT(alloc >= size);
	if (w->n_segs == w->cap_segs) {
		size_t cap = w->cap_segs ? 2 * w->cap_segs : 16;
		struct el_wal_segment *s = realloc(w->segs, cap * sizeof *s);
		if (!s)
			return el_io_failure("allocation", "the segment list", ENOMEM);
		w->segs = s;
		w->cap_segs = cap;
	}
	w->segs[w->n_segs++] = (struct el_wal_segment){ seq, max_index, size, alloc };
	return EL_OK;
}

static int open_segment(struct el_wal *w, uint64_t seq, int flags)
{
	char path[PATH_MAX];
	if (el_wal_segment_path(w->dir, seq, path, sizeof path) != EL_OK)
		return EL_EINVAL;
	w->fd = el_io.open(path, O_WRONLY | flags, 0600);
	return w->fd < 0 ? el_io_failure("open", path, errno) : EL_OK;
}

static int fail(const struct el_wal *w, const char *what, int err);

/* Synced once opened: a node killed between a batch's write and its
 * fdatasync left that batch in the page cache alone, recovery has just read
 * it from there, and the node acts on it at once (a vote it says it cast,
 * entries it tells the leader it stores). Only the newest segment can hold
 * such a batch: a rotation comes after the batch before it was synced. */
int el_wal_open_last(struct el_wal *w)
{
	if (w->n_segs == 0)
		return EL_OK; /* the first batch creates segment 1 */
	const int rc = open_segment(w, w->segs[w->n_segs - 1].seq, 0);
	if (rc == EL_OK && el_io.fdatasync(w->fd) != 0)
		return fail(w, "fdatasync", errno);
	return rc;
}

bool el_wal_wants_segment(const struct el_wal *w)
{
	return w->fd < 0 || w->segs[w->n_segs - 1].size >= w->segment_bytes;
}

/* A sealed segment keeps only its batches: the zeros written ahead are cut
 * off (and synced: everything of a sealed segment must be), so it takes no
 * more disk than its data and an earlier release, which knows no zeros
 * ahead, still opens it. Its batches were synced by the batch that filled
 * it. */
static int seal(struct el_wal *w)
{
	struct el_wal_segment *seg = &w->segs[w->n_segs - 1];
	if (seg->alloc > seg->size) {
		if (el_io.ftruncate(w->fd, (off_t)seg->size) != 0)
			return fail(w, "ftruncate", errno);
		if (el_io.fdatasync(w->fd) != 0)
			return fail(w, "fdatasync", errno);
		seg->alloc = seg->size;
	}
	close(w->fd);
	w->fd = -1;
	return EL_OK;
}

/*
 * The new segment's directory entry is synced before DIR/wal-newest names
 * it, and that before the segment's first batch (wal_newest.c): once the
 * segment may hold an acknowledged batch, the file names it, so deleting
 * it is seen. The directory is synced twice: once the segment exists
 * (a file system may make a rename durable before an earlier create when
 * one sync covers both: the file would then name a segment a crash lost,
 * and the start be refused for nothing), and by the file's rename. So the
 * first batch no longer syncs the directory. Per roll: a directory fsync
 * and the file's write, fsync, rename and directory fsync.
 */
int el_wal_new_segment(struct el_wal *w)
{
	uint64_t seq = w->n_segs ? w->segs[w->n_segs - 1].seq + 1 : 1;
	int rc;

	if (w->fd >= 0 && (rc = seal(w)) != EL_OK)
		return rc;
	rc = el_wal_add_segment(w, seq, 0, 0, 0);
	if (rc == EL_OK)
		rc = open_segment(w, seq, O_CREAT | O_EXCL);
	if (rc != EL_OK)
		return rc;
	if (el_io.fsync(w->dir_fd) != 0)
		return el_io_failure("fsync", w->dir, errno);
	return el_wal_newest_write(w->dir, w->dir_fd, seq);
}

int el_wal_add(struct el_wal *w, const struct el_rec *rec)
{
	if (w->cap - w->len < EL_REC_SIZE_MAX) {
		size_t cap = w->cap ? 2 * w->cap : 64 * 1024;
		while (cap - w->len < EL_REC_SIZE_MAX)
			cap *= 2;
		uint8_t *b = realloc(w->buf, cap);
		if (!b)
			return el_io_failure("allocation", "the batch buffer", ENOMEM);
		w->buf = b;
		w->cap = cap;
	}
	size_t n = el_rec_encode(rec, w->buf + w->len);
	if (n == 0)
		return EL_EINVAL;
	w->len += n;
	if (rec->type == EL_REC_ENTRY && rec->entry->index > w->batch_max_index)
		w->batch_max_index = rec->entry->index;
	return EL_OK;
}

static int fail(const struct el_wal *w, const char *what, int err)
{
	char path[PATH_MAX];
	if (el_wal_segment_path(w->dir, w->segs[w->n_segs - 1].seq, path, sizeof path) != EL_OK)
		snprintf(path, sizeof path, "%s", w->dir);
	return el_io_failure(what, path, err);
}

/* Zeros from the end of this batch to the next extend_bytes step, when the
 * batch passes the file's end (el_wal.h), in one write; *alloc: the file's
 * length after it. */
static int extend(struct el_wal *w, const struct el_wal_segment *seg, uint64_t *alloc)
{
	static uint8_t zeros[EL_WAL_EXTEND_BYTES]; /* never written: no memory */
	const uint64_t end = seg->size + w->len;
	*alloc = seg->alloc;
	if (end <= seg->alloc)
		return EL_OK;
	*alloc = (end + w->extend_bytes - 1) / w->extend_bytes * w->extend_bytes;
	EL_ASSERT(*alloc - end <= sizeof zeros);
	if (*alloc > end && el_io_pwrite_all(w->fd, zeros, (size_t)(*alloc - end), (off_t)end) != 0)
		return fail(w, "write", errno);
	return EL_OK;
}

/*
 * A batch that failed (a write, its fdatasync, the directory's fsync) is cut
 * off the file again, zeros ahead and all, back to the batches known synced.
 * After a failed fdatasync Linux marks the batch's pages clean though the
 * disk never got them (fsyncgate): they stay in the page cache, and the
 * restart that follows would read the batch from there as if it were on
 * disk and act on it (a vote, entries acknowledged to the leader), while a
 * later power cut loses it: a double vote, a lost committed entry. The
 * open's fdatasync cannot catch that (a new descriptor does not see an
 * error reported before it was opened), and a retry proves nothing. The
 * cut drops those pages from the cache, so the restart reads only what was
 * synced; it is synced itself where the disk still lets it. Should the cut
 * fail too, that is logged: the batch may then come back at the restart.
 */
static void cut_failed_batch(struct el_wal *w, struct el_wal_segment *seg)
{
	char path[PATH_MAX];
	if (el_io.ftruncate(w->fd, (off_t)seg->size) == 0) {
		seg->alloc = seg->size;
		if (el_io.fsync(w->fd) == 0)
			return;
	}
	const int err = errno;
	if (el_wal_segment_path(w->dir, seg->seq, path, sizeof path) != EL_OK)
		snprintf(path, sizeof path, "%s", w->dir);
	el_log(EL_LOG_ERROR, "wal: cannot cut the failed batch off %s at offset %llu (%s): the "
	       "restart may read it from the page cache though the disk may not hold it", path,
	       (unsigned long long)seg->size, strerror(err));
}

static int write_and_sync(struct el_wal *w, struct el_wal_segment *seg, uint64_t *alloc)
{
	int rc = extend(w, seg, alloc);
	if (rc != EL_OK)
		return rc;
	if (el_io_pwrite_all(w->fd, w->buf, w->len, (off_t)seg->size) != 0)
		return fail(w, "write", errno);
	/* fdatasync also makes a new file length durable, which reading needs. */
	if (el_io.fdatasync(w->fd) != 0)
		return fail(w, "fdatasync", errno);
	return EL_OK;
}

int el_wal_commit(struct el_wal *w)
{
	struct el_wal_segment *seg = &w->segs[w->n_segs - 1];
	uint64_t alloc;

	const int rc = write_and_sync(w, seg, &alloc);
	if (rc != EL_OK) {
		cut_failed_batch(w, seg);
		return rc;
	}
	seg->size += w->len;
	seg->alloc = alloc;
	if (w->batch_max_index > seg->max_index)
		seg->max_index = w->batch_max_index;
	w->len = 0;
	w->batch_max_index = 0;
	return EL_OK;
}

void el_wal_drop_covered(struct el_wal *w, uint64_t index)
{
	char path[PATH_MAX];
	size_t n = 0, keep = w->n_segs ? w->n_segs - 1 : 0;

	/* Never the last segment: it is the one being appended to. Nor the
	 * newest one holding a batch: after a crash between a rotation and its
	 * first batch the last is empty, and that one then holds the only copy
	 * of the term and the vote (each segment gets it with its first batch). */
	while (keep > 0 && w->segs[keep].size == 0)
		keep--;
	while (n < keep && w->segs[n].max_index <= index) {
		if (el_wal_segment_path(w->dir, w->segs[n].seq, path, sizeof path) != EL_OK ||
		    (el_io.unlink(path) != 0 && errno != ENOENT)) {
			/* Harmless: recovery ignores entries the snapshot covers. */
			el_log(EL_LOG_WARN, "wal: cannot delete %s: %s", path, strerror(errno));
			break;
		}
		n++;
	}
	if (n == 0)
		return;
	memmove(w->segs, w->segs + n, (w->n_segs - n) * sizeof *w->segs);
	w->n_segs -= n;
}

void el_wal_close(struct el_wal *w)
{
	if (w->fd >= 0)
		close(w->fd);
	free(w->segs);
	free(w->buf);
	memset(w, 0, sizeof *w);
	w->fd = -1;
	w->dir_fd = -1;
}
