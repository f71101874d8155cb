/*
 * sim_clients.c - simulated lock clients, the way an application would use
 * the client library: open a session, keep it alive, take and release locks
 * (exclusive or shared; try, bounded wait or wait forever), read, retry a
 * request with the same seq after a timeout or a leader change, pause (a GC
 * pause, SIGSTOP) for longer than their TTL, crash and come back.
 *
 * Each client keeps its own lease deadline, counted from when a keepalive
 * was *sent*, minus a drift margin, and stops treating a lock as held at that
 * deadline: the intervals it records (sim_history.c) are what "as each client
 * sees it" means in the history checks.
 */
#include <stdio.h>
#include <string.h>

#include "el_error.h"
#include "sim.h"

uint32_t sim_names = SIM_NAMES_DEFAULT;

const char *sim_lock_name(uint32_t lock)
{
	static char names[SIM_LOCKS][12];
	if (lock >= SIM_LOCKS)
		return "?";
	if (names[lock][0] == '\0') {
		if (lock == SIM_LIVE_LOCK)
			memcpy(names[lock], "live", 5);
		else if (lock < 3)
			names[lock][0] = (char)('a' + lock);
		else
			snprintf(names[lock], sizeof(names[lock]), "n%u", lock);
	}
	return names[lock];
}

uint32_t sim_lock_of(const char *name, uint32_t len)
{
	if (len == 4 && memcmp(name, "live", 4) == 0)
		return SIM_LIVE_LOCK;
	uint32_t lock = SIM_LOCKS;
	if (len == 1 && name[0] >= 'a' && name[0] <= 'c') {
		lock = (uint32_t)(name[0] - 'a');
	} else if (len >= 2 && len <= 4 && name[0] == 'n' && name[1] != '0') {
		lock = 0;
		for (uint32_t i = 1; i < len; i++) {
			if (name[i] < '0' || name[i] > '9')
				return SIM_LOCKS;
			lock = lock * 10 + (uint32_t)(name[i] - '0');
		}
		if (lock < 3)
			return SIM_LOCKS;
	}
	return lock < sim_names ? lock : SIM_LOCKS;
}

static uint64_t margin_ms(uint32_t ttl_ms) { return ttl_ms / 20 + 5; }

static uint64_t req_id(const struct sim_client *c, const struct sim_request *q)
{
	uint64_t slot = q == &c->ka ? 1 : 0;
	return ((uint64_t)(c->id + 1) << 48) | (slot << 40) | (q->gen & 0xFFFFFFFFFFull);
}

/* Follow the leader hint, else try another node of the deployment (a client
 * is configured with the addresses of the nodes that exist). */
static void retarget(struct sim *s, struct sim_client *c, el_id_t hint)
{
	if (hint != 0) {
		c->target = hint;
		return;
	}
	el_id_t pick = (el_id_t)(1 + sim_rand(s) % s->p.n_nodes);
	for (uint32_t k = 0; k < s->p.n_nodes && !s->nodes[pick - 1].started; k++)
		pick = (el_id_t)(pick % s->p.n_nodes + 1);
	c->target = pick;
}

static void submit(struct sim *s, struct sim_client *c, struct sim_request *q)
{
	struct sim_node *n = &s->nodes[c->target - 1];
	q->sent_ms = s->now_ms;
	if (!n->up || s->now_ms < n->paused_until)
		return; /* lost on the way; retried after the timeout */
	el_id_t leader = 0;
	uint64_t local = sim_local_ms(s, n);
	int err = q->is_read ? el_node_read(&n->node, req_id(c, q), local, &leader)
			     : el_node_submit(&n->node, req_id(c, q), &q->cmd, local, &leader);
	if (err == EL_ENOTLEADER) {
		retarget(s, c, leader);
		q->sent_ms = 0; /* go again at once, there */
	}
	sim_drain(s, n);
}

static void start(struct sim *s, struct sim_client *c, struct sim_request *q,
		  const struct el_lock_cmd *cmd, bool is_read)
{
	memset(q, 0, sizeof(*q));
	q->active = true;
	q->gen = ++c->gen;
	q->first_sent_ms = s->now_ms;
	q->is_read = is_read;
	q->read_floor = s->max_committed;
	if (cmd != NULL)
		q->cmd = *cmd;
	submit(s, c, q);
}

static void cmd_for(struct sim_client *c, struct el_lock_cmd *cmd, uint8_t type, uint32_t lock)
{
	memset(cmd, 0, sizeof(*cmd));
	cmd->type = type;
	cmd->session = c->session;
	if (type != EL_CMD_OPEN_SESSION && type != EL_CMD_KEEPALIVE)
		cmd->seq = ++c->seq;
	if (lock < SIM_LOCKS) {
		const char *name = sim_lock_name(lock);
		cmd->name_len = (uint8_t)strlen(name);
		memcpy(cmd->name, name, cmd->name_len);
	}
}

/* ---- What a client believes it holds ------------------------------------ */

/* A client never uses a lock past its own lease deadline, whatever it was
 * doing (paused, crashed, waiting for an answer). */
static void stop_holding(struct sim *s, struct sim_client *c, uint64_t end_ms)
{
	if (!c->holding)
		return;
	if (end_ms > c->lease_end_ms)
		end_ms = c->lease_end_ms;
	sim_hold_close(s, c->hold_rec, end_ms);
	c->holding = false;
	sim_log(s, "client %u stops holding %s at %llu", c->id, sim_lock_name(c->lock),
		(unsigned long long)end_ms);
}

static void lose_session(struct sim *s, struct sim_client *c, uint64_t end_ms)
{
	stop_holding(s, c, end_ms);
	c->session = 0;
	c->main.active = false;
	c->ka.active = false;
}

static void grant_seen(struct sim *s, struct sim_client *c, uint32_t lock, uint8_t mode,
		       uint64_t token)
{
	if (c->holding || s->now_ms >= c->lease_end_ms)
		return; /* too late: the lease it was granted under is over */
	c->holding = true;
	c->lock = lock;
	c->mode = mode;
	c->token = token;
	c->hold_rec = sim_hold_open(s, c->id, lock, mode, token);
	sim_log(s, "client %u (session %llu) holds %s mode %u token %llu, lease to %llu", c->id,
		(unsigned long long)c->session, sim_lock_name(lock), mode, (unsigned long long)token,
		(unsigned long long)c->lease_end_ms);
	c->release_at_ms = s->now_ms + 10 + sim_rand(s) % (2 * c->ttl_ms);
	s->grants_seen++;
	if (lock != SIM_LIVE_LOCK)
		return;
	if (c->role == SIM_ROLE_LIVE_HOLDER) {
		/* The liveness probe: the holder dies holding the lock. */
		s->live_holder_dead_ms = s->now_ms;
		s->live_bound_span_ms = (uint64_t)(c->ttl_ms + s->p.live_delay_ms) * 103 / 100 +
					SIM_LEADER_BOUND_MS + SIM_LOCK_SLACK_MS;
		s->live_bound_ms = s->now_ms + s->live_bound_span_ms;
		stop_holding(s, c, s->now_ms);
		c->alive = false;
		sim_log(s, "client %u dies holding \"live\"", c->id);
	} else if (c->role == SIM_ROLE_LIVE_WAITER && s->live_granted_ms == 0) {
		s->live_granted_ms = s->now_ms;
		sim_log(s, "client %u granted \"live\"", c->id);
	}
}

static uint32_t lock_of(const struct el_lock_cmd *cmd)
{
	return sim_lock_of(cmd->name, cmd->name_len);
}

/* ---- Replies and events -------------------------------------------------- */

/* A final answer for a seq: every later answer for it must be the same. */
static bool final_answer(struct sim *s, struct sim_client *c, struct sim_request *q, int32_t err,
			 uint64_t token)
{
	if (q->final_seen) {
		if (q->cmd.seq != 0 && (q->final_err != err || q->final_token != token))
			sim_fail(s, "exactly-once: client %u seq %llu answered %d/%llu, then %d/%llu",
				 c->id, (unsigned long long)q->cmd.seq, q->final_err,
				 (unsigned long long)q->final_token, err, (unsigned long long)token);
		return false;
	}
	q->final_seen = true;
	q->final_err = err;
	q->final_token = token;
	q->active = false;
	return true;
}

static void on_session_reply(struct sim *s, struct sim_client *c, struct sim_request *q,
			     const struct el_node_reply *rep)
{
	if (!final_answer(s, c, q, rep->err, rep->session))
		return;
	if (rep->err == EL_EEXPIRED && c->session == q->cmd.session && c->session != 0) {
		if (s->now_ms < c->lease_end_ms)
			sim_fail(s, "session of client %u expired before its own deadline (%llu < %llu)",
				 c->id, (unsigned long long)s->now_ms,
				 (unsigned long long)c->lease_end_ms);
		lose_session(s, c, s->now_ms);
		return;
	}
	if (rep->err != EL_OK)
		return;
	uint64_t lease_end = q->first_sent_ms + c->ttl_ms - margin_ms(c->ttl_ms);
	if (q->cmd.type == EL_CMD_OPEN_SESSION) {
		if (c->session != 0)
			return; /* an answer to an open retried after a timeout */
		c->session = rep->session;
		c->lease_end_ms = lease_end;
	} else if (c->session == q->cmd.session && lease_end > c->lease_end_ms &&
		   s->now_ms < c->lease_end_ms) {
		c->lease_end_ms = lease_end;
	}
	c->next_keepalive_ms = s->now_ms + c->ttl_ms / 4;
}

static void on_reply(struct sim *s, struct sim_client *c, struct sim_request *q,
		     const struct el_node_reply *rep)
{
	if (rep->err == EL_ENOTLEADER) {
		retarget(s, c, rep->leader);
		q->sent_ms = 0;
		return;
	}
	if (q->is_read) {
		if (rep->index < q->read_floor)
			sim_fail(s, "linearizable read at %llu misses a write committed at %llu",
				 (unsigned long long)rep->index, (unsigned long long)q->read_floor);
		s->reads_checked += final_answer(s, c, q, rep->err, 0);
		return;
	}
	uint8_t type = q->cmd.type;
	if (type == EL_CMD_OPEN_SESSION || type == EL_CMD_KEEPALIVE) {
		on_session_reply(s, c, q, rep);
		return;
	}
	if (type == EL_CMD_ACQUIRE && rep->err == EL_OK && rep->queued) {
		q->queued = true; /* the grant comes as an event, or with a retry */
		return;
	}
	if (!final_answer(s, c, q, rep->err, rep->token))
		return;
	if (type == EL_CMD_ACQUIRE && rep->err == EL_OK && rep->count == 1)
		grant_seen(s, c, lock_of(&q->cmd), q->cmd.mode, rep->token);
	if (rep->err == EL_EEXPIRED && c->session == q->cmd.session)
		lose_session(s, c, s->now_ms);
}

static void on_event(struct sim *s, struct sim_client *c, const struct el_lock_event *ev)
{
	struct sim_request *q = &c->main;
	if (!q->active || !q->queued || ev->seq != q->cmd.seq)
		return;
	if (ev->kind == EL_EV_GRANTED) {
		if (final_answer(s, c, q, EL_OK, ev->token))
			grant_seen(s, c, lock_of(&q->cmd), q->cmd.mode, ev->token);
	} else if (ev->kind == EL_EV_WAIT_TIMEOUT || ev->kind == EL_EV_CANCELED) {
		q->active = false;
	}
}

static struct sim_client *reachable_client(struct sim *s, uint32_t id)
{
	if (id >= s->p.n_clients)
		return NULL;
	struct sim_client *c = &s->clients[id];
	return c->alive && s->now_ms >= c->paused_until ? c : NULL;
}

void sim_clients_deliver(struct sim *s, struct sim_node *n, const struct el_node_ready *rd)
{
	for (uint32_t i = 0; i < rd->n_replies && !s->failed; i++) {
		const struct el_node_reply *rep = &rd->replies[i];
		struct sim_client *c = reachable_client(s, (uint32_t)(rep->req_id >> 48) - 1);
		if (c == NULL)
			continue;
		struct sim_request *q = (rep->req_id >> 40) & 1 ? &c->ka : &c->main;
		if (q->gen == (rep->req_id & 0xFFFFFFFFFFull) && (q->active || q->final_seen))
			on_reply(s, c, q, rep);
	}
	for (uint32_t i = 0; i < rd->n_events && !s->failed; i++) {
		for (uint32_t k = 0; k < s->p.n_clients; k++) {
			struct sim_client *c = reachable_client(s, k);
			if (c != NULL && c->session == rd->events[i].session && c->target == n->id)
				on_event(s, c, &rd->events[i]);
		}
	}
}

/* ---- The client's loop ---------------------------------------------------- */

static void resend_due(struct sim *s, struct sim_client *c, struct sim_request *q)
{
	if (!q->active)
		return;
	uint64_t wait = q->queued ? 4 * SIM_REQ_TIMEOUT_MS : SIM_REQ_TIMEOUT_MS;
	if (q->sent_ms != 0 && s->now_ms < q->sent_ms + wait)
		return;
	if (q->sent_ms != 0 && sim_pct(s, 50))
		retarget(s, c, 0); /* no answer: maybe that node is gone */
	submit(s, c, q);
}

static void next_action(struct sim *s, struct sim_client *c)
{
	struct el_lock_cmd cmd;
	if (c->holding) {
		bool live = c->lock == SIM_LIVE_LOCK;
		if (!live && (s->now_ms >= c->release_at_ms || c->role != SIM_ROLE_RANDOM)) {
			stop_holding(s, c, s->now_ms); /* stop using it before saying so */
			cmd_for(c, &cmd, EL_CMD_RELEASE, c->lock);
			cmd.token = c->token;
			start(s, c, &c->main, &cmd, false);
		}
		return;
	}
	uint32_t lock = (uint32_t)(sim_rand(s) % sim_names);
	bool go = sim_pct(s, 50);
	if (c->role == SIM_ROLE_LIVE_HOLDER) {
		lock = SIM_LIVE_LOCK;
	} else if (c->role == SIM_ROLE_LIVE_WAITER) {
		if (s->live_holder_dead_ms == 0 || s->live_granted_ms != 0)
			return;
		lock = SIM_LIVE_LOCK;
		if (s->live_asked_ms == 0) { /* the bound counts from here at the latest */
			s->live_asked_ms = s->now_ms;
			if (s->now_ms + s->live_bound_span_ms > s->live_bound_ms)
				s->live_bound_ms = s->now_ms + s->live_bound_span_ms;
			sim_log(s, "client %u asks for \"live\"; bound %llu", c->id,
				(unsigned long long)s->live_bound_ms);
		}
	} else if (go && sim_pct(s, 15)) {
		start(s, c, &c->main, NULL, true);
		return;
	} else if (!go) {
		return;
	}
	cmd_for(c, &cmd, EL_CMD_ACQUIRE, lock);
	bool live = lock == SIM_LIVE_LOCK;
	cmd.mode = !live && sim_pct(s, 30) ? EL_LOCK_SHARED : EL_LOCK_EXCLUSIVE;
	if (SIM_IS_SEM(lock)) { /* the same draws as a lock's: seeds keep their runs */
		cmd.mode = EL_LOCK_EXCLUSIVE;
		cmd.limit = SIM_SEM_LIMIT;
	}
	uint32_t w = (uint32_t)(sim_rand(s) % 3);
	cmd.wait_ms = live ? EL_WAIT_FOREVER : w == 0 ? 0 : w == 1 ? 50 + (uint32_t)(sim_rand(s) % 800) : EL_WAIT_FOREVER;
	cmd.delay_ms = live ? s->p.live_delay_ms : (uint32_t)(sim_rand(s) % 300);
	start(s, c, &c->main, &cmd, false);
}

static uint64_t open_nonce(const struct sim *s, const struct sim_client *c)
{
	uint64_t z = s->seed ^ ((uint64_t)c->id << 56) ^ (c->gen + 1) * 0x9E3779B97F4A7C15ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	z ^= z >> 31;
	return z != 0 ? z : 1;
}

static void client_step(struct sim *s, struct sim_client *c)
{
	struct el_lock_cmd cmd;
	if (c->session != 0 && s->now_ms >= c->lease_end_ms)
		lose_session(s, c, c->lease_end_ms);
	resend_due(s, c, &c->main);
	resend_due(s, c, &c->ka);
	if (c->session == 0) {
		if (!c->main.active) {
			cmd_for(c, &cmd, EL_CMD_OPEN_SESSION, SIM_LOCKS);
			c->ttl_ms = 300 + (uint32_t)(sim_rand(s) % 1200);
			cmd.ttl_ms = c->ttl_ms;
			cmd.client_len = 2;
			cmd.client[0] = 'c';
			cmd.client[1] = (char)('0' + c->id);
			/* one nonce per open, the same in every retry of it (drawn
			 * from the seed without touching the run's random stream) */
			cmd.nonce = open_nonce(s, c);
			start(s, c, &c->main, &cmd, false);
		}
		return;
	}
	if (!c->ka.active && s->now_ms >= c->next_keepalive_ms) {
		cmd_for(c, &cmd, EL_CMD_KEEPALIVE, SIM_LOCKS);
		start(s, c, &c->ka, &cmd, false);
	}
	if (!c->main.active)
		next_action(s, c);
}

void sim_clients_work(struct sim *s)
{
	for (uint32_t i = 0; i < s->p.n_clients && !s->failed; i++) {
		struct sim_client *c = &s->clients[i];
		if (c->alive && s->now_ms >= c->paused_until)
			client_step(s, c);
	}
}

/* A client process restarts: what it held is gone with it (the cluster
 * keeps the old session until it expires). */
static void restart_client(struct sim *s, struct sim_client *c)
{
	stop_holding(s, c, s->now_ms);
	uint32_t id = c->id;
	uint64_t gen = c->gen;
	memset(c, 0, sizeof(*c));
	c->id = id;
	c->gen = gen + 1000; /* replies to the old incarnation are ignored */
	c->alive = true;
	retarget(s, c, 0);
}

void sim_clients_init(struct sim *s)
{
	for (uint32_t i = 0; i < s->p.n_clients; i++) {
		s->clients[i].id = i;
		restart_client(s, &s->clients[i]);
	}
}

void sim_clients_fault(struct sim *s)
{
	struct sim_client *c = &s->clients[sim_rand(s) % s->p.n_clients];
	if (!c->alive)
		return;
	if (sim_pct(s, s->p.client_crash_pct)) {
		sim_log(s, "client %u restarts", c->id);
		restart_client(s, c);
		s->client_faults++;
	} else if (sim_pct(s, s->p.client_pause_pct)) {
		/* Often longer than its TTL: it must notice its lease is over. */
		c->paused_until = s->now_ms + sim_rand(s) % (2 * (c->ttl_ms + 1));
		s->client_faults++;
	}
}

void sim_clients_heal(struct sim *s)
{
	for (uint32_t i = 0; i < s->p.n_clients; i++) {
		struct sim_client *c = &s->clients[i];
		c->paused_until = 0;
		if (!c->alive)
			restart_client(s, c);
	}
	s->clients[0].role = SIM_ROLE_LIVE_HOLDER;
	s->clients[1].role = SIM_ROLE_LIVE_WAITER;
}

void sim_clients_stop(struct sim *s)
{
	for (uint32_t i = 0; i < s->p.n_clients; i++) {
		struct sim_client *c = &s->clients[i];
		stop_holding(s, c, s->now_ms);
		c->alive = false;
	}
}

void sim_clients_finish(struct sim *s)
{
	for (uint32_t i = 0; i < s->p.n_clients; i++) {
		struct sim_client *c = &s->clients[i];
		stop_holding(s, c, s->now_ms);
	}
	sim_check_holds(s);
}
