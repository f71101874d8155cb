/*
 * target_edgelock.c - edgelock as a bench target: three (or one) edgelockd
 * on loopback over TLS with the dev certificates (make certs), configs as
 * shipped except [limits] sessions_per_client, claims_per_client,
 * watches_per_client and connections_per_client = 0 (every bench client shares
 * the one dev client identity), driven through libedgelock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelock.h"
#include "el_client_wire.h"
#include "el_raft.h"

#include "bench.h"

#define SESSIONS_PER_CLIENT 60 /* under libedgelock's 64 per el_client */
#define TTL_MS 10000u

struct el_target {
	char build[256], dir[320], certs[300];
	int port;
	char endpoints[400];
	el_client *admin; /* STATUS requests */
};

struct el_bench_client {
	el_client *c;
	el_session *s;
};

struct el_idle {
	unsigned n_clients;
	struct el_bench_client *cl; /* each with up to SESSIONS_PER_CLIENT sessions */
	el_session **s;
	unsigned n_s;
};

static struct el_target *priv(struct bench_target *t)
{
	return t->priv;
}

static int write_config(struct el_target *e, int i, int n)
{
	char path[400];
	snprintf(path, sizeof path, "%s/node%d.conf", e->dir, i);
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "; written by the bench (tests/bench/load/target_edgelock.c)\n"
		   "[node]\nid = %d\ndata_dir = %s/node%d\npeer_addr = tls+tcp://127.0.0.1:%d\n"
		   "client_addr = tls+tcp://127.0.0.1:%d\ncluster = bench\n\n"
		   "[tls]\nca_file = %s/ca.pem\ncert_key_file = %s/node%d.pem\n"
		   "client_auth = required\n\n[peers]\n",
		i, e->dir, i, e->port + i, e->port + 100 + i, e->certs, e->certs, i);
	for (int m = 1; m <= n; m++)
		fprintf(f, "%d = tls+tcp://127.0.0.1:%d\n", m, e->port + m);
	fprintf(f, "\n[limits]\nsessions_per_client = 0\nclaims_per_client = 0\n"
		   "watches_per_client = 0\nconnections_per_client = 0\n");
	return fclose(f);
}

static pid_t spawn_node(struct el_target *e, int i, bool bootstrap)
{
	char bin[300], conf[400], log[400];
	const char *other = getenv("EDGELOCKD"); /* another build to measure */
	snprintf(bin, sizeof bin, "%s", other != NULL && *other ? other : "");
	if (bin[0] == '\0')
		snprintf(bin, sizeof bin, "%s/bin/edgelockd", e->build);
	snprintf(conf, sizeof conf, "%s/node%d.conf", e->dir, i);
	snprintf(log, sizeof log, "%s/node%d.log", e->dir, i);
	/* BENCH_WRAP: a command the daemon runs under (valgrind --tool=callgrind). */
	char wrap[256], *argv[24];
	int n = 0;
	snprintf(wrap, sizeof wrap, "%s", getenv("BENCH_WRAP") ? getenv("BENCH_WRAP") : "");
	for (char *w = strtok(wrap, " "); w != NULL && n < 16; w = strtok(NULL, " "))
		argv[n++] = w;
	argv[n++] = bin;
	argv[n++] = "-c";
	argv[n++] = conf;
	argv[n++] = bootstrap ? "--bootstrap" : NULL;
	argv[n] = NULL;
	return bench_spawn(argv, log);
}

static el_client *open_client(struct el_target *e, uint32_t timeout_ms)
{
	struct el_client_options o = { .endpoints = e->endpoints,
				       .ca_file = NULL, .cert_key_file = NULL,
				       .name = "bench", .timeout_ms = timeout_ms };
	char ca[400], key[400];
	snprintf(ca, sizeof ca, "%s/ca.pem", e->certs);
	snprintf(key, sizeof key, "%s/client.pem", e->certs);
	o.ca_file = ca;
	o.cert_key_file = key;
	el_client *c = NULL;
	return el_client_open(&c, &o) == EL_OK ? c : NULL;
}

static void *client_open(struct bench_target *t)
{
	struct el_bench_client *b = calloc(1, sizeof *b);
	if (b == NULL)
		return NULL;
	b->c = open_client(priv(t), 30000); /* generous: daemons may run under valgrind */
	if (b->c == NULL || el_session_open(b->c, TTL_MS, &b->s) != EL_OK) {
		fprintf(stderr, "bench: edgelock: a client did not open: %s\n",
			b->c != NULL ? el_client_last_error(b->c) : "el_client_open failed");
		if (b->c != NULL)
			el_client_close(b->c);
		free(b);
		return NULL;
	}
	return b;
}

static void client_close(void *p)
{
	struct el_bench_client *b = p;
	if (b == NULL)
		return;
	el_session_close(b->s);
	el_client_close(b->c);
	free(b);
}

static int lock(void *p, const char *name, uint32_t wait_ms, uint64_t *token)
{
	return el_lock(((struct el_bench_client *)p)->s, name, false, wait_ms, token);
}

static int unlock(void *p, const char *name, uint64_t token)
{
	return el_unlock(((struct el_bench_client *)p)->s, name, token);
}

static int status(struct bench_target *t, int i, struct el_cw_msg *m);

/* Every node answers STATUS and knows the leader, within 10 s: a node that
 * did not start (its port taken, say) would leave a smaller cluster
 * measured as the full one (an outside tester got "3 nodes" from two).
 * 0, or -1 naming the node. */
static int all_up(struct bench_target *t)
{
	struct el_target *e = priv(t);
	struct el_cw_msg *m = malloc(sizeof *m);
	int down = -1;
	for (int tries = 0; m != NULL && tries < 100; tries++) {
		down = -1;
		for (int i = 0; i < t->n && down < 0; i++)
			if (status(t, i, m) != 0 || m->leader == 0)
				down = i;
		if (down < 0)
			break;
		bench_sleep_ms(100);
	}
	const int rc = m != NULL && down < 0 ? 0 : -1;
	free(m);
	if (down >= 0)
		fprintf(stderr, "bench: edgelock node %d did not start or does not answer on "
			"127.0.0.1:%d (see %s/node%d.log)\n", down + 1, e->port + 101 + down, e->dir,
			down + 1);
	return rc;
}

static int start(struct bench_target *t, int n)
{
	struct el_target *e = priv(t);
	bench_rm_rf(e->dir);
	e->endpoints[0] = '\0';
	for (int i = 1; i <= n; i++) {
		char d[400];
		snprintf(d, sizeof d, "%s/node%d", e->dir, i);
		if (bench_mkdir_p(d) != 0 || write_config(e, i, n) != 0)
			return -1;
		snprintf(e->endpoints + strlen(e->endpoints), sizeof e->endpoints - strlen(e->endpoints),
			 "%stls+tcp://127.0.0.1:%d", i > 1 ? "," : "", e->port + 100 + i);
	}
	for (int i = 0; i < n; i++)
		t->pid[i] = spawn_node(e, i + 1, true);
	t->n = n;
	e->admin = open_client(e, 2000);
	/* Ready: a session opens and a lock is granted (an election, TLS). */
	for (int tries = 0; tries < 60; tries++) {
		void *c = client_open(t);
		uint64_t tok;
		const int ok = c != NULL && lock(c, "bench/ready", 0, &tok) == EL_OK &&
			       unlock(c, "bench/ready", tok) == EL_OK;
		client_close(c);
		if (ok)
			return all_up(t);
		bench_sleep_ms(500);
	}
	fprintf(stderr, "bench: edgelock did not become ready (logs: %s)\n", e->dir);
	return -1;
}

static void stop(struct bench_target *t)
{
	struct el_target *e = priv(t);
	if (e->admin != NULL)
		el_client_close(e->admin);
	e->admin = NULL;
	for (int i = 0; i < t->n; i++) {
		bench_stop_pid(t->pid[i]);
		t->pid[i] = 0;
	}
	t->n = 0;
}

/* STATUS of node i (0-based) into m; 0 when it answered. */
static int status(struct bench_target *t, int i, struct el_cw_msg *m)
{
	struct el_target *e = priv(t);
	struct el_cw_msg *req = calloc(1, sizeof *req);
	char url[64];
	snprintf(url, sizeof url, "tls+tcp://127.0.0.1:%d", e->port + 101 + i);
	int rc = -1;
	if (req != NULL) {
		req->type = EL_CW_STATUS;
		memset(m, 0, sizeof *m);
		rc = el_client_request_at(e->admin, url, req, m) == EL_OK && m->err == EL_OK ? 0 : -1;
	}
	free(req);
	return rc;
}

static int leader(struct bench_target *t)
{
	struct el_cw_msg *m = malloc(sizeof *m);
	int who = -1;
	for (int i = 0; m != NULL && i < t->n && who < 0; i++)
		if (t->pid[i] > 0 && status(t, i, m) == 0 && m->role == EL_LEADER)
			who = i;
	free(m);
	return who;
}

/* Node i is back: it answers STATUS, knows a leader and has applied what
 * the leader had committed when it came back. */
static int restart(struct bench_target *t, int i)
{
	struct el_target *e = priv(t);
	t->pid[i] = spawn_node(e, i + 1, false);
	struct el_cw_msg *m = malloc(sizeof *m), *lm = malloc(sizeof *lm);
	int rc = -1;
	uint64_t want = 0;
	for (int tries = 0; m != NULL && lm != NULL && tries < 300 && rc != 0; tries++) {
		const int l = leader(t);
		if (want == 0 && l >= 0 && l != i && status(t, l, lm) == 0)
			want = lm->commit;
		if (want != 0 && status(t, i, m) == 0 && m->leader != 0 && m->applied >= want)
			rc = 0;
		else
			bench_sleep_ms(50);
	}
	free(m);
	free(lm);
	return rc;
}

static void *idle_open(struct bench_target *t, int n)
{
	struct el_idle *h = calloc(1, sizeof *h);
	const unsigned nc = ((unsigned)n + SESSIONS_PER_CLIENT - 1) / SESSIONS_PER_CLIENT;
	if (h == NULL || (h->cl = calloc(nc, sizeof *h->cl)) == NULL ||
	    (h->s = calloc((size_t)n, sizeof *h->s)) == NULL)
		return h;
	for (unsigned k = 0; k < nc; k++) {
		h->cl[k].c = open_client(priv(t), 10000);
		if (h->cl[k].c == NULL)
			break;
		h->n_clients++;
		for (unsigned j = 0; j < SESSIONS_PER_CLIENT && h->n_s < (unsigned)n; j++)
			if (el_session_open(h->cl[k].c, TTL_MS, &h->s[h->n_s]) == EL_OK)
				h->n_s++;
	}
	if (h->n_s < (unsigned)n)
		bench_note("edgelock: only %u of %d idle sessions opened", h->n_s, n);
	return h;
}

static void idle_close(void *p)
{
	struct el_idle *h = p;
	if (h == NULL)
		return;
	for (unsigned i = 0; i < h->n_s; i++)
		el_session_close(h->s[i]);
	for (unsigned k = 0; k < h->n_clients; k++)
		el_client_close(h->cl[k].c);
	free(h->s);
	free(h->cl);
	free(h);
}

struct bench_target *bench_edgelock(const char *build, int port)
{
	static const char *bins[4];
	static char b[3][320];
	struct bench_target *t = calloc(1, sizeof *t);
	struct el_target *e = calloc(1, sizeof *e);
	if (t == NULL || e == NULL)
		return NULL;
	snprintf(e->build, sizeof e->build, "%s", build);
	snprintf(e->dir, sizeof e->dir, "%s/bench/run/edgelock", build);
	snprintf(e->certs, sizeof e->certs, "%s/certs", build);
	e->port = port;
	snprintf(b[0], sizeof b[0], "%s/bin/edgelockd", build);
	snprintf(b[1], sizeof b[1], "%s/lib/libedgelock.so", build);
	snprintf(b[2], sizeof b[2], "%s/bin/edgelock", build);
	bins[0] = b[0], bins[1] = b[1], bins[2] = b[2], bins[3] = NULL;
	*t = (struct bench_target){ .name = "edgelock", .start = start, .stop = stop,
				    .client_open = client_open, .client_close = client_close,
				    .lock = lock, .unlock = unlock,
				    .idle_sessions_open = idle_open, .idle_sessions_close = idle_close,
				    .leader = leader, .restart = restart, .binaries = bins,
				    .priv = e };
	return t;
}
