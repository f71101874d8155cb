/*
 * fuzz_replica.c - libFuzzer target for a live replica: hostile peer
 * messages delivered to a running el_node in the middle of a small cluster.
 *
 * The input is a program. Its operations drive three voters and a spare
 * (which joins when the leader adds it) through elections, lock traffic,
 * lost and duplicated messages, partitions, compaction, chunked snapshots,
 * membership changes, leadership transfers and restarts from a modelled
 * disk; and, among them, deliver to one node (the victim) messages built
 * from the input: every message type, fields picked near the victim's own
 * term and indexes or at the bounds, entries from its log or crafted,
 * snapshots from a real lock table, a corrupted one or plain bytes. Each
 * hostile message passes the wire codec (it is encoded and decoded first),
 * so a faulty or compromised peer could send it.
 *
 * Checked after every step: no assert (el_panic aborts) and no sanitizer
 * report; per node and life, term, commit, applied and the snapshot index
 * never move back; a committed entry never changes; a refused message
 * changes nothing (a snapshot refused once assembled installs nothing); and
 * at the end every node can reload its own disk.
 * Built twice: with the default limits and with the small board config.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_error.h"
#include "el_lock.h"
#include "el_node.h"
#include "el_node_internal.h" /* el_node__write_snapshot: the fuzzer compacts at will */
#include "el_wire.h"

#define NODES 4   /* ids 1..3 voters, 4 the spare */
#define OPS_MAX 512
#define QMAX 96
#define ELECTION_MS 100
#define HEARTBEAT_MS 20

/* ---- Input ------------------------------------------------------------- */

static const uint8_t *in;
static size_t in_left;

static uint8_t byte(void)
{
	if (in_left == 0)
		return 0;
	in_left--;
	return *in++;
}

static uint64_t u64(void)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | byte();
	return v;
}

static void bug(const char *what, el_id_t id)
{
	fprintf(stderr, "fuzz_replica: node %u: %s\n", id, what);
	abort();
}

/* ---- The cluster --------------------------------------------------------- */

struct disk {
	bool has_snap;
	struct el_snapshot_meta snap;
	uint8_t snap_data[EL_SNAPSHOT_MAX];
	bool has_hs;
	struct el_hard_state hs;
	uint64_t last;
	struct el_entry log[EL_LOG_WINDOW];
};

struct fnode {
	bool up;
	struct el_node node;
	struct disk disk;
	uint64_t seen_term, seen_commit, seen_applied, seen_snap;
	/* the term of each committed entry, by slot, with its index */
	uint64_t c_index[EL_LOG_WINDOW];
	uint64_t c_term[EL_LOG_WINDOW];
};

struct qmsg {
	struct el_msg m;
	struct el_entry entries[EL_MSG_ENTRIES_MAX];
	uint8_t data[EL_SNAPSHOT_CHUNK];
};

static struct fnode nodes[NODES + 1];
static struct el_node scratch; /* reload checks */
static struct qmsg queue[QMAX];
static uint32_t queued;
static bool cut[NODES + 1];
static uint64_t now;
static uint64_t seq;
static el_id_t victim;
static uint64_t sessions[8]; /* sessions the cluster opened, from replies */

static struct el_raft *raft(el_id_t id) { return el_node_raft(&nodes[id].node); }

static void check_node(el_id_t id)
{
	struct fnode *f = &nodes[id];
	const struct el_raft *r = raft(id);
	uint64_t snap = el_raft_snapshot(r)->index;
	if (el_raft_term(r) < f->seen_term || el_raft_commit(r) < f->seen_commit ||
	    el_raft_applied(r) < f->seen_applied || snap < f->seen_snap)
		bug("term, commit, applied or snapshot moved back", id);
	f->seen_term = el_raft_term(r);
	f->seen_commit = el_raft_commit(r);
	f->seen_applied = el_raft_applied(r);
	f->seen_snap = snap;
}

/* A committed entry never changes (checked after every operation). */
static void check_committed(el_id_t id)
{
	struct fnode *f = &nodes[id];
	const struct el_raft *r = raft(id);
	for (uint64_t i = el_raft_snapshot(r)->index + 1; i <= el_raft_commit(r); i++) {
		uint32_t slot = (uint32_t)(i % EL_LOG_WINDOW);
		uint64_t term = el_raft_term_at(r, i);
		if (f->c_index[slot] != i) {
			f->c_index[slot] = i;
			f->c_term[slot] = term;
		} else if (f->c_term[slot] != term) {
			bug("a committed entry changed", id);
		}
	}
}

static void enqueue(const struct el_msg *m)
{
	if (queued >= QMAX || m->to == 0 || m->to > NODES || cut[m->from] || cut[m->to])
		return;
	struct qmsg *q = &queue[queued++];
	q->m = *m;
	if (m->n_entries > 0)
		memcpy(q->entries, m->entries, m->n_entries * sizeof(struct el_entry));
	if (m->data_len > 0)
		memcpy(q->data, m->data, m->data_len);
}

static void persist(struct fnode *f, const struct el_ready *rd)
{
	struct disk *d = &f->disk;
	if (rd->snapshot != NULL) {
		d->has_snap = true;
		d->snap = *rd->snapshot;
		memcpy(d->snap_data, rd->snapshot_data, rd->snapshot->len);
		if (d->last < rd->snapshot->index)
			d->last = rd->snapshot->index;
	}
	if (d->last >= rd->persist_first)
		d->last = rd->persist_first - 1;
	if (rd->hard_state_changed) {
		d->hs = rd->hs;
		d->has_hs = true;
	}
	for (uint64_t i = rd->persist_first; i <= rd->persist_last; i++) {
		d->log[i % EL_LOG_WINDOW] = *el_raft_entry(el_node_raft(&f->node), i);
		d->last = i;
	}
}

static void drain(el_id_t id)
{
	struct fnode *f = &nodes[id];
	for (int round = 0; round < 8 && f->up && el_node_has_ready(&f->node); round++) {
		struct el_node_ready rd;
		el_node_ready(&f->node, &rd);
		persist(f, &rd.raft);
		for (uint32_t i = 0; i < rd.raft.n_msgs; i++)
			enqueue(&rd.raft.msgs[i]);
		for (uint32_t i = 0; i < rd.n_replies; i++)
			if (rd.replies[i].err == EL_OK && rd.replies[i].session != 0)
				sessions[rd.replies[i].session % 8] = rd.replies[i].session;
		if (el_node_advance(&f->node, &rd, now) != 0)
			f->up = false; /* a snapshot did not restore: the node stops */
	}
	check_node(id);
}

static void config(struct el_node_config *cfg, el_id_t id)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->raft.id = id;
	cfg->raft.election_ms_min = ELECTION_MS;
	cfg->raft.heartbeat_ms = HEARTBEAT_MS;
	cfg->raft.prevote = true;
	cfg->raft.check_quorum = true;
}

/* Load a node from a disk, as a restart does. Returns 0 or the error. */
static int load(struct el_node *n, el_id_t id, const struct disk *d)
{
	struct el_node_config cfg;
	config(&cfg, id);
	if (el_node_init(n, &cfg, seq++) != 0)
		bug("init failed", id);
	struct el_raft *r = el_node_raft(n);
	int err = 0;
	if (d->has_snap)
		err = el_raft_load_snapshot(r, &d->snap, d->snap_data);
	for (uint64_t i = d->snap.index + 1; err == 0 && i <= d->last; i++)
		err = el_raft_load_entry(r, &d->log[i % EL_LOG_WINDOW]);
	if (err == 0 && d->has_hs)
		err = el_raft_load_hard_state(r, &d->hs);
	return err;
}

static void boot(el_id_t id)
{
	struct fnode *f = &nodes[id];
	if (load(&f->node, id, &f->disk) != 0)
		bug("a node could not reload its own disk", id);
	f->up = true;
	f->seen_term = f->seen_commit = f->seen_applied = f->seen_snap = 0;
	el_node_start(&f->node, now);
	drain(id);
}

static void setup(void)
{
	struct el_conf conf = { .n = 3 };
	for (uint32_t i = 0; i < 3; i++) {
		conf.m[i].id = i + 1;
		conf.m[i].role = EL_MEMBER_VOTER;
	}
	queued = 0;
	memset(sessions, 0, sizeof(sessions));
	now = 1000;
	seq = 1;
	memset(cut, 0, sizeof(cut));
	for (el_id_t id = 1; id <= NODES; id++) {
		memset(&nodes[id].disk, 0, sizeof(nodes[id].disk));
		memset(nodes[id].c_index, 0, sizeof(nodes[id].c_index));
		boot(id);
		if (id <= 3 && el_raft_bootstrap(raft(id), &conf) != 0)
			bug("bootstrap failed", id);
		drain(id);
	}
}

static el_id_t leader(void)
{
	el_id_t best = 0;
	for (el_id_t id = 1; id <= NODES; id++)
		if (nodes[id].up && el_raft_state(raft(id)) == EL_LEADER &&
		    (best == 0 || el_raft_term(raft(id)) > el_raft_term(raft(best))))
			best = id;
	return best;
}

/* ---- Driver operations -------------------------------------------------- */

static void tick(uint32_t ms)
{
	now += ms;
	for (el_id_t id = 1; id <= NODES; id++) {
		if (nodes[id].up && el_node_deadline(&nodes[id].node) <= now) {
			el_node_tick(&nodes[id].node, now);
			drain(id);
		}
	}
}

static void deliver(uint8_t how)
{
	if (queued == 0)
		return;
	uint32_t k = how % queued;
	struct qmsg q = queue[k];
	if ((how & 0xC0) != 0xC0) { /* else: duplicate, keep it queued */
		memmove(queue + k, queue + k + 1, (queued - k - 1) * sizeof(queue[0]));
		queued--;
	}
	if ((how & 0xC0) == 0x80 || !nodes[q.m.to].up)
		return; /* lost */
	q.m.entries = q.m.n_entries > 0 ? q.entries : NULL;
	q.m.data = q.m.data_len > 0 ? q.data : NULL;
	el_node_step(&nodes[q.m.to].node, &q.m, now);
	drain(q.m.to);
}

static void client(void)
{
	el_id_t l = leader();
	struct el_lock_cmd c;
	memset(&c, 0, sizeof(c));
	uint8_t op = byte() % 8, s = byte();
	uint64_t session = sessions[s % 8] != 0 && s < 224 ? sessions[s % 8] : s % 16 + 1;
	/* Each command type carries exactly its own fields (el_lock_cmd_check). */
	if (op == 0) {
		c.type = EL_CMD_OPEN_SESSION;
		c.ttl_ms = 300 + byte() * 10u;
	} else if (op == 1 || op == 2) {
		c.type = op == 1 ? EL_CMD_ACQUIRE : EL_CMD_RELEASE;
		c.session = session;
		c.seq = seq++;
		c.name_len = 1;
		c.name[0] = (char)('a' + byte() % 4);
		if (op == 1) {
			c.mode = byte() % 2 ? EL_LOCK_SHARED : EL_LOCK_EXCLUSIVE;
			c.wait_ms = byte() % 2 ? 0 : 300;
			c.delay_ms = byte() % 4 == 0 ? 200 : 0;
		} else {
			c.token = byte() % 64 + 1;
		}
	} else if (op >= 5) {
		static const uint8_t types[] = { EL_CMD_CAMPAIGN, EL_CMD_RESIGN, EL_CMD_WATCH };
		c.type = types[op - 5];
		c.session = session;
		c.seq = seq++;
		c.name_len = 1;
		c.name[0] = (char)('e' + byte() % 2);
		if (c.type == EL_CMD_CAMPAIGN) {
			c.wait_ms = byte() % 2 ? 0 : 300;
			c.value_len = 1;
			c.value[0] = byte();
		} else if (c.type == EL_CMD_RESIGN) {
			c.token = byte() % 64 + 1;
		}
	} else {
		c.type = op == 3 ? EL_CMD_KEEPALIVE : EL_CMD_CLOSE_SESSION;
		c.session = session;
	}
	if (l == 0)
		return;
	el_id_t who = 0;
	el_node_submit(&nodes[l].node, seq, &c, now, &who);
	drain(l);
}

static void admin(uint8_t op)
{
	el_id_t l = leader();
	if (l == 0)
		return;
	struct el_raft *r = raft(l);
	el_id_t target = (el_id_t)(byte() % NODES + 1);
	switch (op % 3) {
	case 0:
		el_raft_propose_conf(r, (enum el_conf_op)(byte() % 4 + 1), target, now, NULL);
		break;
	case 1:
		el_raft_transfer(r, target, now);
		break;
	default:
		el_raft_compact(r, el_raft_applied(r), el_node__write_snapshot, &nodes[l].node);
		break;
	}
	drain(l);
}

static void fault(uint8_t op)
{
	el_id_t id = (el_id_t)(op % NODES + 1);
	if (op & 0x10) {
		cut[id] = !cut[id];
	} else {
		nodes[id].up = false; /* crash: the disk is all that survives */
		boot(id);
	}
}

/* Run the cluster until it has a leader, so that every input starts from
 * a working cluster (the input then takes it anywhere). */
static void elect(void)
{
	for (int ms = 0; ms < 3000 && leader() == 0; ms += 5) {
		tick(5);
		while (queued > 0)
			deliver(0);
	}
}

/* ---- Hostile messages --------------------------------------------------- */

static struct el_entry h_entries[EL_MSG_ENTRIES_MAX];
static uint8_t image[EL_SNAPSHOT_MAX];
static uint8_t wire[EL_WIRE_MSG_MAX];
static struct el_entry w_entries[EL_MSG_ENTRIES_MAX];

static uint64_t pick_term(const struct el_raft *r)
{
	uint64_t t = el_raft_term(r);
	switch (byte() % 8) {
	case 0: return t;
	case 1: return t > 1 ? t - 1 : 1;
	case 2: return t + 1;
	case 3: return t + 1 + byte() % 4;
	case 4: return EL_TERM_MAX;
	case 5: return EL_TERM_MAX + 1;
	case 6: return UINT64_MAX;
	default: return t;
	}
}

static uint64_t pick_index(const struct el_raft *r)
{
	switch (byte() % 10) {
	case 0: return el_raft_last_index(r);
	case 1: return el_raft_commit(r);
	case 2: return el_raft_last_index(r) + 1 + byte() % 8;
	case 3: return el_raft_snapshot(r)->index;
	case 4: return el_raft_commit(r) > 0 ? el_raft_commit(r) - 1 : 0;
	case 5: return EL_INDEX_MAX - byte() % 4;
	case 6: return UINT64_MAX - EL_LOG_WINDOW;
	case 7: return u64();
	default: return el_raft_last_index(r) > byte() % 8 ? el_raft_last_index(r) - byte() % 8 : 0;
	}
}

static void fill_entries(struct el_msg *m, const struct el_raft *r)
{
	uint32_t n = byte() % (EL_MSG_ENTRIES_MAX + 1);
	for (uint32_t k = 0; k < n; k++) {
		struct el_entry *e = &h_entries[k];
		const struct el_entry *mine = el_raft_entry(r, m->index + 1 + k);
		memset(e, 0, sizeof(*e));
		if (mine != NULL && byte() % 2)
			*e = *mine;
		e->index = m->index + 1 + k;
		uint8_t how = byte();
		if (how % 4 == 1)
			e->term = m->term;
		else if (how % 4 == 2)
			e->term = how >> 2;
		else if (how % 4 == 3)
			e->term = 0;
		else if (e->term == 0)
			e->term = m->log_term;
		if (byte() % 4 == 0) {
			struct el_conf c = *el_raft_conf(r);
			if (c.n > 0 && byte() % 2)
				c.m[byte() % c.n].role = (uint8_t)(byte() % 3 + 1);
			e->type = EL_ENTRY_CONF;
			int len = el_conf_encode(&c, e->data, sizeof(e->data));
			e->len = len > 0 ? (uint16_t)len : 0;
		} else if (mine == NULL) {
			e->type = byte() % 3;
			e->len = byte() % 16;
			for (uint32_t i = 0; i < e->len; i++)
				e->data[i] = byte();
		}
	}
	m->n_entries = n;
	m->entries = n > 0 ? h_entries : NULL;
}

/* Snapshot bytes: a real lock table (some node's), corrupted or not, or
 * plain bytes from the input. */
static uint32_t make_image(void)
{
	uint8_t how = byte();
	el_id_t src = (el_id_t)(how % NODES + 1);
	int len = el_lock_snapshot(el_node_table(&nodes[src].node), image, sizeof(image));
	if (len < 0)
		len = 0;
	if ((how >> 4) % 4 == 1 && len > 0) {
		image[byte() % len] ^= (uint8_t)(1u << (byte() % 8));
	} else if ((how >> 4) % 4 == 2) {
		len = byte() % 64;
		for (int i = 0; i < len; i++)
			image[i] = byte();
	}
	return (uint32_t)len;
}

static void fill_snapshot(struct el_msg *m, const struct el_raft *r)
{
	uint32_t len = make_image();
	m->conf = *el_raft_conf(r);
	if (byte() % 8 == 0 && m->conf.n > 0)
		m->conf.n--;
	m->total = len;
	uint32_t chunks = (len + EL_SNAPSHOT_CHUNK - 1) / EL_SNAPSHOT_CHUNK;
	uint32_t k = chunks > 0 ? byte() % chunks : 0;
	m->offset = k * EL_SNAPSHOT_CHUNK;
	m->data_len = len - m->offset < EL_SNAPSHOT_CHUNK ? len - m->offset : EL_SNAPSHOT_CHUNK;
	m->data = m->data_len > 0 ? image + m->offset : NULL;
	if (m->log_term == 0)
		m->log_term = 1;
}

struct mark {
	uint64_t term, commit, applied, last, last_term, snap_index, conf_index;
	el_id_t vote, leader;
	uint8_t state, conf_n;
};

static struct mark mark(const struct el_raft *r)
{
	struct mark k;
	memset(&k, 0, sizeof(k));
	k.term = el_raft_term(r);
	k.commit = el_raft_commit(r);
	k.applied = el_raft_applied(r);
	k.last = el_raft_last_index(r);
	k.last_term = el_raft_term_at(r, k.last);
	k.snap_index = el_raft_snapshot(r)->index;
	k.conf_index = r->conf_index;
	k.vote = el_raft_vote(r);
	k.leader = el_raft_leader(r);
	k.state = (uint8_t)el_raft_state(r);
	k.conf_n = el_raft_conf(r)->n;
	return k;
}

static void hostile(void)
{
	struct fnode *f = &nodes[victim];
	if (!f->up)
		return;
	const struct el_raft *r = raft(victim);
	struct el_msg m;
	memset(&m, 0, sizeof(m));
	m.type = (uint8_t)(byte() % EL_MSG_TYPE_MAX + 1);
	m.from = (el_id_t)(byte() % NODES + 1);
	if (m.from == victim)
		m.from = victim % NODES + 1;
	m.to = victim;
	m.flags = byte() % 4;
	m.term = pick_term(r);
	m.index = pick_index(r);
	m.log_term = byte() % 4 ? el_raft_term_at(r, m.index) : pick_term(r);
	m.commit = pick_index(r);
	m.ctx = byte();
	m.hint_index = byte() % 2 ? pick_index(r) : 0;
	m.hint_term = byte() % 2 ? pick_term(r) : 0;
	if (m.type == EL_MSG_APPEND)
		fill_entries(&m, r);
	if (m.type == EL_MSG_SNAPSHOT)
		fill_snapshot(&m, r);
	if (m.type == EL_MSG_SNAPSHOT_RESP || m.type == EL_MSG_APPEND_RESP)
		m.offset = byte();
	/* Only what the wire can carry: encode, then decode what a peer sent. */
	int len = el_wire_encode_msg(&m, wire, sizeof(wire));
	if (len < 0)
		return;
	struct el_msg w;
	if (el_wire_decode_msg(wire, (uint32_t)len, &w, w_entries) != 0)
		bug("an encoded message does not decode", victim);
	struct mark before = mark(r);
	uint32_t msgs_before = r->n_msgs;
	int err = el_node_step(&f->node, &w, now);
	if (err < 0 && err != EL_ESTOPPED) {
		struct mark after = mark(r);
		if (w.type == EL_MSG_SNAPSHOT) {
			/* A snapshot is judged once its last chunk has arrived, after
			 * the term rules took their course (it came from the leader of
			 * its term): refused then, it installs nothing and answers
			 * with a reject. */
			before.term = after.term;
			before.vote = after.vote;
			before.leader = after.leader;
			before.state = after.state;
			msgs_before = r->n_msgs;
		}
		if (memcmp(&before, &after, sizeof(before)) != 0 || r->n_msgs != msgs_before) {
			fprintf(stderr, "message type %u term %llu index %llu refused with %d\n", w.type,
				(unsigned long long)w.term, (unsigned long long)w.index, err);
			bug("a refused message changed the replica", victim);
		}
	}
	drain(victim);
}

/* ---- The program --------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	in = data;
	in_left = size;
	setup();
	victim = (el_id_t)(byte() % NODES + 1);
	elect();
	for (int op = 0; op < OPS_MAX && in_left > 0; op++) {
		uint8_t b = byte();
		switch (b % 16) {
		case 0: case 1: case 2: case 3:
			tick(1 + b / 16 * 4);
			break;
		case 4: case 5: case 6:
			for (uint32_t k = 0, n = 1 + b / 16; k < n; k++)
				deliver(byte());
			break;
		case 7: case 8:
			client();
			break;
		case 9:
			admin(b / 16);
			break;
		case 10:
			fault(byte());
			break;
		default:
			hostile();
			break;
		}
		for (el_id_t id = 1; id <= NODES; id++)
			if (nodes[id].up)
				check_committed(id);
	}
	for (el_id_t id = 1; id <= NODES; id++)
		if (load(&scratch, id, &nodes[id].disk) != 0)
			bug("a node could not reload its own disk", id);
	return 0;
}
