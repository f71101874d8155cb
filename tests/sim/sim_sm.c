/*
 * sim_sm.c - the simulator's toy state machine: a hash chain over every
 * applied entry. Two replicas that applied the same entries in the same order
 * hold the same hash, so comparing each apply with the cluster-wide record
 * (s->chain) checks state-machine safety, and a restored snapshot must land
 * exactly on the recorded hash of its index.
 */
#include <string.h>

#include "sim.h"

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	h *= 0xFF51AFD7ED558CCDull;
	return h ^ (h >> 33);
}

static uint64_t entry_hash(const struct el_entry *e)
{
	uint64_t h = mix(e->term, e->index);
	h = mix(h, e->type);
	for (uint32_t i = 0; i < e->len; i++)
		h = mix(h, e->data[i]);
	return h;
}

void sim_sm_apply(struct sim *s, struct sim_node *n, const struct el_entry *e)
{
	if (e->index != n->sm.applied + 1) {
		sim_fail(s, "node %u applied index %llu after %llu", n->id,
			 (unsigned long long)e->index, (unsigned long long)n->sm.applied);
		return;
	}
	if (e->index >= SIM_INDEX_MAX) {
		sim_fail(s, "index %llu beyond SIM_INDEX_MAX", (unsigned long long)e->index);
		return;
	}
	n->sm.hash = mix(n->sm.hash, entry_hash(e));
	n->sm.applied = e->index;
	if (s->chain[e->index] == 0) {
		s->chain[e->index] = n->sm.hash;
		s->committed_term[e->index] = e->term;
		if (e->index > s->max_committed)
			s->max_committed = e->index;
		sim_log(s, "index %llu term %llu committed (first applied by node %u)",
			(unsigned long long)e->index, (unsigned long long)e->term, n->id);
	} else if (s->chain[e->index] != n->sm.hash || s->committed_term[e->index] != e->term) {
		sim_fail(s, "state machine safety: node %u applied a different entry at %llu (term %llu vs %llu)",
			 n->id, (unsigned long long)e->index, (unsigned long long)e->term,
			 (unsigned long long)s->committed_term[e->index]);
	}
}

/* Layout: applied (8 bytes LE), hash (8), then filler up to the seed's
 * snapshot size, derived from the hash so a torn copy is detectable. */
int sim_sm_write_snapshot(void *ctx, uint8_t *buf, uint32_t cap)
{
	const struct sim_snap_ctx *c = ctx;
	const struct sim_node *n = c->n;
	uint32_t len = 16 + c->s->p.snapshot_pad;
	if (len > cap)
		len = cap;
	for (int i = 0; i < 8; i++) {
		buf[i] = (uint8_t)(n->sm.applied >> (8 * i));
		buf[8 + i] = (uint8_t)(n->sm.hash >> (8 * i));
	}
	for (uint32_t i = 16; i < len; i++)
		buf[i] = (uint8_t)(mix(n->sm.hash, i) & 0xff);
	return (int)len;
}

void sim_sm_restore(struct sim *s, struct sim_node *n, const struct el_snapshot_meta *meta,
		    const uint8_t *data)
{
	uint64_t applied = 0, hash = 0;
	if (meta->len < 16) {
		/* The bootstrap snapshot: an empty state machine. */
		if (meta->index != 0)
			sim_fail(s, "node %u: snapshot at %llu has no state", n->id,
				 (unsigned long long)meta->index);
		n->sm.applied = 0;
		n->sm.hash = 0;
		return;
	}
	for (int i = 0; i < 8; i++) {
		applied |= (uint64_t)data[i] << (8 * i);
		hash |= (uint64_t)data[8 + i] << (8 * i);
	}
	for (uint32_t i = 16; i < meta->len; i++)
		if (data[i] != (uint8_t)(mix(hash, i) & 0xff)) {
			sim_fail(s, "node %u: snapshot bytes damaged at %u", n->id, i);
			return;
		}
	if (applied != meta->index) {
		sim_fail(s, "node %u: snapshot meta index %llu but state at %llu", n->id,
			 (unsigned long long)meta->index, (unsigned long long)applied);
		return;
	}
	if (applied >= SIM_INDEX_MAX || (s->chain[applied] != 0 && s->chain[applied] != hash)) {
		sim_fail(s, "node %u: restored snapshot at %llu disagrees with the cluster", n->id,
			 (unsigned long long)applied);
		return;
	}
	n->sm.applied = applied;
	n->sm.hash = hash;
}
