/*
 * client_safety.c - libedgelock's edges against real daemons (run by
 * cli_test.py with EDGELOCK_ENDPOINTS / _CA / _CERT set): what the library
 * does once a session's local lease has run out, with a slow endpoint in
 * front of the real ones, and so on. Each check is one function below; the
 * arguments name the checks to run (none: all but those that need the
 * cluster in a given state, such as no-quorum, run only when named).
 *
 * Some checks put the library behind things of their own on loopback: a
 * listener that accepts TCP and never speaks TLS, a port that refuses, and
 * a relay to the leader that can hold back what the daemon sends (while
 * still passing on what the client sends).
 *
 * Prints one line per failure and "client safety: ok" at the end; exit 1
 * on any failure, 2 on a usage error.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "edgelock.h"
#include "el_client_wire.h"
#include "el_raft.h"

static int failed(const char *check, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failed(const char *check, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("client safety: %s: ", check);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	return 1;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static el_client *open_client(const char *endpoints, const char *cert, uint32_t timeout_ms)
{
	const struct el_client_options o = {
		.endpoints = endpoints, .ca_file = getenv("EDGELOCK_CA"), .cert_key_file = cert,
		.name = "safety", .timeout_ms = timeout_ms,
	};
	el_client *c = NULL;
	if (el_client_open(&c, &o) != EL_OK) {
		printf("client safety: open: %s\n", el_client_last_error(NULL));
		return NULL;
	}
	return c;
}

static el_client *cluster_client(void)
{
	return open_client(getenv("EDGELOCK_ENDPOINTS"), getenv("EDGELOCK_CERT"), 10000);
}

/* Is name held, or in its lock-delay, as the cluster sees it now? */
static bool taken(el_client *c, const char *name)
{
	struct el_lock_info li;
	const int rc = el_query(c, name, &li);
	if (rc == EL_ENOTFOUND) /* no such lock: free */
		return false;
	if (rc != EL_OK)
		printf("client safety: query %s: %s\n", name, el_client_last_error(c));
	return rc != EL_OK || li.held || li.delayed;
}

/* ---- Things on loopback --------------------------------------------------- */

/* A listening socket on 127.0.0.1 (any port, *port gets it); backlog only:
 * the kernel completes TCP connections and nobody ever answers them. */
static int listener(int *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t n = sizeof a;
	const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &n) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

/* A port on 127.0.0.1 that refuses connections (bound, then closed). */
static int refusing_port(void)
{
	int port = 0;
	const int fd = listener(&port);
	if (fd < 0)
		return -1;
	close(fd);
	return port;
}

/* The leader's client address, asked of every endpoint. */
static bool find_leader(el_client *c, char *url, size_t cap)
{
	const char *eps[16];
	const unsigned n = el_client_endpoints(c, eps, 16);
	struct el_cw_msg *m = calloc(2, sizeof *m);
	bool found = false;
	for (unsigned i = 0; m != NULL && i < n && i < 16 && !found; i++) {
		memset(m, 0, 2 * sizeof *m);
		m->type = EL_CW_STATUS;
		found = el_client_request_at(c, eps[i], m, m + 1) == EL_OK && m[1].role == EL_LEADER;
		if (found)
			snprintf(url, cap, "%s", eps[i]);
	}
	free(m);
	return found;
}

/* A relay from 127.0.0.1:port to one daemon. While mute, it passes on what
 * the client sends and holds back what the daemon sends: the daemon keeps
 * the session alive on the keepalives it gets, and the client, which sees
 * no acknowledgement, watches its own lease run out. gate N > 0: each
 * connection accepted meanwhile is muted alone once the client has sent N
 * TLS application-data records on it (its identity proof, then requests),
 * so its handshake passes and the reply to its Nth frame does not. cut:
 * the connections there are now are closed (the listener stays). */
#define RELAY_PAIRS 16
struct relay {
	int lfd, port, upstream_port;
	atomic_bool mute, stop, cut;
	atomic_int gate;
	int fd[2 * RELAY_PAIRS]; /* client, daemon; -1: free */
	int gate_left[RELAY_PAIRS]; /* records until the pair is held; 0: never */
	bool held[RELAY_PAIRS];
	unsigned char hdr[RELAY_PAIRS][5]; /* the client's TLS record header being read */
	size_t hdr_have[RELAY_PAIRS], rec_left[RELAY_PAIRS];
	atomic_int accepted;     /* connections the client made */
	pthread_t thread;
};

static void relay_accept(struct relay *r)
{
	const int cfd = accept(r->lfd, NULL, NULL);
	if (cfd >= 0)
		atomic_fetch_add(&r->accepted, 1);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)r->upstream_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	const int ufd = cfd >= 0 ? socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
	int i = 0;
	while (i < RELAY_PAIRS && r->fd[2 * i] >= 0)
		i++;
	if (ufd < 0 || i == RELAY_PAIRS || connect(ufd, (struct sockaddr *)&a, sizeof a) != 0) {
		if (ufd >= 0)
			close(ufd);
		if (cfd >= 0)
			close(cfd);
		return;
	}
	r->fd[2 * i] = cfd;
	r->fd[2 * i + 1] = ufd;
	r->gate_left[i] = atomic_load(&r->gate);
	r->held[i] = false;
	r->hdr_have[i] = r->rec_left[i] = 0;
}

/* Follow the TLS records the client sends on pair i (n bytes at b): hold
 * the pair once the gate's count of application-data records is reached.
 * The header is seen before the daemon can have the record, so its reply
 * is held. */
static void relay_count(struct relay *r, int i, const unsigned char *b, size_t n)
{
	for (size_t at = 0; at < n;) {
		if (r->rec_left[i] > 0) {
			const size_t take = n - at < r->rec_left[i] ? n - at : r->rec_left[i];
			r->rec_left[i] -= take;
			at += take;
			continue;
		}
		r->hdr[i][r->hdr_have[i]++] = b[at++];
		if (r->hdr_have[i] < 5)
			continue;
		r->hdr_have[i] = 0;
		r->rec_left[i] = (size_t)r->hdr[i][3] << 8 | r->hdr[i][4];
		if (r->hdr[i][0] == 23 /* application data */ && r->gate_left[i] > 0 &&
		    --r->gate_left[i] == 0)
			r->held[i] = true;
	}
}

/* Move what fd[k] has to its partner; false when either side ended. */
static bool relay_move(struct relay *r, int k)
{
	char buf[16384];
	const ssize_t n = recv(r->fd[k], buf, sizeof buf, 0);
	if (n > 0 && (k & 1) == 0)
		relay_count(r, k / 2, (const unsigned char *)buf, (size_t)n);
	for (ssize_t done = 0; n > 0 && done < n;) {
		const ssize_t w = send(r->fd[k ^ 1], buf + done, (size_t)(n - done), MSG_NOSIGNAL);
		if (w <= 0)
			return false;
		done += w;
	}
	return n > 0;
}

static void *relay_main(void *arg)
{
	struct relay *r = arg;
	while (!atomic_load(&r->stop)) {
		struct pollfd p[1 + 2 * RELAY_PAIRS];
		p[0] = (struct pollfd){ .fd = r->lfd, .events = POLLIN };
		const bool mute = atomic_load(&r->mute);
		const bool cut = atomic_exchange(&r->cut, false);
		for (int k = 0; cut && k < 2 * RELAY_PAIRS; k++)
			if (r->fd[k] >= 0) {
				close(r->fd[k]);
				r->fd[k] = -1;
			}
		for (int k = 0; k < 2 * RELAY_PAIRS; k++)
			p[1 + k] = (struct pollfd){
				.fd = (k & 1) && (mute || r->held[k / 2]) ? -1 : r->fd[k],
				.events = POLLIN };
		if (poll(p, 1 + 2 * RELAY_PAIRS, 10) <= 0)
			continue;
		if (p[0].revents != 0)
			relay_accept(r);
		for (int k = 0; k < 2 * RELAY_PAIRS; k++)
			if (p[1 + k].revents != 0 && r->fd[k] >= 0 && !relay_move(r, k)) {
				close(r->fd[k]);
				close(r->fd[k ^ 1]);
				r->fd[k] = r->fd[k ^ 1] = -1;
			}
	}
	return NULL;
}

static bool relay_start(struct relay *r, const char *upstream_url)
{
	memset(r, 0, sizeof *r);
	for (int k = 0; k < 2 * RELAY_PAIRS; k++)
		r->fd[k] = -1;
	const char *colon = strrchr(upstream_url, ':');
	r->upstream_port = colon != NULL ? atoi(colon + 1) : 0;
	r->lfd = listener(&r->port);
	if (r->lfd < 0 || r->upstream_port <= 0 ||
	    pthread_create(&r->thread, NULL, relay_main, r) != 0) {
		if (r->lfd >= 0)
			close(r->lfd);
		return false;
	}
	return true;
}

/* A relay to the leader and a client of its own through it; r->lfd < 0
 * when there is no relay (the check failed, and said so). */
static el_client *client_via_relay(el_client *main_c, struct relay *r, const char *check,
				   uint32_t timeout_ms)
{
	char leader[EL_CW_ADDR_MAX + 1], via[64];
	r->lfd = -1; /* no relay: the caller has nothing to stop */
	if (!find_leader(main_c, leader, sizeof leader) || !relay_start(r, leader)) {
		r->lfd = -1;
		failed(check, "no leader or no relay");
		return NULL;
	}
	snprintf(via, sizeof via, "tls+tcp://127.0.0.1:%d", r->port);
	return open_client(via, getenv("EDGELOCK_CERT"), timeout_ms);
}

static void relay_stop(struct relay *r)
{
	atomic_store(&r->stop, true);
	pthread_join(r->thread, NULL);
	for (int k = 0; k < 2 * RELAY_PAIRS; k++)
		if (r->fd[k] >= 0)
			close(r->fd[k]);
	close(r->lfd);
}

/* ---- Checks --------------------------------------------------------------- */

/* A session whose lease ran out during el_session_open (the first endpoint
 * accepts TCP and never answers TLS: 2 s lost there, TTL 1 s) is not handed
 * out: EL_ETIMEDOUT and no session. */
static int check_open_lost(void)
{
	int port = 0;
	const int fd = listener(&port);
	char eps[1024];
	snprintf(eps, sizeof eps, "tls+tcp://127.0.0.1:%d,%s", port, getenv("EDGELOCK_ENDPOINTS"));
	el_client *c = fd >= 0 ? open_client(eps, getenv("EDGELOCK_CERT"), 10000) : NULL;
	if (c == NULL)
		return failed("open-lost", "setup failed");
	el_session *s = NULL;
	const uint64_t t0 = now_ms();
	const int rc = el_session_open(c, 1000, &s);
	const uint64_t took = now_ms() - t0;
	int bad = 0;
	if (rc != EL_ETIMEDOUT || s != NULL)
		bad = failed("open-lost", "open after %llu ms with TTL 1000: rc %d (%s), session %s "
			     "(state %d); want EL_ETIMEDOUT and none", (unsigned long long)took, rc,
			     el_client_last_error(c), s != NULL ? "returned" : "none",
			     s != NULL ? (int)el_session_state(s, NULL) : -1);
	el_session_close(s);
	el_client_close(c);
	close(fd);
	return bad;
}

/* Wait until s is LOST as the library sees it (up to limit_ms). */
static bool wait_lost(el_session *s, uint32_t limit_ms)
{
	const uint64_t end = now_ms() + limit_ms;
	while (el_session_state(s, NULL) != EL_LEASE_LOST && now_ms() < end)
		usleep(5000);
	return el_session_state(s, NULL) == EL_LEASE_LOST;
}

/* A session LOST here but alive on the cluster (the relay held back the
 * keepalives' acknowledgements, not the keepalives): el_lock must fail with
 * EL_EEXPIRED without taking the lock on the cluster, and el_session_close
 * must still close it there, which frees its lock at once (a lock of an
 * expired session would stay held, then in its 30 s lock-delay). */
static int check_lost_calls(el_client *main_c)
{
	struct relay r;
	el_client *c = client_via_relay(main_c, &r, "lost-calls", 5000);
	if (r.lfd < 0)
		return 1;
	el_session *s = NULL;
	uint64_t token = 0;
	int bad = 0;
	char held[40], fresh[40]; /* a run's own names: an old run's may be in lock-delay */
	snprintf(held, sizeof held, "safety/lost-held-%d", (int)getpid());
	snprintf(fresh, sizeof fresh, "safety/lost-new-%d", (int)getpid());
	if (c == NULL || el_session_open(c, 4500, &s) != EL_OK) {
		bad = failed("lost-calls", "setup: %s", el_client_last_error(c));
		goto out;
	}
	el_session_set_lock_delay(s, 30000);
	if (el_lock(s, held, false, EL_WAIT_NONE, &token) != EL_OK) {
		bad = failed("lost-calls", "lock: %s", el_client_last_error(c));
		goto out;
	}
	atomic_store(&r.mute, true);
	const bool lost = wait_lost(s, 10000);
	atomic_store(&r.mute, false);
	/* the cluster holds the session until >= 1.5 s after this (TTL/3) */
	const int lock_rc = el_lock(s, fresh, false, EL_WAIT_NONE, &token);
	const bool new_taken = taken(main_c, fresh);
	const int close_rc = el_session_close(s);
	s = NULL;
	const bool held_taken = taken(main_c, held);
	if (!lost)
		bad = failed("lost-calls", "the session never became LOST");
	if (lost && (lock_rc != EL_EEXPIRED || new_taken))
		bad = failed("lost-calls", "el_lock on a LOST session: rc %d, the lock %s on the "
			     "cluster; want EL_EEXPIRED and not taken", lock_rc,
			     new_taken ? "TAKEN" : "free");
	if (lost && (close_rc != EL_OK || held_taken))
		bad = failed("lost-calls", "el_session_close on a LOST session: rc %d (%s), its lock "
			     "%s; want EL_OK and the lock free at once (CLOSE sent)", close_rc,
			     el_client_last_error(c), held_taken ? "still taken" : "free");
out:
	el_session_close(s);
	el_client_close(c);
	relay_stop(&r);
	return bad;
}

struct waiter {
	el_session *s;
	const char *name;
	uint32_t wait_ms;
	int rc;
	uint64_t token;
	char why[256]; /* el_client_last_error is the thread's own */
	atomic_bool done;
};

static void *wait_for_lock(void *arg)
{
	struct waiter *w = arg;
	w->rc = el_lock(w->s, w->name, false, w->wait_ms, &w->token);
	snprintf(w->why, sizeof w->why, "%s", w->rc != EL_OK ? el_client_last_error(NULL) : "");
	atomic_store(&w->done, true);
	return NULL;
}

/* A waiter w (thread t) in el_lock on session s, behind other's hold. */
struct queued {
	el_session *s, *other;
	uint64_t held;
	struct waiter w;
	pthread_t t;
};

/* Open s and other on c, take name in other, start q->w waiting for it in s
 * (wait_ms): 0, or 1 when any of it failed (said why, nothing left open). */
static int queue_behind(el_client *c, const char *check, const char *name, uint32_t wait_ms,
			struct queued *q)
{
	memset(q, 0, sizeof *q);
	q->w.name = name;
	q->w.wait_ms = wait_ms;
	q->w.rc = 1;
	if (el_session_open(c, 30000, &q->s) == EL_OK &&
	    el_session_open(c, 30000, &q->other) == EL_OK &&
	    el_lock(q->other, name, false, EL_WAIT_NONE, &q->held) == EL_OK) {
		q->w.s = q->s;
		if (pthread_create(&q->t, NULL, wait_for_lock, &q->w) == 0)
			return 0;
	}
	failed(check, "setup: %s", el_client_last_error(c));
	el_session_close(q->s);
	el_session_close(q->other);
	return 1;
}

/* Two threads on one session: while thread A waits in el_lock, thread B's
 * el_lock and el_session_close on that session get EL_EBUSY at once (the
 * cluster keeps one seq per session: B's call going through made A's
 * re-send a false EL_ESTALE, its wait left queued), and A is granted. */
static int check_one_call(el_client *c)
{
	char name[40];
	snprintf(name, sizeof name, "safety/busy-%d", (int)getpid());
	uint64_t token = 0;
	struct queued q;
	if (queue_behind(c, "one-call", name, 5000, &q) != 0)
		return 1;
	el_session *s = q.s;
	usleep(1200 * 1000); /* A queued, and past its first re-send (1 s) */
	const uint64_t t0 = now_ms();
	const int second = el_lock(s, "safety/busy-second", false, EL_WAIT_NONE, &token);
	const uint64_t took = now_ms() - t0;
	const bool said = strstr(el_client_last_error(c), "one call at a time") != NULL;
	/* only with the rule in place: without, close would free s under A */
	const int closing = second == EL_EBUSY ? el_session_close(s) : EL_EBUSY;
	usleep(1200 * 1000); /* ... and past another re-send */
	el_unlock(q.other, name, q.held);
	pthread_join(q.t, NULL);
	int bad = 0;
	if (second != EL_EBUSY || took > 200 || !said || closing != EL_EBUSY)
		bad = failed("one-call", "a second call on a session in use: rc %d after %llu ms "
			     "(%s), close %d; want EL_EBUSY at once and that message", second,
			     (unsigned long long)took, el_client_last_error(c), closing);
	if (q.w.rc != EL_OK || q.w.token <= q.held)
		bad = failed("one-call", "the waiting call: rc %d token %llu (held %llu); want "
			     "EL_OK and a larger token", q.w.rc, (unsigned long long)q.w.token,
			     (unsigned long long)q.held);
	if (closing == EL_OK) /* freed: nothing more on s */
		s = NULL;
	if (second == EL_OK)
		el_unlock(s, "safety/busy-second", token);
	if (s != NULL && q.w.rc == EL_OK)
		el_unlock(s, name, q.w.token);
	el_session_close(s);
	el_session_close(q.other);
	return bad;
}

/* A request numbered in s's session from outside the library (a raw
 * el_client_request on via; the library's own calls are one at a time, see
 * one-call) with seq far past the library's: from then on the cluster
 * answers s's older seqs EL_ESTALE. A RELEASE of a name s does not hold:
 * EL_ENOTFOUND, nothing else done. */
static int bump_seq(el_client *via, el_session *s, uint64_t seq)
{
	static const char bump[] = "safety/stale-bump";
	struct el_cw_msg *m = calloc(2, sizeof *m);
	if (m == NULL)
		return EL_EFULL;
	m->type = EL_CW_RELEASE;
	m->session = el_session_id(s);
	m->seq = seq;
	m->token = 1;
	m->name_len = sizeof bump - 1;
	memcpy(m->name, bump, sizeof bump - 1);
	int rc = el_client_request(via, m, m + 1);
	if (rc == EL_OK)
		rc = m[1].err;
	free(m);
	return rc;
}

/* The token s holds name with, as the cluster shows it; 0: not s's. */
static uint64_t held_by(el_client *c, const char *name, el_session *s)
{
	struct el_lock_info li;
	return el_query(c, name, &li) == EL_OK && li.holder_session == el_session_id(s)
		       ? li.token : 0;
}

/* stale-seq, granted: A waits in el_lock behind `other`; a newer seq of the
 * session acts (1.3 s), so A's next re-send (2 s) gets EL_ESTALE while A's
 * wait stays queued; `other` unlocks at 3 s. A must return the grant (an
 * EL_ESTALE would leave the session holding a lock nobody knows of). */
static int stale_granted(el_client *c, const char *name)
{
	struct queued q;
	if (queue_behind(c, "stale-seq", name, 10000, &q) != 0)
		return 1;
	usleep(1300 * 1000); /* A queued, past its first re-send */
	const int bump = bump_seq(c, q.s, UINT64_C(1) << 20);
	usleep(1700 * 1000); /* A's next re-send met EL_ESTALE */
	el_unlock(q.other, name, q.held);
	pthread_join(q.t, NULL);
	const struct waiter *w = &q.w;
	int bad = 0;
	if (bump != EL_ENOTFOUND)
		bad = failed("stale-seq", "setup: bump rc %d", bump);
	else if (w->rc != EL_OK || w->token <= q.held || held_by(c, name, q.s) != w->token)
		bad = failed("stale-seq", "a wait whose seq a newer one made stale: rc %d (%s), "
			     "token %llu (held %llu); the cluster shows the session holding it with "
			     "token %llu; want EL_OK and that grant", w->rc, w->why,
			     (unsigned long long)w->token, (unsigned long long)q.held,
			     (unsigned long long)held_by(c, name, q.s));
	el_session_close(q.s); /* its seq is behind the cluster's: close it */
	el_session_close(q.other);
	return bad;
}

/* stale-seq, never granted: A waits 2.6 s behind `other`; from 1.2 s a
 * second client numbers A's session every 50 ms (each request there also
 * takes the session's events to that client, so A misses its WAIT_TIMEOUT).
 * A's re-send at 2 s gets EL_ESTALE; A must learn from the lock's waiters
 * that its wait ended and say EL_ETIMEDOUT, it will never be granted. */
static int stale_never(el_client *c, const char *name)
{
	el_client *c2 = cluster_client();
	struct queued q;
	if (c2 == NULL || queue_behind(c, "stale-seq", name, 2600, &q) != 0) {
		el_client_close(c2);
		return 1;
	}
	usleep(1200 * 1000);
	int bump = EL_ENOTFOUND;
	for (uint64_t seq = UINT64_C(1) << 20; !atomic_load(&q.w.done) && seq < (1u << 20) + 400;
	     seq++) {
		const int rc = bump_seq(c2, q.s, seq);
		bump = rc != EL_ENOTFOUND ? rc : bump;
		usleep(50 * 1000);
	}
	pthread_join(q.t, NULL);
	struct el_lock_info li;
	const int got = el_query(c, name, &li);
	const struct waiter *w = &q.w;
	int bad = 0;
	if (bump != EL_ENOTFOUND)
		bad = failed("stale-seq", "setup (never): bump rc %d", bump);
	else if (w->rc != EL_ETIMEDOUT || strstr(w->why, "never") == NULL || got != EL_OK ||
		 li.holder_session != el_session_id(q.other) || li.n_waiters != 0)
		bad = failed("stale-seq", "a wait that ended unseen, its seq made stale: rc %d (%s); "
			     "the lock's holder %llu (other %llu), %u waiters; want EL_ETIMEDOUT saying "
			     "it will never be granted", w->rc, w->why,
			     (unsigned long long)li.holder_session,
			     (unsigned long long)el_session_id(q.other), (unsigned)li.n_waiters);
	el_session_close(q.s);
	el_session_close(q.other);
	el_client_close(c2);
	return bad;
}

/* A wait the session can no longer ask about by its seq (a newer seq of the
 * session acted meanwhile) settles by the lock's holders and waiters. */
static int check_stale_seq(el_client *c)
{
	char granted[40], never[40];
	snprintf(granted, sizeof granted, "safety/stale-%d", (int)getpid());
	snprintf(never, sizeof never, "safety/stale-never-%d", (int)getpid());
	const int bad = stale_granted(c, granted);
	return stale_never(c, never) | bad;
}

/* Does why name every endpoint of the comma-separated list eps? */
static bool names_all(const char *why, const char *eps)
{
	char url[EL_CW_ADDR_MAX + 1];
	for (const char *p = eps; *p != '\0';) {
		const size_t n = strcspn(p, ",");
		snprintf(url, sizeof url, "%.*s", (int)n, p);
		if (n > 0 && strstr(why, url) == NULL)
			return false;
		p += n + (p[n] == ',');
	}
	return true;
}

/* A client whose endpoints all refuse returns within its timeout_ms (the
 * pause between rounds of endpoints, 100 ms, is cut at the deadline) with
 * EL_ETIMEDOUT, saying no leader was reachable at each endpoint tried. */
static int check_deadline(el_client *unused)
{
	(void)unused;
	const int p1 = refusing_port(), p2 = refusing_port();
	char eps[128];
	snprintf(eps, sizeof eps, "tls+tcp://127.0.0.1:%d,tls+tcp://127.0.0.1:%d", p1, p2);
	static const uint32_t timeouts[] = { 1, 50 };
	int bad = 0;
	for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0] && !bad; i++) {
		el_client *c = open_client(eps, getenv("EDGELOCK_CERT"), timeouts[i]);
		struct el_lock_info li;
		const uint64_t t0 = now_ms();
		const int rc = c != NULL ? el_query(c, "safety/deadline", &li) : EL_EINVAL;
		const uint64_t took = now_ms() - t0;
		const char *why = el_client_last_error(c);
		if (rc != EL_ETIMEDOUT || took > timeouts[i] + 40u ||
		    strstr(why, "no leader reachable") == NULL ||
		    (timeouts[i] >= 50 && !names_all(why, eps)))
			bad = failed("deadline", "timeout_ms %u, every endpoint refusing: rc %d after "
				     "%llu ms (%s); want EL_ETIMEDOUT within %u ms, naming each endpoint "
				     "tried", (unsigned)timeouts[i], rc, (unsigned long long)took, why,
				     (unsigned)timeouts[i] + 40u);
		el_client_close(c);
	}
	return bad;
}

/* el_client_close with a session still open closes it on the cluster (its
 * lock free at once, not held until TTL + a 30 s lock-delay) and frees it
 * (LeakSanitizer would report it). */
static int check_client_close(el_client *main_c)
{
	char name[40];
	snprintf(name, sizeof name, "safety/left-open-%d", (int)getpid());
	el_client *c = cluster_client();
	el_session *s = NULL;
	uint64_t token = 0;
	if (c == NULL || el_session_open(c, 30000, &s) != EL_OK) {
		el_client_close(c);
		return failed("client-close", "setup: %s", el_client_last_error(c));
	}
	el_session_set_lock_delay(s, 30000);
	const int rc = el_lock(s, name, false, EL_WAIT_NONE, &token);
	el_client_close(c); /* s with it */
	if (rc != EL_OK)
		return failed("client-close", "lock: rc %d", rc);
	if (taken(main_c, name))
		return failed("client-close", "a session left open at el_client_close kept its "
			      "lock; want it closed on the cluster");
	return 0;
}

/* A certificate the daemons refuse is EL_EPERM at once, saying so, not
 * EL_ENOTLEADER after the whole timeout: none at all (the daemons require
 * one: TLS is cut after asking for it) and a node's (OU=node: the identity
 * proof gets ERROR EPERM). */
static int check_refused_cert(el_client *unused)
{
	(void)unused;
	char node_pem[512];
	snprintf(node_pem, sizeof node_pem, "%s", getenv("EDGELOCK_CA"));
	char *slash = strrchr(node_pem, '/');
	snprintf(slash != NULL ? slash + 1 : node_pem,
		 sizeof node_pem - (size_t)(slash != NULL ? slash + 1 - node_pem : 0), "node1.pem");
	const char *certs[] = { NULL, node_pem };
	int bad = 0;
	for (size_t i = 0; i < 2; i++) {
		el_client *c = open_client(getenv("EDGELOCK_ENDPOINTS"), certs[i], 5000);
		struct el_lock_info li;
		const uint64_t t0 = now_ms();
		const int rc = c != NULL ? el_query(c, "safety/cert", &li) : EL_EINVAL;
		const uint64_t took = now_ms() - t0;
		const char *why = el_client_last_error(c);
		if (rc != EL_EPERM || took > 1000 || strstr(why, "certificate") == NULL)
			bad = failed("refused-cert", "%s: rc %d after %llu ms (%s); want EL_EPERM at "
				     "once, saying the certificate was refused",
				     certs[i] != NULL ? "a node's certificate" : "no certificate", rc,
				     (unsigned long long)took, why);
		el_client_close(c);
	}
	return bad;
}

/* Run by cli_test.py with two of three daemons killed (no leader can be
 * elected): a call gives up at its deadline with EL_ETIMEDOUT, not
 * EL_ENOTLEADER (the API gives no leader hint to act on), saying no leader
 * was reachable and naming every endpoint tried. */
static int check_no_quorum(el_client *unused)
{
	(void)unused;
	const char *eps = getenv("EDGELOCK_ENDPOINTS");
	el_client *c = open_client(eps, getenv("EDGELOCK_CERT"), 3000);
	el_session *s = NULL;
	struct el_lock_info li;
	int bad = c == NULL;
	for (int i = 0; i < 2 && !bad; i++) {
		const int rc = i == 0 ? el_session_open(c, 10000, &s) : el_query(c, "safety/nq", &li);
		const char *why = el_client_last_error(c);
		if (rc != EL_ETIMEDOUT || strstr(why, "no leader reachable") == NULL ||
		    !names_all(why, eps))
			bad = failed("no-quorum", "%s: rc %d (%s); want EL_ETIMEDOUT, no leader "
				     "reachable, every endpoint named", i == 0 ? "open" : "query",
				     rc, why);
	}
	el_session_close(s);
	el_client_close(c);
	return bad;
}

/* Run by cli_test.py on a cluster whose every fdatasync takes
 * EL_SLOW_FSYNC_MS (the LD_PRELOAD shim, an SD card's): one client keeps
 * its most sessions (64) alive. Each renewal is a command the cluster
 * syncs before it answers; renewed one after another, 64 of them took
 * about 64 syncs, over a 2 s TTL, and sessions went in doubt, then lost,
 * on a healthy cluster. Renewals in flight together share the leader's
 * syncs (group commit). */
#define MANY_SESSIONS 64
#define MANY_TTL_MS 2000u

#define MANY_OPENERS 8

struct many_open {
	el_client *c;
	el_session **s; /* MANY_SESSIONS / MANY_OPENERS of them */
	int rc;
};

static void *many_open_main(void *arg)
{
	struct many_open *o = arg;
	for (int i = 0; i < MANY_SESSIONS / MANY_OPENERS && o->rc == EL_OK; i++)
		o->rc = el_session_open(o->c, MANY_TTL_MS, &o->s[i]);
	return NULL;
}

static int check_many_sessions(el_client *unused)
{
	(void)unused;
	static el_session *s[MANY_SESSIONS];
	static struct many_open o[MANY_OPENERS];
	pthread_t t[MANY_OPENERS];
	el_client *c = cluster_client();
	int bad = c == NULL, started = 0, opened = 0;
	for (; !bad && started < MANY_OPENERS; started++) { /* opens cost syncs too */
		o[started] = (struct many_open){ .c = c, .s = s + started * (MANY_SESSIONS / MANY_OPENERS) };
		bad = pthread_create(&t[started], NULL, many_open_main, &o[started]) != 0;
	}
	for (int i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		if (o[i].rc != EL_OK && !bad)
			bad = failed("many-sessions", "open session: %s", el_strerror(o[i].rc));
	}
	for (int i = 0; i < MANY_SESSIONS; i++)
		if (s[i] != NULL)
			s[opened++] = s[i];
	int doubt = 0, lost = 0;
	uint64_t least = MANY_TTL_MS; /* the least lease left seen */
	for (uint64_t end = now_ms() + 3 * MANY_TTL_MS; !bad && now_ms() < end;) {
		for (int i = 0; i < opened; i++) {
			uint64_t left = 0;
			const enum el_lease_state st = el_session_state(s[i], &left);
			doubt += st == EL_LEASE_IN_DOUBT;
			lost += st == EL_LEASE_LOST;
			least = left < least ? left : least;
		}
		usleep(20 * 1000);
	}
	if (!bad && (doubt > 0 || lost > 0))
		bad = failed("many-sessions", "%d sessions of %u ms on a slow disk: in doubt %d "
			     "times and lost %d times in %u ms (counted every 20 ms, the least "
			     "lease left %llu ms); want never", opened, MANY_TTL_MS, doubt, lost,
			     3 * MANY_TTL_MS, (unsigned long long)least);
	printf("client safety: many-sessions: the least lease left %llu ms of %u\n",
	       (unsigned long long)least, MANY_TTL_MS);
	for (int i = 0; i < opened; i++)
		el_session_close(s[i]);
	el_client_close(c);
	return bad;
}

/* One reconnect is one EL_EVENT_GAP, also when the first node found after
 * it is a follower that redirects to the leader (its connection, dropped
 * for the redirect, carried no events). The client reaches the leader
 * through a relay, then the followers; the relay stops (the leader's
 * connection breaks) while a thread polls el_next_event all along. */
struct gap_watch {
	el_session *s;
	atomic_bool stop;
	int gaps;
};

static void *gap_main(void *arg)
{
	struct gap_watch *g = arg;
	struct el_event ev;
	while (!atomic_load(&g->stop))
		if (el_next_event(g->s, &ev, 1) == EL_OK && ev.kind == EL_EVENT_GAP)
			g->gaps++;
	return NULL;
}

static int check_one_gap(el_client *main_c)
{
	char leader[EL_CW_ADDR_MAX + 1], eps[1024];
	struct relay r;
	if (!find_leader(main_c, leader, sizeof leader) || !relay_start(&r, leader))
		return failed("one-gap", "no leader or no relay");
	const char *list[16];
	const unsigned n = el_client_endpoints(main_c, list, 16);
	int used = snprintf(eps, sizeof eps, "tls+tcp://127.0.0.1:%d", r.port);
	for (unsigned i = 0; i < n && i < 16; i++)
		if (strcmp(list[i], leader) != 0)
			used += snprintf(eps + used, sizeof eps - (size_t)used, ",%s", list[i]);
	el_client *c = open_client(eps, getenv("EDGELOCK_CERT"), 10000);
	struct gap_watch g = { .gaps = 0 };
	pthread_t t;
	int bad = c == NULL || el_session_open(c, 30000, &g.s) != EL_OK ||
		  el_watch(g.s, "safety/gap") != EL_OK || pthread_create(&t, NULL, gap_main, &g) != 0;
	if (bad) {
		relay_stop(&r);
		el_session_close(g.s);
		el_client_close(c);
		return failed("one-gap", "setup: %s", el_client_last_error(c));
	}
	relay_stop(&r); /* the leader's connection breaks; its port refuses */
	struct el_lock_info li;
	const int rc = el_query(c, "safety/gap", &li); /* reconnects: follower, then leader */
	usleep(500 * 1000); /* the watcher polls on: a second GAP would show by now */
	atomic_store(&g.stop, true);
	pthread_join(t, NULL);
	if ((rc != EL_OK && rc != EL_ENOTFOUND) || g.gaps != 1)
		bad = failed("one-gap", "query rc %d (%s); %d EL_EVENT_GAP after one reconnect, "
			     "want 1", rc, el_client_last_error(c), g.gaps);
	el_session_close(g.s);
	el_client_close(c);
	return bad;
}

/* ---- Main ------------------------------------------------------------------ */

struct check {
	const char *name;
	int (*run)(el_client *c);
	bool on_demand; /* needs the cluster in a given state: run only when named */
};

static int run_open_lost(el_client *c)
{
	(void)c;
	return check_open_lost();
}

/* Calls that fill every request slot of a client must not starve the
 * renewals of its sessions: a reserve of slots only keepalives and closes
 * take (in libedgelock, and past [limits] requests_per_client in the
 * daemon). URGENT_THREADS threads query in a loop on one client, keeping
 * its slots full, for a while past the TTL of an idle session of the same
 * client: the session must never be in doubt (a failed renewal) or lost. */
#define URGENT_THREADS 100
#define URGENT_TTL_MS 1000u

struct hammer {
	el_client *c;
	atomic_bool *stop;
	unsigned full; /* calls refused for want of a slot */
};

static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	struct el_lock_info li;
	while (!atomic_load(h->stop))
		h->full += el_query(h->c, "safety/urgent", &li) == EL_EFULL;
	return NULL;
}

static int check_urgent_slots(el_client *unused)
{
	(void)unused;
	static struct hammer h[URGENT_THREADS];
	pthread_t t[URGENT_THREADS];
	atomic_bool stop = false;
	el_client *c = cluster_client();
	el_session *s = NULL;
	int bad = c == NULL || el_session_open(c, URGENT_TTL_MS, &s) != EL_OK, started = 0;
	for (; !bad && started < URGENT_THREADS; started++) {
		h[started] = (struct hammer){ .c = c, .stop = &stop };
		bad = pthread_create(&t[started], NULL, hammer_main, &h[started]) != 0;
	}
	int doubt = 0, lost = 0;
	for (uint64_t end = now_ms() + 3 * URGENT_TTL_MS; !bad && now_ms() < end;) {
		const enum el_lease_state st = el_session_state(s, NULL);
		doubt += st == EL_LEASE_IN_DOUBT;
		lost += st == EL_LEASE_LOST;
		usleep(10 * 1000);
	}
	atomic_store(&stop, true);
	unsigned full = 0;
	for (int i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		full += h[i].full;
	}
	if (!bad && (doubt > 0 || lost > 0 || full == 0))
		bad = failed("urgent-slots", "with every slot taken (%u calls refused for want of "
			     "one), an idle session was in doubt %d times and lost %d times in %u ms; "
			     "want never", full, doubt, lost, 3 * URGENT_TTL_MS);
	el_session_close(s);
	el_client_close(c);
	return bad;
}

/* Many threads' first calls on a fresh client share one connection: one
 * call dials while the others wait for it (each used to open a TLS
 * connection of its own, all but one then dropped; 150 threads got
 * timeouts on a healthy cluster). The relay counts the connections. */
#define HERD_THREADS 32

struct herd {
	el_client *c;
	pthread_barrier_t *go;
	int rc;
};

static void *herd_main(void *arg)
{
	struct herd *h = arg;
	struct el_lock_info li;
	pthread_barrier_wait(h->go);
	h->rc = el_query(h->c, "safety/herd", &li);
	return NULL;
}

static int check_one_dial(el_client *main_c)
{
	struct relay r;
	el_client *c = client_via_relay(main_c, &r, "one-dial", 10000);
	if (r.lfd < 0)
		return 1;
	static struct herd h[HERD_THREADS];
	pthread_t t[HERD_THREADS];
	pthread_barrier_t go;
	pthread_barrier_init(&go, NULL, HERD_THREADS);
	int bad = c == NULL, started = 0, errors = 0;
	for (; !bad && started < HERD_THREADS; started++) {
		h[started] = (struct herd){ .c = c, .go = &go };
		bad = pthread_create(&t[started], NULL, herd_main, &h[started]) != 0;
	}
	for (int i = 0; i < started; i++) {
		pthread_join(t[i], NULL);
		errors += h[i].rc != EL_OK && h[i].rc != EL_ENOTFOUND;
	}
	const int conns = atomic_load(&r.accepted);
	if (!bad && (conns != 1 || errors > 0))
		bad = failed("one-dial", "%d threads' first calls made %d connections, %d failed; "
			     "want one connection, no failure", HERD_THREADS, conns, errors);
	pthread_barrier_destroy(&go);
	el_client_close(c);
	relay_stop(&r);
	return bad;
}

/* A refused argument says why in el_client_last_error, not an older
 * error's words. */
static int check_bad_permits(el_client *c)
{
	el_session *s = NULL;
	if (el_session_open(c, 10000, &s) != EL_OK)
		return failed("bad-permits", "open: %s", el_client_last_error(c));
	static const uint32_t permits[] = { 0, EL_SEM_LIMIT_MAX + 1 };
	int bad = 0;
	for (size_t i = 0; i < sizeof permits / sizeof permits[0]; i++) {
		uint64_t token = 123;
		struct el_lock_info li;
		(void)el_query(c, "", &li); /* leaves a message of its own */
		const int rc = el_semaphore_acquire(s, "safety/permits", permits[i], 0, &token);
		if (rc != EL_EINVAL || token != 0 ||
		    strstr(el_client_last_error(c), "permits") == NULL)
			bad = failed("bad-permits", "%u permits: rc %d token %llu (%s); want EL_EINVAL "
				     "saying why, token 0", (unsigned)permits[i], rc,
				     (unsigned long long)token, el_client_last_error(c));
	}
	/* a name the library refuses itself: *token is 0, as on any other error */
	uint64_t t1 = 123, t2 = 123;
	const int r1 = el_lock(s, "", false, 0, &t1), r2 = el_campaign(s, "", NULL, 0, 0, &t2);
	if (r1 != EL_EINVAL || r2 != EL_EINVAL || t1 != 0 || t2 != 0)
		bad = failed("bad-permits", "empty name: el_lock rc %d token %llu, el_campaign rc %d "
			     "token %llu; want EL_EINVAL and token 0", r1, (unsigned long long)t1, r2,
			     (unsigned long long)t2);
	el_session_close(s);
	return bad;
}

/* Arguments the library refuses itself, saying why in words a caller can
 * act on (they used to reach the wire and come back as another error's):
 * a name that is not UTF-8 ("holds it in the other mode"), token 0 on
 * unlock, resign and proclaim ("request of type 5 does not encode"), and an
 * endpoint list with an empty entry (accepted, one endpoint fewer). */
static int check_bad_args(el_client *c)
{
	el_session *s = NULL;
	if (el_session_open(c, 10000, &s) != EL_OK)
		return failed("bad-args", "open: %s", el_client_last_error(c));
	int bad = 0;
	uint64_t token = 123;
	int rc = el_lock(s, "safety/\xff\xfe", false, 0, &token);
	if (rc != EL_EINVAL || token != 0 || strstr(el_client_last_error(c), "UTF-8") == NULL)
		bad = failed("bad-args", "a name that is not UTF-8: rc %d token %llu (%s); want "
			     "EL_EINVAL saying names are UTF-8, token 0", rc,
			     (unsigned long long)token, el_client_last_error(c));
	rc = el_lock(s, "safety/token0", false, 0, &token);
	static const char *const verbs[] = { "unlock", "resign", "proclaim" };
	for (int i = 0; i < 3 && rc == EL_OK; i++) {
		const int r = i == 0 ? el_unlock(s, "safety/token0", 0)
			    : i == 1 ? el_resign(s, "safety/token0", 0)
				     : el_proclaim(s, "safety/token0", 0, "v", 1);
		if (r != EL_EINVAL || strstr(el_client_last_error(c), "token 0") == NULL)
			bad = failed("bad-args", "%s with token 0: rc %d (%s); want EL_EINVAL "
				     "saying token 0 is no grant's", verbs[i], r,
				     el_client_last_error(c));
	}
	if (rc != EL_OK || el_unlock(s, "safety/token0", token) != EL_OK)
		bad = failed("bad-args", "lock or unlock of safety/token0: %s",
			     el_client_last_error(c));
	el_session_close(s);
	const char *eps = getenv("EDGELOCK_ENDPOINTS");
	char list[3][1024];
	snprintf(list[0], sizeof list[0], "%s,", eps);
	snprintf(list[1], sizeof list[1], ",%s", eps);
	snprintf(list[2], sizeof list[2], "%.*s,,%s", (int)strcspn(eps, ","), eps, eps);
	for (int i = 0; i < 3; i++) {
		const struct el_client_options o = { .endpoints = list[i],
						     .ca_file = getenv("EDGELOCK_CA") };
		el_client *e = NULL;
		rc = el_client_open(&e, &o);
		if (rc != EL_EINVAL || strstr(el_client_last_error(NULL), "empty") == NULL)
			bad = failed("bad-args", "endpoints '%s': rc %d (%s); want EL_EINVAL, an "
				     "empty entry", list[i], rc, el_client_last_error(NULL));
		el_client_close(e);
	}
	return bad;
}

/* A call waiting in el_lock learns that its session's lease ran out soon
 * after it did, not a timeout_ms later: the waiter's client goes through a
 * relay that turns mute (the cluster keeps the session alive on the
 * keepalives it still gets; the client sees no answer), and its re-sends,
 * each once a second, used to wait out their whole timeout_ms (5 s here)
 * past the lease's end. */
static int check_lost_wait(el_client *main_c)
{
	char name[40];
	snprintf(name, sizeof name, "safety/lost-wait-%d", (int)getpid());
	struct relay r;
	el_client *c = client_via_relay(main_c, &r, "lost-wait", 5000);
	if (r.lfd < 0)
		return 1;
	el_session *holder = NULL;
	uint64_t held = 0;
	struct waiter w = { .name = name, .wait_ms = 20000, .rc = 1 };
	pthread_t t;
	int bad = 0;
	if (c == NULL || el_session_open(main_c, 30000, &holder) != EL_OK ||
	    el_lock(holder, name, false, EL_WAIT_NONE, &held) != EL_OK ||
	    el_session_open(c, 3000, &w.s) != EL_OK ||
	    pthread_create(&t, NULL, wait_for_lock, &w) != 0) {
		bad = failed("lost-wait", "setup: %s", el_client_last_error(c));
	} else {
		usleep(300000); /* queued behind holder */
		atomic_store(&r.mute, true);
		const bool lost = wait_lost(w.s, 10000);
		const uint64_t lost_at = now_ms();
		while (!atomic_load(&w.done) && now_ms() < lost_at + 10000)
			usleep(5000);
		const uint64_t late = now_ms() - lost_at;
		atomic_store(&r.mute, false);
		pthread_join(t, NULL);
		if (!lost || w.rc != EL_EEXPIRED || late > 700)
			bad = failed("lost-wait", "a wait whose lease ran out (%s): rc %d (%s) %llu ms "
				     "after; want EL_EEXPIRED within 700 ms", lost ? "LOST" : "never LOST",
				     w.rc, w.why, (unsigned long long)late);
	}
	el_session_close(w.s);
	el_session_close(holder);
	el_client_close(c);
	relay_stop(&r);
	return bad;
}

/* A client named label (NULL: none) locks name; what main_c's el_query
 * shows as its holder, into li. 0, or 1 said under check. */
static int holder_of(el_client *main_c, const char *label, const char *name, const char *check,
		     struct el_lock_info *li)
{
	const struct el_client_options o = { .endpoints = getenv("EDGELOCK_ENDPOINTS"),
					     .ca_file = getenv("EDGELOCK_CA"),
					     .cert_key_file = getenv("EDGELOCK_CERT"), .name = label };
	el_client *c = NULL;
	el_session *s = NULL;
	uint64_t token = 0;
	memset(li, 0, sizeof *li);
	int bad = 0;
	if (el_client_open(&c, &o) != EL_OK || el_session_open(c, 10000, &s) != EL_OK ||
	    el_lock(s, name, false, 0, &token) != EL_OK || el_query(main_c, name, li) != EL_OK)
		bad = failed(check, "setup: %s", el_client_last_error(c));
	el_session_close(s);
	el_client_close(c);
	return bad;
}

/* el_query shows the holder's client as the cluster stores it, its
 * identity and the label el_client_open was given, whole up to the
 * cluster's 32 bytes (el_lock_info.holder was cut at 15). */
static int check_holder_name(el_client *main_c)
{
	static const char label[] = "label-of-20-bytes-xy";
	struct el_lock_info li;
	if (holder_of(main_c, label, "safety/holder-name", "holder-name", &li) != 0)
		return 1;
	if (strstr(li.holder, label) == NULL || strlen(li.holder) <= sizeof label)
		return failed("holder-name", "holder '%s'; want 'IDENTITY %s'", li.holder, label);
	return 0;
}

/* With no el_client_options.name the holder is the identity alone
 * ("client", this suite's certificate's CN), not "client " with the
 * space of an empty label after it (an outside tester). */
static int check_holder_bare(el_client *main_c)
{
	struct el_lock_info li;
	if (holder_of(main_c, NULL, "safety/holder-bare", "holder-bare", &li) != 0)
		return 1;
	if (strcmp(li.holder, "client") != 0)
		return failed("holder-bare", "holder '%s'; want 'client' (the identity alone)",
			      li.holder);
	return 0;
}

/* Does el_query on c end in EL_ETIMEDOUT naming the endpoint via (and
 * how it failed: "... in time")? Says why not under check. */
static int query_names(el_client *c, const char *via, const char *check, const char *when)
{
	struct el_lock_info li;
	const int rc = el_query(c, "safety/silent-named", &li);
	const char *why = el_client_last_error(c);
	if (rc == EL_ETIMEDOUT && strstr(why, via) != NULL && strstr(why, "in time") != NULL)
		return 0;
	return failed(check, "%s: el_query -> %d '%s'; want EL_ETIMEDOUT naming %s... in time",
		      when, rc, why, via);
}

/* The connection to the leader, open, stops answering (the relay holds
 * the replies back): EL_ETIMEDOUT's message names the endpoint waited on
 * and how it failed, as the header says, also when the call waited for
 * another thread's dial of it (here the keeper's, redialing after its
 * keepalive got no answer): that call said "tried no endpoint in time"
 * (an outside tester). */
static int check_silent_named(el_client *main_c)
{
	struct relay r;
	el_client *c = client_via_relay(main_c, &r, "silent-named", 1000);
	if (c == NULL)
		return 1;
	struct el_lock_info li;
	el_session *s = NULL;
	char via[64];
	snprintf(via, sizeof via, "tls+tcp://127.0.0.1:%d: ", r.port);
	int bad = 0;
	const int rc = el_query(c, "safety/silent-named", &li);
	if ((rc != EL_OK && rc != EL_ENOTFOUND) || el_session_open(c, 9000, &s) != EL_OK) {
		bad = failed("silent-named", "setup: %s", el_client_last_error(c));
	} else {
		atomic_store(&r.mute, true);
		bad = query_names(c, via, "silent-named", "the open connection silent");
		/* the keeper renews at 3 s, gives its try 1.5 s, then redials
		 * the relay (a second connection) for the 1.5 s left */
		const uint64_t end = now_ms() + 8000;
		while (atomic_load(&r.accepted) < 2 && now_ms() < end)
			usleep(2000);
		if (!bad && atomic_load(&r.accepted) < 2)
			bad = failed("silent-named", "the keeper never redialed");
		else if (!bad)
			bad = query_names(c, via, "silent-named", "while the keeper redials");
		atomic_store(&r.mute, false);
	}
	el_session_close(s);
	el_client_close(c);
	relay_stop(&r);
	return bad;
}

/* el_client_close with sessions open and the cluster gone returns within
 * about one timeout_ms, also while the keeper is renewing one of them: the
 * renewal (its bound is TTL/3, here 2 s against a 1 s timeout) used to be
 * waited out before the closes began. */
#define CLOSE_SESSIONS 4
static int check_close_bound(el_client *main_c)
{
	struct relay r;
	el_client *c = client_via_relay(main_c, &r, "close-bound", 1000);
	el_session *s[CLOSE_SESSIONS] = { NULL };
	int n = 0;
	while (c != NULL && n < CLOSE_SESSIONS && el_session_open(c, 6000, &s[n]) == EL_OK)
		n++;
	int bad = 0;
	if (n < CLOSE_SESSIONS) {
		bad = failed("close-bound", "setup: %d sessions: %s", n, el_client_last_error(c));
	} else {
		relay_stop(&r); /* connections cut, the port refuses: the cluster is gone */
		r.lfd = -1;
		struct timespec pause = { .tv_sec = 2, .tv_nsec = 300000000 };
		nanosleep(&pause, NULL); /* renewals of 2 s each are in flight by now */
		const uint64_t t0 = now_ms();
		el_client_close(c);
		c = NULL;
		const uint64_t took = now_ms() - t0;
		if (took > 1000u + 400u)
			bad = failed("close-bound", "el_client_close with %d sessions, cluster gone, "
				     "timeout_ms 1000, TTL 6000: %llu ms; want about 1000", n,
				     (unsigned long long)took);
	}
	el_client_close(c);
	if (r.lfd >= 0)
		relay_stop(&r);
	return bad;
}

/* A NULL handle or out-pointer is EL_EINVAL, saying so, and sends nothing:
 * no crash, and no lock taken that nobody could learn the token of. */
static int expect_null(const char *what, int rc)
{
	if (rc == EL_EINVAL && strstr(el_client_last_error(NULL), "NULL") != NULL)
		return 0;
	return failed("null-args", "%s: rc %d (%s); want EL_EINVAL naming the NULL", what, rc,
		      el_client_last_error(NULL));
}

static int check_null_args(el_client *c)
{
	el_session *s = NULL;
	if (el_session_open(c, 10000, &s) != EL_OK)
		return failed("null-args", "open: %s", el_client_last_error(c));
	const struct el_client_options o = { .endpoints = "tls+tcp://127.0.0.1:1",
					     .ca_file = getenv("EDGELOCK_CA") };
	uint64_t t = 0, left = 1;
	struct el_event ev;
	struct el_lock_info li;
	struct el_cw_msg msg[2];
	memset(msg, 0, sizeof msg);
	int bad = expect_null("el_client_open(NULL)", el_client_open(NULL, &o));
	bad |= expect_null("el_session_open(NULL client)", el_session_open(NULL, 10000, &s));
	bad |= expect_null("el_session_open(NULL out)", el_session_open(c, 10000, NULL));
	bad |= expect_null("el_lock(NULL session)", el_lock(NULL, "safety/null", false, 0, &t));
	bad |= expect_null("el_lock(NULL token)", el_lock(s, "safety/null", false, 0, NULL));
	bad |= expect_null("el_semaphore_acquire(NULL token)",
			   el_semaphore_acquire(s, "safety/null-sem", 2, 0, NULL));
	bad |= expect_null("el_campaign(NULL value)",
			   el_campaign(s, "safety/null-el", NULL, 4, 0, &t));
	bad |= expect_null("el_campaign(NULL token)",
			   el_campaign(s, "safety/null-el", "v", 1, 0, NULL));
	bad |= expect_null("el_unlock(NULL session)", el_unlock(NULL, "safety/null", 1));
	bad |= expect_null("el_resign(NULL session)", el_resign(NULL, "safety/null", 1));
	bad |= expect_null("el_watch(NULL session)", el_watch(NULL, "safety/null"));
	bad |= expect_null("el_next_event(NULL session)", el_next_event(NULL, &ev, 0));
	bad |= expect_null("el_next_event(NULL event)", el_next_event(s, NULL, 0));
	bad |= expect_null("el_query(NULL client)", el_query(NULL, "safety/null", &li));
	bad |= expect_null("el_query(NULL out)", el_query(c, "safety/null", NULL));
	bad |= expect_null("el_client_request(NULL client)", el_client_request(NULL, msg, msg + 1));
	bad |= expect_null("el_client_event_fd(NULL)", el_client_event_fd(NULL));
	if (el_session_state(NULL, &left) != EL_LEASE_LOST || left != 0 || el_session_id(NULL) != 0 ||
	    el_client_endpoints(NULL, NULL, 4) != 0 || el_session_close(NULL) != EL_OK)
		bad = failed("null-args", "a NULL session is not LOST with 0 ms left, id 0, no "
			     "endpoints and a no-op close");
	el_session_set_lock_delay(NULL, 1000); /* nothing to do, and no crash */
	el_client_close(NULL);
	if (taken(c, "safety/null") || taken(c, "safety/null-sem") || taken(c, "safety/null-el"))
		bad = failed("null-args", "a call refused for a NULL still took its lock");
	el_session_close(s);
	return bad;
}

/* Waits up to limit_ms for an event of kind on s; skips others (a GAP). */
static bool got_event(el_session *s, int kind, uint32_t limit_ms)
{
	const uint64_t until = now_ms() + limit_ms;
	struct el_event ev;
	while (now_ms() < until)
		if (el_next_event(s, &ev, 100) == EL_OK && ev.kind == kind)
			return true;
	return false;
}

static bool value_is(el_client *c, const char *name, const char *want)
{
	struct el_lock_info li;
	return el_query(c, name, &li) == EL_OK && li.value_len == strlen(want) &&
	       memcmp(li.value, want, li.value_len) == 0;
}

/* el_proclaim changes the leader's value (watchers hear it); a wrong token,
 * a non-leader and a plain lock are refused and change nothing;
 * el_unwatch ends the events. */
static int check_proclaim(el_client *c)
{
	el_session *lead = NULL, *other = NULL;
	uint64_t token = 0, t2 = 0;
	if (el_session_open(c, 10000, &lead) != EL_OK || el_session_open(c, 10000, &other) != EL_OK)
		return failed("proclaim", "open: %s", el_client_last_error(c));
	int bad = 0;
	if (el_campaign(lead, "safety/el", "one", 3, 0, &token) != EL_OK ||
	    el_watch(other, "safety/el") != EL_OK ||
	    el_lock(lead, "safety/plain", false, 0, &t2) != EL_OK)
		bad = failed("proclaim", "setup: %s", el_client_last_error(c));
	int rc = el_proclaim(lead, "safety/el", token, "two", 3);
	if (rc != EL_OK || !value_is(c, "safety/el", "two"))
		bad = failed("proclaim", "proclaim: rc %d (%s), or the value is not the new one", rc,
			     el_client_last_error(c));
	if (!got_event(other, EL_EVENT_VALUE_CHANGED, 3000))
		bad = failed("proclaim", "the watcher heard no VALUE_CHANGED");
	const struct { el_session *s; const char *name; uint64_t token; int want; } refused[] = {
		{ lead, "safety/el", token + 1, EL_ESTALE },
		{ other, "safety/el", token, EL_ENOTFOUND },
		{ lead, "safety/plain", t2, EL_EINVAL },
	};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		rc = el_proclaim(refused[i].s, refused[i].name, refused[i].token, "bad", 3);
		if (rc != refused[i].want)
			bad = failed("proclaim", "refused case %zu: rc %d (%s), want %d", i, rc,
				     el_client_last_error(c), refused[i].want);
	}
	if (!value_is(c, "safety/el", "two"))
		bad = failed("proclaim", "a refused proclaim changed the value");
	if (el_unwatch(other, "safety/el") != EL_OK)
		bad = failed("proclaim", "unwatch: %s", el_client_last_error(c));
	(void)el_proclaim(lead, "safety/el", token, "three", 5);
	if (got_event(other, EL_EVENT_VALUE_CHANGED, 1000))
		bad = failed("proclaim", "a VALUE_CHANGED came after el_unwatch");
	el_session_close(other);
	el_session_close(lead);
	return bad;
}

/* The holder's side of check_unanswered: after hold_ms the relay speaks
 * again, and a second later the holder gives the lock up. */
struct unanswered_plan {
	struct relay *r;
	el_session *holder;
	uint64_t token;
};

static void *unanswered_main(void *arg)
{
	struct unanswered_plan *p = arg;
	const struct timespec mute = { 1, 500000000 }, then = { 1, 0 };
	nanosleep(&mute, NULL);
	atomic_store(&p->r->mute, false);
	nanosleep(&then, NULL);
	(void)el_unlock(p->holder, "safety/unanswered", p->token);
	return NULL;
}

/* An acquire that reached the leader but whose answer did not come within
 * timeout_ms (the relay holds the daemon's replies back 1.5 s, timeout 500
 * ms) may be queued there all the same: el_lock must learn how it ended,
 * asking the same seq again, and return the grant, never a timeout for a
 * wait the cluster later grants (a lock held that nobody knows of, found
 * by testing from outside). */
static int check_unanswered(el_client *main_c)
{
	struct relay r;
	el_client *c = client_via_relay(main_c, &r, "unanswered", 500);
	if (c == NULL)
		return 1;
	struct unanswered_plan plan = { .r = &r };
	el_session *s = NULL;
	uint64_t token = 0;
	int bad = 0;
	pthread_t th;
	if (el_session_open(main_c, 10000, &plan.holder) != EL_OK ||
	    el_lock(plan.holder, "safety/unanswered", false, 0, &plan.token) != EL_OK ||
	    el_session_open(c, 10000, &s) != EL_OK) {
		bad = failed("unanswered", "setup: %s", el_client_last_error(c));
	} else {
		atomic_store(&r.mute, true);
		const bool started = pthread_create(&th, NULL, unanswered_main, &plan) == 0;
		const uint64_t t0 = now_ms();
		const int rc = el_lock(s, "safety/unanswered", false, 20000, &token);
		const uint64_t took = now_ms() - t0;
		if (started)
			pthread_join(th, NULL);
		if (rc != EL_OK || token <= plan.token)
			bad = failed("unanswered", "el_lock -> %d after %llu ms (%s), token %llu; want "
				     "the grant after the holder's unlock", rc, (unsigned long long)took,
				     el_client_last_error(c), (unsigned long long)token);
		else if (el_unlock(s, "safety/unanswered", token) != EL_OK ||
			 taken(main_c, "safety/unanswered"))
			bad = failed("unanswered", "the grant could not be given back");
	}
	if (bad && taken(main_c, "safety/unanswered"))
		printf("client safety: unanswered: the lock is held by a session that was told "
		       "it did not get it\n");
	el_session_close(s);
	el_session_close(plan.holder);
	el_client_close(c);
	relay_stop(&r);
	return bad;
}

/* Unmutes the relay after 1.5 s. */
static void *unmute_main(void *arg)
{
	const struct timespec mute = { 1, 500000000 };
	nanosleep(&mute, NULL);
	atomic_store(&((struct relay *)arg)->mute, false);
	return NULL;
}

/* A release whose answer does not come within timeout_ms (the relay holds
 * the replies back 1.5 s, timeout 500 ms) may have acted or not: el_unlock
 * asks the same seq again until the cluster answers, and returns its
 * answer, never EL_ETIMEDOUT with the hold in doubt (a soak test saw a
 * session keep a lock whose el_unlock timed out under a killed leader). */
static int check_unanswered_unlock(el_client *main_c)
{
	struct relay r;
	el_client *c = client_via_relay(main_c, &r, "unanswered-unlock", 500);
	if (c == NULL)
		return 1;
	el_session *s = NULL;
	uint64_t token = 0;
	int bad = 0;
	pthread_t th;
	if (el_session_open(c, 10000, &s) != EL_OK ||
	    el_lock(s, "safety/unanswered-unlock", false, 0, &token) != EL_OK) {
		bad = failed("unanswered-unlock", "setup: %s", el_client_last_error(c));
	} else {
		atomic_store(&r.mute, true);
		const bool started = pthread_create(&th, NULL, unmute_main, &r) == 0;
		const uint64_t t0 = now_ms();
		const int rc = el_unlock(s, "safety/unanswered-unlock", token);
		const uint64_t took = now_ms() - t0;
		if (started)
			pthread_join(th, NULL);
		if (rc != EL_OK || taken(main_c, "safety/unanswered-unlock"))
			bad = failed("unanswered-unlock", "el_unlock -> %d after %llu ms (%s); want "
				     "EL_OK once the cluster's answer came, and the lock free", rc,
				     (unsigned long long)took, el_client_last_error(c));
	}
	el_session_close(s);
	el_client_close(c);
	relay_stop(&r);
	return bad;
}

/* A client through a relay to the leader, a session of ttl_ms on it holding
 * lock name: what the relay checks below start from. */
struct relayed {
	struct relay r;
	el_client *c;
	el_session *s;
	uint64_t token;
};

static bool relayed_open(el_client *main_c, struct relayed *x, const char *check,
			 uint32_t timeout_ms, uint32_t ttl_ms, const char *name)
{
	memset(x, 0, sizeof *x);
	x->c = client_via_relay(main_c, &x->r, check, timeout_ms);
	if (x->c == NULL)
		return false;
	if (el_session_open(x->c, ttl_ms, &x->s) == EL_OK &&
	    el_lock(x->s, name, false, 0, &x->token) == EL_OK)
		return true;
	failed(check, "setup: %s", el_client_last_error(x->c));
	return false;
}

static void relayed_close(struct relayed *x)
{
	el_session_close(x->s);
	el_client_close(x->c);
	if (x->r.lfd >= 0)
		relay_stop(&x->r);
}

/* An unlock that gets no answer (a minority leader cannot commit it; here
 * a relay holds the replies back) gives up when the session's lease runs
 * out here, when the cluster gives the hold up itself: not after the whole
 * timeout_ms (10 s here; a CLI ran on 10 s past its command's end). */
static int check_release_bound(el_client *main_c)
{
	struct relayed x;
	uint64_t left = 0;
	int bad = 1;
	if (relayed_open(main_c, &x, "release-bound", 10000, 3000, "safety/release-bound")) {
		atomic_store(&x.r.mute, true);
		(void)el_session_state(x.s, &left);
		const uint64_t t0 = now_ms();
		const int rc = el_unlock(x.s, "safety/release-bound", x.token);
		const uint64_t took = now_ms() - t0;
		atomic_store(&x.r.mute, false);
		bad = rc != EL_EEXPIRED || took > left + 700;
		if (bad)
			failed("release-bound", "el_unlock -> %d after %llu ms with %llu ms of lease "
			       "left (%s); want EL_EEXPIRED once the lease ran out", rc,
			       (unsigned long long)took, (unsigned long long)left,
			       el_client_last_error(x.c));
	}
	relayed_close(&x);
	return bad;
}

/* el_session_close of a session already LOST here, the cluster silent: a
 * short try (the session is about to expire there anyway), not the whole
 * timeout_ms (10 s here; a CLI lingered so after its command had ended). */
static int check_close_lost(el_client *main_c)
{
	struct relayed x;
	int bad = 1;
	if (relayed_open(main_c, &x, "close-lost", 10000, 2000, "safety/close-lost")) {
		atomic_store(&x.r.mute, true);
		const bool lost = wait_lost(x.s, 10000);
		const uint64_t t0 = now_ms();
		(void)el_session_close(x.s);
		x.s = NULL;
		const uint64_t took = now_ms() - t0;
		atomic_store(&x.r.mute, false);
		bad = !lost || took > 1600;
		if (bad)
			failed("close-lost", "el_session_close of a %s session, the cluster silent: "
			       "%llu ms; want at most about 1 s", lost ? "LOST" : "never LOST",
			       (unsigned long long)took);
	}
	relayed_close(&x);
	return bad;
}

/* el_next_event's side of check_close_busy: its return code. */
struct close_busy_plan {
	el_session *s;
	int event_rc, close_rc;
	uint64_t close_took;
};

static void *close_busy_events(void *arg)
{
	struct close_busy_plan *p = arg;
	struct el_event ev;
	p->event_rc = el_next_event(p->s, &ev, 10000);
	while (p->event_rc == EL_OK) /* what came before the close: read on */
		p->event_rc = el_next_event(p->s, &ev, 10000);
	return NULL;
}

static void *close_busy_close(void *arg)
{
	struct close_busy_plan *p = arg;
	const uint64_t t0 = now_ms();
	p->close_rc = el_session_close(p->s);
	p->close_took = now_ms() - t0;
	return NULL;
}

/* el_session_close claims its session: an el_lock on it while the close's
 * CLOSE waits on a silent leader (the relay holds the replies back) gets
 * EL_EBUSY at once, and an el_next_event waiting on it returns
 * EL_ECANCELED before the close frees it (the close neither set busy nor
 * waited for event readers: el_lock then ran on, and both used the session
 * after its free; ASan says so). */
static int check_close_busy(el_client *main_c)
{
	struct relayed x;
	struct close_busy_plan p = { .event_rc = 1 };
	pthread_t ev_th, close_th;
	int bad = 1;
	if (relayed_open(main_c, &x, "close-busy", 3000, 10000, "safety/close-busy")) {
		p.s = x.s;
		const bool ev_started = pthread_create(&ev_th, NULL, close_busy_events, &p) == 0;
		usleep(200 * 1000); /* el_next_event waits */
		atomic_store(&x.r.mute, true);
		const bool started = pthread_create(&close_th, NULL, close_busy_close, &p) == 0;
		usleep(300 * 1000); /* the close waits for its answer */
		uint64_t token = 1;
		const uint64_t t0 = now_ms();
		const int rc = started ? el_lock(x.s, "safety/close-busy-2", false, 0, &token) : 1;
		const uint64_t took = now_ms() - t0;
		if (started)
			pthread_join(close_th, NULL);
		if (ev_started)
			pthread_join(ev_th, NULL);
		x.s = NULL; /* freed by the close */
		atomic_store(&x.r.mute, false);
		bad = rc != EL_EBUSY || took > 500 || token != 0 || p.event_rc != EL_ECANCELED ||
		      p.close_took > 3500;
		if (bad)
			failed("close-busy", "el_lock during el_session_close -> %d after %llu ms, "
			       "token %llu, want EL_EBUSY at once; el_next_event -> %d, want "
			       "EL_ECANCELED; close %d after %llu ms", rc, (unsigned long long)took,
			       (unsigned long long)token, p.event_rc, p.close_rc,
			       (unsigned long long)p.close_took);
	}
	relayed_close(&x);
	return bad;
}

/* el_next_event reading the connection itself notices within about a
 * second that the client dropped that connection (a renewal got no answer
 * on it; the relay holds the replies back): one EL_EVENT_GAP then, not
 * EL_ETIMEDOUT after its whole timeout (15 s here) on a dead stream. */
static int check_event_drop(el_client *main_c)
{
	struct relayed x;
	int bad = 1;
	if (relayed_open(main_c, &x, "event-drop", 10000, 3000, "safety/event-drop")) {
		struct el_event ev = { .kind = 0 };
		int rc = el_next_event(x.s, &ev, 0);
		while (rc == EL_OK) /* what came before: drained */
			rc = el_next_event(x.s, &ev, 0);
		atomic_store(&x.r.mute, true);
		const uint64_t t0 = now_ms();
		rc = el_next_event(x.s, &ev, 15000);
		const uint64_t took = now_ms() - t0;
		atomic_store(&x.r.mute, false);
		/* renewed every second, each try 1.5 s: dropped by 2.5 s */
		bad = rc != EL_OK || ev.kind != EL_EVENT_GAP || took > 5000;
		if (bad)
			failed("event-drop", "el_next_event on a connection the client dropped -> "
			       "%d, kind %d, after %llu ms; want EL_EVENT_GAP within 5 s", rc, ev.kind,
			       (unsigned long long)took);
	}
	relayed_close(&x);
	return bad;
}

/* A thread waiting in el_next_event on a quiet session sleeps: the
 * connection's reader thread, which steps aside while another thread
 * reads, looked every 10 ms whether it could read again, 100 wake-ups a
 * second for as long as a watcher waited (a board's idle power). Counted
 * as the process's voluntary context switches over QUIET_MS. */
#define QUIET_MS 2000u
#define QUIET_SWITCHES_MAX 50

struct quiet {
	el_session *s;
	int rc;
};

static void *quiet_main(void *arg)
{
	struct quiet *q = arg;
	struct el_event ev;
	q->rc = el_next_event(q->s, &ev, QUIET_MS + 1000u);
	return NULL;
}

static long switches_so_far(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_nvcsw : -1;
}

static int check_quiet_waiter(el_client *unused)
{
	(void)unused;
	el_client *c = cluster_client();
	struct quiet q = { .rc = EL_OK };
	pthread_t t;
	int bad = c == NULL || el_session_open(c, 60000, &q.s) != EL_OK; /* renewed in 20 s */
	bad = bad || pthread_create(&t, NULL, quiet_main, &q) != 0;
	if (bad) {
		el_session_close(q.s);
		el_client_close(c);
		return failed("quiet-waiter", "open: %s", el_client_last_error(c));
	}
	usleep(300 * 1000); /* the waiter holds the read role */
	const long before = switches_so_far();
	usleep(QUIET_MS * 1000);
	const long n = switches_so_far() - before;
	pthread_join(t, NULL);
	if (q.rc != EL_ETIMEDOUT || before < 0 || n > QUIET_SWITCHES_MAX)
		bad = failed("quiet-waiter", "el_next_event on a quiet session -> %d; the process "
			     "slept %ld times in %u ms; want EL_ETIMEDOUT, at most %d", q.rc, n,
			     QUIET_MS, QUIET_SWITCHES_MAX);
	el_session_close(q.s);
	el_client_close(c);
	return bad;
}

/* A session's request that gets no answer on a new connection (its try
 * times out: the relay holds back the daemon's replies there once the
 * client sent its proof and one request) may have moved the session's
 * events to it: the leader attaches a session to the connection its
 * request comes on. Events committed then went there, and the client
 * dropped that connection, which had carried no answer: the library
 * counted no reconnect, and the events were lost without an EL_EVENT_GAP.
 * Here the request is the keeper's renewal after the first connection was
 * cut (one GAP for that), and main_c's lock and unlock of a watched name
 * are the events. The gate stays until both committed, so every connection
 * the client makes meanwhile is held after its first request: whatever the
 * timing, the events go to connections the client drops unanswered. */
static int fresh_gap_events(el_client *main_c, struct relayed *x, const char *watched)
{
	el_session *s2 = NULL;
	uint64_t token = 0;
	struct el_event ev = { .kind = 0 };
	int rc = el_session_open(main_c, 10000, &s2);
	if (rc != EL_OK)
		return failed("fresh-gap", "setup: %s", el_client_last_error(main_c));
	atomic_store(&x->r.gate, getenv("EDGELOCK_CERT") != NULL ? 2 : 1);
	atomic_store(&x->r.cut, true);
	rc = el_next_event(x->s, &ev, 4000); /* the keeper renews within TTL/3 */
	const bool cut_gap = rc == EL_OK && ev.kind == EL_EVENT_GAP;
	if (cut_gap) {
		usleep(300 * 1000); /* the renewal, on its new connection, reached the leader */
		rc = el_lock(s2, watched, false, 0, &token);
		if (rc == EL_OK)
			rc = el_unlock(s2, watched, token);
	}
	atomic_store(&x->r.gate, 0); /* the next connection passes */
	el_session_close(s2);
	if (!cut_gap)
		return failed("fresh-gap", "setup: after the cut -> %d, kind %d; want one "
			      "EL_EVENT_GAP", rc, ev.kind);
	if (rc != EL_OK)
		return failed("fresh-gap", "lock and unlock of %s: %s", watched,
			      el_client_last_error(main_c));
	rc = el_next_event(x->s, &ev, 5000);
	if (rc == EL_OK && (ev.kind == EL_EVENT_GAP || (ev.kind == EL_EVENT_HOLDER_CHANGED &&
							strcmp(ev.name, watched) == 0)))
		return 0;
	return failed("fresh-gap", "events committed while the session's renewal went "
		      "unanswered on a new connection: el_next_event -> %d, kind %d (%s); want "
		      "EL_EVENT_GAP or the event", rc, ev.kind, ev.name);
}

static int check_fresh_gap(el_client *main_c)
{
	struct relayed x;
	int bad = 1;
	if (relayed_open(main_c, &x, "fresh-gap", 10000, 3000, "safety/fresh-gap")) {
		struct el_event ev;
		if (el_watch(x.s, "safety/fresh-gap-w") != EL_OK) {
			bad = failed("fresh-gap", "watch: %s", el_client_last_error(x.c));
		} else {
			while (el_next_event(x.s, &ev, 0) == EL_OK)
				; /* what came before: drained */
			bad = fresh_gap_events(main_c, &x, "safety/fresh-gap-w");
		}
	}
	relayed_close(&x);
	return bad;
}

/* el_session_close while the keeper's renewal of the session is in flight
 * and the cluster silent (the relay holds the replies back; TTL 9 s, so the
 * renewal began at 3 s and may take until 6 s): the renewal is given up
 * and the close ends within its timeout (2 s), not after the renewal's
 * TTL/3 and then a timeout more. */
static int check_close_renewing(el_client *main_c)
{
	struct relayed x;
	int bad = 1;
	if (relayed_open(main_c, &x, "close-renewing", 2000, 9000, "safety/close-renewing")) {
		atomic_store(&x.r.mute, true);
		usleep(3500 * 1000); /* the renewal is in flight */
		const uint64_t t0 = now_ms();
		const int rc = el_session_close(x.s);
		const uint64_t took = now_ms() - t0;
		x.s = NULL;
		atomic_store(&x.r.mute, false);
		bad = took > 2400;
		if (bad)
			failed("close-renewing", "el_session_close during a renewal, the cluster "
			       "silent: %d after %llu ms; want its 2 s timeout at most", rc,
			       (unsigned long long)took);
	}
	relayed_close(&x);
	return bad;
}

/* What check_unanswered_full holds in flight: after 0.5 s, 55 queries
 * (not urgent) and the close of a session (urgent), all on the silent
 * relay, for their 1.5 s try. */
struct full_plan {
	el_client *c;
	el_session *s2;
};

static void *full_filler_main(void *arg)
{
	struct full_plan *p = arg;
	struct el_lock_info li;
	(void)el_query(p->c, "safety/unanswered-full-q", &li);
	return NULL;
}

static void *full_closer_main(void *arg)
{
	struct full_plan *p = arg;
	(void)el_session_close(p->s2);
	return NULL;
}

#define FULL_QUERIES 55 /* beside the acquire: the 56 slots calls may take */

static void *full_spawner_main(void *arg)
{
	pthread_t th[FULL_QUERIES + 1];
	bool ok[FULL_QUERIES + 1];
	usleep(500 * 1000); /* the acquire is in its first try */
	for (unsigned i = 0; i <= FULL_QUERIES; i++) {
		if (i == FULL_QUERIES) /* the queries took their slots first */
			usleep(100 * 1000);
		ok[i] = pthread_create(&th[i], NULL, i < FULL_QUERIES ? full_filler_main
								      : full_closer_main, arg) == 0;
	}
	for (unsigned i = 0; i <= FULL_QUERIES; i++)
		if (ok[i])
			pthread_join(th[i], NULL);
	return NULL;
}

/* An acquire sent through a silent relay (r1: the daemon gets it and grants
 * the lock, its reply is held back), then, its try over (1.5 s), tried on
 * the other endpoint (r2, which passes all) while requests sent after it
 * still fill the client's request slots: EL_EFULL there is no answer, so
 * el_lock tries on and returns the grant, never EL_EFULL with the lock
 * granted on the cluster and nobody knowing. */
static int check_unanswered_full(el_client *main_c)
{
	char leader[EL_CW_ADDR_MAX + 1], eps[128];
	struct relay r1, r2;
	if (!find_leader(main_c, leader, sizeof leader) || !relay_start(&r1, leader))
		return failed("unanswered-full", "no leader or no relay");
	if (!relay_start(&r2, leader)) {
		relay_stop(&r1);
		return failed("unanswered-full", "no second relay");
	}
	snprintf(eps, sizeof eps, "tls+tcp://127.0.0.1:%d,tls+tcp://127.0.0.1:%d", r1.port,
		 r2.port);
	el_client *c = open_client(eps, getenv("EDGELOCK_CERT"), 4000);
	struct full_plan p = { .c = c };
	el_session *s = NULL;
	uint64_t token = 0;
	pthread_t th;
	int bad = c == NULL || el_session_open(c, 30000, &s) != EL_OK ||
		  el_session_open(c, 30000, &p.s2) != EL_OK;
	if (bad) {
		failed("unanswered-full", "setup: %s", el_client_last_error(c));
	} else {
		atomic_store(&r1.mute, true);
		const bool started = pthread_create(&th, NULL, full_spawner_main, &p) == 0;
		const uint64_t t0 = now_ms();
		const int rc = el_lock(s, "safety/unanswered-full", false, 0, &token);
		const uint64_t took = now_ms() - t0;
		if (started)
			pthread_join(th, NULL);
		p.s2 = NULL;
		atomic_store(&r1.mute, false);
		/* a grant sooner than the queries' tries end: the slots were never
		 * full, and the check tested nothing */
		bad = rc != EL_OK || token == 0 || took < 1800;
		if (bad)
			failed("unanswered-full", "el_lock -> %d after %llu ms (%s), token %llu; want "
			       "the grant once the queries' slots free (about 2 s)%s", rc, (unsigned long long)took, el_client_last_error(c),
			       (unsigned long long)token,
			       taken(main_c, "safety/unanswered-full") ? " (the lock is held on "
			       "the cluster)" : "");
		else if (el_unlock(s, "safety/unanswered-full", token) != EL_OK)
			bad = failed("unanswered-full", "the grant could not be given back");
	}
	el_session_close(s);
	el_session_close(p.s2);
	el_client_close(c);
	relay_stop(&r1);
	relay_stop(&r2);
	return bad;
}

/* options.name: one that is not UTF-8 is refused at el_client_open; a long
 * one is cut before a character that does not fit whole (32 bytes: here
 * 31 + a 2-byte character), and its sessions open (either made every
 * el_session_open fail: "does not encode"). */
static int check_bad_name(el_client *unused)
{
	(void)unused;
	const char *bad_utf8 = "safety\xff", *long_name = "0123456789012345678901234567890\xc3\xa9x";
	int bad = 0;
	for (unsigned i = 0; i < 2; i++) {
		const struct el_client_options o = {
			.endpoints = getenv("EDGELOCK_ENDPOINTS"), .ca_file = getenv("EDGELOCK_CA"),
			.cert_key_file = getenv("EDGELOCK_CERT"), .name = i == 0 ? bad_utf8 : long_name,
		};
		el_client *c = NULL;
		el_session *s = NULL;
		const int rc = el_client_open(&c, &o);
		const int open_rc = rc == EL_OK ? el_session_open(c, 10000, &s) : rc;
		if (i == 0 && rc != EL_EINVAL)
			bad = failed("bad-name", "a name that is not UTF-8: el_client_open -> %d, "
				     "session open -> %d; want EL_EINVAL at el_client_open", rc,
				     open_rc);
		else if (i == 1 && open_rc != EL_OK)
			bad = failed("bad-name", "a 33-byte name with a character across byte 32: "
				     "el_client_open -> %d, el_session_open -> %d (%s); want both EL_OK",
				     rc, open_rc, el_client_last_error(c));
		el_session_close(s);
		el_client_close(c);
	}
	return bad;
}

static const struct check CHECKS[] = {
	{ "open-lost", run_open_lost, false },
	{ "lost-calls", check_lost_calls, false },
	{ "one-call", check_one_call, false },
	{ "stale-seq", check_stale_seq, false },
	{ "deadline", check_deadline, false },
	{ "client-close", check_client_close, false },
	{ "refused-cert", check_refused_cert, false },
	{ "urgent-slots", check_urgent_slots, false },
	{ "one-dial", check_one_dial, false },
	{ "bad-permits", check_bad_permits, false },
	{ "bad-args", check_bad_args, false },
	{ "close-bound", check_close_bound, false },
	{ "holder-name", check_holder_name, false },
	{ "holder-bare", check_holder_bare, false },
	{ "silent-named", check_silent_named, false },
	{ "lost-wait", check_lost_wait, false },
	{ "null-args", check_null_args, false },
	{ "proclaim", check_proclaim, false },
	{ "one-gap", check_one_gap, false },
	{ "unanswered", check_unanswered, false },
	{ "unanswered-unlock", check_unanswered_unlock, false },
	{ "release-bound", check_release_bound, false },
	{ "close-lost", check_close_lost, false },
	{ "close-busy", check_close_busy, false },
	{ "event-drop", check_event_drop, false },
	{ "quiet-waiter", check_quiet_waiter, false },
	{ "close-renewing", check_close_renewing, false },
	{ "unanswered-full", check_unanswered_full, false },
	{ "bad-name", check_bad_name, false },
	{ "fresh-gap", check_fresh_gap, false },
	{ "no-quorum", check_no_quorum, true },
	{ "many-sessions", check_many_sessions, true },
};
#define N_CHECKS (sizeof CHECKS / sizeof CHECKS[0])

static bool wanted(const struct check *k, int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], k->name) == 0)
			return true;
	return argc <= 1 && !k->on_demand;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* lines out before a sanitizer's exit */
	for (int i = 1; i < argc; i++) {
		bool known = false;
		for (size_t k = 0; k < N_CHECKS; k++)
			known |= strcmp(argv[i], CHECKS[k].name) == 0;
		if (!known) {
			const bool help = strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
			fprintf(help ? stdout : stderr, "usage: client-safety-test [CHECK...]\n"
				"  libedgelock's edges against the cluster that EDGELOCK_ENDPOINTS,\n"
				"  EDGELOCK_CA and EDGELOCK_CERT name. Checks:");
			for (size_t k = 0; k < N_CHECKS; k++)
				fprintf(help ? stdout : stderr, " %s", CHECKS[k].name);
			fprintf(help ? stdout : stderr, "\n  Exit 0: every check held; 1: a check "
				"failed; 2: usage.\n");
			return help ? 0 : 2;
		}
	}
	el_client *c = cluster_client();
	if (c == NULL)
		return 1;
	int failures = 0;
	for (size_t k = 0; k < N_CHECKS; k++)
		if (wanted(&CHECKS[k], argc, argv)) {
			const uint64_t t0 = now_ms();
			const int bad = CHECKS[k].run(c);
			printf("client safety: %s: %s (%llu ms)\n", CHECKS[k].name,
			       bad ? "FAILED" : "ok", (unsigned long long)(now_ms() - t0));
			failures += bad;
		}
	el_client_close(c);
	printf("client safety: %s\n", failures == 0 ? "ok" : "FAILED");
	return failures == 0 ? 0 : 1;
}
