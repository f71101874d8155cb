/*
 * net.c - framed TLS connections, the owner's side (el_net.h).
 *
 * Every connection whose handshake is done (net_hs.c) belongs to the
 * owner's thread: el_net_drain() reads the sockets epoll says are ready,
 * decrypts, and cuts frames into items; el_net_*_send() encrypt and write
 * at once, and only what the socket does not take waits in the
 * connection's bounded queue for EPOLLOUT. No other thread touches a
 * connection then, so a frame costs no thread hand-off and no lock.
 *
 * A connection's memory lives while items that came from it are still
 * held by the owner (a reference per item).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "el_assert.h"
#include "el_error.h"
#include "el_net.h"
#include "el_platform.h"
#include "el_url.h"
#include "net_impl.h"

#define SLOT_BITS 16
/* Reads from one connection per drain before the others get their turn. */
#define READS_PER_DRAIN 16
/* Frames up to this size are written from one buffer with no allocation
 * (one TLS record: mbedtls' largest plaintext). */
#define SCRATCH_BYTES (4u + 16384u)
#define EVENTS_PER_DRAIN 64

void net_wake_owner(struct el_net *net)
{
	uint64_t one = 1;
	ssize_t rc = write(net->wake_fd, &one, sizeof one);
	(void)rc; /* EAGAIN: the counter is already nonzero, so the owner wakes */
}

/* ---- connections ------------------------------------------------------------- */

static struct conn *conn_find(struct el_net *net, uint64_t id)
{
	struct conn *c = net->slots[id & (net->n_slots - 1)];
	return c != NULL && c->id == id && !c->closing ? c : NULL;
}

static void conn_unref(struct conn *c)
{
	if (--c->refs == 0) {
		struct el_net *net = c->net;
		pthread_mutex_lock(&net->mu);
		net_conn_free(c);
		pthread_mutex_unlock(&net->mu);
	}
}

/* End c now (the other side sees the end at once) and leave it for
 * el_net_drain to reap. */
static void conn_fail(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	if (c->kind == C_CLIENT) { /* its queue goes at the reap: not counted from now */
		EL_ASSERT(c->net->client_q_bytes >= c->q_bytes);
		c->net->client_q_bytes -= c->q_bytes;
	}
	(void)epoll_ctl(c->net->ep, EPOLL_CTL_DEL, c->fd, NULL);
	(void)shutdown(c->fd, SHUT_RDWR);
	c->next = c->net->dead;
	c->net->dead = c;
	net_wake_owner(c->net);
}

/* Watch c for input while it reads and for output while frames wait. A
 * connection whose input is paused is not watched for it, or epoll would
 * report the same bytes at every turn. */
static void conn_watch(struct conn *c)
{
	if (c->closing)
		return;
	const uint32_t want = (c->rx_paused || c->rx_stopped ? 0u : (uint32_t)EPOLLIN) |
			      (c->q_head != NULL ? (uint32_t)EPOLLOUT : 0u);
	if (want == c->watched)
		return;
	struct epoll_event ev = { .events = want, .data.ptr = c };
	(void)epoll_ctl(c->net->ep, EPOLL_CTL_MOD, c->fd, &ev);
	c->watched = want;
}

/* Read c again at the next drain even with no event: mbedtls may hold a
 * decrypted record, or reading stopped at READS_PER_DRAIN. */
static void read_again(struct conn *c)
{
	if (c->on_again)
		return;
	c->on_again = true;
	c->refs++;
	c->next_again = c->net->again;
	c->net->again = c;
	net_wake_owner(c->net);
}

static void push_item(struct el_net *net, struct el_net_item *it)
{
	it->next = NULL;
	if (net->in_tail != NULL)
		net->in_tail->next = it;
	else
		net->in_head = it;
	net->in_tail = it;
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

/* ---- receiving ----------------------------------------------------------------- */

static uint8_t frame_kind(const struct conn *c)
{
	return c->kind == C_CLIENT ? EL_NET_CLIENT_FRAME
	       : c->kind == C_PEER_OUT ? EL_NET_PEER_OUT_FRAME : EL_NET_PEER_FRAME;
}

/* A length prefix out of range: a client is told (the owner answers and
 * closes), a peer is cut. Reading stops either way. */
static void rx_bad_length(struct conn *c, uint32_t len)
{
	c->rx_stopped = true; /* for good: nothing after a bad prefix is a frame */
	if (c->kind == C_CLIENT) {
		struct el_net_item *it = item_new(c, EL_NET_CLIENT_BAD, 0);
		if (it != NULL)
			push_item(c->net, it);
		return;
	}
	el_log(EL_LOG_WARN, "net: peer connection sent a frame of %u bytes: closed", len);
	conn_fail(c);
}

static void rx_pause_if_full(struct conn *c)
{
	if (c->inq >= c->net->cfg.inq_per_conn_max)
		c->rx_paused = true; /* resumed when the owner frees items */
}

/* Queue every whole frame in rbuf; a frame that cannot fit in rbuf goes on
 * in cur. Stops early when c pauses. */
static void rx_parse(struct conn *c)
{
	uint32_t at = 0;
	while (!c->rx_paused && !c->rx_stopped && !c->closing && c->rlen - at >= 4) {
		const uint8_t *h = c->rbuf + at;
		const uint32_t len = (uint32_t)h[0] << 24 | (uint32_t)h[1] << 16 |
				     (uint32_t)h[2] << 8 | h[3];
		if (len == 0 || len > c->frame_max) {
			rx_bad_length(c, len);
			return;
		}
		const uint32_t have = c->rlen - at - 4;
		if (have < len && 4 + len <= c->rcap)
			break; /* the rest comes with the next read */
		struct el_net_item *it = item_new(c, frame_kind(c), len);
		if (it == NULL) {
			conn_fail(c);
			return;
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
		rx_pause_if_full(c);
	}
	memmove(c->rbuf, c->rbuf + at, c->rlen - at);
	c->rlen -= at;
}

/* n bytes were read into where rx_space pointed. */
static void rx_took(struct conn *c, uint32_t n)
{
	if (!c->in_body) {
		c->rlen += n;
		rx_parse(c);
		return;
	}
	if ((c->got += n) < c->cur->len)
		return;
	c->inq++;
	push_item(c->net, c->cur);
	c->cur = NULL;
	c->in_body = false;
	c->got = 0;
	rx_pause_if_full(c);
}

/* A read made mbedtls write (a TLS 1.2 renegotiation refused with an
 * alert; nothing else does after the handshake): the alert flushed the
 * record of a frame mbedtls held, which the queue would then encrypt and
 * send again, or the alert itself waits, and the next frame written would
 * be taken for it. No member or client renegotiates: end the connection
 * (an outside review). */
static void control_record_sent(struct conn *c)
{
	el_log(EL_LOG_WARN, "net: %s %s sent a TLS renegotiation or control record after "
	       "the handshake: closing the connection",
	       c->kind == C_CLIENT ? "client" : "peer", c->from[0] != '\0' ? c->from : "?");
	conn_fail(c);
}

/* Read what c has, up to READS_PER_DRAIN records. */
static void conn_read(struct conn *c)
{
	c->tin_dry = false; /* an event, or a read to resume: ask the socket */
	if (!c->in_body)
		rx_parse(c); /* whole frames a pause left in rbuf come first */
	for (int i = 0; i < READS_PER_DRAIN; i++) {
		if (c->closing || c->rx_paused || c->rx_stopped)
			return;
		uint8_t *at = c->in_body ? c->cur->data + c->got : c->rbuf + c->rlen;
		const uint32_t room = c->in_body ? c->cur->len - c->got : c->rcap - c->rlen;
		EL_ASSERT(room > 0); /* rx_parse leaves a partial frame, which fits */
		const bool out_pending = c->ssl.out_left != 0; /* a frame's record, held */
		const int n = mbedtls_ssl_read(&c->ssl, at, room);
		if (n == MBEDTLS_ERR_SSL_WANT_WRITE || (out_pending && c->ssl.out_left == 0)) {
			control_record_sent(c);
			return;
		}
		if (n == MBEDTLS_ERR_SSL_WANT_READ) {
			if (c->tin_off < c->tin_len)
				read_again(c); /* a record with no data (an alert); more came */
			return;
		}
		if (n <= 0) { /* 0 or CLOSE_NOTIFY: the other side closed; or an error */
			c->bye = n == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY;
			conn_fail(c);
			return;
		}
		rx_took(c, (uint32_t)n);
	}
	read_again(c);
}

/* ---- sending ------------------------------------------------------------------- */

/* Write b[*off..len) as far as the socket takes it: false on an error. A
 * write mbedtls could not finish (WANT_WRITE) holds its record and must be
 * called again with the same bytes, as the queue below does. */
static bool write_some(struct conn *c, const uint8_t *b, uint32_t len, uint32_t *off)
{
	while (*off < len) {
		const int n = mbedtls_ssl_write(&c->ssl, b + *off, len - *off);
		if (n == MBEDTLS_ERR_SSL_WANT_WRITE || n == MBEDTLS_ERR_SSL_WANT_READ)
			return true;
		if (n < 0)
			return false;
		*off += (uint32_t)n;
	}
	return true;
}

/* A frame is done: a close_after one ends the connection. */
static void sent(struct conn *c, bool close_after)
{
	if (close_after) {
		(void)mbedtls_ssl_close_notify(&c->ssl); /* best effort */
		conn_fail(c);
	}
}

/* What a frame of len bytes (prefix included) costs while it waits: its
 * allocation, header and all, so that a queue of small frames counts
 * toward client_sendq_bytes_max as the memory it pins. */
static size_t frame_cost(uint32_t len)
{
	return sizeof(struct frame) + len;
}

/* A frame of cost bytes joins or leaves c's queue; a client's counts
 * toward the total of all client queues too. */
static void q_grow(struct conn *c, size_t cost)
{
	c->q_bytes += cost;
	if (c->kind == C_CLIENT)
		c->net->client_q_bytes += cost;
}

static void q_shrink(struct conn *c, size_t cost)
{
	EL_ASSERT(c->q_bytes >= cost);
	c->q_bytes -= cost;
	if (c->kind == C_CLIENT) {
		EL_ASSERT(c->net->client_q_bytes >= cost);
		c->net->client_q_bytes -= cost;
	}
}

/* ---- the bound on all client queues together ----------------------------------- */

/* The client connection (not closing) with the largest queue, c's counted
 * with the need bytes it is about to queue; c itself only when its queue
 * is not empty. NULL: none but c, and c's queue is empty. A walk over
 * every slot, so it runs only when the total is over its bound (a close
 * follows each walk), never on an ordinary send. */
static struct conn *largest_client(struct el_net *net, const struct conn *c, size_t need)
{
	struct conn *big = NULL;
	size_t big_bytes = 0, sum = 0;
	for (uint32_t i = 0; i < net->n_slots; i++) {
		struct conn *o = net->slots[i];
		if (o == NULL || o->kind != C_CLIENT || o->closing)
			continue;
		sum += o->q_bytes;
		const size_t b = o == c ? o->q_bytes + need : o->q_bytes;
		/* c wins a tie: the sender goes before a client it did not touch */
		if ((o == c && o->q_head != NULL && b >= big_bytes) ||
		    (o != c && o->q_bytes > 0 && b > big_bytes)) {
			big = o;
			big_bytes = b;
		}
	}
	EL_ASSERT(sum == net->client_q_bytes);
	return big;
}

/* The warning about such closes goes at most once a second (a flood of
 * clients that do not read must not flood the log): true when one may go
 * now. The closes held back are told once their second is over. */
static bool evict_may_say(struct el_net *net, uint64_t now)
{
	return net->evict_said_ms == 0 || now - net->evict_said_ms >= 1000 || net->stopping;
}

/* The closes held back, in a line of their own (el_net_drain, and before
 * the next close's line). */
static void evicted_say_held(struct el_net *net)
{
	const uint64_t now = el_now_ms();
	if (net->evict_held == 0 || !evict_may_say(net, now))
		return;
	el_log(EL_LOG_WARN, "net: %llu more client connection(s) closed as the largest send "
	       "queue ([limits] client_queues_total_bytes = %u) in the last second",
	       (unsigned long long)net->evict_held, net->cfg.client_sendq_total_max);
	net->evict_said_ms = now;
	net->evict_held = 0;
}

static void evicted_say(struct el_net *net, const struct conn *big, size_t need)
{
	const uint64_t now = el_now_ms();
	if (!evict_may_say(net, now)) {
		net->evict_held++;
		return;
	}
	evicted_say_held(net);
	net->evict_said_ms = now;
	el_log(EL_LOG_WARN, "net: client conn %llu from %s closed: its send queue (%u frames, "
	       "%zu bytes not read) was the largest when the client send queues, %zu bytes in "
	       "all, were to take %zu more ([limits] client_queues_total_bytes = %u)",
	       (unsigned long long)big->id, big->from[0] != '\0' ? big->from : "?", big->q_n,
	       big->q_bytes, net->client_q_bytes, need, net->cfg.client_sendq_total_max);
}

/* Room for need more bytes on client c's queue within client_sendq_total_max:
 * close the client with the largest queue (c's counted with the frame)
 * until they fit, as Redis's maxmemory-clients evicts the biggest client
 * first. Without it max_clients connections that never read could each
 * pin client_sendq_bytes_max (1,024 of 128 KiB: 128 MiB, on a board
 * whose daemon has 16 MiB). A connection whose queue is empty is never the one closed: its
 * first frame always goes, as under client_sendq_bytes_max (the total then
 * passes the bound only when no other queue is left, by that one frame).
 * False when c was closed. O(1) while under the bound. */
static bool clients_room(struct conn *c, size_t need)
{
	struct el_net *net = c->net;
	const size_t max = net->cfg.client_sendq_total_max;
	if (c->kind != C_CLIENT)
		return true;
	while (max != 0 && net->client_q_bytes + need > max) {
		struct conn *big = largest_client(net, c, need);
		if (big == NULL)
			return true;
		evicted_say(net, big, need);
		net->st.client_evictions++;
		conn_fail(big);
		if (big == c)
			return false;
	}
	return true;
}

/* Write the queued frames the socket takes (EPOLLOUT). */
static void conn_flush(struct conn *c)
{
	while (c->q_head != NULL && !c->closing) {
		struct frame *f = c->q_head;
		if (!write_some(c, f->b, f->len, &f->off)) {
			conn_fail(c);
			return;
		}
		if (f->off < f->len)
			break;
		c->q_head = f->next;
		if (c->q_head == NULL)
			c->q_tail = NULL;
		c->q_n--;
		q_shrink(c, frame_cost(f->len));
		const bool close_after = f->close_after;
		free(f);
		sent(c, close_after);
	}
	conn_watch(c);
}

static struct frame *frame_new(const uint8_t *b, uint32_t len, uint32_t off, bool close_after)
{
	struct frame *f = malloc(sizeof *f + len);
	if (f == NULL)
		return NULL;
	f->next = NULL;
	f->len = len;
	f->off = off;
	f->close_after = close_after;
	memcpy(f->b, b, len);
	return f;
}

static void frame_prefix(uint8_t *b, uint32_t len)
{
	b[0] = (uint8_t)(len >> 24);
	b[1] = (uint8_t)(len >> 16);
	b[2] = (uint8_t)(len >> 8);
	b[3] = (uint8_t)len;
}

/* Send a frame body on c: at once when nothing waits before it, else (or
 * for what the socket did not take) in c's queue of at most max frames
 * and, when max_bytes is not 0, max_bytes bytes (frame_cost); a client's
 * within the bound on all client queues too (clients_room). EL_EFULL
 * when the queue is full (or memory is out), EL_ENOTFOUND when c was
 * closed as the largest client queue; the frame is lost. The bytes
 * are bounded as well as the frames: 1,024 replies of 2.4 KiB (a LIST of
 * 32 locks) that a client pipelined and never read pinned 2.4 MiB of the
 * daemon each, past the kernel's socket buffers, so four such connections
 * took the node from 3.5 to 12.8 MiB resident. */
static int conn_send(struct conn *c, const uint8_t *body, uint32_t len, bool close_after,
		     uint32_t max, uint32_t max_bytes)
{
	struct el_net *net = c->net;
	const uint32_t total = 4 + len;
	if (c->q_n >= max ||
	    (max_bytes != 0 && c->q_head != NULL && c->q_bytes + frame_cost(total) > max_bytes))
		return EL_EFULL;
	if (c->q_head != NULL && !clients_room(c, frame_cost(total)))
		return EL_ENOTFOUND; /* the whole frame would wait: room first */
	uint8_t *b = total <= SCRATCH_BYTES ? net->scratch : malloc(total);
	if (b == NULL)
		return EL_EFULL;
	frame_prefix(b, len);
	memcpy(b + 4, body, len);
	uint32_t off = 0;
	int rc = EL_OK;
	const bool direct = c->q_head == NULL;
	if (direct && !write_some(c, b, total, &off)) {
		conn_fail(c); /* the owner hears CLOSED; the frame is moot */
	} else if (off == total) {
		sent(c, close_after);
	} else {
		/* what the socket did not take waits: c's queue was empty, so
		 * only others are closed for it (its first frame goes) */
		const bool room = !direct || clients_room(c, frame_cost(total));
		EL_ASSERT(room);
		struct frame *f = frame_new(b, total, off, close_after);
		if (f == NULL) {
			/* Written in part, or held by mbedtls (WANT_WRITE): the
			 * next frame would follow half of this one, or be taken
			 * for its rest, so the stream is lost with it. */
			if (direct)
				conn_fail(c);
			rc = EL_EFULL;
		} else {
			if (c->q_tail != NULL)
				c->q_tail->next = f;
			else
				c->q_head = f;
			c->q_tail = f;
			c->q_n++;
			q_grow(c, frame_cost(total));
			conn_watch(c);
		}
	}
	if (b != net->scratch)
		free(b);
	return rc;
}

/* ---- peers ----------------------------------------------------------------------- */

static struct peer *peer_find(struct el_net *net, el_id_t id)
{
	for (int i = 0; i < NET_PEERS_MAX; i++)
		if (id != 0 && net->peers[i].id == id)
			return &net->peers[i];
	return NULL;
}

/* Forget peer p (mu held): its dial stops, its link closes. */
static void peer_drop(struct el_net *net, struct peer *p)
{
	p->id = 0;
	p->gen = ++net->gen_seq;
	p->state = 0;
	if (p->c != NULL)
		conn_fail(p->c); /* reaped with no LINK_LOST: p->c is no longer it */
	p->c = NULL;
	net_hs_wake(net);
}

int el_net_peer_set(struct el_net *net, el_id_t id, const char *addr)
{
	if (id == 0 || strlen(addr) >= sizeof net->peers[0].addr)
		return id == 0 ? EL_EINVAL : EL_EFULL;
	pthread_mutex_lock(&net->mu);
	struct peer *p = peer_find(net, id);
	int rc = EL_OK;
	if (p != NULL)
		p->retired = false; /* dialed again: a member again */
	if (p == NULL || strcmp(p->addr, addr) != 0) {
		if (p != NULL)
			peer_drop(net, p);
		p = NULL;
		for (int i = 0; i < NET_PEERS_MAX && p == NULL; i++)
			if (net->peers[i].id == 0)
				p = &net->peers[i];
		if (p == NULL) {
			rc = EL_EFULL;
		} else {
			p->id = id;
			p->retired = false;
			p->gen = ++net->gen_seq;
			snprintf(p->addr, sizeof p->addr, "%s", addr);
			p->state = P_WAIT;
			p->dial_at_ms = 0;
			p->backoff_ms = NET_BACKOFF_MIN_MS;
			p->tries = 0;
			p->unreached = U_NONE; /* a new address: its failures said anew */
			p->failed = 0;
			p->failing_since_ms = 0;
			p->refusing = false;
			net_hs_wake(net);
		}
	}
	pthread_mutex_unlock(&net->mu);
	return rc;
}

bool el_net_peer_retire(struct el_net *net, el_id_t id)
{
	pthread_mutex_lock(&net->mu);
	struct peer *p = peer_find(net, id);
	const bool up = p != NULL && p->c != NULL;
	if (up) {
		p->retired = true; /* link_lost drops it */
	} else if (p != NULL) {
		/* said as link_lost says it: a link down at the removal (a redial
		 * backing off) left no line on that member (seen under load) */
		el_log(EL_LOG_INFO, "net: no link to node %u; it is no longer a member: not "
		       "redialing", p->id);
		peer_drop(net, p);
	}
	pthread_mutex_unlock(&net->mu);
	return up;
}

void el_net_peer_remove(struct el_net *net, el_id_t id)
{
	pthread_mutex_lock(&net->mu);
	struct peer *p = peer_find(net, id);
	if (p != NULL)
		peer_drop(net, p);
	pthread_mutex_unlock(&net->mu);
}

/* The live link to peer id. No lock: a peer's id and link are written by
 * the owner alone (the handshake thread only reads the id, under mu). */
static struct conn *peer_link(struct el_net *net, el_id_t id)
{
	const struct peer *p = peer_find(net, id);
	struct conn *c = p == NULL ? NULL : p->c;
	return c != NULL && !c->closing && c->ready ? c : NULL;
}

/* A peer's queue past peer_sendq_max frames or peer_sendq_bytes_max bytes
 * loses the frame and keeps the link, as etcd's rafthttp drops a message
 * when a peer's buffer is full: Raft sends again what matters (an append
 * when the peer answers a heartbeat, a snapshot chunk at the next
 * heartbeat), while closing would throw away what the kernel holds for
 * the peer and cost it a handshake when it reads again. A peer that stays
 * stopped has its link cut by TCP_USER_TIMEOUT once its receive window
 * stays shut that long (net_hs.c). The bytes bound what the frame count
 * did not: snapshot chunks of 32 KiB resent to a stopped follower at every
 * heartbeat and read round filled 1,024 frames, 31 MB, within a second. */
int el_net_peer_send(struct el_net *net, el_id_t id, const uint8_t *body, uint32_t len)
{
	struct conn *c = peer_link(net, id);
	const int rc = c == NULL ? EL_ENOTFOUND
				 : conn_send(c, body, len, false, net->cfg.peer_sendq_max,
					     net->cfg.peer_sendq_bytes_max);
	if (rc != EL_OK)
		net->st.peer_frames_dropped++;
	return rc;
}

bool el_net_peer_up(struct el_net *net, el_id_t id)
{
	return peer_link(net, id) != NULL;
}

void el_net_peer_queued(struct el_net *net, el_id_t id, uint32_t *frames, size_t *bytes)
{
	const struct conn *c = peer_link(net, id);
	*frames = c != NULL ? c->q_n : 0;
	*bytes = c != NULL ? c->q_bytes : 0;
}

/* ---- clients and any connection ------------------------------------------------- */

int el_net_client_send(struct el_net *net, uint64_t conn, const uint8_t *body, uint32_t len,
		       bool close_after)
{
	struct conn *c = conn_find(net, conn);
	if (c == NULL)
		return EL_ENOTFOUND;
	const int rc = conn_send(c, body, len, close_after, net->cfg.client_sendq_max,
				 net->cfg.client_sendq_bytes_max);
	if (rc == EL_EFULL) { /* EL_ENOTFOUND: closed and counted as the largest queue */
		net->st.client_drops++;
		conn_fail(c);
	}
	return rc;
}

int el_net_conn_send(struct el_net *net, uint64_t conn, const uint8_t *body, uint32_t len)
{
	struct conn *c = conn_find(net, conn);
	if (c == NULL)
		return EL_ENOTFOUND;
	const bool client = c->kind == C_CLIENT;
	const int rc = conn_send(c, body, len, false,
				 client ? net->cfg.client_sendq_max : net->cfg.peer_sendq_max,
				 client ? net->cfg.client_sendq_bytes_max
					: net->cfg.peer_sendq_bytes_max);
	if (rc != EL_OK)
		conn_fail(c);
	return rc;
}

void el_net_peer_ready(struct el_net *net, uint64_t conn)
{
	struct conn *c = conn_find(net, conn);
	if (c != NULL && c->kind == C_PEER_OUT)
		c->ready = true;
}

void el_net_close(struct el_net *net, uint64_t conn)
{
	struct conn *c = conn_find(net, conn);
	if (c != NULL)
		conn_fail(c);
}

void el_net_conn_name(struct el_net *net, uint64_t conn, char *out, size_t cap)
{
	const struct conn *c = net->slots[conn & (net->n_slots - 1)]; /* closing ones too */
	struct sockaddr_storage a;
	socklen_t alen = sizeof a;
	snprintf(out, cap, "?");
	if (c != NULL && c->id == conn && c->from[0] != '\0') {
		snprintf(out, cap, "%s", c->from); /* as accepted */
	} else if (c != NULL && c->id == conn) {
		if (getpeername(c->fd, (struct sockaddr *)&a, &alen) == 0)
			el_addr_name(&a, alen, out, cap);
	} else {
		for (size_t g = 0; g < sizeof net->gone / sizeof net->gone[0]; g++)
			if (net->gone[g].id == conn && conn != 0)
				snprintf(out, cap, "%s", net->gone[g].from);
	}
}

void el_net_queued(struct el_net *net, uint64_t conn, uint32_t *frames, size_t *bytes)
{
	const struct conn *c = net->slots[conn & (net->n_slots - 1)]; /* closing ones too */
	const bool ours = c != NULL && c->id == conn;
	*frames = ours ? c->q_n : 0;
	*bytes = ours ? c->q_bytes : 0;
}

/* ---- the owner's turn ---------------------------------------------------------------- */

/* Take a connection whose handshake is done: give it an id and a slot,
 * watch it, and announce it. */
static void adopt(struct el_net *net, struct conn *c)
{
	uint32_t slot = UINT32_MAX;
	for (uint32_t i = 0; i < net->n_slots && slot == UINT32_MAX; i++) {
		const uint32_t k = (uint32_t)((net->next_seq + i) & (net->n_slots - 1));
		if (net->slots[k] == NULL)
			slot = k;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	if (slot == UINT32_MAX || epoll_ctl(net->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
		pthread_mutex_lock(&net->mu);
		struct peer *p = c->kind == C_PEER_OUT ? peer_find(net, c->peer) : NULL;
		if (p != NULL && p->gen == c->peer_gen) { /* dial again */
			net_peer_wait(p, el_now_ms());
			net_hs_wake(net);
		}
		net_conn_uncount(net, c);
		net_conn_free(c);
		pthread_mutex_unlock(&net->mu);
		return;
	}
	c->watched = EPOLLIN;
	net->next_seq++;
	c->id = (net->next_seq << SLOT_BITS) | slot;
	c->refs = 1;
	net->slots[slot] = c;
	net->n_conns++;
	uint8_t kind = c->kind == C_CLIENT ? EL_NET_CLIENT_OPENED : EL_NET_PEER_OPENED;
	if (c->kind == C_CLIENT)
		net->st.clients++;
	if (c->kind == C_PEER_OUT) {
		kind = EL_NET_PEER_DIALED;
		pthread_mutex_lock(&net->mu);
		struct peer *p = peer_find(net, c->peer);
		if (p != NULL && p->gen == c->peer_gen) {
			p->c = c;
			c->up_ms = el_now_ms();
			/* after a warning about its dials, this line ends it */
			char after[64] = "";
			if (p->unreached != U_NONE)
				snprintf(after, sizeof after, " (after %u failed dial%s)", p->failed,
					 p->failed == 1 ? "" : "s");
			el_log(p->refusing && p->unreached == U_NONE ? EL_LOG_DEBUG : EL_LOG_INFO,
			       "net: connected to node %u at %s%s", p->id, p->addr, after);
			p->unreached = U_NONE;
			p->failed = 0;
			p->failing_since_ms = 0;
		} else {
			kind = 0; /* the peer changed while it was dialed */
		}
		pthread_mutex_unlock(&net->mu);
	}
	struct el_net_item *it = kind == 0 ? NULL : item_new(c, kind, 0);
	if (it == NULL) {
		conn_fail(c);
		return;
	}
	push_item(net, it);
	read_again(c); /* a first frame may have come with the handshake */
}

/* The item saying connection c ended (it holds no reference: c is going). */
static struct el_net_item *end_item(const struct conn *c, uint8_t kind)
{
	struct el_net_item *it = malloc(sizeof *it);
	if (it != NULL)
		*it = (struct el_net_item){ .kind = kind, .conn = c->id, .peer = c->peer };
	return it;
}

/* A link the other node closes at once is one it refuses (its log says
 * why): said once, then quiet until a link holds. A node waiting to be
 * added logged two lines a redial for as long as it waited, with no reason
 * (found by an outside tester). Unless it said goodbye (bye): a node
 * stopping closes its links with a close_notify (el_net_stop), a refusal
 * without one; a node that exited at once (a full disk) was said to refuse
 * its peers (an outside tester). */
static void say_lost(const struct peer *p, bool held, bool bye)
{
	if (held)
		el_log(EL_LOG_INFO, "net: link to node %u lost; redialing", p->id);
	else if (!p->refusing && bye)
		el_log(EL_LOG_INFO, "net: node %u closed the link as it opened, saying it was "
		       "stopping (not a refusal); redialing with backoff, quietly until a link "
		       "holds", p->id);
	else if (!p->refusing)
		el_log(EL_LOG_INFO, "net: node %u closed the link as it opened: it refuses this "
		       "node (its log says why; a node not yet added is refused until `edgelock "
		       "members add`); redialing with backoff, quietly until a link holds", p->id);
}

/* A dialed link ended: the handshake thread dials again after the backoff,
 * unless the peer is retired (no longer a member): then it is forgotten. */
static bool link_lost(struct el_net *net, struct conn *c)
{
	pthread_mutex_lock(&net->mu);
	struct peer *p = peer_find(net, c->peer);
	const bool ours = p != NULL && p->c == c;
	if (ours && p->retired) {
		/* "redialing" was wrong for a node just removed (outside tester) */
		el_log(EL_LOG_INFO, "net: link to node %u closed; it is no longer a member: "
		       "not redialing", p->id);
		p->c = NULL;
		peer_drop(net, p);
	} else if (ours) {
		p->c = NULL;
		const uint64_t now = el_now_ms();
		const bool held = now - c->up_ms >= NET_LINK_STABLE_MS;
		if (!net->stopping) /* not on this node's own way out */
			say_lost(p, held, c->bye);
		p->refusing = !held;
		if (held)
			p->backoff_ms = NET_BACKOFF_MIN_MS;
		net_peer_wait(p, now);
		net_hs_wake(net);
	}
	pthread_mutex_unlock(&net->mu);
	return ours;
}

/* Close a dead connection's socket and say so; its memory goes with the
 * last item that refers to it. */
static void reap(struct el_net *net, struct conn *c)
{
	net->slots[c->id & (net->n_slots - 1)] = NULL;
	if (c->from[0] != '\0') {
		const uint32_t g = net->gone_next++ % (sizeof net->gone / sizeof net->gone[0]);
		net->gone[g].id = c->id;
		snprintf(net->gone[g].from, sizeof net->gone[g].from, "%s", c->from);
	}
	net->n_conns--;
	struct el_net_item *it = NULL;
	if (c->kind == C_PEER_OUT) {
		if (link_lost(net, c))
			it = end_item(c, EL_NET_PEER_LINK_LOST);
	} else {
		it = end_item(c, c->kind == C_CLIENT ? EL_NET_CLIENT_CLOSED : EL_NET_PEER_CLOSED);
	}
	pthread_mutex_lock(&net->mu);
	if (c->kind == C_CLIENT)
		net->st.clients--;
	net_conn_uncount(net, c);
	net_tls_detach(c);
	pthread_mutex_unlock(&net->mu);
	close(c->fd);
	c->fd = -1;
	if (c->cur != NULL) { /* a frame cut short: its item held a reference too */
		EL_ASSERT(c->refs > 1);
		free(c->cur);
		c->cur = NULL;
		c->in_body = false;
		c->refs--;
	}
	if (it != NULL)
		push_item(net, it);
	conn_unref(c);
}

/* The connections epoll reports ready: write what waits, read what came. */
static void serve_events(struct el_net *net)
{
	struct epoll_event ev[EVENTS_PER_DRAIN];
	const int n = epoll_wait(net->ep, ev, EVENTS_PER_DRAIN, 0);
	for (int i = 0; i < n; i++) {
		struct conn *c = ev[i].data.ptr;
		if (c == NULL) { /* the wake fd */
			uint64_t v;
			ssize_t rc = read(net->wake_fd, &v, sizeof v);
			(void)rc;
			continue;
		}
		if (c->closing)
			continue;
		if ((ev[i].events & EPOLLOUT) != 0)
			conn_flush(c);
		if ((ev[i].events & (EPOLLERR | EPOLLHUP)) != 0 && (c->rx_paused || c->rx_stopped))
			conn_fail(c); /* reset while paused: nothing more will come */
		else if ((ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0)
			conn_read(c);
		conn_watch(c);
	}
}

struct el_net_item *el_net_drain(struct el_net *net)
{
	pthread_mutex_lock(&net->mu);
	struct conn *handoff = net->handoff;
	net->handoff = NULL;
	pthread_mutex_unlock(&net->mu);
	while (handoff != NULL) {
		struct conn *next = handoff->next;
		handoff->next = NULL;
		adopt(net, handoff);
		handoff = next;
	}
	serve_events(net);
	if (net->evict_held != 0)
		evicted_say_held(net);
	struct conn *again = net->again;
	net->again = NULL;
	while (again != NULL) {
		struct conn *c = again;
		again = c->next_again;
		c->on_again = false;
		if (!c->closing) {
			conn_read(c);
			conn_watch(c);
		}
		conn_unref(c);
	}
	while (net->dead != NULL) {
		struct conn *c = net->dead;
		net->dead = c->next;
		reap(net, c);
	}
	struct el_net_item *head = net->in_head;
	net->in_head = net->in_tail = NULL;
	return head;
}

void el_net_item_free(struct el_net *net, struct el_net_item *it)
{
	struct conn *c = it->conn_;
	if (c != NULL) {
		c->inq--;
		if (c->rx_paused && !c->closing && c->inq <= net->cfg.inq_per_conn_max / 2) {
			c->rx_paused = false;
			/* frames already in rbuf first, at the next drain */
			read_again(c);
			conn_watch(c);
		}
		conn_unref(c);
	}
	free(it);
}

int el_net_fd(const struct el_net *net)
{
	return net->ep;
}

void el_net_stats(struct el_net *net, struct el_net_stats *st)
{
	pthread_mutex_lock(&net->mu);
	*st = net->st;
	/* client_conns (under mu) counts a client from its accept,
	 * st.clients (the owner's: the caller) from its hand-over */
	st->client_handshakes = net->client_conns > st->clients ? net->client_conns - st->clients : 0;
	pthread_mutex_unlock(&net->mu);
	st->client_queued_bytes = net->client_q_bytes; /* the owner's, as the caller is */
}

/* Peer-port connections in their handshake; the dialed link of each peer
 * and the one replacing it; a name lookup per peer and the ones given up
 * but still running (el_resolve.h), each with the few descriptors glibc's
 * getaddrinfo opens (a DNS socket, /etc/hosts, /etc/resolv.conf); two
 * listeners, two epoll and two wake descriptors; one connection accepted
 * only to be refused (over max_clients). */
uint32_t el_net_fds_reserved(void)
{
	return NET_PEER_HS_MAX + 2u * NET_PEERS_MAX + 3u * (NET_PEERS_MAX + EL_RESOLVE_STUCK_MAX) +
	       6u + 1u;
}

/* ---- life cycle ------------------------------------------------------------------------ */

int el_net_reload_tls(struct el_net *net)
{
	struct net_tls *t = net_tls_load(net);
	if (t == NULL)
		return EL_EINVAL; /* every endpoint keeps its configuration */
	pthread_mutex_lock(&net->mu);
	net_tls_unref(net->tls); /* connections up keep theirs */
	net->tls = t;
	pthread_mutex_unlock(&net->mu);
	return EL_OK;
}

static int owner_start(struct el_net *net)
{
	net->n_slots = 64;
	while (net->n_slots < net->cfg.max_clients + 2 * NET_PEERS_MAX + 64)
		net->n_slots *= 2;
	net->slots = calloc(net->n_slots, sizeof *net->slots);
	net->scratch = malloc(SCRATCH_BYTES);
	net->ep = epoll_create1(EPOLL_CLOEXEC);
	net->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (net->slots == NULL || net->scratch == NULL || net->ep < 0 || net->wake_fd < 0 ||
	    epoll_ctl(net->ep, EPOLL_CTL_ADD, net->wake_fd, &ev) != 0) {
		el_log(EL_LOG_ERROR, "net: out of memory, or epoll: %s", strerror(errno));
		return EL_EIO;
	}
	return EL_OK;
}

int el_net_start(struct el_net **out, const struct el_net_config *cfg)
{
	*out = NULL;
	struct el_net *net = calloc(1, sizeof *net);
	if (net == NULL)
		return EL_EFULL;
	net->cfg = *cfg;
	net->ep = net->wake_fd = net->hs_ep = net->hs_wake_fd = -1;
	net->listen_peer = net->listen_client = -1;
	pthread_mutex_init(&net->mu, NULL);
	int rc = net_tls_init(net);
	if (rc == EL_OK) {
		net->tls = net_tls_load(net);
		rc = net->tls != NULL ? EL_OK : EL_EINVAL;
	}
	if (rc == EL_OK)
		rc = owner_start(net);
	if (rc == EL_OK)
		rc = net_hs_start(net);
	if (rc != EL_OK) {
		el_net_stop(net);
		return rc;
	}
	*out = net;
	return EL_OK;
}

/* A peer link closed by a node stopping ends with a TLS close_notify
 * (best effort: a full socket buffer drops it), so the other node's
 * link_lost can tell it from a refusal, which closes without one. */
static void say_bye(struct conn *c)
{
	if (!c->closing && c->kind != C_CLIENT)
		(void)mbedtls_ssl_close_notify(&c->ssl);
}

void el_net_stop(struct el_net *net)
{
	pthread_mutex_lock(&net->mu);
	net->stopping = true;
	pthread_mutex_unlock(&net->mu);
	net_hs_stop(net); /* no thread but this one from here on */
	for (struct conn *c = net->handoff, *next; c != NULL; c = next) {
		next = c->next;
		net_conn_free(c);
	}
	net->handoff = NULL;
	for (uint32_t i = 0; net->slots != NULL && i < net->n_slots; i++)
		if (net->slots[i] != NULL) {
			say_bye(net->slots[i]);
			conn_fail(net->slots[i]);
		}
	/* Reap them all; their items go with them. */
	for (struct el_net_item *it = el_net_drain(net), *next; it != NULL; it = next) {
		next = it->next;
		el_net_item_free(net, it);
	}
	net_tls_unref(net->tls);
	net_tls_fini(net);
	if (net->ep >= 0)
		close(net->ep);
	if (net->wake_fd >= 0)
		close(net->wake_fd);
	pthread_mutex_destroy(&net->mu);
	free(net->scratch);
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
