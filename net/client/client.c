/*
 * client.c - libedgelock's connection to the cluster (edgelock.h): TLS
 * streams to the endpoints, one reader thread per connection, requests
 * matched to replies by id, redirects to the leader, reconnects, and the
 * queue of pushed events the session code waits on.
 *
 * Locking: one mutex (c->mu) and one condition variable guard the client's
 * state (connection, pending requests, events, sessions); a mutex per
 * connection (k->send_mu) keeps frames whole on its stream, so a write
 * stuck on a connection being given up holds no other. Nothing that waits
 * on the network runs under c->mu.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "el_cbor.h"
#include "el_client_impl.h"
#include "el_url.h"

static _Thread_local char last_error[1024];

void el_client__fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof last_error, fmt, ap);
	va_end(ap);
}

int el_client__null(const char *what)
{
	el_client__fail("%s: a NULL handle or argument", what);
	return EL_EINVAL;
}

void el_client__context(const char *fmt, ...)
{
	char what[160], was[sizeof last_error - sizeof what - 2]; /* both fit */
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	memcpy(was, last_error, sizeof was - 1);
	was[sizeof was - 1] = '\0';
	snprintf(last_error, sizeof last_error, "%s: %s", what, was);
}

const char *el_client_last_error(el_client *c)
{
	(void)c;
	return last_error[0] != '\0' ? last_error : "no error";
}

uint64_t el_client__now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void deadline_ts(uint64_t deadline_ms, struct timespec *ts)
{
	/* Condition variables wait on CLOCK_REALTIME unless told otherwise; the
	 * client's condvar is set to CLOCK_MONOTONIC, close enough to BOOTTIME
	 * for a wait's bound (only the lease deadline needs BOOTTIME). */
	const uint64_t now = el_client__now_ms();
	const uint64_t wait = deadline_ms > now ? deadline_ms - now : 0;
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)(wait / 1000u);
	ts->tv_nsec += (long)(wait % 1000u) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Wait on cv (made by el_client__cond_init) until deadline_ms; false when
 * it passed. */
bool el_client__wait_on(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t deadline_ms)
{
	if (el_client__now_ms() >= deadline_ms)
		return false;
	struct timespec ts;
	deadline_ts(deadline_ms, &ts);
	return pthread_cond_timedwait(cv, mu, &ts) != ETIMEDOUT ||
	       el_client__now_ms() < deadline_ms;
}

/* Wait on the client's condvar until deadline_ms; false when it passed. */
bool el_client__wait(el_client *c, uint64_t deadline_ms)
{
	return el_client__wait_on(&c->cv, &c->mu, deadline_ms);
}

void el_client__cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &ca);
	pthread_condattr_destroy(&ca);
}

/* Make the event fd readable (an event, or a reconnect that may have lost
 * some). A saturated counter polls readable anyway. */
void el_client__wake_events(el_client *c)
{
	const uint64_t one = 1;
	if (c->event_fd >= 0 && write(c->event_fd, &one, sizeof one) < 0)
		return;
}

/* ---- Connections --------------------------------------------------------- */

/* Hand a reply to the request waiting for its id, or queue an event. An
 * ERROR EPERM without an id is the daemon refusing our identity proof (or
 * its absence) before it closes the connection (docs/protocol.md).
 * decode_err: m did not decode (only its id and type are known): it goes
 * to its request as that error (try_once). */
static void deliver(el_client *c, struct el_conn *k, const struct el_cw_msg *m,
		    int decode_err)
{
	pthread_mutex_lock(&c->mu);
	if (decode_err != 0) {
		for (unsigned i = 0; i < EL_CLIENT_PENDING_MAX; i++) {
			struct el_pending *p = c->pending[i];
			if (p != NULL && p->id == m->id && !p->done) {
				p->decode_err = decode_err;
				p->done = true;
			}
		}
	} else if (m->type == EL_CW_EVENT) {
		if (k == c->conn) {
			if (c->n_events == EL_CLIENT_EVENTS_MAX) { /* drop the oldest: a gap */
				c->ev_head = (c->ev_head + 1) % EL_CLIENT_EVENTS_MAX;
				c->n_events--;
				c->gaps++;
			}
			c->events[(c->ev_head + c->n_events) % EL_CLIENT_EVENTS_MAX] = *m;
			c->n_events++;
			c->ev_count++;
			if (m->kind == EL_CW_EV_GAP)
				c->gaps++;
			k->served = true;
			el_client__wake_events(c);
		}
	} else if (m->type == EL_CW_ERROR && m->id == 0 && m->err == EL_EPERM) {
		k->refused = true;
	} else {
		for (unsigned i = 0; i < EL_CLIENT_PENDING_MAX; i++) {
			struct el_pending *p = c->pending[i];
			if (p != NULL && p->id == m->id && !p->done) {
				*p->reply = *m;
				p->done = true;
				k->served |= m->err != EL_ENOTLEADER;
			}
		}
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}

/* ---- Reading -------------------------------------------------------------- */

static void conn_close(struct el_conn *k);

static void kick(struct el_conn *k)
{
	const uint64_t one = 1;
	if (write(k->kick_fd, &one, sizeof one) < 0)
		return; /* a saturated counter is readable anyway */
}

/* Read until one frame is whole and handed out: 1. Or EL_ETIMEDOUT, or
 * EL_ECANCELED (kick_fd), with the partial frame kept in k for the next
 * reader; or EL_EIO when the stream ended or broke the framing. Only by the
 * holder of the read role, without c->mu. */
static int read_frame(el_client *c, struct el_conn *k, uint64_t deadline_ms, int kick_fd)
{
	for (;;) {
		size_t want = EL_CW_PREFIX;
		if (k->rx_have >= EL_CW_PREFIX) {
			const uint32_t len = el_cw_get_prefix(k->rx);
			if (len == 0 || len > EL_CW_FRAME_MAX)
				return EL_EIO;
			want = EL_CW_PREFIX + len;
			if (k->rx_have == want) {
				k->rx_have = 0;
				const int drc = el_cw_decode(k->rx_msg, k->rx + EL_CW_PREFIX, len);
				/* a reply we cannot read still ends its request
				 * (deliver): dropped, it was retried every try on
				 * a new connection until the call's timeout */
				if (drc == 0 || k->rx_msg->id != 0)
					deliver(c, k, k->rx_msg, drc);
				return 1;
			}
		}
		const int n = el_link_read_or_kick(&k->link, k->rx + k->rx_have, want - k->rx_have,
						   deadline_ms, kick_fd);
		if (n < 0)
			return n;
		k->rx_have += (size_t)n;
	}
}

/* Hold the read role for one read_frame. Under c->mu, which it drops for
 * the read; a stream that ended marks k dead. */
static int read_as_holder(el_client *c, struct el_conn *k, uint64_t deadline_ms, bool thread)
{
	k->reading = true;
	k->thread_reads = thread;
	pthread_mutex_unlock(&c->mu);
	const int rc = read_frame(c, k, deadline_ms, thread ? k->kick_fd : -1);
	pthread_mutex_lock(&c->mu);
	k->reading = false;
	k->thread_reads = false;
	k->heard |= rc == 1;
	if (rc == EL_EIO)
		k->dead = true;
	pthread_cond_broadcast(&c->cv);
	return rc;
}

/* Requests read their own replies; the reader thread reads (events between
 * requests) once none has run for a whole READER_IDLE_MS. It is not woken
 * per request: under load it wakes READER_IDLE_MS apart, not once per
 * reply. While another thread reads or waits for a reply, it sleeps until
 * the last one is done (waiter_done), or READER_NAP_MS at most: it looked
 * every READER_IDLE_MS, 100 wake-ups a second for as long as a thread
 * waited in el_next_event (client_safety.c, quiet-waiter). */
#define READER_IDLE_MS 10u
#define READER_NAP_MS 1000u

/* A thread is done waiting on k (its reply came, or its try or its look
 * for an event ended): once none waits, the reader thread may look again.
 * Under c->mu. */
static void waiter_done(struct el_conn *k)
{
	k->waiters--;
	if (k->waiters == 0 && !k->reading)
		pthread_cond_signal(&k->reader_cv);
}

/* The connection's reader thread: reads only while no request does, until
 * the stream ends or conn_close stops it. */
static void *reader_main(void *arg)
{
	struct el_conn *k = arg;
	el_client *c = k->client;
	pthread_mutex_lock(&c->mu);
	uint64_t seen = k->requests;
	while (!k->stop && !k->dead) {
		if (k->reading || k->waiters > 0) {
			(void)el_client__wait_on(&k->reader_cv, &c->mu,
						 el_client__now_ms() + READER_NAP_MS);
		} else if (k->requests != seen) { /* a request ran: a quiet period first */
			seen = k->requests;
			const uint64_t quiet = el_client__now_ms() + READER_IDLE_MS;
			while (!k->stop && el_client__wait_on(&k->reader_cv, &c->mu, quiet))
				;
		} else if (read_as_holder(c, k, EL_LINK_FOREVER, true) == EL_ECANCELED) {
			uint64_t kicks;
			if (read(k->kick_fd, &kicks, sizeof kicks) < 0)
				kicks = 0; /* nothing to drain */
		}
	}
	k->dead = true;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Wait until deadline_ms for what the client's connection brings next (an
 * event, say), reading it ourselves when no thread reads, so the event
 * wakes the thread waiting for it and no other. Under c->mu; false when the
 * deadline passed. The caller checks again what it waits for. */
#define WAIT_CONN_BEAT_MS 1000u
bool el_client__wait_conn(el_client *c, uint64_t deadline_ms)
{
	struct el_conn *k = c->conn;
	if (k == NULL || k->dead || (k->reading && !k->thread_reads))
		return el_client__wait(c, deadline_ms); /* the thread reading delivers */
	if (el_client__now_ms() >= deadline_ms)
		return false;
	k->refs++; /* k stays while we read it without c->mu */
	k->waiters++;
	k->requests++;
	bool in_time = true;
	if (k->thread_reads) {
		kick(k); /* it steps aside; the next look reads */
		in_time = el_client__wait(c, deadline_ms);
	} else {
		/* At most a second per read: nothing kicks this thread when the
		 * client drops k for another connection (a request timed out on
		 * it), and the caller must then look again (a reconnect is a
		 * gap), not sit on a dead stream for its whole timeout. */
		const uint64_t beat = el_client__now_ms() + WAIT_CONN_BEAT_MS;
		if (read_as_holder(c, k, beat < deadline_ms ? beat : deadline_ms, false) ==
		    EL_ETIMEDOUT)
			in_time = el_client__now_ms() < deadline_ms;
	}
	waiter_done(k);
	if (--k->refs == 0) { /* c->conn moved on meanwhile: ours was the last */
		pthread_mutex_unlock(&c->mu);
		conn_close(k);
		pthread_mutex_lock(&c->mu);
	}
	return in_time;
}

/* Wait for p's reply on k until deadline_ms, reading it ourselves when no
 * other thread reads. Under c->mu. */
static void wait_reply(el_client *c, struct el_conn *k, const struct el_pending *p,
		       uint64_t deadline_ms)
{
	while (!p->done && !k->dead) {
		if (!k->reading) {
			if (read_as_holder(c, k, deadline_ms, false) == EL_ETIMEDOUT)
				break;
		} else if (!el_client__wait(c, deadline_ms)) {
			break;
		}
	}
}

/*
 * Proving to the right node. The daemon's first frame is its CHALLENGE
 * (net/el_ident.h), naming the node; we answer with a PROOF signed over that
 * name, or, without a certificate, send nothing (an anonymous client; the
 * daemon accepts it only with client_auth = optional).
 *
 * We sign only for the node whose certificate TLS verified on this very
 * connection: whoever answers at an address could otherwise pass us another
 * node's challenge (any holder of a certificate of the cluster CA can serve
 * TLS) and hand our signature to that node, becoming us there. So the name
 * we sign for is read from the daemon's certificate (its CN, and its OU must
 * be node), and a challenge naming anyone else gets no proof. A relaying
 * member presents its own certificate, and the challenge it relays names
 * another node.
 */
static int read_challenge(struct el_conn *k, uint64_t deadline_ms, uint8_t *ch, uint32_t *len)
{
	uint8_t prefix[EL_CW_PREFIX];
	int rv = el_link_read_exact(&k->link, prefix, sizeof prefix, deadline_ms);
	*len = rv == 0 ? el_cw_get_prefix(prefix) : 0;
	if (rv == 0 && (*len == 0 || *len > EL_IDENT_CHALLENGE_MAX))
		rv = EL_EDECODE;
	if (rv == 0)
		rv = el_link_read_exact(&k->link, ch, *len, deadline_ms);
	return rv;
}

/* The node name of the certificate TLS verified: the only one we sign for. */
static int server_node_name(const struct el_conn *k, char name[EL_IDENT_NAME_MAX + 1])
{
	enum el_ident_role role = EL_IDENT_CLIENT;
	const mbedtls_x509_crt *crt = el_link_peer_cert(&k->link);
	if (crt == NULL || !el_ident_cert_identity(crt, name, &role) || role != EL_IDENT_NODE)
		return EL_EPERM;
	return 0;
}

/* Read the challenge and, with a certificate of ours, prove to cert_name;
 * EL_EPERM when the challenge names another node (its name goes to named). */
static int conn_handshake(el_client *c, struct el_conn *k, uint64_t deadline_ms,
			  const char *cert_name, char named[EL_IDENT_NAME_MAX + 1])
{
	uint8_t ch[EL_IDENT_CHALLENGE_MAX];
	uint32_t len = 0;
	int rv = read_challenge(k, deadline_ms, ch, &len);
	if (rv != 0 || c->ident == NULL)
		return rv;
	if (el_ident_challenge_name(ch, len, named) != 0)
		return EL_EDECODE;
	uint8_t frame[EL_CW_PREFIX + EL_IDENT_PROOF_MAX];
	/* conn_open may run on several threads at once (a reconnect race) */
	pthread_mutex_lock(&c->ident_mu);
	const int n = el_ident_prove(c->ident, ch, len, cert_name, frame + EL_CW_PREFIX,
				     sizeof frame - EL_CW_PREFIX);
	pthread_mutex_unlock(&c->ident_mu);
	if (n < 0)
		return n == EL_EPERM ? EL_EPERM : EL_EDECODE;
	el_cw_put_prefix(frame, (uint32_t)n);
	return el_link_write(&k->link, frame, EL_CW_PREFIX + (size_t)n, deadline_ms);
}

/* What a failed exchange after TLS was, in words. */
static void exchange_error(int rv, const char *named, const char *cert_name, char *why,
			   size_t cap)
{
	if (rv == EL_EPERM)
		snprintf(why, cap, "the challenge names %s but the server's certificate is "
			 "%s's: not proving our identity to it", named, cert_name);
	else if (rv == EL_ETIMEDOUT)
		snprintf(why, cap, "no challenge in time");
	else if (rv == EL_EDECODE)
		snprintf(why, cap, "a malformed challenge");
	else
		snprintf(why, cap, "the connection closed during the challenge");
}

/* Free a connection no thread uses (its link closed or never dialed). */
static void conn_free(struct el_conn *k)
{
	el_link_close(&k->link);
	if (k->kick_fd >= 0)
		close(k->kick_fd);
	pthread_cond_destroy(&k->reader_cv);
	pthread_mutex_destroy(&k->send_mu);
	free(k->rx);
	free(k->rx_msg);
	free(k);
}

/* Dial url; a connection past TLS, or NULL with the reason in why. */
static struct el_conn *conn_dial(el_client *c, const char *url, uint64_t deadline_ms,
				 int *rv_out, char *why, size_t cap)
{
	struct el_conn *k = calloc(1, sizeof(*k));
	if (k == NULL) {
		*rv_out = EL_EFULL;
		snprintf(why, cap, "out of memory");
		return NULL;
	}
	k->client = c;
	k->refs = 1;
	k->link.fd = -1;
	el_client__cond_init(&k->reader_cv);
	pthread_mutex_init(&k->send_mu, NULL);
	k->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	k->rx = malloc(EL_CW_PREFIX + EL_CW_FRAME_MAX);
	k->rx_msg = malloc(sizeof(*k->rx_msg));
	if (k->kick_fd < 0 || k->rx == NULL || k->rx_msg == NULL) {
		*rv_out = EL_EFULL;
		snprintf(why, cap, "out of memory or file descriptors");
	} else {
		*rv_out = el_link_dial(&k->link, c->tls, url, NULL, deadline_ms, why, cap);
	}
	if (*rv_out != 0) {
		conn_free(k);
		return NULL;
	}
	return k;
}

/* Dial url, prove who we are (to the node TLS verified, see above) and start
 * the reader; NULL, a message and *rv_out (EL_EPERM: the server refused our
 * certificate) on failure. */
static struct el_conn *conn_open(el_client *c, const char *url, uint32_t timeout_ms,
				 int *rv_out)
{
	const uint64_t deadline_ms = el_client__now_ms() + timeout_ms;
	char cert_name[EL_IDENT_NAME_MAX + 1] = "", named[EL_IDENT_NAME_MAX + 1] = "";
	char why[300] = "";
	int rv = 0;
	struct el_conn *k = conn_dial(c, url, deadline_ms, &rv, why, sizeof why);
	if (rv == 0 && c->ident != NULL && server_node_name(k, cert_name) != 0) {
		rv = EL_EPERM;
		snprintf(why, sizeof why, "the server's certificate is not a node's (OU=node): "
			 "not proving our identity to it");
	} else if (rv == 0) {
		rv = conn_handshake(c, k, deadline_ms, cert_name, named);
		if (rv != 0)
			exchange_error(rv, named, cert_name, why, sizeof why);
	}
	if (rv == 0 && pthread_create(&k->reader, NULL, reader_main, k) != 0) {
		rv = EL_EFULL;
		snprintf(why, sizeof why, "cannot start the reader thread");
	}
	*rv_out = rv;
	if (rv != 0) {
		if (k != NULL)
			conn_free(k);
		el_client__fail("%s: %s", url, why);
		return NULL;
	}
	snprintf(k->url, sizeof k->url, "%s", url);
	k->opened_ms = el_client__now_ms();
	return k;
}

/* Close k and free it: only by its last holder (conn_put), or by the one
 * thread that opened it privately (el_client_request_at). */
static void conn_close(struct el_conn *k)
{
	if (k == NULL)
		return;
	el_client *c = k->client;
	pthread_mutex_lock(&c->mu);
	k->stop = true;
	pthread_cond_signal(&k->reader_cv);
	pthread_mutex_unlock(&c->mu);
	el_link_shutdown(&k->link); /* ends the reader's read, now or at its next */
	pthread_join(k->reader, NULL);
	conn_free(k);
}

/* Write one whole frame on k by deadline_ms; threads sharing k take turns. */
static int conn_send(struct el_conn *k, const uint8_t *frame, size_t len,
		     uint64_t deadline_ms)
{
	pthread_mutex_lock(&k->send_mu);
	const int rv = el_link_write(&k->link, frame, len, deadline_ms);
	pthread_mutex_unlock(&k->send_mu);
	return rv;
}

/* ---- Requests ------------------------------------------------------------- */

/* A thread using k (a request in flight on it) holds a reference, and so
 * does c->conn while k is the client's connection: k is closed and freed
 * when the last one is put, never under another thread's send or wait. */
static void conn_put(el_client *c, struct el_conn *k)
{
	if (k == NULL)
		return;
	pthread_mutex_lock(&c->mu);
	const bool last = --k->refs == 0;
	pthread_mutex_unlock(&c->mu);
	if (last)
		conn_close(k);
}

/* ---- What a request tried -------------------------------------------------- */

/*
 * A connection the node closes as soon as we proved who we are, before a
 * word of answer, is most likely its peer port: TLS passes there with any
 * certificate of the cluster CA, a client's too, and the node closes it
 * for the client certificate, saying so in its own log only. The client
 * saw it as "no reply in time" and redialed it for the whole call (12 s,
 * then "TLS handshake: no answer in time": an outside tester). Such an
 * endpoint is given up for the call after CUT_MAX such closes (a node
 * stopping as we connect closes one, a peer port every one), and the
 * call ends at once when every endpoint was.
 */
#define CUT_MS 1000u
#define CUT_MAX 2u
#define CUT_WHY "closed by the node right after the TLS handshake (is this its peer port? " \
		"clients use client_addr)"

/* The endpoints one request tried and how each last failed, for the one
 * line that says no leader was reachable (the CLI's exit 69 shows it): the
 * configured ones, and a leader named by a follower. */
#define TRIED_WHY_MAX 160
struct tried {
	bool renewal; /* the request is a keepalive: given up once the client closes */
	const el_session *renewing; /* the keeper's renewal of it: given up once it closes */
	unsigned n;
	struct {
		char url[EL_CW_ADDR_MAX + 1];
		char why[TRIED_WHY_MAX];
		unsigned cuts; /* connections the node closed as they opened */
	} ep[EL_CLIENT_ENDPOINTS_MAX + 1];
};

/* Note why url failed (why may begin with "url: ", as conn_open's do). A
 * full list keeps the newest in its last place. */
static void tried_note(struct tried *t, const char *url, const char *why)
{
	const size_t n = strlen(url);
	if (strncmp(why, url, n) == 0 && why[n] == ':' && why[n + 1] == ' ')
		why += n + 2;
	unsigned i = 0;
	while (i < t->n && strcmp(t->ep[i].url, url) != 0)
		i++;
	if (i == t->n && t->n < EL_CLIENT_ENDPOINTS_MAX + 1)
		t->n++;
	else if (i == t->n)
		t->ep[i = t->n - 1].cuts = 0; /* another url's place */
	snprintf(t->ep[i].url, sizeof t->ep[i].url, "%s", url);
	snprintf(t->ep[i].why, sizeof t->ep[i].why, "%s", why);
	for (char *p = t->ep[i].why; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' '; /* one line */
}

/* url's place in t, or -1. */
static int tried_find(const struct tried *t, const char *url)
{
	for (unsigned i = 0; i < t->n; i++)
		if (strcmp(t->ep[i].url, url) == 0)
			return (int)i;
	return -1;
}

/* Has url a note already? */
static bool tried_has(const struct tried *t, const char *url)
{
	return tried_find(t, url) >= 0;
}

/* Is url given up for this call (closed as it opened, CUT_MAX times)? */
static bool tried_cut(const struct tried *t, const char *url)
{
	const int i = tried_find(t, url);
	return i >= 0 && t->ep[i].cuts >= CUT_MAX;
}

/* The request's deadline passed and no endpoint acted as the leader. */
static void tried_fail(const struct tried *t, uint64_t took_ms)
{
	char list[sizeof t->ep] = "";
	size_t used = 0;
	for (unsigned i = 0; i < t->n && used < sizeof list; i++)
		used += (size_t)snprintf(list + used, sizeof list - used, "%s%s: %s",
					 i > 0 ? "; " : "", t->ep[i].url, t->ep[i].why);
	el_client__fail("no leader reachable within %llu ms (tried %s)",
			(unsigned long long)took_ms, t->n > 0 ? list : "no endpoint in time");
}

/* Is t's request a renewal of a client that is closing, or of a session
 * being closed? el_client_close closes the sessions (their locks free now)
 * while the keeper may be renewing one, and el_session_close waits for a
 * renewal of its session in flight: the renewal, dialing or retrying with
 * the cluster unreachable, would hold the closes up by up to TTL/3. */
static bool abandoned(el_client *c, const struct tried *t)
{
	if (!t->renewal)
		return false;
	pthread_mutex_lock(&c->mu);
	const bool closing = c->closing || (t->renewing != NULL && t->renewing->closed);
	pthread_mutex_unlock(&c->mu);
	return closing;
}

/* The pause between rounds of endpoints when every one of them failed. */
#define ALL_DOWN_PAUSE_MS 100u

/* k was just opened: make it the client's connection and return it (with
 * the caller's reference). Another thread may have connected meanwhile (the
 * dial and the identity proof take a while): then keep its connection,
 * which may carry requests in flight and the sessions' events, and drop k. */
static struct el_conn *install_conn(el_client *c, struct el_conn *k)
{
	pthread_mutex_lock(&c->mu);
	struct el_conn *old = c->conn;
	if (old != NULL && !old->dead) {
		struct el_conn *theirs = old;
		old = k;
		k = theirs;
		k->refs++; /* ours */
	} else {
		c->conn = k;
		k->refs++; /* c->conn's, beside ours from conn_open */
		if (old != NULL && old->served)
			c->reconnects++;
	}
	pthread_mutex_unlock(&c->mu);
	conn_put(c, old); /* the loser's only reference, or c->conn's */
	return k;
}

/* k, the client's connection, is gone. Events may have been lost with it
 * only if it was the leader's (it carried an answer other than "not the
 * leader", or an event) or a session's request on it got no answer (the
 * leader may have attached the session to it, try_once): that is a
 * reconnect, one EL_EVENT_GAP. A
 * follower's, dropped to follow its redirect, carried none, so finding the
 * leader through a follower after a reconnect is still one. Under c->mu. */
static void lose_conn(el_client *c, const struct el_conn *k)
{
	c->conn = NULL;
	if (k->served) {
		c->reconnects++;
		el_client__wake_events(c);
	}
}

/* The longest one dial (TCP, TLS, identity proof) may take, and the least
 * it is given while that much of the call is left: a TLS handshake costs a
 * small board tens of milliseconds of CPU, a loaded one more. */
#define DIAL_MAX_MS 2000u
#define DIAL_MIN_MS 500u

/* How long the next dial may take: what is left of the call, split over the
 * endpoints this round has yet to try. A node that accepts TCP but never
 * finishes TLS (SIGSTOPped, swapping, wedged) must not spend a whole call
 * alone: with one whole bound per dial, a new client whose first endpoint
 * was such a node never reached the leader within a timeout of 2 s. */
static uint32_t dial_budget(uint64_t left_ms, unsigned untried)
{
	uint64_t ms = left_ms / (untried > 0 ? untried : 1u);
	if (ms < DIAL_MIN_MS)
		ms = DIAL_MIN_MS < left_ms ? DIAL_MIN_MS : left_ms;
	return ms < DIAL_MAX_MS ? (uint32_t)ms : DIAL_MAX_MS;
}

/* The endpoint to dial next into url: the leader a follower named, else
 * the next of the list, but none this call gave up (tried_cut); false
 * when every one was. */
static bool next_url(el_client *c, const struct tried *t, char *url, size_t cap)
{
	bool found = false;
	pthread_mutex_lock(&c->mu);
	if (c->leader_hint[0] != '\0' && !tried_cut(t, c->leader_hint)) {
		snprintf(url, cap, "%s", c->leader_hint);
		found = true;
	}
	c->leader_hint[0] = '\0';
	for (unsigned i = 0; i < c->n_endpoints && !found; i++) {
		const char *ep = c->endpoints[c->next_ep];
		c->next_ep = (c->next_ep + 1) % c->n_endpoints;
		if (!tried_cut(t, ep)) {
			snprintf(url, cap, "%s", ep);
			found = true;
		}
	}
	if (found)
		snprintf(c->dialing_url, sizeof c->dialing_url, "%s", url);
	pthread_mutex_unlock(&c->mu);
	return found;
}

/* The dialing part of current_conn: the endpoints in turn until one
 * answers or deadline_ms. */
static struct el_conn *dial_some(el_client *c, uint64_t deadline_ms, struct tried *t,
				 int *rv_out)
{
	for (unsigned attempt = 0; el_client__now_ms() < deadline_ms && !abandoned(c, t);
	     attempt++) {
		char url[EL_CW_ADDR_MAX + 1];
		if (!next_url(c, t, url, sizeof url))
			break; /* every endpoint given up: request_until ends the call */
		const uint64_t now = el_client__now_ms();
		const uint64_t left = deadline_ms > now ? deadline_ms - now : 0;
		int rv = 0;
		struct el_conn *k = conn_open(
			c, url, dial_budget(left, c->n_endpoints - attempt % c->n_endpoints), &rv);
		if (rv == EL_EPERM) {
			*rv_out = rv; /* conn_open said why */
			return NULL;
		}
		if (k != NULL)
			return install_conn(c, k);
		tried_note(t, url, last_error);
		if (attempt + 1 >= c->n_endpoints && attempt % c->n_endpoints == c->n_endpoints - 1) {
			/* all down: pace the next round, but never past the
			 * caller's deadline (timeout_ms is a bound, not a hint) */
			const uint64_t pace = el_client__now_ms() + ALL_DOWN_PAUSE_MS;
			pthread_mutex_lock(&c->mu);
			el_client__wait(c, pace < deadline_ms ? pace : deadline_ms);
			pthread_mutex_unlock(&c->mu);
		}
	}
	*rv_out = EL_ETIMEDOUT; /* request_until says what was tried */
	return NULL;
}

/* The connection requests go to: the leader hint first, then the endpoints
 * in turn (each failure noted in t). Called without c->mu; NULL
 * (*rv_out EL_ETIMEDOUT) when none answered by deadline, or
 * at once when one refused our certificate (*rv_out EL_EPERM: the others
 * share its CA and configuration, and waiting changes nothing). The caller
 * holds a reference on the connection returned (conn_put). One call dials
 * at a time: the others wait for its connection, or for their turn if it
 * found none, instead of each opening one (a herd of first calls from many
 * threads opened a TLS connection each, and all but one were dropped). */
static struct el_conn *current_conn(el_client *c, uint64_t deadline_ms, struct tried *t,
				    int *rv_out)
{
	pthread_mutex_lock(&c->mu);
	struct el_conn *k = c->conn;
	while ((k == NULL || k->dead) && c->dialing) {
		if (!el_client__wait(c, deadline_ms)) { /* another call was still looking */
			char url[sizeof c->dialing_url];
			snprintf(url, sizeof url, "%s", c->dialing_url);
			pthread_mutex_unlock(&c->mu);
			/* its endpoint is the one this call waited on: name it
			 * (an outside tester read "tried no endpoint in time") */
			if (url[0] != '\0')
				tried_note(t, url, "no answer in time (still connecting)");
			*rv_out = EL_ETIMEDOUT;
			return NULL;
		}
		k = c->conn;
	}
	if (k != NULL && !k->dead) {
		k->refs++;
		pthread_mutex_unlock(&c->mu);
		return k;
	}
	if (k != NULL) /* dead: drop it, and say so to event readers */
		lose_conn(c, k);
	c->dialing = true;
	pthread_mutex_unlock(&c->mu);
	conn_put(c, k); /* c->conn's reference */
	k = dial_some(c, deadline_ms, t, rv_out);
	pthread_mutex_lock(&c->mu);
	c->dialing = false;
	c->dialing_url[0] = '\0';
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return k;
}

/* k is broken or silent: no longer the client's connection (the caller
 * still puts its own reference). */
static void drop_conn(el_client *c, struct el_conn *k)
{
	pthread_mutex_lock(&c->mu);
	const bool mine = c->conn == k;
	if (mine)
		lose_conn(c, k);
	pthread_mutex_unlock(&c->mu);
	if (mine)
		conn_put(c, k);
}

static bool urgent(uint8_t type)
{
	return type == EL_CW_KEEPALIVE || type == EL_CW_CLOSE_SESSION;
}

static int add_pending(el_client *c, struct el_pending *p, uint8_t type)
{
	unsigned used = 0, free_slot = EL_CLIENT_PENDING_MAX;
	for (unsigned i = 0; i < EL_CLIENT_PENDING_MAX; i++) {
		if (c->pending[i] != NULL)
			used++;
		else if (free_slot == EL_CLIENT_PENDING_MAX)
			free_slot = i;
	}
	const unsigned cap = urgent(type) ? EL_CLIENT_PENDING_MAX
					  : EL_CLIENT_PENDING_MAX - EL_CLIENT_PENDING_URGENT;
	if (used >= cap || free_slot == EL_CLIENT_PENDING_MAX)
		return EL_EFULL;
	c->pending[free_slot] = p;
	return 0;
}

static void remove_pending(el_client *c, const struct el_pending *p)
{
	for (unsigned i = 0; i < EL_CLIENT_PENDING_MAX; i++)
		if (c->pending[i] == p)
			c->pending[i] = NULL;
}

/* One try on connection k: send and wait for the reply until deadline.
 * 1: a reply; 0: the connection broke (k->cut: as it opened) or the try
 * timed out; <0: error. */
static int try_once(el_client *c, struct el_conn *k, const uint8_t *frame, size_t len,
		    const struct el_cw_msg *req, struct el_cw_msg *reply, uint64_t deadline_ms,
		    bool *unanswered)
{
	struct el_pending p = { .id = req->id, .reply = reply };
	pthread_mutex_lock(&c->mu);
	int rc = add_pending(c, &p, req->type);
	if (rc == 0) {
		k->waiters++;
		k->requests++;
		if (k->thread_reads) /* step aside: our reply is ours to read */
			kick(k);
	}
	pthread_mutex_unlock(&c->mu);
	if (rc != 0) {
		el_client__fail("too many requests in flight on this client");
		return rc;
	}
	const int send_rc = conn_send(k, frame, len, deadline_ms);
	const bool sent = send_rc == 0;
	pthread_mutex_lock(&c->mu);
	if (sent)
		wait_reply(c, k, &p, deadline_ms);
	waiter_done(k);
	remove_pending(c, &p);
	const bool done = p.done, refused = k->refused;
	/* The leader attaches a session to the connection a request of it
	 * arrives on, before answering: one left unanswered here (its try
	 * timed out) may have moved the session's events to k, so losing k
	 * may lose events even though k never served (lose_conn) */
	k->served |= !done && req->session != 0;
	k->cut |= !done && !k->heard && (k->dead || send_rc == EL_EIO) &&
		  el_client__now_ms() - k->opened_ms < CUT_MS;
	const bool cut = k->cut;
	pthread_mutex_unlock(&c->mu);
	if (refused && !done) { /* the same proof fails everywhere: no retry */
		/* The daemon's EPERM carries no reason (it tells a stranger
		 * nothing); its log names it. */
		el_client__fail("%s: the server refused our identity (ERROR EPERM): our "
				"certificate may be revoked (the cluster's CRL), or not a "
				"client's of the cluster CA (OU=client); the daemon's log says "
				"which", k->url);
		return EL_EPERM;
	}
	if (p.decode_err != 0) { /* the node answered: no retry reads it better */
		el_client__fail("%s: the reply to request %llu does not decode (%s): a daemon "
				"of another client protocol version?", k->url,
				(unsigned long long)p.id, el_strerror(p.decode_err));
		return p.decode_err;
	}
	if (cut)
		el_client__fail("%s: %s", k->url, CUT_WHY);
	else if (!done)
		el_client__fail("%s: %s", k->url, sent ? "no reply in time"
							: "connection lost while sending");
	if (!done && unanswered != NULL) /* part of the frame may have left */
		*unanswered = true;
	return done ? 1 : 0;
}

static size_t frame_of(struct el_cw_msg *req, uint8_t *frame)
{
	const int n = el_cw_encode(req, frame + EL_CW_PREFIX, EL_CW_FRAME_MAX);
	if (n <= 0)
		return 0;
	el_cw_put_prefix(frame, (uint32_t)n);
	return EL_CW_PREFIX + (size_t)n;
}

/* The try on k got no reply (broken or silent): note why, and count a
 * close as it opened (given up at CUT_MAX, next_url). */
static void tried_broken(el_client *c, struct tried *t, const struct el_conn *k,
			 uint64_t deadline_ms)
{
	/* cut by the call's own deadline, an endpoint that answered before
	 * keeps what it said ("not the leader"), which tells more than "no
	 * reply in time" */
	if (el_client__now_ms() < deadline_ms || !tried_has(t, k->url))
		tried_note(t, k->url, last_error);
	pthread_mutex_lock(&c->mu);
	const int at = k->cut ? tried_find(t, k->url) : -1;
	pthread_mutex_unlock(&c->mu);
	if (at >= 0)
		t->ep[at].cuts++;
}

#define NO_LEADER_WHY "it knows no leader: no quorum, or it cannot reach the leader"

/* A follower that knows no leader is asked again every LEADERLESS_POLL_MS,
 * LEADERLESS_POLLS times, before the next endpoint is tried. */
#define LEADERLESS_POLL_MS 20u
#define LEADERLESS_POLLS 5u

/* reply says k is a follower: go to the leader it names, or ask it again
 * (LEADERLESS_POLLS times) while it knows none. */
static void follow(el_client *c, struct tried *t, struct el_conn *k,
		   const struct el_cw_msg *reply, unsigned *leaderless)
{
	const bool named = reply->leader_addr_len > 0;
	/* a node cut off from a leader that still has its quorum knows none
	 * either: say both (an outside tester read "no quorum?" from such a
	 * node while the cluster ran) */
	tried_note(t, k->url, named ? "not the leader (it named the leader)"
				    : "not the leader (" NO_LEADER_WHY ")");
	pthread_mutex_lock(&c->mu);
	if (named)
		snprintf(c->leader_hint, sizeof c->leader_hint, "%.*s",
			 (int)reply->leader_addr_len, reply->leader_addr);
	else
		el_client__wait(c, el_client__now_ms() + LEADERLESS_POLL_MS);
	pthread_mutex_unlock(&c->mu);
	/* An election takes tens of milliseconds once the old leader's links
	 * have closed: the follower asked will know the winner soon, and
	 * asking it again on this connection costs no new handshake. One that
	 * stays without a leader (cut off from the majority) is left for the
	 * next endpoint. */
	if (named || ++*leaderless >= LEADERLESS_POLLS) {
		drop_conn(c, k);
		*leaderless = 0;
	}
}

/* How often a request already sent looks again for a free slot (EL_EFULL). */
#define FULL_RETRY_MS 20u

/* Send req until a node acts as the leader and answers, or deadline_ms.
 * *unanswered (may be NULL): a try may have reached a node that never
 * answered it. Once one may have, a local failure that follows (no free
 * slot, the identity refused) is no answer either: the request may act
 * yet, so the call ends as EL_ETIMEDOUT, for the caller's paths of an
 * unsure outcome, never as a plain failure (an el_lock returned EL_EFULL
 * while its ACQUIRE was granted). renewing: the keeper's renewal of it. */
static int request_until(el_client *c, struct el_cw_msg *req, struct el_cw_msg *reply,
			 uint64_t deadline_ms, bool *unanswered, const el_session *renewing)
{
	uint8_t *frame = malloc(EL_CW_PREFIX + EL_CW_FRAME_MAX);
	struct tried *t = calloc(1, sizeof(*t));
	if (frame == NULL || t == NULL) {
		free(frame);
		free(t);
		return EL_EFULL;
	}
	const uint64_t start = el_client__now_ms();
	pthread_mutex_lock(&c->mu);
	if (req->id == 0)
		req->id = ++c->next_id;
	pthread_mutex_unlock(&c->mu);
	const size_t len = frame_of(req, frame);
	int rc = len == 0 ? EL_EINVAL : EL_ETIMEDOUT;
	bool done = len == 0, sent = false;
	unsigned leaderless = 0; /* "no leader yet" answers from the node asked */
	if (len == 0)
		el_client__fail("request of type %u does not encode", req->type);
	t->renewal = req->type == EL_CW_KEEPALIVE;
	t->renewing = renewing;
	while (!done && el_client__now_ms() < deadline_ms && !abandoned(c, t)) {
		struct el_conn *k = current_conn(c, deadline_ms, t, &rc);
		if (k == NULL) {
			done = rc == EL_EPERM; /* refused: conn_open said why */
			break;
		}
		const uint64_t try_end = el_client__now_ms() + 1500u < deadline_ms
						 ? el_client__now_ms() + 1500u : deadline_ms;
		const int got = try_once(c, k, frame, len, req, reply, try_end, &sent);
		done = true;
		if (got == EL_EFULL && sent) { /* a slot frees as a reply comes */
			tried_note(t, k->url, last_error);
			pthread_mutex_lock(&c->mu);
			el_client__wait(c, el_client__now_ms() + FULL_RETRY_MS);
			pthread_mutex_unlock(&c->mu);
			done = false;
		} else if (got < 0) {
			rc = got;
		} else if (got == 0) { /* broken or silent: another node, same id */
			tried_broken(c, t, k, deadline_ms);
			drop_conn(c, k);
			done = false;
		} else if (reply->type == EL_CW_ERROR || reply->err != EL_ENOTLEADER) {
			rc = EL_OK;
		} else {
			follow(c, t, k, reply, &leaderless);
			done = false;
		}
		conn_put(c, k);
	}
	if (!done) { /* the deadline passed with no leader answering */
		rc = EL_ETIMEDOUT;
		tried_fail(t, el_client__now_ms() - start);
	} else if (rc == EL_EPERM && sent) { /* refused after a try that may act */
		el_client__context("%s: an earlier try may have acted", el_strerror(EL_ETIMEDOUT));
		rc = EL_ETIMEDOUT;
	}
	if (unanswered != NULL)
		*unanswered |= sent;
	free(frame);
	free(t);
	return rc;
}

int el_client_request(el_client *c, struct el_cw_msg *req, struct el_cw_msg *reply)
{
	if (c == NULL || req == NULL || reply == NULL)
		return el_client__null("el_client_request");
	return request_until(c, req, reply, el_client__now_ms() + c->timeout_ms, NULL, NULL);
}

int el_client__request_until(el_client *c, struct el_cw_msg *req, struct el_cw_msg *reply,
			     uint64_t deadline_ms)
{
	return request_until(c, req, reply, deadline_ms, NULL, NULL);
}

int el_client__renew(el_client *c, const el_session *s, struct el_cw_msg *req,
		     struct el_cw_msg *reply, uint32_t timeout_ms)
{
	return request_until(c, req, reply, el_client__now_ms() + timeout_ms, NULL, s);
}

int el_client__request_unsure(el_client *c, struct el_cw_msg *req, struct el_cw_msg *reply,
			      bool *unanswered)
{
	*unanswered = false;
	return request_until(c, req, reply, el_client__now_ms() + c->timeout_ms, unanswered, NULL);
}

int el_client_request_at(el_client *c, const char *endpoint, struct el_cw_msg *req,
			 struct el_cw_msg *reply)
{
	if (c == NULL || endpoint == NULL || req == NULL || reply == NULL)
		return el_client__null("el_client_request_at");
	uint8_t *frame = malloc(EL_CW_PREFIX + EL_CW_FRAME_MAX);
	if (frame == NULL)
		return EL_EFULL;
	pthread_mutex_lock(&c->mu);
	req->id = ++c->next_id;
	pthread_mutex_unlock(&c->mu);
	const size_t len = frame_of(req, frame);
	int rc = EL_ETIMEDOUT;
	struct el_conn *k = len > 0 ? conn_open(c, endpoint, c->timeout_ms, &rc) : NULL;
	if (rc != EL_EPERM)
		rc = EL_ETIMEDOUT; /* unreachable: conn_open said why */
	if (k != NULL) {
		const int got = try_once(c, k, frame, len, req, reply,
					 el_client__now_ms() + c->timeout_ms, NULL);
		rc = got > 0 ? EL_OK : got < 0 ? got : EL_ETIMEDOUT;
		conn_close(k);
	}
	free(frame);
	return rc;
}

/* ---- Lifecycle ------------------------------------------------------------ */

/* One endpoint, p[0..n): checked now, not at the first dial, so a typo is
 * an error at open. */
static int add_endpoint(el_client *c, const char *p, size_t n)
{
	char url[EL_CW_ADDR_MAX + 1], host[EL_CW_ADDR_MAX], port[8];
	if (n <= EL_CW_ADDR_MAX)
		memcpy(url, p, n);
	url[n <= EL_CW_ADDR_MAX ? n : 0] = '\0';
	if (n > EL_CW_ADDR_MAX || strncmp(url, "tls+tcp://", 10) != 0 ||
	    el_url_parse(url, host, sizeof host, port, sizeof port) != 0) {
		el_client__fail("endpoint '%.*s' is not tls+tcp://HOST:PORT (PORT 1..65535)%s",
				(int)(n > 80 ? 80 : n), p, n > EL_CW_ADDR_MAX ? "" : el_url_hint(url));
		return EL_EINVAL;
	}
	if (c->n_endpoints == EL_CLIENT_ENDPOINTS_MAX) {
		el_client__fail("more than %d endpoints", EL_CLIENT_ENDPOINTS_MAX);
		return EL_EINVAL;
	}
	c->endpoints[c->n_endpoints] = strndup(p, n);
	if (c->endpoints[c->n_endpoints] == NULL)
		return EL_EFULL;
	c->n_endpoints++;
	return 0;
}

/* "URL,URL,...", spaces allowed around each. An empty entry (",," or a
 * comma at either end) is refused, not skipped: it is most often a
 * variable that expanded to nothing ("$EP1,$EP2,$EP3"), and a client
 * quietly left with fewer endpoints fails over worse than its owner
 * believes. */
static int parse_endpoints(el_client *c, const char *list)
{
	const char *p = list;
	for (unsigned i = 1;; i++) {
		const size_t len = strcspn(p, ",");
		size_t lead = 0, end = len;
		while (lead < end && p[lead] == ' ')
			lead++;
		while (end > lead && p[end - 1] == ' ')
			end--;
		if (end == lead && i == 1 && p[len] == '\0') {
			el_client__fail("no endpoints given (--endpoints or EDGELOCK_ENDPOINTS)");
			return EL_EINVAL;
		}
		if (end == lead) {
			el_client__fail("endpoint %u of the list is empty (two commas, or one at "
					"an end): write tls+tcp://HOST:PORT,... with none left out", i);
			return EL_EINVAL;
		}
		const int rc = add_endpoint(c, p + lead, end - lead);
		if (rc != 0 || p[len] == '\0')
			return rc;
		p += len + 1;
	}
}

/* options.name into c->name: UTF-8 text (the wire carries it as CBOR text:
 * another made every el_session_open fail, "does not encode"), kept to
 * its first EL_CLIENT_NAME_MAX bytes as the header says, but cut before a
 * character, never inside one (which would not encode either). */
static int set_name(el_client *c, const char *name)
{
	if (name == NULL)
		return 0;
	const size_t n = strlen(name);
	if (n > UINT32_MAX || !el_cbor_utf8_valid((const uint8_t *)name, (uint32_t)n)) {
		el_client__fail("el_client_options.name is not UTF-8 text");
		return EL_EINVAL;
	}
	size_t keep = n < EL_CLIENT_NAME_MAX ? n : EL_CLIENT_NAME_MAX;
	while (keep > 0 && keep < n && ((unsigned char)name[keep] & 0xC0u) == 0x80u)
		keep--; /* name[keep] continues a character: cut before its start */
	memcpy(c->name, name, keep);
	c->name[keep] = '\0';
	return 0;
}

static int tls_setup(el_client *c, const struct el_client_options *o)
{
	char err[512];
	c->tls = calloc(1, sizeof(*c->tls));
	if (c->tls == NULL)
		return EL_EFULL;
	if (el_link_config_init(c->tls, o->ca_file, o->cert_key_file, err, sizeof err) != 0) {
		el_client__fail("%s", err);
		return EL_EINVAL;
	}
	if (o->cert_key_file != NULL &&
	    el_ident_load(&c->ident, o->ca_file, o->cert_key_file, NULL, err, sizeof err) != 0) {
		el_client__fail("%s", err);
		return EL_EINVAL;
	}
	return 0;
}

int el_client_open(el_client **out, const struct el_client_options *o)
{
	if (out == NULL)
		return el_client__null("el_client_open");
	*out = NULL;
	if (o == NULL || o->ca_file == NULL || o->endpoints == NULL) {
		el_client__fail("endpoints and a CA file are required");
		return EL_EINVAL;
	}
	el_client *c = calloc(1, sizeof(*c));
	if (c == NULL)
		return EL_EFULL;
	el_client__cond_init(&c->cv);
	el_client__cond_init(&c->keeper_cv);
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->ident_mu, NULL);
	c->timeout_ms = o->timeout_ms != 0 ? o->timeout_ms : 5000u;
	c->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int rc = c->event_fd >= 0 ? set_name(c, o->name) : EL_EIO;
	if (rc == 0)
		rc = parse_endpoints(c, o->endpoints);
	if (rc == 0)
		rc = tls_setup(c, o);
	if (rc == 0 && pthread_create(&c->keepers[0], NULL, el_client__keeper_main, c) != 0)
		rc = EL_EFULL;
	else if (rc == 0)
		c->n_keepers = 1;
	if (rc != 0) {
		el_client_close(c);
		return rc;
	}
	*out = c;
	return 0;
}

void el_client_close(el_client *c)
{
	if (c == NULL)
		return;
	el_client__close_sessions(c); /* before the keepers and the connection go */
	pthread_mutex_lock(&c->mu);
	c->closing = true; /* no keeper starts after this */
	pthread_cond_broadcast(&c->cv);
	pthread_cond_broadcast(&c->keeper_cv);
	struct el_conn *k = c->conn;
	c->conn = NULL;
	const unsigned keepers = c->n_keepers;
	pthread_mutex_unlock(&c->mu);
	for (unsigned i = 0; i < keepers; i++)
		pthread_join(c->keepers[i], NULL);
	conn_put(c, k);
	for (unsigned i = 0; i < c->n_endpoints; i++)
		free(c->endpoints[i]);
	if (c->tls != NULL) {
		el_link_config_free(c->tls);
		free(c->tls);
	}
	if (c->event_fd >= 0)
		close(c->event_fd);
	if (c->ident != NULL)
		el_ident_free(c->ident);
	pthread_cond_destroy(&c->cv);
	pthread_cond_destroy(&c->keeper_cv);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->ident_mu);
	free(c);
}

int el_client_event_fd(el_client *c)
{
	if (c == NULL)
		return el_client__null("el_client_event_fd");
	return c->event_fd;
}

unsigned el_client_endpoints(const el_client *c, const char **list, unsigned cap)
{
	if (c == NULL)
		return 0;
	if (list == NULL)
		cap = 0;
	unsigned n = c->n_endpoints < cap ? c->n_endpoints : cap;
	for (unsigned i = 0; i < n; i++)
		list[i] = c->endpoints[i];
	return c->n_endpoints;
}
