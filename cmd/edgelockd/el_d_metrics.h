/*
 * el_d_metrics.h - edgelockd's Prometheus metrics (metrics.c, docs/metrics.md).
 *
 * The loop thread owns every counter and histogram and updates them through
 * the hooks below; at most every 100 ms (el_d_metrics_turn) it renders the
 * whole text exposition (format 0.0.4) into a buffer and copies it, under a
 * mutex, to the buffer the HTTP server answers from. The server
 * (metrics_http.c, el_d_http.h) runs on a thread of its own, at most
 * EL_D_HTTP_CONNS connections at a time, and never touches the node: it only
 * copies that text, and adds how long ago the loop published it
 * (edgelock_loop_turn_age_seconds). With no [node] metrics address every
 * hook returns at once.
 */
#ifndef EL_D_METRICS_H
#define EL_D_METRICS_H

#include <stdint.h>

struct el_daemon;
struct el_node_ready;

/* Start the HTTP server on d->cfg.metrics (nothing when empty):
 * EL_OK, EL_EINVAL (bad URL), EL_EIO (cannot listen), EL_EFULL. */
int el_d_metrics_open(struct el_daemon *d);
void el_d_metrics_close(struct el_daemon *d);

/* A monotonic clock in nanoseconds, for the latency hooks. */
uint64_t el_d_metrics_clock(void);

/* A ready batch was persisted (el_storage_persist_ready started at t0_ns):
 * storage latency, snapshot messages, events dropped. */
void el_d_metrics_batch(struct el_daemon *d, const struct el_node_ready *rd, uint64_t t0_ns);
/* A request in flight (received at start_ns) was answered with err. */
void el_d_metrics_reply(struct el_daemon *d, uint64_t start_ns, int err);
/* A Raft message to or from a peer: a HEARTBEAT sent and the peer's
 * HEARTBEAT_RESP give the link's round trip (edgelock_peer_rtt_seconds). */
struct el_msg;
void el_d_metrics_peer_sent(struct el_daemon *d, const struct el_msg *m);
void el_d_metrics_peer_heard(struct el_daemon *d, const struct el_msg *m);
/* Once per turn: leadership changes, and the text every 100 ms. */
void el_d_metrics_turn(struct el_daemon *d);

#endif /* EL_D_METRICS_H */
