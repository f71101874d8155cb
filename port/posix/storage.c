/*
 * storage.c - the storage object: open (lock, then recover), load (hand the
 * recovered state to a visitor), close, and small queries.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "el_dirlock.h"
#include "el_error.h"
#include "el_io.h"
#include "el_platform.h"
#include "el_storage_impl.h"

int el_storage__reserve(struct el_storage *st, uint64_t index, bool locs)
{
	size_t need = (size_t)(index - el_storage__base(st));
	if (need > st->terms_cap) {
		size_t cap = st->terms_cap ? st->terms_cap : 1024;
		while (cap < need)
			cap *= 2;
		uint64_t *t = realloc(st->terms, cap * sizeof *t);
		if (!t)
			return el_io_failure("allocation", "the term table", ENOMEM);
		st->terms = t;
		st->terms_cap = cap;
	}
	if (locs && need > st->locs_cap) {
		size_t cap = st->terms_cap;
		const uint8_t **l = realloc(st->locs, cap * sizeof *l);
		if (!l)
			return EL_EIO;
		st->locs = l;
		st->locs_cap = cap;
	}
	return EL_OK;
}

void el_storage__free_recovery(struct el_storage *st)
{
	for (size_t i = 0; i < st->n_seg_bufs; i++)
		free(st->seg_bufs[i]);
	free(st->seg_bufs);
	free(st->locs);
	free(st->snap_data);
	st->seg_bufs = NULL;
	st->n_seg_bufs = 0;
	st->locs = NULL;
	st->locs_cap = 0;
	st->snap_data = NULL;
	st->recovered = false;
}

/* A directory exists after a crash only once its parent's entry for it is
 * durable. Synced at every open, not only by the one that made it: a start
 * that died between its mkdir and this sync, or a directory made by hand or
 * by systemd (StateDirectory=), was otherwise never synced, and a power cut
 * could take the directory with every batch acknowledged in it. made: this
 * open created it, and a failed sync fails the open. A directory already
 * there starts as it did before this sync whatever it meets: a parent on a
 * file system that keeps its entries as they are (read-only, or one that
 * cannot sync a directory: EROFS, EINVAL, a squashfs root above a mounted
 * data partition) silently, any other failure with a warning. */
static int sync_parent(const char *dir, bool made)
{
	char parent[PATH_MAX];

	size_t len = (size_t)snprintf(parent, sizeof parent, "%s", dir);
	while (len > 1 && parent[len - 1] == '/')
		parent[--len] = '\0';
	char *slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = '\0'; /* "/name": the parent is the root */
	else if (slash)
		*slash = '\0';
	else
		snprintf(parent, sizeof parent, ".");
	const int fd = el_io.open(parent, O_RDONLY | O_DIRECTORY, 0);
	const int err = fd < 0 || el_io.fsync(fd) != 0 ? errno : 0;
	if (fd >= 0)
		close(fd);
	if (err == 0 || (!made && (err == EROFS || err == EINVAL)))
		return EL_OK;
	el_log(made ? EL_LOG_ERROR : EL_LOG_WARN, "cannot sync %s, which holds data directory "
	       "%s: %s%s", parent, dir, strerror(err), made ? "" : " (if it was made and never "
	       "synced, a power cut could take it)");
	return made ? el_io_error(err) : EL_OK;
}

static int open_dir(struct el_storage *st, const char *dir)
{
	if (snprintf(st->dir, sizeof st->dir, "%s", dir) >= (int)sizeof st->dir)
		return EL_EINVAL;
	const bool made = mkdir(dir, 0700) == 0;
	if (!made && errno != EEXIST) {
		el_log(EL_LOG_ERROR, "cannot create data directory %s: %s", dir, strerror(errno));
		return el_io_failure("mkdir", dir, errno);
	}
	int rc = sync_parent(dir, made);
	if (rc != EL_OK)
		return rc;
	rc = el_dirlock_acquire(dir, &st->lock);
	if (rc != EL_OK)
		return rc;
	st->dir_fd = el_io.open(dir, O_RDONLY | O_DIRECTORY, 0);
	if (st->dir_fd < 0) {
		el_log(EL_LOG_ERROR, "cannot open data directory %s: %s", dir, strerror(errno));
		return EL_EIO;
	}
	/* The lock file may be new: open returns with every entry durable, so
	 * nothing this start created can vanish in a power cut. */
	if (el_io.fsync(st->dir_fd) != 0) {
		el_log(EL_LOG_ERROR, "cannot sync data directory %s: %s", dir, strerror(errno));
		return el_io_failure("fsync", dir, errno);
	}
	return EL_OK;
}

int el_storage_open(struct el_storage **out, const char *dir,
		    const struct el_storage_options *opt)
{
	struct el_storage *st = calloc(1, sizeof *st);
	uint64_t seg = opt && opt->segment_bytes ? opt->segment_bytes : EL_SEGMENT_BYTES_DEFAULT;
	int rc;

	*out = NULL;
	if (!st)
		return EL_EIO;
	st->lock = (struct el_dirlock){ .dir_fd = -1, .file_fd = -1 };
	st->dir_fd = -1;
	st->offline = opt != NULL && opt->offline;
	rc = open_dir(st, dir);
	el_wal_init(&st->wal, st->dir, st->dir_fd, seg);
	if (rc == EL_OK)
		rc = el_storage__recover(st);
	if (rc != EL_OK) {
		el_storage_close(st);
		return rc;
	}
	*out = st;
	return EL_OK;
}

void el_storage_close(struct el_storage *st)
{
	if (!st)
		return;
	el_storage__free_recovery(st);
	el_wal_close(&st->wal);
	if (st->dir_fd >= 0)
		close(st->dir_fd);
	el_dirlock_release(&st->lock);
	free(st->terms);
	free(st);
}

int el_storage_load(struct el_storage *st, const struct el_storage_visitor *v)
{
	struct el_rec rec;
	struct el_entry e;
	uint64_t base = el_storage__base(st);
	size_t used;
	int rc = EL_OK;

	if (!st->recovered)
		return EL_EINVAL;
	if (st->have_snap)
		rc = v->snapshot(v->ctx, &st->snap, st->snap_data);
	for (uint64_t i = base + 1; rc == EL_OK && i <= st->last; i++) {
		/* Each location was checked during recovery; decode it again. */
		rc = el_rec_decode(st->locs[i - base - 1], EL_REC_SIZE_MAX, &rec, &e, &used);
		if (rc == EL_OK)
			rc = v->entry(v->ctx, &e);
	}
	if (rc == EL_OK)
		rc = v->hard_state(v->ctx, &st->hs);
	return rc;
}

void el_storage_set_offline(struct el_storage *st, bool offline) { st->offline = offline; }
int el_storage_failed(const struct el_storage *st) { return st->failed; }
uint64_t el_storage_last_index(const struct el_storage *st) { return st->last; }
struct el_hard_state el_storage_hard_state(const struct el_storage *st) { return st->hs; }
unsigned el_storage_segments(const struct el_storage *st) { return (unsigned)st->wal.n_segs; }

uint64_t el_storage_segment_bytes(const struct el_storage *st)
{
	return st->wal.n_segs ? st->wal.segs[st->wal.n_segs - 1].size : 0;
}
