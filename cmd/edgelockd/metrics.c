/*
 * metrics.c - edgelockd's Prometheus metrics (el_d_metrics.h; the list is
 * docs/metrics.md), served over HTTP by metrics_http.c.
 *
 * Threads: the loop updates the counters (struct el_d_metrics, loop-only)
 * and every PUBLISH_MS renders the text exposition into `text`, then copies
 * it to `shown` under `mu`, with the time it did. The HTTP server's thread
 * takes `mu` only to copy `shown` into an answer (copy_shown): it never
 * reads the node. So that a loop stuck in a turn (a long fsync) does not
 * hide behind the last values it published, the server adds one gauge of
 * its own at each scrape, edgelock_loop_turn_age_seconds: how long ago that
 * was.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "el_d_http.h"
#include "el_d_metrics.h"
#include "el_daemon.h"
#include "el_error.h"
#include "el_version.h"
#include "el_platform.h"

#define PUBLISH_MS 100
#define TEXT_MAX 32768
#define AGE_ROOM 256 /* the scrape's own gauge, after the loop's text */
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* Histogram bucket upper bounds, in nanoseconds (0.5 ms .. 1 s), then +Inf. */
static const uint64_t bounds_ns[] = { 500000, 1000000, 2500000, 5000000, 10000000, 25000000,
				      50000000, 100000000, 250000000, 500000000, 1000000000 };
#define N_BOUNDS (sizeof bounds_ns / sizeof bounds_ns[0])

struct hist {
	uint64_t count[N_BOUNDS + 1]; /* per bucket, not cumulative; last: +Inf */
	uint64_t n;
	uint64_t sum_ns;
};

struct el_d_metrics {
	struct el_d_http *http; /* NULL until it listens */
	pthread_mutex_t mu;
	/* the loop's own */
	struct hist persist, request;
	uint64_t leader_changes;
	uint64_t leader_key; /* term and leader last seen with a known leader */
	uint64_t stale_replies;
	uint64_t snapshots_sent, snapshot_chunks_sent;
	uint64_t events_dropped, gaps;
	/* per peer: the oldest heartbeat not answered yet, the last round trip */
	struct {
		el_id_t id;
		bool waiting;
		uint64_t sent_ns, rtt_ns;
	} peer[EL_NODES_MAX];
	uint64_t published_ms;
	uint32_t len;
	char text[TEXT_MAX];
	/* under mu */
	uint64_t shown_ns; /* when the loop published it (el_d_metrics_clock) */
	uint32_t shown_len;
	char shown[TEXT_MAX];
};

uint64_t el_d_metrics_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void observe(struct hist *h, uint64_t ns)
{
	uint32_t b = 0;
	while (b < N_BOUNDS && ns > bounds_ns[b])
		b++;
	h->count[b]++;
	h->n++;
	h->sum_ns += ns;
}

/* ---- hooks (the loop thread) ------------------------------------------------ */

void el_d_metrics_batch(struct el_daemon *d, const struct el_node_ready *rd, uint64_t t0_ns)
{
	struct el_d_metrics *m = d->metrics;
	if (m == NULL)
		return;
	const struct el_ready *r = &rd->raft;
	if (r->snapshot != NULL || r->hard_state_changed || r->persist_first <= r->persist_last)
		observe(&m->persist, el_d_metrics_clock() - t0_ns);
	for (uint32_t i = 0; i < r->n_msgs; i++) {
		if (r->msgs[i].type != EL_MSG_SNAPSHOT)
			continue;
		m->snapshot_chunks_sent++;
		m->snapshots_sent += r->msgs[i].offset == 0;
	}
	m->events_dropped += rd->events_dropped;
	m->gaps += rd->events_dropped > 0;
}

/* The slot of peer id, taking a free one (the first of the array when the
 * configuration has changed past its size: a stale figure, never a crash). */
static uint32_t peer_slot(struct el_d_metrics *m, el_id_t id)
{
	for (uint32_t i = 0; i < EL_NODES_MAX; i++)
		if (m->peer[i].id == id)
			return i;
	for (uint32_t i = 0; i < EL_NODES_MAX; i++)
		if (m->peer[i].id == 0) {
			m->peer[i].id = id;
			return i;
		}
	return 0;
}

/* The round trip of a heartbeat: from sending the oldest one not answered to
 * the next HEARTBEAT_RESP. The peer's own turn is in it (it answers from its
 * loop), which is what a leader waits for. */
void el_d_metrics_peer_sent(struct el_daemon *d, const struct el_msg *m)
{
	struct el_d_metrics *x = d->metrics;
	if (x == NULL || m->type != EL_MSG_HEARTBEAT)
		return;
	const uint32_t i = peer_slot(x, m->to);
	if (!x->peer[i].waiting) {
		x->peer[i].waiting = true;
		x->peer[i].sent_ns = el_d_metrics_clock();
	}
}

void el_d_metrics_peer_heard(struct el_daemon *d, const struct el_msg *m)
{
	struct el_d_metrics *x = d->metrics;
	if (x == NULL || m->type != EL_MSG_HEARTBEAT_RESP)
		return;
	const uint32_t i = peer_slot(x, m->from);
	if (x->peer[i].waiting) {
		x->peer[i].waiting = false;
		x->peer[i].rtt_ns = el_d_metrics_clock() - x->peer[i].sent_ns;
	}
}

void el_d_metrics_reply(struct el_daemon *d, uint64_t start_ns, int err)
{
	struct el_d_metrics *m = d->metrics;
	if (m == NULL)
		return;
	if (start_ns != 0)
		observe(&m->request, el_d_metrics_clock() - start_ns);
	m->stale_replies += err == EL_ESTALE;
}

/* ---- the text exposition ----------------------------------------------------- */

static void put(struct el_d_metrics *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct el_d_metrics *m, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(m->text + m->len, TEXT_MAX - m->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		m->len = m->len + (uint32_t)n < TEXT_MAX ? m->len + (uint32_t)n : TEXT_MAX - 1;
}

static void head(struct el_d_metrics *m, const char *name, const char *type, const char *help)
{
	put(m, "# HELP edgelock_%s %s\n# TYPE edgelock_%s %s\n", name, help, name, type);
}

static void gauge(struct el_d_metrics *m, const char *name, const char *help, uint64_t v)
{
	head(m, name, "gauge", help);
	put(m, "edgelock_%s %llu\n", name, (unsigned long long)v);
}

static void counter(struct el_d_metrics *m, const char *name, const char *help, uint64_t v)
{
	head(m, name, "counter", help);
	put(m, "edgelock_%s %llu\n", name, (unsigned long long)v);
}

static void hist(struct el_d_metrics *m, const char *name, const char *help, const struct hist *h)
{
	uint64_t cum = 0;
	head(m, name, "histogram", help);
	for (uint32_t b = 0; b < N_BOUNDS; b++) {
		cum += h->count[b];
		put(m, "edgelock_%s_bucket{le=\"%g\"} %llu\n", name, (double)bounds_ns[b] / 1e9,
		    (unsigned long long)cum);
	}
	put(m, "edgelock_%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->n);
	put(m, "edgelock_%s_sum %.9f\n", name, (double)h->sum_ns / 1e9);
	put(m, "edgelock_%s_count %llu\n", name, (unsigned long long)h->n);
}

/* The usual Prometheus info gauge: a dashboard tells a fleet's builds apart
 * (an upgrade half done) by its labels. */
static void render_build(struct el_d_metrics *m)
{
	head(m, "build_info", "gauge", "1, labelled with this edgelockd's release and source revision.");
	put(m, "edgelock_build_info{version=\"%s\",revision=\"%s\"} 1\n", EL_VERSION,
	    el_build_revision);
}

static void render_raft(struct el_d_metrics *m, struct el_daemon *d)
{
	static const char *roles[] = { "follower", "pre_candidate", "candidate", "leader" };
	const struct el_raft *r = el_node_raft(d->node);
	head(m, "role", "gauge", "1 for this node's Raft role, 0 for the others.");
	for (uint32_t i = 0; i < 4; i++)
		put(m, "edgelock_role{role=\"%s\"} %d\n", roles[i], (uint32_t)el_raft_state(r) == i);
	gauge(m, "term", "The current Raft term.", el_raft_term(r));
	gauge(m, "leader_id", "The leader this node knows of (0: none).", el_raft_leader(r));
	gauge(m, "commit_index", "The highest log index known committed.", el_raft_commit(r));
	gauge(m, "applied_index", "The highest log index applied to the lock table.",
	      el_raft_applied(r));
	gauge(m, "last_index", "The last log index held.", el_raft_last_index(r));
	gauge(m, "snapshot_index", "The last log index the held snapshot covers.",
	      el_raft_snapshot(r)->index);
	gauge(m, "log_window_entries", "Entries between the snapshot and the last index.",
	      el_raft_last_index(r) - el_raft_snapshot(r)->index);
	gauge(m, "log_window_size_entries", "The log window's capacity.", EL_LOG_WINDOW);
	gauge(m, "members", "Members of the Raft configuration.", el_raft_conf(r)->n);
	counter(m, "elections_total", "Campaigns this node started.", el_raft_stats(r)->elections);
	counter(m, "leader_changes_total", "Changes of the known leader or its term seen by the loop.",
		m->leader_changes);
	counter(m, "quorum_stepdowns_total", "Leaderships ended by check_quorum.",
		el_raft_stats(r)->stepdowns_quorum);
	counter(m, "leader_links_lost_total",
		"Elections moved up because the link to the leader closed.",
		d->leader_links_lost);
	counter(m, "raft_messages_dropped_total", "Raft messages dropped (outbox full).",
		el_raft_stats(r)->msgs_dropped);
	counter(m, "raft_messages_rejected_total", "Malformed Raft messages refused.",
		el_raft_stats(r)->msgs_rejected);
}

static void render_table(struct el_d_metrics *m, struct el_daemon *d)
{
	struct el_lock_usage u;
	el_lock_usage(el_node_table(d->node), &u);
	gauge(m, "sessions", "Sessions open in the lock table.", u.sessions);
	gauge(m, "locks", "Locks in use in the lock table.", u.locks);
	gauge(m, "holds", "Holds granted.", u.holds);
	gauge(m, "waiters", "Waiters queued.", u.waits);
	gauge(m, "watches", "Watches registered.", u.watches);
	gauge(m, "values", "Values stored.", u.values);
}

static void render_node(struct el_d_metrics *m, struct el_daemon *d)
{
	const struct el_node_stats *s = &d->node->stats;
	counter(m, "session_expiries_proposed_total", "Session expiries this node proposed as leader.",
		s->expiries_proposed);
	counter(m, "wait_timeouts_proposed_total", "Wait timeouts this node proposed as leader.",
		s->wait_timeouts_proposed);
	counter(m, "compactions_total", "Log compactions (snapshots taken).", s->compactions);
	counter(m, "snapshot_restores_total", "Lock tables restored from a snapshot (start, or "
		"one received from the leader).", s->restores);
	counter(m, "snapshots_sent_total", "Snapshot transfers started to followers.",
		m->snapshots_sent);
	counter(m, "snapshot_chunks_sent_total", "Snapshot chunks sent to followers.",
		m->snapshot_chunks_sent);
	counter(m, "events_dropped_total", "Client events lost (queue full).", m->events_dropped);
	counter(m, "event_gaps_total", "Batches after which clients were told to resynchronise "
		"(GAP).", m->gaps);
	counter(m, "stale_replies_total", "Replies refused with EL_ESTALE (stale token or term).",
		m->stale_replies);
	counter(m, "table_full_total", "Commands the lock table refused EL_EFULL (full for everyone).",
		d->table_full_total);
}

static void render_net(struct el_d_metrics *m, struct el_daemon *d)
{
	struct el_net_stats ns;
	el_net_stats(d->net, &ns);
	/* as max_clients counts them: a flood of connections stuck in their
	 * handshake fills the table while no client is served */
	gauge(m, "client_connections", "Client connections open, those in their TLS handshake "
	      "included (what max_clients bounds).", ns.clients + ns.client_handshakes);
	gauge(m, "client_handshakes", "Client connections accepted and still in their TLS "
	      "handshake.", ns.client_handshakes);
	counter(m, "clients_refused_total", "Client connections refused over max_clients, or cut in their TLS handshake "
		"to make room for newer ones.",
		ns.clients_refused);
	counter(m, "client_drops_total", "Clients disconnected for a full send queue (frames or bytes).",
		ns.client_drops);
	gauge(m, "client_queued_bytes", "Bytes waiting in client send queues, headers included "
	      "(what client_queues_total_bytes bounds).", ns.client_queued_bytes);
	counter(m, "client_evictions_total", "Clients disconnected as the largest send queue when "
		"all client send queues together reached client_queues_total_bytes.",
		ns.client_evictions);
	counter(m, "peer_frames_dropped_total", "Frames to peers dropped.", ns.peer_frames_dropped);
	counter(m, "input_frames_dropped_total", "Input frames over a connection's share.",
		ns.input_dropped);
	counter(m, "client_frames_refused_total", "Client frames refused (bad or not allowed).",
		d->client_frames_refused);
	counter(m, "peer_frames_refused_total", "Peer frames refused (bad, unproven or unknown).",
		d->peer_frames_refused);
	time_t crl_next;
	if (d->ident != NULL && el_ident_crl_next_update(d->ident, &crl_next))
		gauge(m, "crl_next_update_seconds", "Unix time of the loaded CRL's nextUpdate: past "
		      "it, every new client and peer proof is refused.", (uint64_t)crl_next);
	const struct el_conf *c = el_raft_conf(el_node_raft(d->node));
	head(m, "peer_up", "gauge", "1 when the link to the peer is up.");
	for (uint32_t i = 0; i < c->n; i++)
		if (c->m[i].id != d->cfg.id)
			put(m, "edgelock_peer_up{peer=\"%u\"} %d\n", c->m[i].id,
			    el_net_peer_up(d->net, c->m[i].id));
	head(m, "peer_queued_bytes", "gauge", "Bytes waiting in the send queue of the link to "
	     "the peer, headers included (what peer_queue_bytes bounds).");
	for (uint32_t i = 0; i < c->n; i++) {
		uint32_t frames;
		size_t bytes;
		if (c->m[i].id == d->cfg.id)
			continue;
		el_net_peer_queued(d->net, c->m[i].id, &frames, &bytes);
		put(m, "edgelock_peer_queued_bytes{peer=\"%u\"} %zu\n", c->m[i].id, bytes);
	}
	head(m, "peer_rtt_seconds", "gauge",
	     "Round trip of the last heartbeat answered by the peer (leader only).");
	for (uint32_t i = 0; i < EL_NODES_MAX; i++)
		if (m->peer[i].id != 0 && m->peer[i].rtt_ns != 0)
			put(m, "edgelock_peer_rtt_seconds{peer=\"%u\"} %.6f\n", m->peer[i].id,
			    (double)m->peer[i].rtt_ns / 1e9);
}

static void publish(struct el_d_metrics *m, struct el_daemon *d)
{
	m->len = 0;
	m->text[0] = '\0';
	render_build(m);
	render_raft(m, d);
	render_table(m, d);
	render_node(m, d);
	render_net(m, d);
	hist(m, "storage_persist_seconds", "Write and fsync of one ready batch.", &m->persist);
	hist(m, "request_seconds", "Commands and linearizable reads, from the request read by "
	     "the loop to its reply queued.", &m->request);
	pthread_mutex_lock(&m->mu);
	memcpy(m->shown, m->text, m->len);
	m->shown_len = m->len;
	m->shown_ns = el_d_metrics_clock();
	pthread_mutex_unlock(&m->mu);
}

void el_d_metrics_turn(struct el_daemon *d)
{
	struct el_d_metrics *m = d->metrics;
	if (m == NULL)
		return;
	const struct el_raft *r = el_node_raft(d->node);
	uint64_t key = el_raft_term(r) << 32 ^ el_raft_leader(r);
	if (el_raft_leader(r) != 0 && key != m->leader_key) {
		m->leader_changes++;
		m->leader_key = key;
	}
	if (d->now_ms >= m->published_ms + PUBLISH_MS) {
		m->published_ms = d->now_ms;
		publish(m, d);
	}
}

/* ---- the HTTP side (metrics_http.c's thread) ------------------------------------ */

/* The body of a scrape: the last text the loop published, then how old it
 * is. The values of a loop stuck in a turn stay as they were (an answer
 * with 200 OK all the same: the server does not wait for the loop), so
 * only this gauge tells a wedged node from an idle one. */
static uint32_t copy_shown(void *ctx, char *dst, uint32_t cap)
{
	struct el_d_metrics *m = ctx;
	pthread_mutex_lock(&m->mu);
	uint32_t n = m->shown_len < cap - AGE_ROOM ? m->shown_len : cap - AGE_ROOM;
	memcpy(dst, m->shown, n);
	const uint64_t at_ns = m->shown_ns;
	pthread_mutex_unlock(&m->mu);
	const uint64_t now_ns = el_d_metrics_clock();
	const int k = snprintf(dst + n, cap - n, "# HELP edgelock_loop_turn_age_seconds Seconds since "
			       "the node's loop last published these values (at the scrape).\n"
			       "# TYPE edgelock_loop_turn_age_seconds gauge\n"
			       "edgelock_loop_turn_age_seconds %.3f\n",
			       (double)(now_ns > at_ns ? now_ns - at_ns : 0) / 1e9);
	if (k > 0)
		n += (uint32_t)k < cap - n ? (uint32_t)k : cap - n - 1;
	return n;
}

int el_d_metrics_open(struct el_daemon *d)
{
	if (d->cfg.metrics[0] == '\0')
		return EL_OK;
	struct el_d_metrics *m = calloc(1, sizeof *m);
	if (m == NULL)
		return EL_EFULL;
	pthread_mutex_init(&m->mu, NULL);
	d->metrics = m;
	publish(m, d); /* something to answer before the first turn */
	int rc = el_d_http_start(&m->http, d->cfg.metrics, CONTENT_TYPE, copy_shown, m,
				 TEXT_MAX + AGE_ROOM);
	if (rc == EL_OK)
		el_log(EL_LOG_INFO, "metrics: %s", d->cfg.metrics);
	return rc;
}

void el_d_metrics_close(struct el_daemon *d)
{
	struct el_d_metrics *m = d->metrics;
	if (m == NULL)
		return;
	el_d_http_stop(m->http); /* its thread is gone: nothing reads m any more */
	pthread_mutex_destroy(&m->mu);
	free(m);
	d->metrics = NULL;
}
