/*
 * sim_history.c - what the lock service promises, checked against history.
 *
 * Clients record each interval during which they treated a lock as held
 * (from seeing the grant to sending the release or reaching their own lease
 * deadline). No exclusive interval may overlap any other interval of the
 * same lock, and a lock's intervals that follow one another carry rising
 * fencing tokens. A semaphore's intervals (SIM_SEM_LOCK) may overlap, at
 * most SIM_SEM_LIMIT at any moment, each with its own token (and the tokens
 * of its successive grants rise: the reference replica checks that).
 *
 * A reference replica applies every committed entry once, in index order,
 * and checks each result: a new grant's token is the granting entry's index
 * and exceeds the lock's previous token; waiters are granted in FIFO order
 * (consecutive shared waiters together); nothing is granted during a
 * lock-delay; a retried request (a seq already applied) changes nothing.
 */
#include <string.h>

#include "el_error.h"
#include "sim.h"

/* ---- Client-side intervals ---------------------------------------------- */

/* Where an interval ends as far as is known now. A client extends its lease
 * only before the lease runs out, so a hold still open has been valid up to
 * the earlier of now and the client's current lease deadline. */
static uint64_t hold_end(const struct sim *s, const struct sim_hold *h)
{
	if (!h->open)
		return h->end_ms;
	uint64_t lease_end = s->clients[h->client].lease_end_ms;
	uint64_t end = s->now_ms < lease_end ? s->now_ms : lease_end;
	return end > h->start_ms ? end : h->start_ms;
}

/* Holds of the semaphore in use at time at (those given up the moment they
 * were seen were never used). */
static uint32_t permits_at(const struct sim *s, uint64_t at)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < s->n_holds; i++) {
		const struct sim_hold *g = &s->holds[i];
		const uint64_t end = hold_end(s, g);
		n += SIM_IS_SEM(g->lock) && end != g->start_ms && g->start_ms <= at && at < end;
	}
	return n;
}

/* At most SIM_SEM_LIMIT holds of the semaphore overlap h: counted where a
 * hold begins within h (the count can only rise at a beginning). */
static void check_permits(struct sim *s, const struct sim_hold *h)
{
	const uint64_t end = hold_end(s, h);
	if (!SIM_IS_SEM(h->lock) || end == h->start_ms)
		return;
	for (uint32_t i = 0; i < s->n_holds && !s->failed; i++) {
		const struct sim_hold *g = &s->holds[i];
		if (!SIM_IS_SEM(g->lock) || g->start_ms < h->start_ms || g->start_ms >= end)
			continue;
		const uint32_t n = permits_at(s, g->start_ms);
		if (n > SIM_SEM_LIMIT)
			sim_fail(s, "semaphore: %u clients held lock %u (limit %u) at %llu", n, h->lock,
				 (unsigned)SIM_SEM_LIMIT, (unsigned long long)g->start_ms);
	}
}

static void check_pair(struct sim *s, const struct sim_hold *a, const struct sim_hold *b)
{
	const bool sem = SIM_IS_SEM(a->lock);
	if (a->lock != b->lock ||
	    (!sem && a->mode != EL_LOCK_EXCLUSIVE && b->mode != EL_LOCK_EXCLUSIVE))
		return;
	uint64_t a_end = hold_end(s, a), b_end = hold_end(s, b);
	if (a_end == a->start_ms || b_end == b->start_ms)
		return; /* given up the moment it was seen: never used */
	/* Two permits are two grants, each its own token. Their order as the
	 * clients see them says nothing of the grants' order (a permit granted
	 * first may reach its client after another holder came and went), so
	 * the rise of a semaphore's tokens is the reference replica's check
	 * (check_token), and the count of overlapping holds check_permits'. */
	if (sem) {
		if (a->token == b->token)
			sim_fail(s, "fencing: semaphore %u token %llu held by clients %u and %u", a->lock,
				 (unsigned long long)a->token, a->client, b->client);
		return;
	}
	if (a->start_ms < b_end && b->start_ms < a_end) {
		sim_fail(s, "mutual exclusion: clients %u and %u both held lock %u in [%llu,%llu) and [%llu,%llu)",
			 a->client, b->client, a->lock, (unsigned long long)a->start_ms,
			 (unsigned long long)a_end, (unsigned long long)b->start_ms,
			 (unsigned long long)b_end);
		return;
	}
	const struct sim_hold *first = a_end <= b->start_ms ? a : b;
	const struct sim_hold *second = first == a ? b : a;
	if (first->token >= second->token)
		sim_fail(s, "fencing: lock %u token %llu followed by token %llu", a->lock,
			 (unsigned long long)first->token, (unsigned long long)second->token);
}

uint32_t sim_hold_open(struct sim *s, uint32_t client, uint32_t lock, uint8_t mode, uint64_t token)
{
	if (s->n_holds >= SIM_HOLDS_MAX)
		return SIM_HOLDS_MAX; /* the record is full: stop recording, keep running */
	struct sim_hold *h = &s->holds[s->n_holds];
	h->client = client;
	h->lock = lock;
	h->mode = mode;
	h->token = token;
	h->start_ms = s->now_ms;
	h->end_ms = UINT64_MAX;
	h->open = true;
	return s->n_holds++;
}

void sim_hold_close(struct sim *s, uint32_t rec, uint64_t end_ms)
{
	if (rec >= s->n_holds)
		return;
	struct sim_hold *h = &s->holds[rec];
	h->open = false;
	h->end_ms = end_ms > h->start_ms ? end_ms : h->start_ms;
	for (uint32_t i = 0; i < s->n_holds && !s->failed; i++)
		if (i != rec)
			check_pair(s, h, &s->holds[i]);
	check_permits(s, h);
}

void sim_check_holds(struct sim *s)
{
	for (uint32_t i = 0; i < s->n_holds && !s->failed; i++)
		for (uint32_t j = i + 1; j < s->n_holds && !s->failed; j++)
			check_pair(s, &s->holds[i], &s->holds[j]);
	for (uint32_t i = 0; i < s->n_holds && !s->failed; i++)
		check_permits(s, &s->holds[i]);
}

/* ---- The reference replica ---------------------------------------------- */

static uint32_t lock_index(const char *name, uint32_t len)
{
	return sim_lock_of(name, len);
}

/* Query the reference table for lock index lock; 0 when it exists. */
static int query(const struct sim_ref *ref, uint32_t lock, struct el_lock_query *q)
{
	const char *name = sim_lock_name(lock);
	return el_lock_query(&ref->table, name, (uint32_t)strlen(name), q);
}

/* The table's bytes, with the last applied index left out. */
static uint64_t table_hash(struct el_lock_table *t)
{
	static uint8_t buf[EL_SNAPSHOT_MAX];
	uint64_t saved = t->last_index;
	t->last_index = 0;
	int len = el_lock_snapshot(t, buf, sizeof(buf));
	t->last_index = saved;
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < len; i++)
		h = (h ^ buf[i]) * 1099511628211ull;
	return h;
}

/* Marks (session, seq) applied; returns whether it was already. */
static bool seq_applied(struct sim_ref *ref, uint64_t session, uint64_t seq)
{
	uint32_t slot = (uint32_t)((session * 31 + seq) * 0x9E3779B97F4A7C15ull >> 51);
	for (uint32_t probe = 0; probe < SIM_SEQ_SLOTS; probe++) {
		struct sim_seq_slot *e = &ref->seqs[(slot + probe) % SIM_SEQ_SLOTS];
		if (e->session == session && e->seq == seq)
			return true;
		if (e->session == 0) {
			e->session = session;
			e->seq = seq;
			return false;
		}
	}
	return false; /* table full: treat as new */
}

static void queue_remove(struct sim_ref *ref, uint32_t lock, uint64_t session, uint64_t seq,
			 uint64_t *index_out, uint8_t *mode_out)
{
	for (uint32_t i = 0; i < ref->n_queue[lock]; i++) {
		struct sim_ref_waiter *w = &ref->queue[lock][i];
		if (w->session != session || w->seq != seq)
			continue;
		if (index_out != NULL)
			*index_out = w->index;
		if (mode_out != NULL)
			*mode_out = w->mode;
		memmove(w, w + 1, (ref->n_queue[lock] - i - 1) * sizeof(*w));
		ref->n_queue[lock]--;
		return;
	}
}

static void check_token(struct sim *s, uint32_t lock, uint64_t token, uint64_t index)
{
	struct sim_ref *ref = &s->ref;
	if (token != index)
		sim_fail(s, "fencing: lock %u granted with token %llu by entry %llu", lock,
			 (unsigned long long)token, (unsigned long long)index);
	else if (token < ref->last_token[lock] ||
		 (token == ref->last_token[lock] && (ref->last_token_index[lock] != index ||
						     SIM_IS_SEM(lock))))
		sim_fail(s, "fencing: lock %u token %llu after %llu", lock, (unsigned long long)token,
			 (unsigned long long)ref->last_token[lock]);
	ref->last_token[lock] = token;
	ref->last_token_index[lock] = index;
}

/* A shared grant takes every shared waiter at the head of the queue with
 * it (up to the holder limit): none may be left waiting behind it. */
static void check_shared_batch(struct sim *s, const bool shared_granted[SIM_LOCKS])
{
	static struct el_lock_query q;
	for (uint32_t lock = 0; lock < SIM_LOCKS; lock++) {
		const struct sim_ref *ref = &s->ref;
		if (!shared_granted[lock] || ref->n_queue[lock] == 0 || ref->queue_unknown[lock] ||
		    ref->queue[lock][0].mode != EL_LOCK_SHARED)
			continue;
		if (query(ref, lock, &q) == 0 && q.n_holders < EL_HOLDERS_MAX)
			sim_fail(s, "FIFO: lock %u granted shared waiters but left the next shared one waiting",
				 lock);
	}
}

/* Waiters left behind by this entry's grants must all have queued later. */
static void check_fifo(struct sim *s, const struct el_lock_result *res, uint64_t index)
{
	struct sim_ref *ref = &s->ref;
	uint64_t newest_granted[SIM_LOCKS] = { 0 };
	bool shared_granted[SIM_LOCKS] = { false };
	for (uint32_t i = 0; i < res->n_events; i++) {
		const struct el_lock_event *ev = &res->events[i];
		uint32_t lock = lock_index(ev->name, ev->name_len);
		if (lock == SIM_LOCKS)
			continue;
		if (ev->kind == EL_EV_WAIT_TIMEOUT || ev->kind == EL_EV_CANCELED)
			queue_remove(ref, lock, ev->session, ev->seq, NULL, NULL);
		if (ev->kind != EL_EV_GRANTED)
			continue;
		uint64_t queued_at = 0;
		uint8_t mode = EL_LOCK_EXCLUSIVE;
		queue_remove(ref, lock, ev->session, ev->seq, &queued_at, &mode);
		if (queued_at > newest_granted[lock])
			newest_granted[lock] = queued_at;
		shared_granted[lock] |= queued_at != 0 && mode == EL_LOCK_SHARED;
		check_token(s, lock, ev->token, index);
	}
	check_shared_batch(s, shared_granted);
	for (uint32_t lock = 0; lock < SIM_LOCKS; lock++)
		for (uint32_t i = 0; i < ref->n_queue[lock] && !ref->queue_unknown[lock]; i++)
			if (ref->queue[lock][i].index < newest_granted[lock])
				sim_fail(s, "FIFO: lock %u granted a waiter queued at %llu before one queued at %llu",
					 lock, (unsigned long long)newest_granted[lock],
					 (unsigned long long)ref->queue[lock][i].index);
}

/* Only a lock that exists can be delayed (ref->exists covers them all). */
static void note_delays(const struct sim_ref *ref, bool delayed[SIM_LOCKS])
{
	for (uint32_t lock = 0; lock < SIM_LOCKS; lock++) {
		static struct el_lock_query q;
		delayed[lock] = ref->exists[lock] && query(ref, lock, &q) == 0 && q.delayed;
	}
}

static void check_result(struct sim *s, const struct el_lock_cmd *cmd, const struct el_lock_result *res,
			 uint64_t index, const bool delayed_before[SIM_LOCKS])
{
	struct sim_ref *ref = &s->ref;
	uint32_t lock = lock_index(cmd->name, cmd->name_len);
	bool acquire = cmd->type == EL_CMD_ACQUIRE || cmd->type == EL_CMD_CAMPAIGN;
	if (res->events_dropped > 0)
		for (uint32_t i = 0; i < SIM_LOCKS; i++)
			ref->queue_unknown[i] = true;
	if (acquire && lock < SIM_LOCKS && res->err == EL_OK && res->queued &&
	    ref->n_queue[lock] < SIM_QUEUE_MAX) {
		struct sim_ref_waiter w = { cmd->session, cmd->seq, index, cmd->mode };
		ref->queue[lock][ref->n_queue[lock]++] = w;
	}
	bool granted[SIM_LOCKS] = { false };
	if (acquire && lock < SIM_LOCKS && res->err == EL_OK && !res->queued && res->count == 1) {
		granted[lock] = true;
		check_token(s, lock, res->token, index);
	}
	for (uint32_t i = 0; i < res->n_events; i++)
		if (res->events[i].kind == EL_EV_GRANTED) {
			uint32_t l = lock_index(res->events[i].name, res->events[i].name_len);
			if (l < SIM_LOCKS)
				granted[l] = true;
		}
	for (uint32_t l = 0; l < SIM_LOCKS; l++)
		/* a semaphore's other permits stay usable during one's delay:
		 * check_holders counts its delayed permits against its limit */
		if (granted[l] && delayed_before[l] && !SIM_IS_SEM(l) &&
		    !(cmd->type == EL_CMD_DELAY_END && l == lock))
			sim_fail(s, "lock-delay: lock %u granted at %llu while delayed", l,
				 (unsigned long long)index);
	check_fifo(s, res, index);
}

/* Mutual exclusion on the replicated state itself: an exclusive lock has
 * one holder. A lock comes into being only by a command that names it, so
 * the locks that may exist are those named since they were last found gone;
 * only they are queried (a run with many names would otherwise query every
 * name on every apply). */
static void check_holders(struct sim *s, const struct el_lock_cmd *cmd, bool decoded,
			  uint64_t index)
{
	static struct el_lock_query q;
	struct sim_ref *ref = &s->ref;
	if (decoded) {
		uint32_t named = lock_index(cmd->name, cmd->name_len);
		if (named < SIM_LOCKS)
			ref->exists[named] = true;
	}
	for (uint32_t lock = 0; lock < SIM_LOCKS; lock++) {
		if (!ref->exists[lock])
			continue;
		if (query(ref, lock, &q) != 0) {
			ref->exists[lock] = false;
			continue;
		}
		if (q.limit != 0 && q.n_holders + q.n_delayed > q.limit)
			sim_fail(s, "semaphore: lock %u has %u holders and %u delayed permits, limit %u, after %llu",
				 lock, q.n_holders, q.n_delayed, q.limit, (unsigned long long)index);
		else if (q.mode == EL_LOCK_EXCLUSIVE && q.limit == 0 && q.n_holders > 1)
			sim_fail(s, "mutual exclusion: lock %u has %u holders, exclusive, after %llu", lock,
				 q.n_holders, (unsigned long long)index);
	}
}

void sim_ref_apply(struct sim *s, const struct el_entry *e)
{
	struct sim_ref *ref = &s->ref;
	static struct el_lock_result res;
	static struct el_lock_cmd cmd;
	ref->applied = e->index;
	if (e->type != EL_ENTRY_NORMAL)
		return;
	bool decoded = el_lock_cmd_decode(&cmd, e->data, e->len) == 0;
	/* Timer commands (WAIT_TIMEOUT) name a request's seq too; only client
	 * commands are retries. */
	bool client_cmd = cmd.type != EL_CMD_WAIT_TIMEOUT && cmd.type != EL_CMD_EXPIRE_SESSION &&
			  cmd.type != EL_CMD_DELAY_END;
	bool dup = decoded && client_cmd && cmd.seq > 0 && seq_applied(ref, cmd.session, cmd.seq);
	uint64_t before = dup ? table_hash(&ref->table) : 0;
	bool delayed[SIM_LOCKS];
	note_delays(ref, delayed);
	el_lock_apply(&ref->table, e->index, e->data, e->len, &res);
	if (dup) {
		if (table_hash(&ref->table) != before)
			sim_fail(s, "exactly-once: a retry (type %u) of session %llu seq %llu acted again at %llu", cmd.type,
				 (unsigned long long)cmd.session, (unsigned long long)cmd.seq,
				 (unsigned long long)e->index);
		return;
	}
	if (decoded)
		check_result(s, &cmd, &res, e->index, delayed);
	check_holders(s, &cmd, decoded, e->index);
	if (res.err == EL_OK && cmd.type == EL_CMD_EXPIRE_SESSION)
		s->expiries_seen++;
	if (decoded && cmd.type != EL_CMD_KEEPALIVE)
		sim_log(s, "applied %llu: type %u session %llu seq %llu -> err %d token %llu queued %d",
			(unsigned long long)e->index, cmd.type, (unsigned long long)cmd.session,
			(unsigned long long)cmd.seq, res.err, (unsigned long long)res.token, res.queued);
}
