/*
 * el_storage_raft.h - the glue between el_storage and an el_raft replica:
 * load the recovered state into a replica, and persist a ready batch.
 */
#ifndef EL_STORAGE_RAFT_H
#define EL_STORAGE_RAFT_H

#include "el_raft.h"
#include "el_storage.h"

/* el_raft_load_snapshot / _entry / _hard_state from what storage recovered;
 * the caller then calls el_raft_start(). */
int el_storage_load_raft(struct el_storage *st, struct el_raft *r);

/* Steps 1-2 of the ready loop for rd (entries read with el_raft_entry). */
int el_storage_persist_ready(struct el_storage *st, const struct el_ready *rd,
			     const struct el_raft *r);

#endif /* EL_STORAGE_RAFT_H */
