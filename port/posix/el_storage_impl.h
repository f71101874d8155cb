/*
 * el_storage_impl.h - private: the storage state shared by storage.c
 * (persisting) and storage_recover.c (opening and replaying).
 */
#ifndef EL_STORAGE_IMPL_H
#define EL_STORAGE_IMPL_H

#include <limits.h>

#include "el_dirlock.h"
#include "el_storage.h"
#include "el_wal.h"

#define EL_SEGMENT_BYTES_DEFAULT (4u << 20)

struct el_storage {
	char dir[PATH_MAX];
	struct el_dirlock lock;
	int dir_fd;
	int failed;               /* sticky EL_ENOSPC / EL_EIO, or 0 */
	bool offline;             /* el_storage_options.offline */
	struct el_wal wal;
	struct el_hard_state hs;  /* as on disk */
	bool have_snap;
	struct el_snapshot_meta snap;
	uint64_t last;            /* last stored index (>= snap.index) */
	uint64_t *terms;          /* term of index snap.index + 1 + i */
	size_t terms_cap;
	uint64_t batch_seq;
	/* Recovery results, kept until load (or the first persist). */
	bool recovered;
	uint8_t *snap_data;
	uint8_t **seg_bufs;
	size_t n_seg_bufs;
	const uint8_t **locs;     /* entry record of index snap.index + 1 + i */
	size_t locs_cap;
};

static inline uint64_t el_storage__base(const struct el_storage *st)
{
	return st->have_snap ? st->snap.index : 0;
}

/* Room for terms (and locs while recovering) up to index. */
int el_storage__reserve(struct el_storage *st, uint64_t index, bool locs);
void el_storage__free_recovery(struct el_storage *st);
/* Open-time recovery of snapshot and WAL (storage_recover.c). */
int el_storage__recover(struct el_storage *st);

#endif /* EL_STORAGE_IMPL_H */
