/*
 * el_bm_seed.h - the random seed el_raft_init() wants, on a board.
 */
#ifndef EL_BM_SEED_H
#define EL_BM_SEED_H

#include <stdint.h>

/* A seed for node id: the board's entropy word (boards/<name>/board.h says
 * where it comes from) mixed with the id, so two nodes booted at the same
 * instant still draw different election timeouts. */
uint64_t el_bm_seed(uint32_t node_id);

#endif /* EL_BM_SEED_H */
