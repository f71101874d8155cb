/*
 * workloads.c - what `make bench` measures, defined apart from the system
 * under test (struct bench_target): uncontended cycles (1 and 16 clients),
 * contended handoffs (8 clients, one lock), failover (leader SIGKILL under
 * load), scale (locks held, idle sessions), footprint, single node.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define WORKERS_MAX 64
#define WAIT_MS 10000u

/* One timed phase: n workers, each its own client, cycling until stop. */
struct phase {
	struct bench_target *t;
	int n;
	bool contended;
	atomic_bool measuring, stop;
	atomic_int ready;
	_Atomic uint64_t release_ns; /* contended: when the holder began its release */
	_Atomic uint64_t kill_ns;    /* failover: when the leader was killed (0: none) */
	_Atomic uint64_t grant_after_kill_ns; /* the first grant asked for after it */
	atomic_ulong cycles, errors;
	struct bench_samples lat[WORKERS_MAX];
	struct bench_samples handoff[WORKERS_MAX];
};

struct worker {
	struct phase *p;
	int id;
};

static void cycle_uncontended(struct phase *p, void *c, int id, const char *name)
{
	uint64_t tok;
	const uint64_t t0 = bench_now_ns();
	const uint64_t kill = atomic_load(&p->kill_ns);
	int rc = p->t->lock(c, name, WAIT_MS, &tok);
	const uint64_t granted = bench_now_ns();
	if (rc == 0 && kill != 0 && t0 > kill) {
		uint64_t none = 0;
		atomic_compare_exchange_strong(&p->grant_after_kill_ns, &none, granted);
	}
	if (rc == 0)
		rc = p->t->unlock(c, name, tok);
	if (!atomic_load(&p->measuring))
		return;
	if (rc != 0) {
		atomic_fetch_add(&p->errors, 1);
		return;
	}
	bench_samples_add(&p->lat[id], bench_now_ns() - t0);
	atomic_fetch_add(&p->cycles, 1);
}

/* Handoff latency: from the previous holder starting its release to this
 * grant (one clock: every client is a thread of this process). */
static void cycle_contended(struct phase *p, void *c, int id, const char *name)
{
	uint64_t tok;
	const int rc = p->t->lock(c, name, WAIT_MS, &tok);
	const uint64_t granted = bench_now_ns();
	const uint64_t released = atomic_exchange(&p->release_ns, 0);
	const bool m = atomic_load(&p->measuring);
	if (rc != 0) {
		if (m)
			atomic_fetch_add(&p->errors, 1);
		return;
	}
	if (m && released != 0) {
		bench_samples_add(&p->handoff[id], granted - released);
		atomic_fetch_add(&p->cycles, 1);
	}
	atomic_store(&p->release_ns, bench_now_ns());
	if (p->t->unlock(c, name, tok) != 0 && m)
		atomic_fetch_add(&p->errors, 1);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct phase *p = w->p;
	/* One client opens at a time: a burst of TLS handshakes and identity
	 * proofs can outlast the library's 2 s dial bound on a slow daemon
	 * (one under valgrind). */
	static pthread_mutex_t opening = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&opening);
	void *c = p->t->client_open(p->t);
	pthread_mutex_unlock(&opening);
	char name[64];
	if (p->contended)
		snprintf(name, sizeof name, "bench/hot");
	else
		snprintf(name, sizeof name, "bench/w%d", w->id);
	atomic_fetch_add(&p->ready, c != NULL ? 1 : 1000);
	while (c != NULL && !atomic_load(&p->stop)) {
		if (p->contended)
			cycle_contended(p, c, w->id, name);
		else
			cycle_uncontended(p, c, w->id, name);
	}
	if (c != NULL)
		p->t->client_close(c);
	return NULL;
}

static uint64_t cpu_all(const struct bench_target *t)
{
	uint64_t ns = 0;
	for (int i = 0; i < t->n; i++)
		if (t->pid[i] > 0)
			ns += bench_cpu_ns(t->pid[i]);
	return ns;
}

static void rss_under_load(const struct bench_target *t, const char *wl)
{
	uint64_t max = 0;
	for (int i = 0; i < t->n; i++) {
		const uint64_t k = t->pid[i] > 0 ? bench_rss_kib(t->pid[i], false) : 0;
		max = k > max ? k : max;
	}
	bench_put(wl, "RSS under load, max node", (double)max / 1024.0, "MiB");
}

/* Start the workers, wait until all have a client, then measure. */
static int phase_begin(struct phase *p, pthread_t *th, struct worker *w)
{
	for (int i = 0; i < p->n; i++) {
		w[i] = (struct worker){ .p = p, .id = i };
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	while (atomic_load(&p->ready) < p->n)
		bench_sleep_ms(10);
	if (atomic_load(&p->ready) != p->n) {
		atomic_store(&p->stop, true);
		fprintf(stderr, "bench: %s: a client did not open\n", p->t->name);
		return -1;
	}
	bench_sleep_ms(300); /* warm up: connections, leader hints */
	return 0;
}

static void phase_end(struct phase *p, pthread_t *th)
{
	atomic_store(&p->stop, true);
	for (int i = 0; i < p->n; i++)
		pthread_join(th[i], NULL);
}

static void put_latency(const char *wl, const char *what, struct bench_samples *s, int n)
{
	struct bench_samples all = { 0 };
	for (int i = 0; i < n; i++) {
		bench_samples_merge(&all, &s[i]);
		bench_samples_free(&s[i]);
	}
	char m[48];
	snprintf(m, sizeof m, "%s p50", what);
	bench_put(wl, m, bench_pct_ms(&all, 0.50), "ms");
	snprintf(m, sizeof m, "%s p99", what);
	bench_put(wl, m, bench_pct_ms(&all, 0.99), "ms");
	snprintf(m, sizeof m, "%s p99.9", what);
	bench_put(wl, m, bench_pct_ms(&all, 0.999), "ms");
	bench_samples_free(&all);
}

/* A timed cycle phase: throughput, latency and server CPU per cycle. */
static int timed(struct bench_target *t, const char *wl, int n, bool contended,
		 unsigned seconds, bool rss)
{
	struct phase *p = calloc(1, sizeof *p);
	pthread_t th[WORKERS_MAX];
	struct worker w[WORKERS_MAX];
	if (p == NULL)
		return -1;
	p->t = t, p->n = n, p->contended = contended;
	int rc = phase_begin(p, th, w);
	if (rc == 0) {
		const uint64_t cpu0 = cpu_all(t), t0 = bench_now_ns();
		atomic_store(&p->measuring, true);
		bench_sleep_ms(seconds * 1000u);
		if (rss)
			rss_under_load(t, wl);
		atomic_store(&p->measuring, false);
		const double secs = (double)(bench_now_ns() - t0) / 1e9;
		const double cpu_us = (double)(cpu_all(t) - cpu0) / 1e3;
		const double cycles = (double)atomic_load(&p->cycles);
		bench_put(wl, contended ? "handoffs/s" : "cycles/s", cycles / secs, "1/s");
		if (contended)
			put_latency(wl, "handoff", p->handoff, n);
		else
			put_latency(wl, "cycle", p->lat, n);
		bench_put(wl, "server CPU per cycle", cycles > 0 ? cpu_us / cycles : -1, "us");
		bench_put(wl, "errors", (double)atomic_load(&p->errors), "");
	}
	phase_end(p, th);
	for (int i = 0; i < n; i++) {
		bench_samples_free(&p->lat[i]);
		bench_samples_free(&p->handoff[i]);
	}
	free(p);
	return rc;
}

/* ---- failover -------------------------------------------------------------- */

static int failover(struct bench_target *t, unsigned rounds)
{
	struct phase *p = calloc(1, sizeof *p);
	pthread_t th[WORKERS_MAX];
	struct worker w[WORKERS_MAX];
	struct bench_samples took = { 0 };
	unsigned lost = 0;
	if (p == NULL)
		return -1;
	p->t = t, p->n = 8;
	int rc = phase_begin(p, th, w);
	for (unsigned r = 0; rc == 0 && r < rounds; r++) {
		int l = -1;
		for (int tries = 0; tries < 200 && (l = t->leader(t)) < 0; tries++)
			bench_sleep_ms(50);
		if (l < 0) {
			rc = -1;
			break;
		}
		atomic_store(&p->grant_after_kill_ns, 0);
		const pid_t victim = t->pid[l];
		t->pid[l] = 0;
		const uint64_t k = bench_now_ns();
		atomic_store(&p->kill_ns, k);
		bench_kill_pid(victim);
		uint64_t g = 0;
		for (int waited = 0; waited < 30000 && (g = atomic_load(&p->grant_after_kill_ns)) == 0;
		     waited += 5)
			bench_sleep_ms(5);
		atomic_store(&p->kill_ns, 0);
		if (g != 0)
			bench_samples_add(&took, g - k);
		else
			lost++;
		fprintf(stderr, "bench: failover %u: node %d killed, next grant after %.0f ms\n",
			r + 1, l + 1, g ? (double)(g - k) / 1e6 : -1.0);
		if (t->restart(t, l) != 0)
			rc = -1;
		bench_sleep_ms(200);
	}
	phase_end(p, th);
	if (took.n > 0) {
		bench_put("failover", "kill to next grant p50", bench_pct_ms(&took, 0.5), "ms");
		bench_put("failover", "kill to next grant max", bench_max_ms(&took), "ms");
	}
	bench_put("failover", "rounds without a grant in 30 s", lost, "");
	bench_samples_free(&took);
	free(p);
	return rc;
}

/* ---- scale ------------------------------------------------------------------- */

struct holder {
	struct bench_target *t;
	void *c;
	unsigned from, to; /* lock numbers to take */
	unsigned failed;
};

static void *holder_main(void *arg)
{
	struct holder *h = arg;
	for (unsigned i = h->from; i < h->to; i++) {
		char name[64];
		uint64_t tok;
		snprintf(name, sizeof name, "bench/held/%u", i);
		if (h->t->lock(h->c, name, 0, &tok) != 0)
			h->failed++;
	}
	return NULL;
}

#define HOLDERS 16

/* Take locks [have, want) with HOLDERS clients in parallel. */
static unsigned hold_more(struct bench_target *t, void **hc, unsigned have, unsigned want)
{
	pthread_t th[HOLDERS];
	struct holder h[HOLDERS];
	const unsigned per = (want - have + HOLDERS - 1) / HOLDERS;
	unsigned failed = 0;
	for (unsigned k = 0; k < HOLDERS; k++) {
		const unsigned from = have + k * per, to = from + per < want ? from + per : want;
		h[k] = (struct holder){ .t = t, .c = hc[k], .from = from < want ? from : want, .to = to };
		pthread_create(&th[k], NULL, holder_main, &h[k]);
	}
	for (unsigned k = 0; k < HOLDERS; k++) {
		pthread_join(th[k], NULL);
		failed += h[k].failed;
	}
	return failed;
}

static int scale(struct bench_target *t, const struct bench_opts *o)
{
	void *hc[HOLDERS] = { 0 };
	int rc = 0;
	const uint64_t t0 = bench_now_ns();
	void *idle = o->idle > 0 && t->idle_sessions_open != NULL
			     ? t->idle_sessions_open(t, (int)o->idle) : NULL;
	if (t->idle_sessions_open == NULL)
		bench_note("%s: no sessions: the scale phases run without idle sessions", t->name);
	fprintf(stderr, "bench: scale: %u idle sessions opened in %.1f s\n", o->idle,
		(double)(bench_now_ns() - t0) / 1e9);
	for (unsigned k = 0; k < HOLDERS && rc == 0; k++)
		if ((hc[k] = t->client_open(t)) == NULL)
			rc = -1;
	unsigned have = 0, failed = 0;
	for (unsigned s = 0; s < 3 && rc == 0; s++) {
		const uint64_t h0 = bench_now_ns();
		failed += hold_more(t, hc, have, o->scale[s]);
		fprintf(stderr, "bench: scale: %u locks held (%.1f s to take)\n", o->scale[s],
			(double)(bench_now_ns() - h0) / 1e9);
		have = o->scale[s];
		char wl[32];
		snprintf(wl, sizeof wl, "scale-%u", have);
		rc = timed(t, wl, 16, false, o->seconds, s == 2);
	}
	if (failed > 0)
		bench_note("%s: %u of the held locks were not granted", t->name, failed);
	for (unsigned k = 0; k < HOLDERS; k++)
		t->client_close(hc[k]);
	if (idle != NULL)
		t->idle_sessions_close(idle);
	return rc;
}

/* ---- footprint and the whole run ------------------------------------------ */

static void footprint(struct bench_target *t, bool peak)
{
	uint64_t max = 0;
	for (int i = 0; i < t->n; i++) {
		const uint64_t k = t->pid[i] > 0 ? bench_rss_kib(t->pid[i], peak) : 0;
		max = k > max ? k : max;
	}
	bench_put("footprint", peak ? "RSS peak of the run, max node" : "RSS idle, max node",
		  (double)max / 1024.0, "MiB");
}

static void binaries(const struct bench_target *t)
{
	for (const char *const *b = t->binaries; b != NULL && *b != NULL; b++) {
		const char *base = strrchr(*b, '/');
		char m[48];
		snprintf(m, sizeof m, "size %s", base ? base + 1 : *b);
		bench_put("footprint", m, (double)bench_file_size(*b) / 1024.0, "KiB");
	}
}

static bool want(const struct bench_opts *o, const char *wl)
{
	if (o->only == NULL || o->only[0] == '\0')
		return true;
	const size_t n = strlen(wl);
	for (const char *p = o->only; (p = strstr(p, wl)) != NULL; p += n)
		if ((p == o->only || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
			return true;
	return false;
}

int bench_run_all(struct bench_target *t, const struct bench_opts *o)
{
	const unsigned s = o->seconds;
	const bool three = want(o, "footprint") || want(o, "uncontended") || want(o, "contended") ||
			   want(o, "failover") || want(o, "scale");
	int rc = three ? t->start(t, 3) : 0;
	if (rc == 0 && want(o, "footprint")) {
		bench_sleep_ms(1000);
		footprint(t, false);
	}
	if (rc == 0 && want(o, "uncontended"))
		rc = timed(t, "uncontended-1", 1, false, s, false);
	if (rc == 0 && want(o, "uncontended"))
		rc = timed(t, "uncontended-16", 16, false, s, true);
	if (rc == 0 && want(o, "contended"))
		rc = timed(t, "contended-8", 8, true, s, false);
	if (rc == 0 && want(o, "failover") && o->failovers > 0 && !t->one_node)
		rc = failover(t, o->failovers);
	if (rc == 0 && want(o, "scale"))
		rc = scale(t, o);
	if (rc == 0 && want(o, "footprint"))
		footprint(t, true);
	if (three)
		t->stop(t);
	if (rc == 0 && want(o, "single") && !t->one_node) {
		rc = t->start(t, 1);
		if (rc == 0)
			rc = timed(t, "single-16", 16, false, s, true);
		t->stop(t);
	}
	if (want(o, "footprint"))
		binaries(t);
	return rc;
}
