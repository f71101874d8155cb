/*
 * el_bm_node.h - the ready loop of an edgelock node (core/el_node.h) on a
 * board, written once: take a batch, persist it (el_bm_store), only then
 * send its messages and hand its replies and events to the application,
 * then advance (which applies). The application plugs in its transport and
 * its client side through el_bm_node_io.
 */
#ifndef EL_BM_NODE_H
#define EL_BM_NODE_H

#include "el_bm_store.h"
#include "el_node.h"

struct el_bm_node_io {
	void *ctx;
	/* Hand one message to the transport (it must copy what it keeps). */
	void (*send)(void *ctx, const struct el_msg *m);
	/* A client request's answer (may be NULL). */
	void (*reply)(void *ctx, const struct el_node_reply *r);
	/* A grant to a waiter, a timeout, a watch notification (may be NULL). */
	void (*event)(void *ctx, const struct el_lock_event *e);
};

/* Drain the pending batches of n at now_ms (a bounded number per call).
 * 0 when all went through; a storage error when a persist failed (the batch
 * is then neither sent nor advanced), or EL_ECORRUPT when a snapshot did not
 * restore: either way the node must stop. */
int el_bm_drive_node(struct el_node *n, struct el_bm_store *s, const struct el_bm_node_io *io,
		     uint64_t now_ms);

/* Restart: a node prepared with el_node_init gets what s holds, then starts. */
int el_bm_restart_node(struct el_node *n, const struct el_bm_store *s, uint64_t now_ms);

#endif /* EL_BM_NODE_H */
