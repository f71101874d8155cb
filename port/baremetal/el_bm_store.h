/*
 * el_bm_store.h - a RAM storage backend for a Raft replica on a board: the
 * persistence steps 1 and 2 of the ready loop (see core/el_raft.h) and the
 * reload after a restart, into a fixed-size in-RAM image of what a flash
 * store would hold: hard state, one snapshot, and the entries above it.
 *
 * A "reboot" of a simulated node is a fresh replica loaded from its store:
 * what was persisted survives, everything else is lost, as on real power
 * loss. A store can be told to fail its next persist, to test that a node
 * stops rather than acknowledging what it did not keep.
 */
#ifndef EL_BM_STORE_H
#define EL_BM_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "el_raft.h"

/* Put a store in the board's STORAGE memory (boards/common/cortex-m.ld):
 * what stands in for flash is then counted apart from the node's RAM, and
 * reset leaves it alone. */
#define EL_BM_STORAGE __attribute__((section(".el_storage")))

struct el_bm_store {
	bool has_hard_state;
	bool has_snapshot;
	struct el_hard_state hs;
	struct el_snapshot_meta snap;
	uint8_t snap_data[EL_SNAPSHOT_MAX];
	/* Stored entries first..last (none when first > last), in a ring keyed by
	 * index, like the replica's own window. */
	uint64_t first;
	uint64_t last;
	struct el_entry log[EL_LOG_WINDOW];
	uint32_t syncs;        /* group commits done (one per persisted batch) */
	int fail_next_persist; /* 0, or the error the next persist returns */
};

void el_bm_store_init(struct el_bm_store *s);
/* Steps 1-2 of the ready loop for one batch of r: snapshot, entries, hard
 * state, then one "sync". 0, or EL_ENOSPC / EL_EIO / EL_ECORRUPT: the caller
 * must then stop (never send, never advance). */
int el_bm_store_persist(struct el_bm_store *s, const struct el_raft *r, const struct el_ready *rd);
/* Restart: hand everything stored to a freshly initialised r in the order
 * el_raft.h asks (snapshot, entries, hard state); the caller then calls
 * el_raft_start(). */
int el_bm_store_load(const struct el_bm_store *s, struct el_raft *r);

#endif /* EL_BM_STORE_H */
