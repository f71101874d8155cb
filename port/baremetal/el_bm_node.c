/*
 * el_bm_node.c - el_bm_drive_node(): the order that makes "persist before
 * you answer" hold on a board. Bounded: a batch is a fixed amount of work and
 * the batches per call are capped, so a busy node cannot starve the caller's
 * other duties (it gets the rest on the next call).
 */
#include "el_bm_node.h"
#include "el_error.h"

/* A few rounds drain a node fed one input; more only means another call. */
#define BATCHES_PER_DRIVE 8

static void hand_out(const struct el_node_ready *rd, const struct el_bm_node_io *io)
{
	for (uint32_t i = 0; i < rd->raft.n_msgs; i++)
		io->send(io->ctx, &rd->raft.msgs[i]);
	for (uint32_t i = 0; i < rd->n_replies && io->reply != NULL; i++)
		io->reply(io->ctx, &rd->replies[i]);
	for (uint32_t i = 0; i < rd->n_events && io->event != NULL; i++)
		io->event(io->ctx, &rd->events[i]);
}

static int drive_one(struct el_node *n, struct el_bm_store *s, const struct el_bm_node_io *io,
		     uint64_t now_ms)
{
	struct el_node_ready rd;
	el_node_ready(n, &rd);
	int err = el_bm_store_persist(s, el_node_raft(n), &rd.raft);
	if (err != EL_OK)
		return err; /* no send, no advance: the node stops here */
	hand_out(&rd, io);
	return el_node_advance(n, &rd, now_ms);
}

int el_bm_drive_node(struct el_node *n, struct el_bm_store *s, const struct el_bm_node_io *io,
		     uint64_t now_ms)
{
	for (int k = 0; k < BATCHES_PER_DRIVE && el_node_has_ready(n); k++) {
		int err = drive_one(n, s, io, now_ms);
		if (err != EL_OK)
			return err;
	}
	return EL_OK;
}

int el_bm_restart_node(struct el_node *n, const struct el_bm_store *s, uint64_t now_ms)
{
	int err = el_bm_store_load(s, el_node_raft(n));
	if (err == EL_OK)
		el_node_start(n, now_ms);
	return err;
}
