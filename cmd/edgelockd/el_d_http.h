/*
 * el_d_http.h - the HTTP server behind [node] metrics (metrics_http.c): one
 * thread of its own answering GET (and HEAD) of one path with a body it asks
 * its owner for, at most EL_D_HTTP_CONNS connections at a time, each closed
 * after one answer or when too slow.
 */
#ifndef EL_D_HTTP_H
#define EL_D_HTTP_H

#include <stdbool.h>
#include <stdint.h>

/* Connections served at once; more are accepted and closed at once. */
#define EL_D_HTTP_CONNS 8u
/* Descriptors the server holds at most: its connections, the listener, its
 * wake descriptor, and one accepted only to be closed (main.c's budget). */
#define EL_D_HTTP_FDS (EL_D_HTTP_CONNS + 3u)

/* A request head longer than this is answered 431. */
#define EL_D_HTTP_HEAD_MAX 2048u

struct el_d_http;

/* The status for the request head head[0..len) when path is served
 * (http_request.c): 200 (with *head_only for HEAD), 400 for a first line
 * that is not "METHOD TARGET HTTP/1.x", 405 for a method other than GET and
 * HEAD, 404 for another target (a query string is ignored; *head_only is
 * set for a HEAD's 404 too). Only the first EL_D_HTTP_HEAD_MAX bytes are
 * read. */
int el_d_http_route(const char *head, uint32_t len, const char *path, bool *head_only);

/* Copies the body into dst (at most cap bytes); its length. Called on the
 * server's thread. */
typedef uint32_t (*el_d_http_body)(void *ctx, char *dst, uint32_t cap);

/* Listen on url ("http://HOST:PORT/PATH", checked by config.c) and serve
 * PATH as content_type from body(ctx, ...), bodies of at most body_max
 * bytes: EL_OK, or EL_EIO / EL_EINVAL / EL_EFULL, logged naming
 * [node] metrics and url. */
int el_d_http_start(struct el_d_http **out, const char *url, const char *content_type,
		    el_d_http_body body, void *ctx, uint32_t body_max);
/* Stop the thread, close every connection and the listener, free. */
void el_d_http_stop(struct el_d_http *h);

#endif /* EL_D_HTTP_H */
