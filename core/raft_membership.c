/*
 * raft_membership.c - single-server configuration changes (Raft
 * dissertation, chapter 4) and leadership transfer.
 *
 * A configuration takes effect as soon as its entry is appended, and only one
 * may be uncommitted at a time; a leader must first commit an entry of its own
 * term (the fix for the single-server change bug found after the thesis).
 * New voters join as learners and are promoted once caught up, so adding a
 * slow node never costs the cluster its quorum. A leader that removes itself
 * keeps leading without counting itself until the removal commits, then steps
 * down.
 */
#include <string.h>

#include "el_assert.h"
#include "el_error.h"
#include "el_raft_internal.h"

/* Rebuild the leader's progress table to match r->conf, keeping what it
 * knew about members that stay. */
void el_raft__remap_progress(struct el_raft *r)
{
	struct el_progress old[EL_NODES_MAX];
	EL_ASSERT(r->state == EL_LEADER);
	EL_ASSERT(r->conf.n <= EL_NODES_MAX);
	memcpy(old, r->pr, sizeof(old));
	for (uint32_t i = 0; i < r->conf.n; i++) {
		el_id_t id = r->conf.m[i].id;
		struct el_progress *pr = &r->pr[i];
		uint32_t j = 0;
		while (j < EL_NODES_MAX && old[j].id != id)
			j++;
		if (j < EL_NODES_MAX) {
			*pr = old[j];
			continue;
		}
		memset(pr, 0, sizeof(*pr));
		pr->id = id;
		pr->state = EL_PR_PROBE;
		pr->next = r->last_index + 1;
	}
	for (uint32_t i = r->conf.n; i < EL_NODES_MAX; i++)
		memset(&r->pr[i], 0, sizeof(r->pr[i]));
}

static int append_conf(struct el_raft *r, const struct el_conf *c, uint64_t *index_out)
{
	uint8_t buf[EL_CONF_ENCODED_MAX];
	EL_ASSERT(r->state == EL_LEADER);
	EL_ASSERT(r->conf_index <= r->commit); /* one uncommitted change at a time */
	int len = el_conf_encode(c, buf, sizeof(buf));
	EL_ASSERT(len > 0);
	uint64_t index = el_raft__append_local(r, EL_ENTRY_CONF, buf, (uint16_t)len);
	el_raft__set_conf(r, c, index);
	r->flush_pending = true;
	if (index_out != NULL)
		*index_out = index;
	return 0;
}

static int change_conf(const struct el_raft *r, struct el_conf *c, enum el_conf_op op, el_id_t id)
{
	EL_ASSERT(c->n <= EL_NODES_MAX);
	EL_ASSERT(id != 0);
	int slot = el_raft__slot_of(c, id);
	switch (op) {
	case EL_CONF_ADD_VOTER:
	case EL_CONF_ADD_LEARNER:
		if (slot >= 0)
			return EL_EINVAL;
		if (c->n >= EL_NODES_MAX)
			return EL_EFULL;
		c->m[c->n].id = id;
		c->m[c->n].role = op == EL_CONF_ADD_VOTER ? EL_MEMBER_CATCHING_UP : EL_MEMBER_LEARNER;
		c->n++;
		return 0;
	case EL_CONF_PROMOTE:
		if (slot < 0 || c->m[slot].role == EL_MEMBER_VOTER)
			return EL_EINVAL;
		if (r->pr[slot].match < r->commit)
			return EL_EBUSY; /* not caught up yet */
		c->m[slot].role = EL_MEMBER_VOTER;
		return 0;
	case EL_CONF_REMOVE:
		if (slot < 0)
			return EL_ENOTFOUND;
		c->m[slot] = c->m[c->n - 1];
		c->n--;
		return el_raft__voters(c) > 0 ? 0 : EL_EINVAL;
	default:
		return EL_EINVAL;
	}
}

int el_raft_propose_conf(struct el_raft *r, enum el_conf_op op, el_id_t id, uint64_t now_ms,
			 uint64_t *index_out)
{
	el_raft__enter(r, now_ms);
	if (r->state != EL_LEADER)
		return EL_ENOTLEADER;
	if (id == 0)
		return EL_EINVAL;
	/* One change at a time, and only after an entry of our own term has
	 * committed: the single-server change rule and its fix (thesis 4.1). */
	if (r->conf_index > r->commit || r->transferee != 0 || !el_raft__committed_in_term(r))
		return EL_EBUSY;
	if (!el_raft__conf_admissible(r))
		return EL_EFULL;
	struct el_conf c = r->conf;
	int err = change_conf(r, &c, op, id);
	if (err != 0)
		return err;
	return append_conf(r, &c, index_out);
}

/* A learner marked for promotion becomes a voter once it holds every
 * committed entry (so the quorum it joins can commit without waiting). */
void el_raft__maybe_promote(struct el_raft *r, struct el_progress *pr)
{
	const struct el_member *m = el_conf_find(&r->conf, pr->id);
	EL_ASSERT(r->state == EL_LEADER);
	if (m == NULL || m->role != EL_MEMBER_CATCHING_UP || pr->match < r->commit)
		return;
	if (r->conf_index > r->commit || r->transferee != 0 || !el_raft__committed_in_term(r) ||
	    !el_raft__conf_admissible(r))
		return;
	struct el_conf c = r->conf;
	if (change_conf(r, &c, EL_CONF_PROMOTE, pr->id) == 0)
		append_conf(r, &c, NULL);
}

/* After the commit index moved: a leader whose removal committed steps down.
 * A removed node simply never campaigns again (it is no voter); the daemon
 * stops once it knows its removal committed (cmd/edgelockd/daemon.c). */
void el_raft__after_commit(struct el_raft *r)
{
	EL_ASSERT(r->commit <= r->last_index);
	if (r->conf_index > r->commit || r->conf.n == 0)
		return;
	const struct el_member *self = el_conf_find(&r->conf, r->cfg.id);
	if (r->state == EL_LEADER && (self == NULL || self->role != EL_MEMBER_VOTER))
		el_raft__become_follower(r, r->term, 0);
}

/* Leadership transfer (Raft thesis 3.10): once the target holds our whole
 * log, TimeoutNow makes it campaign at once; its vote requests carry
 * EL_MSG_FORCE so that voters in a leader's lease still answer them. */
void el_raft__maybe_finish_transfer(struct el_raft *r, struct el_progress *pr)
{
	EL_ASSERT(r->state == EL_LEADER);
	if (r->transferee != pr->id || pr->match != r->last_index)
		return;
	el_raft__msg(r, EL_MSG_TIMEOUT_NOW, pr->id);
}

int el_raft_force_new_cluster(struct el_raft *r)
{
	EL_ASSERT(r != NULL);
	EL_ASSERT(!r->in_ready);
	if (r->conf.n == 0 || el_raft__slot_of(&r->conf, r->cfg.id) < 0)
		return EL_EINVAL; /* no state, or not a member */
	if (el_raft__log_full(r) || r->term >= EL_TERM_MAX)
		return EL_EFULL;
	struct el_conf alone = {.n = 1};
	alone.m[0].id = r->cfg.id;
	alone.m[0].role = EL_MEMBER_VOTER;
	uint8_t buf[EL_CONF_ENCODED_MAX];
	const int len = el_conf_encode(&alone, buf, sizeof(buf));
	EL_ASSERT(len > 0);
	/* A term nobody else has used, so the forced entry conflicts with
	 * nothing any old member could still hold at its index. */
	el_raft__become_follower(r, r->term + 1, 0);
	r->vote = r->cfg.id;
	const uint64_t index = el_raft__append_local(r, EL_ENTRY_CONF, buf, (uint16_t)len);
	el_raft__set_conf(r, &alone, index);
	EL_ASSERT(r->conf.n == 1);
	return 0;
}

int el_raft_transfer(struct el_raft *r, el_id_t target, uint64_t now_ms)
{
	el_raft__enter(r, now_ms);
	if (r->state != EL_LEADER)
		return EL_ENOTLEADER;
	if (target == r->cfg.id || !el_raft__is_voter(r, target))
		return EL_EINVAL;
	if (r->transferee != 0)
		return EL_EBUSY;
	r->transferee = target;
	r->transfer_deadline_ms = r->now_ms + r->cfg.election_ms_min;
	struct el_progress *pr = el_raft__progress(r, target);
	EL_ASSERT(pr != NULL);
	if (pr->match == r->last_index)
		el_raft__maybe_finish_transfer(r, pr);
	else
		el_raft__send_append(r, pr, true);
	return 0;
}
