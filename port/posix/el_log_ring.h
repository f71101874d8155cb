/*
 * el_log_ring.h - the Raft log ring's free pages given back to the kernel
 * (log_ring.c): resident memory that follows the live log, not its history.
 */
#ifndef EL_LOG_RING_H
#define EL_LOG_RING_H

#include "el_raft.h"

/* Drops every whole page of r's log ring that holds no live entry
 * (el_raft_free_slots): call between loop turns, after a compaction. */
void el_log_ring_release(struct el_raft *r);

#endif
