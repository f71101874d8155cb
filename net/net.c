/*
 * net.c - framed TLS connections over nng streams (el_net.h).
 *
 * One mutex guards every connection, queue and counter. nng runs the aio
 * callbacks on its own threads; they take the mutex, move bytes, and either
 * re-arm the next read/write or mark the connection dead. A dead connection
 * (closing, no read or write in progress) goes to a list the owner's thread
 * reaps in el_net_drain(): only there are aios and streams freed, because
 * nng_aio_free waits for a running callback and so must never run inside
 * one. A connection's memory lives while items that came from it are still
 * held by the owner (a reference per queued item).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "el_error.h"
#include "el_net.h"
#include "el_platform.h"

#define PEERS_MAX 16
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 2000
#define SLOT_BITS 16
/* Receive buffers: a client's requests are small; a peer's appends carry
 * up to EL_MSG_ENTRIES_MAX entries, larger ones are read into their item. */
#define RBUF_CLIENT 1024u
#define RBUF_PEER 16384u

enum ckind { C_PEER_IN = 1, C_PEER_OUT = 2, C_CLIENT = 3 };

struct frame {
	struct frame *next;
	uint32_t len; /* prefix + body */
	uint32_t off; /* bytes written so far */
	bool close_after;
	uint8_t b[];
};

struct conn {
	struct el_net *net;
	uint64_t id;
	uint8_t kind;
	el_id_t peer; /* C_PEER_OUT */
	nng_stream *s;
	nng_aio *rx, *tx;
	bool rx_busy, tx_busy, closing, dead, rx_paused;
	bool ready; /* C_PEER_OUT: handshake done, Raft frames may go */
	uint32_t refs; /* 1 while not reaped + 1 per item held */
	uint32_t frame_max;
	/* receiving: small frames are parsed out of rbuf, as many per receive
	 * as arrived; a frame larger than rbuf is read straight into cur. */
	uint8_t *rbuf;
	uint32_t rcap, rlen; /* rbuf's size, bytes held */
	bool in_body;
	uint32_t got;
	struct el_net_item *cur;
	uint32_t inq; /* items of this connection not yet freed by the owner */
	/* sending */
	struct frame *q_head, *q_tail;
	uint32_t q_n;
	struct conn *next_dead;
};

struct peer {
	struct el_net *net;
	el_id_t id; /* 0: a free slot */
	bool removed, sleeping;
	char addr[128];
	uint32_t backoff_ms;
	nng_stream_dialer *d;
	nng_tls_config *tls;
	nng_aio *aio;
	struct conn *c;
};

struct listener {
	struct el_net *net;
	nng_stream_listener *l;
	nng_tls_config *tls;
	nng_aio *aio;
	uint8_t kind;
};

struct el_net {
	struct el_net_config cfg;
	pthread_mutex_t mu;
	int efd;
	bool stopping;
	struct listener lp, lc;
	struct peer peers[PEERS_MAX];
	struct conn **slots;
	uint32_t n_slots;
	uint64_t next_seq;
	uint32_t n_conns;
	struct el_net_item *in_head, *in_tail;
	struct conn *dead;
	struct el_net_stats st;
};

static void wake(struct el_net *net)
{
	uint64_t one = 1;
	ssize_t rc = write(net->efd, &one, sizeof one);
	(void)rc; /* EAGAIN: the counter is already nonzero, so the owner wakes */
}

/* ---- connections (all with net->mu held) --------------------------------- */

static struct conn *conn_find(struct el_net *net, uint64_t id)
{
	struct conn *c = net->slots[id & (net->n_slots - 1)];
	return c != NULL && c->id == id && !c->closing ? c : NULL;
}

static void conn_fail(struct conn *c)
{
	if (!c->closing) {
		c->closing = true;
		nng_stream_close(c->s);
	}
	if (!c->rx_busy && !c->tx_busy && !c->dead) {
		c->dead = true;
		c->next_dead = c->net->dead;
		c->net->dead = c;
		wake(c->net);
	}
}

static void push_item(struct el_net *net, struct el_net_item *it)
{
	it->next = NULL;
	if (net->in_tail != NULL)
		net->in_tail->next = it;
	else
		net->in_head = it;
	net->in_tail = it;
	wake(net);
}

static struct el_net_item *item_new(struct conn *c, uint8_t kind, uint32_t len)
{
	struct el_net_item *it = malloc(sizeof *it + len);
	if (it == NULL)
		return NULL;
	it->kind = kind;
	it->conn = c->id;
	it->peer = c->peer;
	it->len = len;
	it->conn_ = c;
	c->refs++;
	c->inq++;
	return it;
}

static void rx_arm(struct conn *c)
{
	nng_iov iov;
	if (c->in_body) {
		iov.iov_buf = c->cur->data + c->got;
		iov.iov_len = c->cur->len - c->got;
	} else {
		iov.iov_buf = c->rbuf + c->rlen;
		iov.iov_len = c->rcap - c->rlen;
	}
	nng_aio_set_iov(c->rx, 1, &iov);
	c->rx_busy = true;
	nng_stream_recv(c->s, c->rx);
}

static uint8_t frame_kind(const struct conn *c)
{
	return c->kind == C_CLIENT ? EL_NET_CLIENT_FRAME
	       : c->kind == C_PEER_OUT ? EL_NET_PEER_OUT_FRAME : EL_NET_PEER_FRAME;
}

/* A length prefix out of range: a client is told (the owner answers and
 * closes), a peer is cut. Reading stops either way. */
static void rx_bad_length(struct conn *c, uint32_t len)
{
	if (c->kind == C_CLIENT) {
		struct el_net_item *it = item_new(c, EL_NET_CLIENT_BAD, 0);
		if (it != NULL)
			push_item(c->net, it);
		return;
	}
	el_log(EL_LOG_WARN, "net: peer connection sent a frame of %u bytes: closed", len);
	conn_fail(c);
}

/* Queue every whole frame in rbuf; a frame that cannot fit in rbuf goes on
 * in cur. False: stop reading (a bad length, out of memory, or paused
 * until the owner frees items, when the rest of rbuf is parsed). */
static bool rx_parse(struct conn *c)
{
	uint32_t at = 0;
	bool go = true;
	while (go && c->rlen - at >= 4) {
		const uint8_t *h = c->rbuf + at;
		const uint32_t len = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 |
				     (uint32_t)h[2] << 8 | h[3];
		if (len == 0 || len > c->frame_max) {
			rx_bad_length(c, len);
			return false;
		}
		const uint32_t have = c->rlen - at - 4;
		if (have < len && 4 + len <= c->rcap)
			break; /* the rest comes with the next receive */
		struct el_net_item *it = item_new(c, frame_kind(c), len);
		if (it == NULL) {
			conn_fail(c);
			return false;
		}
		if (have < len) { /* larger than rbuf: read the body into it */
			memcpy(it->data, h + 4, have);
			c->inq--; /* counted when it is queued */
			c->cur = it;
			c->in_body = true;
			c->got = have;
			at = c->rlen;
			break;
		}
		memcpy(it->data, h + 4, len);
		push_item(c->net, it);
		at += 4 + len;
		if (c->inq >= c->net->cfg.inq_per_conn_max) {
			c->rx_paused = true; /* resumed when the owner frees items */
			go = false;
		}
	}
	memmove(c->rbuf, c->rbuf + at, c->rlen - at);
	c->rlen -= at;
	return go;
}

static void rx_cb(void *arg)
{
	struct conn *c = arg;
	struct el_net *net = c->net;
	pthread_mutex_lock(&net->mu);
	c->rx_busy = false;
	int rv = nng_aio_result(c->rx);
	if (rv != 0 || c->closing) {
		conn_fail(c);
		pthread_mutex_unlock(&net->mu);
		return;
	}
	bool go = true;
	if (!c->in_body) {
		c->rlen += (uint32_t)nng_aio_count(c->rx);
		go = rx_parse(c);
	} else if ((c->got += (uint32_t)nng_aio_count(c->rx)) == c->cur->len) {
		c->inq++;
		push_item(net, c->cur);
		c->cur = NULL;
		c->in_body = false;
		c->got = 0;
		if (c->inq >= net->cfg.inq_per_conn_max) {
			c->rx_paused = true; /* resumed when the owner frees items */
			go = false;
		}
	}
	if (go && !c->closing)
		rx_arm(c);
	pthread_mutex_unlock(&net->mu);
}

static void tx_arm(struct conn *c)
{
	struct frame *f = c->q_head;
	nng_iov iov = { .iov_buf = f->b + f->off, .iov_len = f->len - f->off };
	nng_aio_set_iov(c->tx, 1, &iov);
	c->tx_busy = true;
	nng_stream_send(c->s, c->tx);
}

static void tx_cb(void *arg)
{
	struct conn *c = arg;
	struct el_net *net = c->net;
	pthread_mutex_lock(&net->mu);
	c->tx_busy = false;
	int rv = nng_aio_result(c->tx);
	if (rv != 0 || c->closing) {
		conn_fail(c);
		pthread_mutex_unlock(&net->mu);
		return;
	}
	struct frame *f = c->q_head;
	f->off += (uint32_t)nng_aio_count(c->tx);
	if (f->off == f->len) {
		c->q_head = f->next;
		if (c->q_head == NULL)
			c->q_tail = NULL;
		c->q_n--;
		bool close_after = f->close_after;
		free(f);
		if (close_after) {
			conn_fail(c);
			pthread_mutex_unlock(&net->mu);
			return;
		}
	}
	if (c->q_head != NULL)
		tx_arm(c);
	pthread_mutex_unlock(&net->mu);
}

static int conn_queue(struct conn *c, const uint8_t *body, uint32_t len, bool close_after,
		      uint32_t max)
{
	if (c->q_n >= max)
		return EL_EFULL;
	struct frame *f = malloc(sizeof *f + 4 + len);
	if (f == NULL)
		return EL_EFULL;
	f->next = NULL;
	f->len = 4 + len;
	f->off = 0;
	f->close_after = close_after;
	f->b[0] = (uint8_t)(len >> 24);
	f->b[1] = (uint8_t)(len >> 16);
	f->b[2] = (uint8_t)(len >> 8);
	f->b[3] = (uint8_t)len;
	memcpy(f->b + 4, body, len);
	if (c->q_tail != NULL)
		c->q_tail->next = f;
	else
		c->q_head = f;
	c->q_tail = f;
	c->q_n++;
	if (!c->tx_busy)
		tx_arm(c);
	return EL_OK;
}

/* A new connection on stream s; NULL (stream closed and freed) when full. */
static struct conn *conn_new(struct el_net *net, nng_stream *s, uint8_t kind)
{
	uint32_t slot = UINT32_MAX;
	for (uint32_t i = 0; i < net->n_slots; i++) {
		uint32_t k = (uint32_t)((net->next_seq + i) & (net->n_slots - 1));
		if (net->slots[k] == NULL) {
			slot = k;
			break;
		}
	}
	struct conn *c = slot == UINT32_MAX ? NULL : calloc(1, sizeof *c);
	const uint32_t rcap = kind == C_CLIENT ? RBUF_CLIENT : RBUF_PEER;
	if (c == NULL || (c->rbuf = malloc(rcap)) == NULL ||
	    nng_aio_alloc(&c->rx, rx_cb, c) != 0 || nng_aio_alloc(&c->tx, tx_cb, c) != 0) {
		if (c != NULL) {
			if (c->rx)
				nng_aio_free(c->rx);
			free(c->rbuf);
			free(c);
		}
		nng_stream_close(s);
		nng_stream_free(s);
		return NULL;
	}
	net->next_seq++;
	c->id = (net->next_seq << SLOT_BITS) | slot;
	c->net = net;
	c->s = s;
	c->kind = kind;
	c->refs = 1;
	c->rcap = rcap;
	c->frame_max = kind == C_CLIENT ? net->cfg.client_frame_max : net->cfg.peer_frame_max;
	net->slots[slot] = c;
	net->n_conns++;
	if (kind == C_CLIENT)
		net->st.clients++;
	nng_stream_set_bool(s, NNG_OPT_TCP_NODELAY, true);
	return c;
}

static void conn_unref(struct el_net *net, struct conn *c)
{
	if (--c->refs == 0) {
		free(c->rbuf);
		free(c);
	}
	(void)net;
}

/* ---- listening ------------------------------------------------------------ */

static void accept_cb(void *arg)
{
	struct listener *l = arg;
	struct el_net *net = l->net;
	int rv = nng_aio_result(l->aio);
	pthread_mutex_lock(&net->mu);
	if (rv == 0) {
		nng_stream *s = nng_aio_get_output(l->aio, 0);
		if (l->kind == C_CLIENT && net->st.clients >= net->cfg.max_clients) {
			net->st.clients_refused++;
			nng_stream_close(s);
			nng_stream_free(s);
		} else {
			struct conn *c = conn_new(net, s, l->kind);
			struct el_net_item *it = c == NULL ? NULL :
				item_new(c, l->kind == C_CLIENT ? EL_NET_CLIENT_OPENED : EL_NET_PEER_OPENED, 0);
			if (it != NULL) {
				push_item(net, it);
				rx_arm(c);
			} else if (c != NULL) {
				conn_fail(c);
			}
		}
	} else if (rv != NNG_ECLOSED && rv != NNG_ECANCELED) {
		el_log(EL_LOG_WARN, "net: accept: %s", nng_strerror(rv));
	}
	if (!net->stopping && rv != NNG_ECLOSED)
		nng_stream_listener_accept(l->l, l->aio);
	pthread_mutex_unlock(&net->mu);
}

static int tls_new(nng_tls_config **out, nng_tls_mode mode, const struct el_net_config *cfg,
		   bool require_peer, const char *server_name)
{
	nng_tls_config *t;
	int rv = nng_tls_config_alloc(&t, mode);
	if (rv == 0)
		rv = nng_tls_config_ca_file(t, cfg->ca_file);
	if (rv == 0)
		rv = nng_tls_config_cert_key_file(t, cfg->cert_key_file, NULL);
	if (rv == 0)
		rv = nng_tls_config_auth_mode(t, require_peer ? NNG_TLS_AUTH_MODE_REQUIRED
							      : NNG_TLS_AUTH_MODE_OPTIONAL);
	if (rv == 0 && server_name != NULL)
		rv = nng_tls_config_server_name(t, server_name);
	if (rv != 0) {
		el_log(EL_LOG_ERROR, "net: TLS setup (ca_file %s, cert_key_file %s): %s",
		       cfg->ca_file, cfg->cert_key_file, nng_strerror(rv));
		if (t != NULL && rv != NNG_ENOMEM)
			nng_tls_config_free(t);
		return EL_EINVAL;
	}
	*out = t;
	return EL_OK;
}

static int listen_on(struct el_net *net, struct listener *l, const char *url, uint8_t kind,
		     bool require_peer)
{
	l->net = net;
	l->kind = kind;
	int rc = tls_new(&l->tls, NNG_TLS_MODE_SERVER, &net->cfg, require_peer, NULL);
	if (rc != EL_OK)
		return rc;
	int rv = nng_stream_listener_alloc(&l->l, url);
	if (rv == 0)
		rv = nng_stream_listener_set_ptr(l->l, NNG_OPT_TLS_CONFIG, l->tls);
	if (rv == 0)
		rv = nng_stream_listener_listen(l->l);
	if (rv == 0)
		rv = nng_aio_alloc(&l->aio, accept_cb, l);
	if (rv != 0) {
		el_log(EL_LOG_ERROR, "net: cannot listen on %s: %s", url, nng_strerror(rv));
		return rv == NNG_EADDRINVAL || rv == NNG_EINVAL ? EL_EINVAL : EL_EIO;
	}
	nng_stream_listener_accept(l->l, l->aio);
	return EL_OK;
}

/* Point one listener or dialer at a new TLS config. nng takes its own
 * reference and each connection it made holds the config it was made with,
 * so the old one is only dropped here (by us) and lives on in them. */
static int tls_swap(nng_stream_listener *l, nng_stream_dialer *d, nng_tls_config **ours,
		    nng_tls_config *next)
{
	int rv = l != NULL ? nng_stream_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, next)
			   : nng_stream_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, next);
	if (rv != 0) {
		el_log(EL_LOG_ERROR, "net: cannot swap a TLS configuration: %s", nng_strerror(rv));
		nng_tls_config_free(next);
		return EL_EIO;
	}
	nng_tls_config_free(*ours);
	*ours = next;
	return EL_OK;
}

int el_net_reload_tls(struct el_net *net)
{
	nng_tls_config *lp = NULL, *lc = NULL, *dial[PEERS_MAX] = { NULL };
	int rc = tls_new(&lp, NNG_TLS_MODE_SERVER, &net->cfg, true, NULL);
	if (rc == EL_OK && net->lc.l != NULL) /* no client port: the UART relay */
		rc = tls_new(&lc, NNG_TLS_MODE_SERVER, &net->cfg, net->cfg.client_cert_required, NULL);
	for (int i = 0; i < PEERS_MAX && rc == EL_OK; i++) {
		const struct peer *p = &net->peers[i];
		if (p->id == 0 || p->removed || p->d == NULL)
			continue;
		char name[32];
		snprintf(name, sizeof name, "node%u", p->id);
		rc = tls_new(&dial[i], NNG_TLS_MODE_CLIENT, &net->cfg, true, name);
	}
	if (rc != EL_OK) { /* all or nothing: every endpoint keeps its config */
		for (int i = 0; i < PEERS_MAX; i++)
			if (dial[i] != NULL)
				nng_tls_config_free(dial[i]);
		if (lp != NULL)
			nng_tls_config_free(lp);
		if (lc != NULL)
			nng_tls_config_free(lc);
		return rc;
	}
	rc = tls_swap(net->lp.l, NULL, &net->lp.tls, lp);
	int rc2 = lc == NULL ? EL_OK : tls_swap(net->lc.l, NULL, &net->lc.tls, lc);
	/* An accept already waiting took its config when it was posted: cancel
	 * it, and accept_cb posts the next one with the new config (a client
	 * caught in that very handshake is cut and connects again). A dial in
	 * progress finishes with the old one; its retries use the new. */
	nng_aio_cancel(net->lp.aio);
	if (lc != NULL)
		nng_aio_cancel(net->lc.aio);
	for (int i = 0; i < PEERS_MAX; i++) {
		int rc3 = dial[i] == NULL ? EL_OK
					  : tls_swap(NULL, net->peers[i].d, &net->peers[i].tls, dial[i]);
		rc2 = rc2 != EL_OK ? rc2 : rc3;
	}
	return rc != EL_OK ? rc : rc2;
}

/* ---- peers ---------------------------------------------------------------- */

static struct peer *peer_find(struct el_net *net, el_id_t id)
{
	for (int i = 0; i < PEERS_MAX; i++)
		if (net->peers[i].id == id && !net->peers[i].removed)
			return &net->peers[i];
	return NULL;
}

static void dial_cb(void *arg)
{
	struct peer *p = arg;
	struct el_net *net = p->net;
	int rv = nng_aio_result(p->aio);
	pthread_mutex_lock(&net->mu);
	if (net->stopping || p->removed) {
		if (rv == 0 && !p->sleeping) {
			nng_stream *s = nng_aio_get_output(p->aio, 0);
			nng_stream_close(s);
			nng_stream_free(s);
		}
	} else if (p->sleeping) {
		p->sleeping = false;
		nng_stream_dialer_dial(p->d, p->aio);
	} else if (rv == 0) {
		struct conn *c = conn_new(net, nng_aio_get_output(p->aio, 0), C_PEER_OUT);
		struct el_net_item *it = NULL;
		if (c != NULL) {
			c->peer = p->id;
			p->c = c;
			p->backoff_ms = BACKOFF_MIN_MS;
			it = item_new(c, EL_NET_PEER_DIALED, 0);
		}
		if (it != NULL) {
			push_item(net, it);
			rx_arm(c);
			el_log(EL_LOG_INFO, "net: connected to node %u at %s", p->id, p->addr);
		} else if (c != NULL) {
			conn_fail(c);
		}
	} else {
		if (p->backoff_ms >= BACKOFF_MAX_MS / 2)
			el_log(EL_LOG_DEBUG, "net: node %u at %s: %s", p->id, p->addr, nng_strerror(rv));
		p->backoff_ms = p->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : p->backoff_ms * 2;
		p->sleeping = true;
		nng_sleep_aio((nng_duration)p->backoff_ms, p->aio);
	}
	pthread_mutex_unlock(&net->mu);
}

static void peer_free(struct el_net *net, struct peer *p)
{
	/* without the lock: nng_aio_stop waits for a running dial_cb */
	pthread_mutex_lock(&net->mu);
	p->removed = true;
	if (p->c != NULL)
		conn_fail(p->c);
	pthread_mutex_unlock(&net->mu);
	if (p->aio != NULL) {
		nng_aio_stop(p->aio);
		nng_aio_free(p->aio);
	}
	if (p->d != NULL) {
		nng_stream_dialer_close(p->d);
		nng_stream_dialer_free(p->d);
	}
	if (p->tls != NULL)
		nng_tls_config_free(p->tls);
	pthread_mutex_lock(&net->mu);
	p->aio = NULL;
	p->d = NULL;
	p->tls = NULL;
	p->id = 0;
	pthread_mutex_unlock(&net->mu);
}

int el_net_peer_set(struct el_net *net, el_id_t id, const char *addr)
{
	struct peer *p = peer_find(net, id);
	if (p != NULL && strcmp(p->addr, addr) == 0)
		return EL_OK;
	if (p != NULL)
		peer_free(net, p);
	p = NULL;
	for (int i = 0; i < PEERS_MAX && p == NULL; i++)
		if (net->peers[i].id == 0)
			p = &net->peers[i];
	if (p == NULL || id == 0 || strlen(addr) >= sizeof p->addr)
		return EL_EFULL;
	memset(p, 0, sizeof *p);
	p->net = net;
	snprintf(p->addr, sizeof p->addr, "%s", addr);
	char name[32];
	snprintf(name, sizeof name, "node%u", id);
	int rc = tls_new(&p->tls, NNG_TLS_MODE_CLIENT, &net->cfg, true, name);
	if (rc != EL_OK)
		return rc;
	int rv = nng_stream_dialer_alloc(&p->d, addr);
	if (rv == 0)
		rv = nng_stream_dialer_set_ptr(p->d, NNG_OPT_TLS_CONFIG, p->tls);
	if (rv == 0)
		rv = nng_aio_alloc(&p->aio, dial_cb, p);
	if (rv != 0) {
		el_log(EL_LOG_ERROR, "net: node %u: bad address %s: %s", id, addr, nng_strerror(rv));
		if (p->d != NULL)
			nng_stream_dialer_free(p->d);
		nng_tls_config_free(p->tls);
		memset(p, 0, sizeof *p);
		return EL_EINVAL;
	}
	pthread_mutex_lock(&net->mu);
	p->backoff_ms = BACKOFF_MIN_MS;
	p->id = id;
	nng_stream_dialer_dial(p->d, p->aio);
	pthread_mutex_unlock(&net->mu);
	return EL_OK;
}

void el_net_peer_remove(struct el_net *net, el_id_t id)
{
	struct peer *p = peer_find(net, id);
	if (p != NULL)
		peer_free(net, p);
}

int el_net_peer_send(struct el_net *net, el_id_t id, const uint8_t *body, uint32_t len)
{
	pthread_mutex_lock(&net->mu);
	struct peer *p = peer_find(net, id);
	int rc = EL_ENOTFOUND;
	if (p != NULL && p->c != NULL && !p->c->closing && p->c->ready)
		rc = conn_queue(p->c, body, len, false, net->cfg.peer_sendq_max);
	if (rc != EL_OK)
		net->st.peer_frames_dropped++;
	pthread_mutex_unlock(&net->mu);
	return rc;
}

bool el_net_peer_up(struct el_net *net, el_id_t id)
{
	pthread_mutex_lock(&net->mu);
	struct peer *p = peer_find(net, id);
	bool up = p != NULL && p->c != NULL && !p->c->closing && p->c->ready;
	pthread_mutex_unlock(&net->mu);
	return up;
}

/* ---- clients and the owner's side ------------------------------------------ */

int el_net_client_send(struct el_net *net, uint64_t conn, const uint8_t *body, uint32_t len,
		       bool close_after)
{
	pthread_mutex_lock(&net->mu);
	struct conn *c = conn_find(net, conn);
	int rc = EL_ENOTFOUND;
	if (c != NULL) {
		rc = conn_queue(c, body, len, close_after, net->cfg.client_sendq_max);
		if (rc != EL_OK) {
			net->st.client_drops++;
			conn_fail(c);
		}
	}
	pthread_mutex_unlock(&net->mu);
	return rc;
}

int el_net_conn_send(struct el_net *net, uint64_t conn, const uint8_t *body, uint32_t len)
{
	pthread_mutex_lock(&net->mu);
	struct conn *c = conn_find(net, conn);
	int rc = EL_ENOTFOUND;
	if (c != NULL) {
		uint32_t max = c->kind == C_CLIENT ? net->cfg.client_sendq_max : net->cfg.peer_sendq_max;
		rc = conn_queue(c, body, len, false, max);
		if (rc != EL_OK)
			conn_fail(c);
	}
	pthread_mutex_unlock(&net->mu);
	return rc;
}

void el_net_peer_ready(struct el_net *net, uint64_t conn)
{
	pthread_mutex_lock(&net->mu);
	struct conn *c = conn_find(net, conn);
	if (c != NULL && c->kind == C_PEER_OUT)
		c->ready = true;
	pthread_mutex_unlock(&net->mu);
}

void el_net_close(struct el_net *net, uint64_t conn)
{
	pthread_mutex_lock(&net->mu);
	struct conn *c = conn_find(net, conn);
	if (c != NULL)
		conn_fail(c);
	pthread_mutex_unlock(&net->mu);
}

/* The item saying connection c ended (it holds no reference: c is going). */
static struct el_net_item *end_item(const struct conn *c, uint8_t kind)
{
	struct el_net_item *it = malloc(sizeof *it);
	if (it != NULL)
		*it = (struct el_net_item){ .kind = kind, .conn = c->id, .peer = c->peer };
	return it;
}

/* Free one dead connection (owner's thread, no lock held); returns the
 * item telling the owner it closed, or NULL. */
static struct el_net_item *reap(struct el_net *net, struct conn *c)
{
	nng_aio_free(c->rx);
	nng_aio_free(c->tx);
	nng_stream_free(c->s);
	pthread_mutex_lock(&net->mu);
	while (c->q_head != NULL) {
		struct frame *f = c->q_head;
		c->q_head = f->next;
		free(f);
	}
	if (c->cur != NULL) {
		free(c->cur); /* a frame cut short: its reference goes with it */
		c->refs--;
	}
	net->slots[c->id & (net->n_slots - 1)] = NULL;
	net->n_conns--;
	if (c->kind == C_CLIENT)
		net->st.clients--;
	struct el_net_item *it = NULL;
	if (c->kind == C_PEER_OUT) {
		struct peer *p = peer_find(net, c->peer);
		if (p != NULL && p->c == c) {
			p->c = NULL;
			el_log(EL_LOG_INFO, "net: link to node %u lost; redialing", p->id);
			if (!net->stopping) {
				p->sleeping = true;
				nng_sleep_aio((nng_duration)p->backoff_ms, p->aio);
			}
			it = end_item(c, EL_NET_PEER_LINK_LOST);
		}
	} else {
		it = end_item(c, c->kind == C_CLIENT ? EL_NET_CLIENT_CLOSED : EL_NET_PEER_CLOSED);
	}
	conn_unref(net, c);
	pthread_mutex_unlock(&net->mu);
	return it;
}

struct el_net_item *el_net_drain(struct el_net *net)
{
	uint64_t v;
	ssize_t rc = read(net->efd, &v, sizeof v);
	(void)rc;
	pthread_mutex_lock(&net->mu);
	struct el_net_item *head = net->in_head, *tail = net->in_tail;
	struct conn *dead = net->dead;
	net->in_head = net->in_tail = NULL;
	net->dead = NULL;
	pthread_mutex_unlock(&net->mu);
	while (dead != NULL) {
		struct conn *next = dead->next_dead;
		struct el_net_item *it = reap(net, dead);
		if (it != NULL) {
			if (tail != NULL)
				tail->next = it;
			else
				head = it;
			tail = it;
		}
		dead = next;
	}
	return head;
}

void el_net_item_free(struct el_net *net, struct el_net_item *it)
{
	struct conn *c = it->conn_;
	if (c != NULL) {
		pthread_mutex_lock(&net->mu);
		c->inq--;
		if (c->rx_paused && !c->closing && c->inq <= net->cfg.inq_per_conn_max / 2) {
			c->rx_paused = false;
			/* frames already in rbuf first; it may pause again */
			if (c->in_body || rx_parse(c))
				rx_arm(c);
		}
		conn_unref(net, c);
		pthread_mutex_unlock(&net->mu);
	}
	free(it);
}

int el_net_fd(const struct el_net *net)
{
	return net->efd;
}

void el_net_stats(struct el_net *net, struct el_net_stats *st)
{
	pthread_mutex_lock(&net->mu);
	*st = net->st;
	pthread_mutex_unlock(&net->mu);
}

/* ---- life cycle ----------------------------------------------------------- */

int el_net_start(struct el_net **out, const struct el_net_config *cfg)
{
	struct el_net *net = calloc(1, sizeof *net);
	if (net == NULL)
		return EL_EFULL;
	net->cfg = *cfg;
	net->n_slots = 64;
	while (net->n_slots < cfg->max_clients + 2 * PEERS_MAX + 64)
		net->n_slots *= 2;
	net->slots = calloc(net->n_slots, sizeof *net->slots);
	net->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (net->slots == NULL || net->efd < 0) {
		el_log(EL_LOG_ERROR, "net: out of memory or eventfd: %s", strerror(errno));
		free(net->slots);
		free(net);
		return EL_EIO;
	}
	pthread_mutex_init(&net->mu, NULL);
	int rc = listen_on(net, &net->lp, cfg->peer_listen, C_PEER_IN, true);
	if (rc == EL_OK && cfg->client_listen != NULL) /* NULL: a peer-only process (the UART relay) */
		rc = listen_on(net, &net->lc, cfg->client_listen, C_CLIENT, cfg->client_cert_required);
	*out = net;
	if (rc != EL_OK) {
		el_net_stop(net);
		*out = NULL;
	}
	return rc;
}

static void listener_close(struct listener *l)
{
	if (l->l != NULL)
		nng_stream_listener_close(l->l);
	if (l->aio != NULL) {
		nng_aio_stop(l->aio);
		nng_aio_free(l->aio);
	}
	if (l->l != NULL)
		nng_stream_listener_free(l->l);
	if (l->tls != NULL)
		nng_tls_config_free(l->tls);
}

void el_net_stop(struct el_net *net)
{
	pthread_mutex_lock(&net->mu);
	net->stopping = true;
	pthread_mutex_unlock(&net->mu);
	listener_close(&net->lp);
	listener_close(&net->lc);
	for (int i = 0; i < PEERS_MAX; i++)
		if (net->peers[i].id != 0)
			peer_free(net, &net->peers[i]);
	pthread_mutex_lock(&net->mu);
	for (uint32_t i = 0; i < net->n_slots; i++)
		if (net->slots[i] != NULL)
			conn_fail(net->slots[i]);
	pthread_mutex_unlock(&net->mu);
	/* Reap until every connection is gone (their callbacks finish fast once
	 * the streams are closed). */
	for (int spin = 0; spin < 5000; spin++) {
		struct el_net_item *it = el_net_drain(net);
		while (it != NULL) {
			struct el_net_item *next = it->next;
			el_net_item_free(net, it);
			it = next;
		}
		pthread_mutex_lock(&net->mu);
		uint32_t left = net->n_conns;
		pthread_mutex_unlock(&net->mu);
		if (left == 0)
			break;
		usleep(1000);
	}
	close(net->efd);
	pthread_mutex_destroy(&net->mu);
	free(net->slots);
	free(net);
}

/* n_slots is set once by el_net_start: no lock needed. */
uint32_t el_net_slots(const struct el_net *net)
{
	return net->n_slots;
}

uint32_t el_net_slot(const struct el_net *net, uint64_t conn)
{
	return (uint32_t)(conn & (net->n_slots - 1));
}
