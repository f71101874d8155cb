/*
 * el_wal.h - the write-ahead log's segment files: DIR/wal-<seq, 16 hex>.log,
 * appended to in whole batches, one fdatasync per batch (group commit).
 * A new segment is started at a batch boundary once the current one has
 * reached segment_bytes, so a batch never spans two files and every sealed
 * segment was fully synced before its successor existed. Segments whose
 * entries are all covered by a snapshot are deleted, oldest first.
 *
 * A segment's file is kept longer than its data: when a batch would pass
 * the end, zeros are written ahead of it, to the next multiple of
 * EL_WAL_EXTEND_BYTES (of segment_bytes when that is smaller), and synced
 * with it. So most batches overwrite bytes the file already has, and
 * fdatasync only flushes data: a batch that grows the file makes fdatasync
 * commit the new length to the file system's journal as well, which on ext4
 * with three nodes on one disk cost about 60 us more per batch (issue 14).
 * The data ends at the last whole batch and only zeros follow it (a record
 * never starts with a zero length); recovery tells them apart from a torn
 * batch, which is still cut off in the newest segment and refused in a
 * sealed one. Sealing a segment cuts its zeros off (synced), so sealed
 * segments hold only batches, as before.
 *
 * DIR/wal-newest names the newest segment (wal_newest.c), written at each
 * roll before the new segment's first batch: recovery refuses to start when
 * the segment it names is gone (deleted, not a crash).
 */
#ifndef EL_WAL_H
#define EL_WAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "el_wal_record.h"

struct el_wal_segment {
	uint64_t seq;
	uint64_t max_index; /* highest entry index written to it (0: none) */
	uint64_t size;      /* bytes of whole batches */
	uint64_t alloc;     /* bytes of the file: size, then zeros */
};

#define EL_WAL_EXTEND_BYTES (256u * 1024u)

struct el_wal {
	const char *dir;
	int dir_fd;
	int fd;               /* the last segment, open for appending; -1: none */
	uint64_t segment_bytes;
	uint64_t extend_bytes; /* zeros written ahead: segment_bytes, at most EL_WAL_EXTEND_BYTES */
	struct el_wal_segment *segs; /* on disk, oldest first; the last is fd's */
	size_t n_segs, cap_segs;
	uint8_t *buf;         /* the batch being built */
	size_t len, cap;
	uint64_t batch_max_index;
};

/* Path of segment seq in out; EL_EINVAL when it does not fit. */
int el_wal_segment_path(const char *dir, uint64_t seq, char *out, size_t cap);
/* Parse a directory entry name; true and *seq for a segment name. */
bool el_wal_segment_name(const char *name, uint64_t *seq);

void el_wal_init(struct el_wal *w, const char *dir, int dir_fd, uint64_t segment_bytes);
/* Remember a segment found on disk (recovery, oldest first): size bytes of
 * batches in a file of alloc bytes (the rest zeros). */
int el_wal_add_segment(struct el_wal *w, uint64_t seq, uint64_t max_index, uint64_t size,
		       uint64_t alloc);
/* Open the last known segment for appending after its size bytes, and
 * fdatasync it: what recovery read from it is durable once this returns. */
int el_wal_open_last(struct el_wal *w);
/* True when the next batch must go to a new segment (none yet, or full). */
bool el_wal_wants_segment(const struct el_wal *w);
/* Seal the current segment and create the next one (empty), its directory
 * entry synced, and DIR/wal-newest naming it before any batch goes there. */
int el_wal_new_segment(struct el_wal *w);
/* Append one record to the batch in memory. */
int el_wal_add(struct el_wal *w, const struct el_rec *rec);
/* Write the batch and fdatasync it.
 * Returns 0, EL_ENOSPC or EL_EIO; on error the batch is not acknowledged,
 * and it is cut off the file again (wal.c: a failed fdatasync leaves it
 * readable in the page cache, unwritten). */
int el_wal_commit(struct el_wal *w);
/* Delete sealed segments, oldest first, whose entries are all <= index,
 * up to the newest segment holding a batch, which is kept (a failure is
 * logged and harmless: recovery ignores covered entries). */
void el_wal_drop_covered(struct el_wal *w, uint64_t index);
void el_wal_close(struct el_wal *w);

/* DIR/wal-newest: "newest wal-<16 hex>.log crc32c CHECK\n" (wal_newest.c). */
#define EL_WAL_NEWEST_FILE "wal-newest"
#define EL_WAL_NEWEST_TMP "wal-newest.tmp"
#define EL_WAL_NEWEST_LINE_MAX 64
/* The file's line naming segment seq in out, its length; EL_EINVAL. */
int el_wal_newest_line(uint64_t seq, char *out, size_t cap);
/* Replace DIR/wal-newest durably (temp file, fsync, rename, directory
 * fsync) with the line naming segment seq. 0, EL_ENOSPC or EL_EIO. */
int el_wal_newest_write(const char *dir, int dir_fd, uint64_t seq);
/* Read it: *found false when there is none; EL_ECORRUPT when it is not
 * exactly such a line (or not a regular file), EL_EIO when unreadable.
 * Logs nothing: the caller says what it means. */
int el_wal_newest_read(const char *dir, uint64_t *seq, bool *found);

#endif /* EL_WAL_H */
