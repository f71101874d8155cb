/*
 * peer_etcd.c - a three-node etcd cluster (Debian's etcd-server 3.4, as
 * shipped: fsync per write, heartbeat 100 ms, election 1000 ms) as a bench
 * target for `make bench-compare`, with etcd's lock recipe: a lease per
 * client (granted with the TTL, kept alive in the background, as clientv3's
 * concurrency.Session does), then the v3 lock API (Lock with the lease,
 * Unlock with the key it returned). Driven over etcd's gRPC gateway (JSON
 * over HTTP/1.1, keep-alive, one libcurl handle per client) rather than
 * gRPC: that handicaps etcd (the gateway's JSON work is etcd's CPU too).
 * Plain HTTP, no TLS: that handicaps edgelock.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <mbedtls/base64.h>

#include "bench.h"

#define TTL_S 10
#define RETRY_MS 10000u /* how long a call retries through a failover */
#define CALL_MS 5000L    /* one call's bound (etcdctl's --command-timeout); Lock: the wait */

struct etcd_target {
	char dir[320];
	int port; /* clients PORT+1..3, peers PORT+11..13 */
	int n;
	pthread_mutex_t mu;           /* the leases kept alive */
	long long *leases;
	size_t n_leases, cap_leases;
	pthread_t keeper;
	bool keeping, quit;
	pthread_cond_t quit_cv;
};

static struct curl_slist *json_header; /* set once, before any client thread */

/* One HTTP/1.1 connection (a curl handle) to one node, and its session. */
struct etcd_client {
	struct etcd_target *e;
	CURL *h;
	int node;       /* 1..n, the endpoint in use */
	long long lease; /* 0: none yet */
	char key[400];  /* the lock key of the last grant (base64) */
	char *body;     /* the last response */
	size_t len, cap;
};

static size_t on_data(char *p, size_t sz, size_t nm, void *arg)
{
	struct etcd_client *k = arg;
	const size_t n = sz * nm;
	if (k->len + n + 1 > k->cap) {
		const size_t cap = (k->len + n + 1) * 2;
		char *b = realloc(k->body, cap);
		if (b == NULL)
			return 0;
		k->body = b, k->cap = cap;
	}
	memcpy(k->body + k->len, p, n);
	k->len += n;
	k->body[k->len] = '\0';
	return n;
}

/* POST json to /v3/PATH on the client's node: 0 when HTTP 200. */
static int post(struct etcd_client *k, const char *path, const char *json, long timeout_ms)
{
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v3/%s", k->e->port + k->node, path);
	k->len = 0;
	if (k->body != NULL)
		k->body[0] = '\0';
	curl_easy_setopt(k->h, CURLOPT_URL, url);
	curl_easy_setopt(k->h, CURLOPT_POSTFIELDS, json);
	curl_easy_setopt(k->h, CURLOPT_TIMEOUT_MS, timeout_ms);
	long code = 0;
	if (curl_easy_perform(k->h) != CURLE_OK)
		return -1;
	curl_easy_getinfo(k->h, CURLINFO_RESPONSE_CODE, &code);
	return code == 200 && k->body != NULL ? 0 : -1;
}

/* The string value of "field":"..." in the last response, into out. */
static int field(const struct etcd_client *k, const char *name, char *out, size_t cap)
{
	char pat[48];
	snprintf(pat, sizeof pat, "\"%s\":\"", name);
	const char *p = k->body != NULL ? strstr(k->body, pat) : NULL;
	if (p == NULL)
		return -1;
	p += strlen(pat);
	const char *q = strchr(p, '"');
	if (q == NULL || (size_t)(q - p) >= cap)
		return -1;
	memcpy(out, p, (size_t)(q - p));
	out[q - p] = '\0';
	return 0;
}

static bool said(const struct etcd_client *k, const char *what)
{
	return k->body != NULL && strstr(k->body, what) != NULL;
}

/* Another node after a failed call (the one in use may be dead), as
 * clientv3's balancer does; a short pause so a dead cluster is not spun on. */
static void next_node(struct etcd_client *k)
{
	k->node = k->node % k->e->n + 1;
	bench_sleep_ms(5);
}

static struct etcd_client *dial(struct etcd_target *e, int node)
{
	struct etcd_client *k = calloc(1, sizeof *k);
	if (k == NULL || (k->h = curl_easy_init()) == NULL) {
		free(k);
		return NULL;
	}
	k->e = e, k->node = node;
	curl_easy_setopt(k->h, CURLOPT_HTTPHEADER, json_header);
	curl_easy_setopt(k->h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(k->h, CURLOPT_WRITEDATA, k);
	curl_easy_setopt(k->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(k->h, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(k->h, CURLOPT_CONNECTTIMEOUT_MS, 1000L);
	return k;
}

static void hang_up(struct etcd_client *k)
{
	if (k == NULL)
		return;
	curl_easy_cleanup(k->h);
	free(k->body);
	free(k);
}

/* ---- leases: grant, revoke, and the keep-alive thread ---------------------- */

static void leases_add(struct etcd_target *e, long long id)
{
	pthread_mutex_lock(&e->mu);
	if (e->n_leases == e->cap_leases) {
		const size_t cap = e->cap_leases ? e->cap_leases * 2 : 64;
		long long *l = realloc(e->leases, cap * sizeof *l);
		if (l != NULL)
			e->leases = l, e->cap_leases = cap;
	}
	if (e->n_leases < e->cap_leases)
		e->leases[e->n_leases++] = id;
	pthread_mutex_unlock(&e->mu);
}

static void leases_drop(struct etcd_target *e, long long id)
{
	pthread_mutex_lock(&e->mu);
	for (size_t i = 0; i < e->n_leases; i++)
		if (e->leases[i] == id) {
			e->leases[i] = e->leases[--e->n_leases];
			break;
		}
	pthread_mutex_unlock(&e->mu);
}

/* A new lease for k (retried through a failover); registered for keep-alive. */
static int grant(struct etcd_client *k)
{
	char id[32], json[32];
	snprintf(json, sizeof json, "{\"TTL\":%d}", TTL_S);
	const uint64_t until = bench_now_ns() + RETRY_MS * 1000000ull;
	while (post(k, "lease/grant", json, CALL_MS) != 0 || field(k, "ID", id, sizeof id) != 0) {
		if (bench_now_ns() >= until)
			return -1;
		next_node(k);
	}
	k->lease = strtoll(id, NULL, 10);
	leases_add(k->e, k->lease);
	return 0;
}

static void revoke(struct etcd_client *k)
{
	char json[48];
	if (k->lease == 0)
		return;
	leases_drop(k->e, k->lease);
	snprintf(json, sizeof json, "{\"ID\":%lld}", k->lease);
	for (int tries = 0; tries < 3 && post(k, "lease/revoke", json, CALL_MS) != 0 &&
			    !said(k, "not found"); tries++)
		next_node(k);
	k->lease = 0;
}

/* Every TTL/3, one LeaseKeepAlive request per lease (what clientv3 sends on
 * its keep-alive stream), over one connection of its own. */
static void *keeper_main(void *arg)
{
	struct etcd_target *e = arg;
	struct etcd_client *k = dial(e, 1);
	long long *ids = NULL;
	pthread_mutex_lock(&e->mu);
	while (k != NULL && !e->quit) {
		const size_t n = e->n_leases;
		long long *c = realloc(ids, (n ? n : 1) * sizeof *ids);
		if (c != NULL && n > 0)
			memcpy(c, e->leases, n * sizeof *c);
		if (c != NULL)
			ids = c;
		pthread_mutex_unlock(&e->mu);
		for (size_t i = 0; c != NULL && i < n; i++) {
			char json[48];
			snprintf(json, sizeof json, "{\"ID\":%lld}", ids[i]);
			if (post(k, "lease/keepalive", json, 2000) != 0)
				next_node(k);
		}
		pthread_mutex_lock(&e->mu);
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += TTL_S / 3;
		ts.tv_nsec += (long)(TTL_S % 3) * 333333333L;
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		if (!e->quit)
			pthread_cond_timedwait(&e->quit_cv, &e->mu, &ts);
	}
	pthread_mutex_unlock(&e->mu);
	free(ids);
	hang_up(k);
	return NULL;
}

/* ---- the lock recipe ------------------------------------------------------- */

static void *client_open(struct bench_target *t)
{
	static unsigned spread; /* clients spread over the nodes */
	struct etcd_target *e = t->priv;
	const unsigned at = __atomic_fetch_add(&spread, 1, __ATOMIC_RELAXED);
	struct etcd_client *k = dial(e, (int)(at % (unsigned)e->n) + 1);
	if (k != NULL && grant(k) != 0) {
		hang_up(k);
		return NULL;
	}
	return k;
}

static void client_close(void *p)
{
	struct etcd_client *k = p;
	if (k != NULL)
		revoke(k);
	hang_up(k);
}

/* Lock waits in the server (its queue is the keys' create revisions); the
 * key it returns is ours to Unlock. A call cut by a failover is retried with
 * the same lease, which etcd's recipe makes idempotent (the key is
 * NAME/LEASE); an expired lease is replaced. The token: the grant's revision. */
static int lock(void *p, const char *name, uint32_t wait_ms, uint64_t *token)
{
	struct etcd_client *k = p;
	unsigned char b64[200];
	size_t n = 0;
	if (mbedtls_base64_encode(b64, sizeof b64, &n, (const unsigned char *)name, strlen(name)) != 0)
		return -1;
	const uint32_t wait = wait_ms > RETRY_MS ? wait_ms : RETRY_MS;
	const uint64_t until = bench_now_ns() + (uint64_t)wait * 1000000u;
	char json[300], rev[32];
	for (;;) {
		if (k->lease == 0 && grant(k) != 0)
			return -1;
		snprintf(json, sizeof json, "{\"name\":\"%s\",\"lease\":%lld}", (char *)b64, k->lease);
		const uint64_t now = bench_now_ns();
		const long left = now < until ? (long)((until - now) / 1000000u) : 0;
		if (post(k, "lock/lock", json, left + 1) == 0 && field(k, "key", k->key, sizeof k->key) == 0) {
			*token = field(k, "revision", rev, sizeof rev) == 0 ? strtoull(rev, NULL, 10) : 0;
			return 0;
		}
		if (said(k, "lease not found")) {
			leases_drop(k->e, k->lease);
			k->lease = 0;
		} else {
			next_node(k);
		}
		if (bench_now_ns() >= until)
			return -1;
	}
}

static int unlock(void *p, const char *name, uint64_t token)
{
	struct etcd_client *k = p;
	char json[sizeof k->key + 16];
	(void)name, (void)token;
	snprintf(json, sizeof json, "{\"key\":\"%s\"}", k->key);
	const uint64_t until = bench_now_ns() + RETRY_MS * 1000000ull;
	while (post(k, "lock/unlock", json, CALL_MS) != 0) {
		if (bench_now_ns() >= until)
			return -1;
		next_node(k);
	}
	return 0;
}

/* ---- the cluster ----------------------------------------------------------- */

static pid_t spawn_node(const struct etcd_target *e, int i)
{
	char name[8], data[400], log[400], curl_[64], purl[64], cluster[256] = "";
	snprintf(name, sizeof name, "n%d", i);
	snprintf(data, sizeof data, "%s/node%d", e->dir, i);
	snprintf(log, sizeof log, "%s/node%d.log", e->dir, i);
	snprintf(curl_, sizeof curl_, "http://127.0.0.1:%d", e->port + i);
	snprintf(purl, sizeof purl, "http://127.0.0.1:%d", e->port + 10 + i);
	for (int m = 1; m <= e->n; m++)
		snprintf(cluster + strlen(cluster), sizeof cluster - strlen(cluster),
			 "%sn%d=http://127.0.0.1:%d", m > 1 ? "," : "", m, e->port + 10 + m);
	char *argv[] = { "/usr/bin/etcd", "--name", name, "--data-dir", data,
			 "--listen-client-urls", curl_, "--advertise-client-urls", curl_,
			 "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
			 "--initial-cluster", cluster, "--initial-cluster-token", "bench",
			 "--initial-cluster-state", "new", "--logger", "zap", "--log-level", "warn",
			 NULL };
	return bench_spawn(argv, log);
}

/* Node i's Status: 1 it leads, 0 it serves, -1 no answer. */
static int status(struct etcd_target *e, int i)
{
	struct etcd_client *k = dial(e, i);
	char me[32];
	int rc = -1;
	if (k != NULL && post(k, "maintenance/status", "{}", 1000) == 0 &&
	    field(k, "member_id", me, sizeof me) == 0) {
		char lead[32];
		rc = field(k, "leader", lead, sizeof lead) == 0 && strcmp(me, lead) == 0;
	}
	hang_up(k);
	return rc;
}

static int leader(struct bench_target *t)
{
	for (int i = 0; i < t->n; i++)
		if (t->pid[i] > 0 && status(t->priv, i + 1) == 1)
			return i;
	return -1;
}

static void stop(struct bench_target *t)
{
	struct etcd_target *e = t->priv;
	if (e->keeping) {
		pthread_mutex_lock(&e->mu);
		e->quit = true;
		pthread_cond_broadcast(&e->quit_cv);
		pthread_mutex_unlock(&e->mu);
		pthread_join(e->keeper, NULL);
		e->keeping = false;
	}
	for (int i = 0; i < t->n; i++) {
		bench_stop_pid(t->pid[i]);
		t->pid[i] = 0;
	}
	t->n = 0;
	e->n_leases = 0;
}

static int start(struct bench_target *t, int n)
{
	struct etcd_target *e = t->priv;
	bench_rm_rf(e->dir);
	if (bench_mkdir_p(e->dir) != 0)
		return -1;
	e->n = t->n = n;
	for (int i = 0; i < n; i++)
		t->pid[i] = spawn_node(e, i + 1);
	e->quit = false;
	e->keeping = pthread_create(&e->keeper, NULL, keeper_main, e) == 0;
	for (int tries = 0; tries < 120; tries++) {
		struct etcd_client *k = leader(t) >= 0 ? client_open(t) : NULL;
		uint64_t tok;
		const bool ok = k != NULL && lock(k, "bench/ready", 0, &tok) == 0 && unlock(k, "", tok) == 0;
		client_close(k);
		if (ok)
			return 0;
		bench_sleep_ms(500);
	}
	fprintf(stderr, "bench: etcd did not become ready (logs: %s)\n", e->dir);
	stop(t);
	return -1;
}

static int restart(struct bench_target *t, int i)
{
	t->pid[i] = spawn_node(t->priv, i + 1);
	for (int tries = 0; tries < 600; tries++) {
		if (status(t->priv, i + 1) >= 0)
			return 0;
		bench_sleep_ms(100);
	}
	return -1;
}

/* Idle sessions: leases the keep-alive thread renews, no lock taken. */
struct etcd_idle {
	struct etcd_client *k;
	long long *ids;
	int n;
};

static void *idle_open(struct bench_target *t, int n)
{
	struct etcd_idle *h = calloc(1, sizeof *h);
	if (h == NULL || (h->ids = calloc((size_t)n, sizeof *h->ids)) == NULL ||
	    (h->k = dial(t->priv, 1)) == NULL)
		return h;
	while (h->n < n && grant(h->k) == 0)
		h->ids[h->n++] = h->k->lease;
	if (h->n < n)
		bench_note("etcd: only %d of %d idle sessions opened", h->n, n);
	return h;
}

static void idle_close(void *p)
{
	struct etcd_idle *h = p;
	for (int i = 0; h != NULL && h->k != NULL && i < h->n; i++) {
		h->k->lease = h->ids[i];
		revoke(h->k);
	}
	if (h != NULL) {
		hang_up(h->k);
		free(h->ids);
	}
	free(h);
}

struct bench_target *bench_etcd(const char *build, int port)
{
	static const char *bins[] = { "/usr/bin/etcd", NULL };
	struct bench_target *t = calloc(1, sizeof *t);
	struct etcd_target *e = calloc(1, sizeof *e);
	if (t == NULL || e == NULL || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return NULL;
	json_header = curl_slist_append(NULL, "Content-Type: application/json");
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->quit_cv, NULL);
	snprintf(e->dir, sizeof e->dir, "%s/bench/run/etcd", build);
	bench_note("etcd failover: a call a follower forwarded to the killed leader is lost; it "
		   "fails at etcd's 7 s request timeout (Unlock: the client's 5 s), then is retried "
		   "on the next node");
	e->port = port;
	*t = (struct bench_target){ .name = "etcd", .start = start, .stop = stop,
				    .client_open = client_open, .client_close = client_close,
				    .lock = lock, .unlock = unlock,
				    .idle_sessions_open = idle_open, .idle_sessions_close = idle_close,
				    .leader = leader, .restart = restart, .binaries = bins, .priv = e,
				    .handicap = "etcd's JSON gateway over HTTP/1.1 (libcurl), not gRPC over "
						"HTTP/2: costs etcd CPU and latency; plain TCP (edgelock: TLS); "
						"keep-alive: a request per lease every TTL/3" };
	return t;
}
