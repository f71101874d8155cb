/*
 * port_test_model.c - the workload: deterministic ready batches (appends,
 * hard-state changes, suffix truncations, compaction snapshots, installed
 * snapshots that replace the log) and the model of what storage must hold.
 */
#include <stdio.h>
#include <string.h>

#include "el_error.h"
#include "port_test_util.h"

void pt_model_init(struct pt_model *m) { memset(m, 0, sizeof *m); }

uint64_t pt_model_term(const struct pt_model *m, uint64_t index)
{
	if (index == m->snap_index)
		return m->snap_term;
	if (index < m->snap_index || index > m->last)
		return 0;
	return m->terms[index - m->snap_index - 1];
}

static uint64_t below(uint64_t *rng, uint64_t n) { return n ? pt_rand(rng) % n : 0; }

/* A snapshot: an installed one (new history, beyond commit) or a compaction. */
static uint64_t gen_snapshot(const struct pt_model *m, uint64_t *rng, struct pt_batch *b,
			     uint64_t floor)
{
	if (below(rng, 40) == 0) {
		b->hs.term++;
		b->hs.vote = 0;
		uint64_t s = floor + 1 + below(rng, m->last - floor + 5);
		pt_fill_snapshot(&b->snap, b->snap_data, s, b->hs.term);
		b->has_snap = b->snap_conflicts = true;
		b->hs.commit = s;
		return s + 1;
	}
	if (below(rng, 12) == 0 && m->hs.commit > m->snap_index) {
		uint64_t s = m->snap_index + 1 + below(rng, m->hs.commit - m->snap_index);
		pt_fill_snapshot(&b->snap, b->snap_data, s, pt_model_term(m, s));
		b->has_snap = true;
	}
	return m->last + 1;
}

void pt_gen_batch(const struct pt_model *m, uint64_t seed, uint64_t number,
		  const struct pt_gen_opts *o, struct pt_batch *b)
{
	uint64_t rng = seed * 0x2545f4914f6cdd1dull + number, floor, first, n, limit;

	memset(b, 0, sizeof *b);
	b->hs = m->hs;
	if (b->hs.term == 0)
		b->hs.term = 1;
	if (below(&rng, 10) == 0) {
		b->hs.term++;
		b->hs.vote = (el_id_t)below(&rng, 4);
	}
	floor = m->hs.commit > m->snap_index ? m->hs.commit : m->snap_index;
	first = o->snapshots ? gen_snapshot(m, &rng, b, floor) : m->last + 1;
	if (!b->snap_conflicts && o->truncations && m->last > floor && below(&rng, 8) == 0)
		first = floor + 1 + below(&rng, m->last - floor);
	n = below(&rng, o->max_entries + 1);
	limit = (b->has_snap ? b->snap.index : m->snap_index) + PT_LOG_MAX - 1;
	if (first + n - 1 > limit)
		n = 0;
	b->first = first;
	b->last = first + n - 1;
	b->term = b->hs.term;
	if (below(&rng, 2) == 0 && first - 1 + n > b->hs.commit)
		b->hs.commit += below(&rng, first - 1 + n - b->hs.commit + 1);
	b->hs_changed = memcmp(&b->hs, &m->hs, sizeof b->hs) != 0;
}

/* Step 1 of a batch on the model: the snapshot, dropping covered entries
 * and, when it does not continue our log, everything after it. */
static void apply_snapshot(struct pt_model *m, const struct el_snapshot_meta *s)
{
	if (m->last > s->index && pt_model_term(m, s->index) == s->term) {
		uint64_t keep = m->last - s->index;
		memmove(m->terms, m->terms + (s->index - m->snap_index), keep * sizeof m->terms[0]);
	} else {
		m->last = s->index;
	}
	m->have_snap = true;
	m->snap_index = s->index;
	m->snap_term = s->term;
}

void pt_model_apply(struct pt_model *m, const struct pt_batch *b)
{
	if (b->has_snap)
		apply_snapshot(m, &b->snap);
	if (b->first <= m->last)
		m->last = b->first - 1;
	for (uint64_t i = b->first; i <= b->last; i++)
		m->terms[i - m->snap_index - 1] = b->term;
	if (b->last >= b->first)
		m->last = b->last;
	m->hs = b->hs;
}

bool pt_model_partial(const struct pt_model *m, const struct pt_batch *b, int stage,
		      struct pt_model *out)
{
	bool conflict;
	if (!b->has_snap)
		return false;
	*out = *m;
	conflict = m->last > b->snap.index && pt_model_term(m, b->snap.index) != b->snap.term;
	if (stage == 1) {
		if (conflict)
			out->last = b->snap.index;
		return conflict;
	}
	apply_snapshot(out, &b->snap);
	/* What recovery makes of a hard state older than the snapshot. */
	if (out->hs.term < b->snap.term) {
		out->hs.term = b->snap.term;
		out->hs.vote = 0;
	}
	if (out->hs.commit < b->snap.index)
		out->hs.commit = b->snap.index;
	return true;
}

bool pt_model_equal(const struct pt_model *a, const struct pt_model *b)
{
	if (a->have_snap != b->have_snap || a->snap_index != b->snap_index ||
	    a->snap_term != b->snap_term || a->last != b->last || a->hs.term != b->hs.term ||
	    a->hs.vote != b->hs.vote || a->hs.commit != b->hs.commit)
		return false;
	return memcmp(a->terms, b->terms, (a->last - a->snap_index) * sizeof a->terms[0]) == 0;
}

void pt_model_print(const char *label, const struct pt_model *m)
{
	printf("  %s: snap %llu/%llu last %llu (term %llu) hs %llu/%u/%llu\n", label,
	       (unsigned long long)m->snap_index, (unsigned long long)m->snap_term,
	       (unsigned long long)m->last, (unsigned long long)pt_model_term(m, m->last),
	       (unsigned long long)m->hs.term, (unsigned)m->hs.vote,
	       (unsigned long long)m->hs.commit);
}

static const struct el_entry *batch_entry(void *ctx, uint64_t index)
{
	struct pt_batch *b = ctx;
	pt_fill_entry(&b->scratch, index, b->term);
	return &b->scratch;
}

int pt_persist(struct el_storage *st, struct pt_batch *b)
{
	const struct el_storage_batch sb = {
		.snapshot = b->has_snap ? &b->snap : NULL,
		.snapshot_data = b->snap_data,
		.hs = b->hs_changed ? &b->hs : NULL,
		.first = b->first,
		.last = b->last,
		.entry = batch_entry,
		.ctx = b,
	};
	return el_storage_persist(st, &sb);
}

/* ---- the checking loader ------------------------------------------------ */

static int load_snapshot(void *ctx, const struct el_snapshot_meta *meta, const uint8_t *data)
{
	struct pt_model *m = ctx;
	struct el_snapshot_meta want;
	uint8_t want_data[512];
	pt_fill_snapshot(&want, want_data, meta->index, meta->term);
	if (memcmp(&want, meta, sizeof want) != 0 || memcmp(want_data, data, want.len) != 0)
		return EL_ECORRUPT;
	m->have_snap = true;
	m->snap_index = m->last = meta->index;
	m->snap_term = meta->term;
	return EL_OK;
}

static int load_entry(void *ctx, const struct el_entry *e)
{
	struct pt_model *m = ctx;
	struct el_entry want;
	pt_fill_entry(&want, e->index, e->term);
	if (e->index != m->last + 1 || e->index - m->snap_index > PT_LOG_MAX ||
	    e->type != want.type || e->len != want.len || memcmp(e->data, want.data, e->len) != 0 ||
	    e->term < pt_model_term(m, m->last))
		return EL_ECORRUPT;
	m->terms[e->index - m->snap_index - 1] = e->term;
	m->last = e->index;
	return EL_OK;
}

static int load_hard_state(void *ctx, const struct el_hard_state *hs)
{
	struct pt_model *m = ctx;
	if (hs->commit > m->last || hs->term < pt_model_term(m, m->last))
		return EL_ECORRUPT;
	m->hs = *hs;
	return EL_OK;
}

int pt_load(struct el_storage *st, struct pt_model *out)
{
	pt_model_init(out);
	const struct el_storage_visitor v = { out, load_snapshot, load_entry, load_hard_state };
	return el_storage_load(st, &v);
}

int pt_open_load(const char *dir, uint64_t segment_bytes, struct pt_model *out)
{
	struct el_storage *st;
	const struct el_storage_options o = { .segment_bytes = segment_bytes };
	int rc = el_storage_open(&st, dir, &o);
	if (rc != EL_OK)
		return rc;
	rc = pt_load(st, out);
	el_storage_close(st);
	return rc;
}
