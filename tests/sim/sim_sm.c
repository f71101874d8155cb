/*
 * sim_sm.c - the apply observer: a hash chain over every entry a node
 * applies. Two nodes that applied the same entries in the same order hold the
 * same hash, so comparing each apply with the cluster-wide record (s->chain)
 * checks state-machine safety; the first apply of each index anywhere feeds
 * the reference replica (sim_history.c), in index order.
 */
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
		sim_ref_apply(s, e);
	} else if (s->chain[e->index] != n->sm.hash || s->committed_term[e->index] != e->term) {
		sim_fail(s, "state machine safety: node %u applied a different entry at %llu (term %llu vs %llu)",
			 n->id, (unsigned long long)e->index, (unsigned long long)e->term,
			 (unsigned long long)s->committed_term[e->index]);
	}
}

/* A node loaded a snapshot: it now stands where the cluster stood at that
 * index (the node checks the bytes themselves when it restores its table). */
void sim_sm_restore(struct sim *s, struct sim_node *n, const struct el_snapshot_meta *meta)
{
	if (meta->index >= SIM_INDEX_MAX || (meta->index > 0 && s->chain[meta->index] == 0)) {
		sim_fail(s, "node %u: snapshot at %llu that nobody applied", n->id,
			 (unsigned long long)meta->index);
		return;
	}
	n->sm.applied = meta->index;
	n->sm.hash = meta->index > 0 ? s->chain[meta->index] : 0;
}
