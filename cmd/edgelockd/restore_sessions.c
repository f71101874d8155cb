/*
 * restore_sessions.c - a restore ends every session of the backup, and
 * keeps what they held in lock-delay.
 *
 * A backup holds the sessions alive when it was taken. Restored as they
 * were, they came back holding what they held then, locks released since
 * included, and their clients, renewing against the restored cluster,
 * were told their leases were healthy for good: the old holder P of `demo`
 * (released after the backup) and Q (which took it after) both believed
 * they held it (an outside tester). No session outlives a restore: the
 * table the restore installs has none, so a client's next keepalive gets
 * EEXPIRED and it goes LOST; it opens a new session and acquires again.
 *
 * A client may go on believing it holds a lock until its own lease ends,
 * up to its session's TTL after its last renewal. So every lock a session
 * held at the backup stays unavailable (in lock-delay, EDELAYED to a try,
 * queued otherwise) for EL_LOCK_DELAY_MAX_MS (RESTORE_DELAY_MS), counted by
 * the restored cluster's first leader, which arms every lock-delay when it
 * takes office (core/node_timer.c).
 *
 * All of it is the core's own commands, applied to the backup's table at
 * the indexes after its own, the same on every node (no clock, no random
 * key in anything replicated), so every node restored from one backup
 * installs the same bytes, and tokens still start above the backup's:
 *   - CLOSE_SESSION for each session: holds released, waits and watches
 *     dropped (a waiter granted by a close is closed in turn). Not
 *     EXPIRE_SESSION: its lock-delay is what the holder asked for at its
 *     acquire (often none, never on a shared hold), not what a restore needs;
 *   - then stand-in sessions that take each such name again, one hold per
 *     backup holder of a semaphore, one for a lock (shared or exclusive),
 *     exclusively with that lock-delay, and are expired at once: the
 *     delay that expiry starts is the one the core already keeps.
 */
#include <stdlib.h>
#include <string.h>

#include "el_daemon.h"
#include "el_error.h"

/* A name some session held at the backup: how many held it, and as what.
 * Its name is copied: closing the sessions frees its slot, which a
 * stand-in's acquire may reuse. */
struct held {
	uint8_t holders;
	uint8_t limit;
	uint8_t name_len;
	char name[EL_NAME_MAX];
};

/* One command at the next index; its error (EL_OK when it applied). */
static int apply(struct el_lock_table *t, const struct el_lock_cmd *c, struct el_lock_result *res)
{
	el_lock_apply_cmd(t, t->last_index + 1, c, res);
	return res->err;
}

/* The delay for a lock held at the backup: the lock-delay cap, whatever
 * its holders' TTLs. Not their longest TTL: the lock may have passed since
 * to a client of a longer one, which went on believing it held it while
 * the restored cluster granted it again (an outside retest: 8.6 s of two
 * holders after a 5 s delay). A constant, not max_session_ttl_ms: every
 * node restored from one backup must install the same bytes, and the
 * nodes' configs may differ. */
#define RESTORE_DELAY_MS EL_LOCK_DELAY_MAX_MS

/* Every name held at the backup into out; their count. */
static uint32_t collect(const struct el_lock_table *t, struct held *out, struct el_lock_query *q)
{
	uint32_t n = 0;
	for (el_slot_t l = el_lock_next_lock(t, 0); l != EL_LOCK_NONE;
	     l = el_lock_next_lock(t, (uint32_t)l + 1)) {
		const struct el_lock_entry *e = &t->locks[l];
		if (el_lock_query(t, e->name, e->name_len, q) != EL_OK || q->n_holders == 0)
			continue;
		struct held *h = &out[n++];
		h->holders = q->n_holders;
		h->limit = q->limit;
		h->name_len = e->name_len;
		memcpy(h->name, e->name, e->name_len);
	}
	return n;
}

/* How many stand-ins take h: one per holder of a semaphore, one for a lock. */
static uint32_t stand_ins_for(const struct held *h)
{
	return h->limit ? h->holders : 1u;
}

/* Stand-in `rank` (0, 1, ...): a session that takes each name with more
 * than rank holders at the backup (a lock: rank 0 only) and expires. */
static int stand_in(struct el_lock_table *t, const struct held *held, uint32_t n, uint32_t rank,
		    struct el_lock_result *res)
{
	static const char client[] = "restore"; /* fits the small profile's names */
	_Static_assert(sizeof client - 1 <= EL_CLIENT_NAME_MAX, "client name");
	struct el_lock_cmd c = { .type = EL_CMD_OPEN_SESSION, .ttl_ms = 1,
				 .client_len = sizeof client - 1 };
	memcpy(c.client, client, sizeof client - 1);
	int rc = apply(t, &c, res);
	const uint64_t session = res->session, opened = t->last_index;
	uint64_t seq = 0;
	for (uint32_t i = 0; i < n && rc == EL_OK; i++) {
		const struct held *h = &held[i];
		if (rank >= stand_ins_for(h))
			continue;
		seq++;
		c = (struct el_lock_cmd){ .type = EL_CMD_ACQUIRE, .session = session, .seq = seq,
					  .mode = EL_LOCK_EXCLUSIVE, .delay_ms = RESTORE_DELAY_MS,
					  .limit = h->limit, .name_len = h->name_len };
		memcpy(c.name, h->name, h->name_len);
		rc = apply(t, &c, res);
	}
	c = (struct el_lock_cmd){ .type = EL_CMD_EXPIRE_SESSION, .session = session,
				  .token = opened };
	return rc == EL_OK ? apply(t, &c, res) : rc;
}

int el_d_restore_end_sessions(struct el_lock_table *t, struct el_d_restore_ended *out)
{
	memset(out, 0, sizeof *out);
	struct held *held = calloc(EL_LOCKS_MAX, sizeof *held);
	struct el_lock_query *q = malloc(sizeof *q);
	struct el_lock_result *res = malloc(sizeof *res);
	int rc = held != NULL && q != NULL && res != NULL ? EL_OK : EL_EFULL;
	const uint32_t n = rc == EL_OK ? collect(t, held, q) : 0;
	uint32_t ranks = 0;
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t r = stand_ins_for(&held[i]);
		ranks = r > ranks ? r : ranks;
	}
	for (uint32_t s = 0; s < EL_SESSIONS_MAX && rc == EL_OK; s++) {
		if (t->sessions[s].id == 0)
			continue;
		const struct el_lock_cmd c = { .type = EL_CMD_CLOSE_SESSION,
					       .session = t->sessions[s].id };
		rc = apply(t, &c, res);
		out->sessions++;
	}
	for (uint32_t r = 0; r < ranks && rc == EL_OK; r++)
		rc = stand_in(t, held, n, r, res);
	out->locks = n;
	out->delay_ms = n > 0 ? RESTORE_DELAY_MS : 0;
	free(held);
	free(q);
	free(res);
	return rc;
}
