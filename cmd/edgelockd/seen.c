/*
 * seen.c - the last request each session made, so that a retry can be held
 * to what it retries (docs/protocol.md, "Sessions and exactly-once").
 *
 * The lock table keeps a session's last seq and its reply, but not what that
 * request was: a RELEASE sent with the seq of an earlier ACQUIRE would get
 * the ACQUIRE's stored reply, err 0, and its client would think it released.
 * The daemon keeps the type and name of that request beside the table
 * (d->seen, by session slot) and refuses, before proposing anything, a
 * request whose (session, seq) is the one seen with another type or with
 * another name, mode, permits, token or value (name_hash).
 * The check lives here, not in core/, because the firmware's flash has no
 * room for a name per session nor for the code comparing it, and because a
 * refusal before the log changes nothing on any replica.
 *
 * Every node learns from the entries it applies (el_d_entries_ahead, serve.c:
 * so a new leader knows the requests its predecessor committed), and the
 * leader also from the requests it proposes (a retry may come before its
 * first attempt commits). A session opened in the same batch as its first
 * request is learned at that proposal only; a record lost that way makes
 * the check fall back to the table's stored reply, as before, never refuse
 * a true retry.
 */
#include <string.h>

#include "el_daemon.h"
#include "el_error.h"

/* How far past its last seq a session's next seq may jump: far more than any
 * client has in flight, yet a session can never reach 2^64 - 1, after which
 * no seq would be new and every request would get ESTALE. */
#define SEQ_JUMP_MAX (UINT64_C(1) << 32)

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const uint8_t *)p)[i]) * UINT64_C(1099511628211);
	return h;
}

/* What a request asks, as FNV-1a over its name, mode, permits, token and
 * value: a retry sends the same; another request differs but for a 2^-64
 * chance, which only lets a misused seq through as before. Its wait and
 * lock-delay are left out: a client may send what is left of its wait. */
static uint64_t name_hash(const struct el_lock_cmd *c)
{
	uint64_t h = fnv1a(UINT64_C(14695981039346656037), c->name, c->name_len);
	const uint8_t how[2] = { c->mode, c->limit };
	h = fnv1a(h, how, sizeof how);
	h = fnv1a(h, &c->token, sizeof c->token);
	return fnv1a(h, c->value, c->value_len);
}

/* The commands a session numbers with seq (WAIT_TIMEOUT is the leader's). */
static bool numbered(uint8_t type)
{
	return type == EL_CMD_ACQUIRE || type == EL_CMD_RELEASE || type >= EL_CMD_CAMPAIGN;
}

static struct el_d_seen *seen_of(struct el_daemon *d, uint64_t session)
{
	el_slot_t slot = el_lock_session_slot(el_node_table(d->node), session);
	return slot == EL_LOCK_NONE ? NULL : &d->seen[slot];
}

void el_d_seen_note(struct el_daemon *d, const struct el_lock_cmd *c)
{
	struct el_d_seen *s = numbered(c->type) ? seen_of(d, c->session) : NULL;
	if (s == NULL || (s->session == c->session && s->seq >= c->seq))
		return; /* an older request, or the one already seen */
	s->session = c->session;
	s->seq = c->seq;
	s->type = c->type;
	s->name_hash = name_hash(c);
}

const char *el_d_seen_refusal(struct el_daemon *d, const struct el_lock_cmd *c)
{
	const struct el_d_seen *s = numbered(c->type) ? seen_of(d, c->session) : NULL;
	if (s == NULL)
		return NULL; /* no such session: the table answers */
	const struct el_lock_table *t = el_node_table(d->node);
	const uint64_t last = t->sessions[el_lock_session_slot(t, c->session)].last_seq;
	if (c->seq > last && c->seq - last > SEQ_JUMP_MAX)
		return "seq jumps more than 2^32 past the session's last";
	if (s->session == c->session && s->seq == c->seq &&
	    (s->type != c->type || s->name_hash != name_hash(c)))
		return "seq already used by another request (its type, name, mode, permits, "
		       "token or value differ)";
	return NULL;
}
