/*
 * metrics_http.c - the HTTP server behind [node] metrics (el_d_http.h).
 *
 * A scrape is one GET. So the server takes at most EL_D_HTTP_CONNS
 * connections at a time (one more is accepted and closed at once: its
 * client is told at once instead of waiting in the backlog), gives each
 * HTTP_REQUEST_MS from its accept to send its request head and
 * HTTP_ANSWER_MS more to take the answer, answers with "Connection: close"
 * and closes. Whatever the network does, it holds at most EL_D_HTTP_FDS
 * descriptors and EL_D_HTTP_CONNS answers in memory, which main.c counts in
 * the node's descriptor budget.
 *
 * Why not nng's HTTP server, which served the metrics before (the daemon's
 * last use of nng): it has neither a cap on connections nor a read timeout,
 * so every idle TCP connection to the metrics port held a descriptor for
 * good. 1,100 of them used up an open-files limit of 1,024, the node's next
 * storage open failed with EMFILE and the node stopped (exit 3).
 *
 * One thread, poll() over a wake descriptor, the listener and the
 * connections: a scrape every few seconds needs no more, and the node's loop
 * never waits for it (the body is a copy of text the loop rendered,
 * metrics.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4, pthread_setname_np */
#endif
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "el_d_http.h"
#include "el_error.h"
#include "el_platform.h"
#include "el_url.h"

#define HTTP_REQUEST_MS 2000u /* from the accept to the end of the request head */
#define HTTP_ANSWER_MS 5000u  /* then, to send the answer */
#define HTTP_LINGER_MS 500u   /* then, for the client to close first (no reset) */
#define HTTP_HEAD_MAX EL_D_HTTP_HEAD_MAX /* a longer request head is answered 431 */
#define HTTP_HDR_ROOM 256u    /* room for the status line and headers */
#define HTTP_ACCEPT_PAUSE_MS 250u
#define HTTP_REFUSED_LOG_MS 10000u
#define HTTP_URL_MAX 128u

enum http_state { H_FREE = 0, H_READING, H_WRITING, H_LINGERING };

struct http_conn {
	int fd;
	uint8_t state;
	uint64_t deadline_ms;
	uint32_t in_len;
	char in[HTTP_HEAD_MAX];
	char *out; /* the answer: headers at out + out_off, then the body */
	uint32_t out_off, out_len;
};

struct el_d_http {
	pthread_t thread;
	bool started;
	atomic_bool stop;
	int listen_fd, wake_fd;
	char url[HTTP_URL_MAX];
	const char *path; /* in url */
	const char *content_type;
	el_d_http_body body;
	void *ctx;
	uint32_t body_max;
	uint64_t accept_at_ms; /* accepting paused until then (out of descriptors) */
	/* connections refused since the last line about them, the last one's
	 * reason and address */
	uint64_t refused, refused_logged_ms;
	char refused_why[64], refused_from[EL_ADDR_NAME_MAX];
	struct http_conn conn[EL_D_HTTP_CONNS];
};

static int64_t sooner(int64_t a, int64_t b)
{
	return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

static void conn_close(struct http_conn *c)
{
	close(c->fd);
	free(c->out);
	c->out = NULL;
	c->fd = -1;
	c->state = H_FREE;
}

/* The refusals counted since the last line, in one line. */
static void refused_log(struct el_d_http *h, uint64_t now)
{
	el_log(EL_LOG_WARN, "metrics: %llu connection(s) refused since the last such line (%s%s%s); "
	       "at most %u are served at a time, each closed after one answer or %u ms",
	       (unsigned long long)h->refused, h->refused_why,
	       h->refused_from[0] != '\0' ? "; the last from " : "", h->refused_from,
	       EL_D_HTTP_CONNS, HTTP_REQUEST_MS + HTTP_ANSWER_MS);
	h->refused = 0;
	h->refused_logged_ms = now;
}

/* A connection refused (the cap, or out of descriptors; from fd's peer
 * when fd >= 0): one line every HTTP_REFUSED_LOG_MS at most, with the
 * count, so a flood cannot flood the log. The ones held back are told when
 * that time is over (refused_flush), not with the next refusal, which may
 * come much later or never. */
static void refused(struct el_d_http *h, uint64_t now, const char *why, int fd)
{
	h->refused++;
	snprintf(h->refused_why, sizeof h->refused_why, "%s", why);
	h->refused_from[0] = '\0';
	struct sockaddr_storage a;
	socklen_t alen = sizeof a;
	if (fd >= 0 && getpeername(fd, (struct sockaddr *)&a, &alen) == 0)
		el_addr_name(&a, alen, h->refused_from, sizeof h->refused_from);
	if (h->refused_logged_ms == 0 || now - h->refused_logged_ms >= HTTP_REFUSED_LOG_MS)
		refused_log(h, now);
}

/* Tell the refusals held back once their time is over; the time until it
 * is (ms), or -1 when none are held. */
static int64_t refused_flush(struct el_d_http *h, uint64_t now)
{
	if (h->refused == 0)
		return -1;
	if (now - h->refused_logged_ms < HTTP_REFUSED_LOG_MS)
		return (int64_t)(h->refused_logged_ms + HTTP_REFUSED_LOG_MS - now);
	refused_log(h, now);
	return -1;
}

/* ---- answering --------------------------------------------------------------- */

static const char *reason(int code)
{
	return code == 200 ? "OK" : code == 404 ? "Not Found" : code == 405 ? "Method Not Allowed"
	       : code == 431 ? "Request Header Fields Too Large" : "Bad Request";
}

/* Build the answer in one buffer: the body first (its length is in the
 * headers), the headers just before it. */
static void respond(struct el_d_http *h, struct http_conn *c, int code, bool head_only,
		    uint64_t now)
{
	const uint32_t cap = code == 200 ? h->body_max : 64u;
	c->out = malloc(HTTP_HDR_ROOM + cap);
	if (c->out == NULL) {
		conn_close(c);
		return;
	}
	char *body = c->out + HTTP_HDR_ROOM;
	uint32_t n = code == 200 ? h->body(h->ctx, body, cap)
		     : (uint32_t)snprintf(body, cap, "%d %s\n", code, reason(code));
	char hdr[HTTP_HDR_ROOM];
	const int k = snprintf(hdr, sizeof hdr, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
			       "Content-Length: %u\r\n%sConnection: close\r\n\r\n", code,
			       reason(code), code == 200 ? h->content_type : "text/plain", n,
			       code == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (k <= 0 || (uint32_t)k >= HTTP_HDR_ROOM) { /* a content type too long for the room */
		conn_close(c);
		return;
	}
	memcpy(body - k, hdr, (size_t)k);
	c->out_off = HTTP_HDR_ROOM - (uint32_t)k;
	c->out_len = HTTP_HDR_ROOM + (head_only ? 0 : n);
	c->state = H_WRITING;
	c->deadline_ms = now + HTTP_ANSWER_MS;
}

/* The request head is in (http_request.c reads it). */
static void answer(struct el_d_http *h, struct http_conn *c, uint64_t now)
{
	bool head_only = false;
	const int code = el_d_http_route(c->in, c->in_len, h->path, &head_only);
	respond(h, c, code, head_only, now);
}

static bool head_done(const struct http_conn *c)
{
	return memmem(c->in, c->in_len, "\r\n\r\n", 4) != NULL ||
	       memmem(c->in, c->in_len, "\n\n", 2) != NULL;
}

/* Send what the socket takes; once all is sent, half-close and wait a
 * little for the client's own close, so that it reads the whole answer. */
static void conn_write(struct http_conn *c, uint64_t now)
{
	while (c->state == H_WRITING && c->out_off < c->out_len) {
		const ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				       MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			conn_close(c);
			return;
		}
		c->out_off += (uint32_t)n;
	}
	if (c->state != H_WRITING)
		return;
	free(c->out);
	c->out = NULL;
	(void)shutdown(c->fd, SHUT_WR);
	c->state = H_LINGERING;
	if (c->deadline_ms > now + HTTP_LINGER_MS)
		c->deadline_ms = now + HTTP_LINGER_MS;
}

/* Read the request head (or, lingering, whatever still comes). */
static void conn_read(struct el_d_http *h, struct http_conn *c, uint64_t now)
{
	char sink[512] = ""; /* what a lingering client still sends, dropped */
	while (c->state == H_READING || c->state == H_LINGERING) {
		const bool reading = c->state == H_READING;
		char *at = reading ? c->in + c->in_len : sink;
		const size_t room = reading ? HTTP_HEAD_MAX - c->in_len : sizeof sink;
		const ssize_t n = recv(c->fd, at, room, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) { /* the client closed, or an error */
			conn_close(c);
			return;
		}
		if (!reading)
			continue;
		c->in_len += (uint32_t)n;
		if (head_done(c))
			answer(h, c, now);
		else if (c->in_len == HTTP_HEAD_MAX)
			respond(h, c, 431, false, now);
		conn_write(c, now);
	}
}

/* ---- accepting and the thread ------------------------------------------------- */

static void accept_all(struct el_d_http *h, uint64_t now)
{
	for (;;) {
		const int fd = accept4(h->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				h->accept_at_ms = now + HTTP_ACCEPT_PAUSE_MS; /* left in the backlog */
				refused(h, now, strerror(errno), -1);
			}
			return; /* EAGAIN: none left; the rest are the client's problems */
		}
		struct http_conn *c = NULL;
		for (uint32_t i = 0; i < EL_D_HTTP_CONNS && c == NULL; i++)
			if (h->conn[i].state == H_FREE)
				c = &h->conn[i];
		if (c == NULL) {
			refused(h, now, "all connections busy", fd);
			close(fd);
			continue;
		}
		*c = (struct http_conn){ .fd = fd, .state = H_READING,
					 .deadline_ms = now + HTTP_REQUEST_MS };
	}
}

/* Fill p with what to wait for; the time to the nearest deadline (ms, -1: none). */
static int64_t http_wait(struct el_d_http *h, struct pollfd *p, uint64_t now)
{
	int64_t wait = -1;
	const bool accepting = now >= h->accept_at_ms;
	p[0] = (struct pollfd){ .fd = h->wake_fd, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = accepting ? h->listen_fd : -1, .events = POLLIN };
	if (!accepting)
		wait = (int64_t)(h->accept_at_ms - now);
	for (uint32_t i = 0; i < EL_D_HTTP_CONNS; i++) {
		const struct http_conn *c = &h->conn[i];
		p[2 + i] = (struct pollfd){ .fd = c->state == H_FREE ? -1 : c->fd,
					    .events = c->state == H_WRITING ? POLLOUT : POLLIN };
		if (c->state != H_FREE)
			wait = sooner(wait, c->deadline_ms > now ? (int64_t)(c->deadline_ms - now) : 0);
	}
	return wait;
}

static void *http_main(void *arg)
{
	struct el_d_http *h = arg;
	struct pollfd p[2 + EL_D_HTTP_CONNS];
	while (!atomic_load(&h->stop)) {
		const uint64_t before = el_now_ms();
		const int64_t wait = sooner(http_wait(h, p, before), refused_flush(h, before));
		if (poll(p, 2 + EL_D_HTTP_CONNS, (int)wait) < 0 && errno != EINTR) {
			el_log(EL_LOG_ERROR, "metrics: poll: %s; no more scrapes", strerror(errno));
			break;
		}
		const uint64_t now = el_now_ms();
		if ((p[0].revents & POLLIN) != 0) {
			uint64_t v;
			const ssize_t r = read(h->wake_fd, &v, sizeof v);
			(void)r; /* only to clear it: the loop checks h->stop */
		}
		for (uint32_t i = 0; i < EL_D_HTTP_CONNS; i++) {
			struct http_conn *c = &h->conn[i];
			if (c->state != H_FREE && (p[2 + i].revents & (POLLERR | POLLNVAL)) != 0)
				conn_close(c);
			else if (c->state == H_WRITING && p[2 + i].revents != 0)
				conn_write(c, now);
			else if (c->state != H_FREE && p[2 + i].revents != 0)
				conn_read(h, c, now);
			if (c->state != H_FREE && now >= c->deadline_ms)
				conn_close(c); /* too slow: a scrape is one quick request */
		}
		if ((p[1].revents & POLLIN) != 0)
			accept_all(h, now);
	}
	return NULL;
}

/* ---- start and stop ------------------------------------------------------------ */

/* "http://HOST:PORT/PATH" (config.c checked its form) into a listening
 * socket; HOST "*" is every address, an IPv6 one is in brackets. */
static int http_listen(struct el_d_http *h)
{
	char host[HTTP_URL_MAX], port[8];
	if (el_url_http_parse(h->url, host, sizeof host, port, sizeof port, &h->path) != EL_OK)
		return EL_EINVAL;
	const struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *ai = NULL;
	if (getaddrinfo(strcmp(host, "*") == 0 ? NULL : host, port, &hints, &ai) != 0)
		return EL_EINVAL;
	const int one = 1;
	const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			      ai->ai_protocol);
	const bool ok = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
			bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 16) == 0;
	freeaddrinfo(ai);
	if (!ok && fd >= 0)
		close(fd);
	h->listen_fd = ok ? fd : -1;
	return ok ? EL_OK : EL_EIO;
}

int el_d_http_start(struct el_d_http **out, const char *url, const char *content_type,
		    el_d_http_body body, void *ctx, uint32_t body_max)
{
	*out = NULL;
	struct el_d_http *h = calloc(1, sizeof *h);
	if (h == NULL)
		return EL_EFULL;
	h->listen_fd = h->wake_fd = -1;
	for (uint32_t i = 0; i < EL_D_HTTP_CONNS; i++)
		h->conn[i].fd = -1;
	snprintf(h->url, sizeof h->url, "%s", url);
	h->content_type = content_type;
	h->body = body;
	h->ctx = ctx;
	h->body_max = body_max;
	int rc = http_listen(h);
	const char *why = rc == EL_EINVAL ? "not http://HOST:PORT/PATH with a host that resolves"
				 : strerror(errno);
	if (rc == EL_OK && (h->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
		rc = EL_EIO;
		why = strerror(errno);
	}
	if (rc == EL_OK && pthread_create(&h->thread, NULL, http_main, h) != 0) {
		rc = EL_EIO;
		why = "cannot start its thread";
	}
	if (rc != EL_OK) {
		el_log(EL_LOG_ERROR, "[node] metrics %s: %s", url, why);
		el_d_http_stop(h);
		return rc;
	}
	h->started = true;
	(void)pthread_setname_np(h->thread, "el:metrics");
	*out = h;
	return EL_OK;
}

void el_d_http_stop(struct el_d_http *h)
{
	if (h == NULL)
		return;
	if (h->started) {
		uint64_t one = 1;
		atomic_store(&h->stop, true);
		if (write(h->wake_fd, &one, sizeof one) < 0)
			el_log(EL_LOG_WARN, "metrics: cannot wake the server: %s", strerror(errno));
		pthread_join(h->thread, NULL);
		if (h->refused != 0) /* not lost at a stop within their 10 s */
			refused_log(h, el_now_ms());
	}
	for (uint32_t i = 0; i < EL_D_HTTP_CONNS; i++)
		if (h->conn[i].state != H_FREE)
			conn_close(&h->conn[i]);
	if (h->listen_fd >= 0)
		close(h->listen_fd);
	if (h->wake_fd >= 0)
		close(h->wake_fd);
	free(h);
}
