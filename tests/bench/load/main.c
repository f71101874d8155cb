/*
 * main.c - bench_load: `make bench`'s load generator (README.md here).
 *
 *   bench_load BUILD JSON      edgelock: 3 nodes, then 1, built in BUILD
 *   bench_compare BUILD JSON redis    the same workloads on a peer (built
 *                              with -DBENCH_PEERS and the peer_*.c files)
 *
 * Knobs (environment): BENCH_SECONDS per timed phase (5), BENCH_FAILOVERS
 * (10), BENCH_IDLE idle sessions (1000), BENCH_LOCKS "100,10000,30000",
 * BENCH_ONLY "uncontended,contended,failover,scale,footprint,single",
 * BENCH_PORT base port (27300: peers +1..3, clients +101..103; Redis at
 * +200, ZooKeeper +300.., etcd +400..: clients +401..403), EDGELOCKD
 * another edgelockd binary (default BUILD/bin/edgelockd).
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static int bad_knobs;

/* A knob of digits from min to max, or dflt when unset; anything else is
 * said and stops the run (an outside tester's BENCH_SECONDS=-3 ran for
 * ever, =abc quietly ran 1 s phases). */
static unsigned env_u(const char *name, unsigned dflt, unsigned min, unsigned max)
{
	const char *v = getenv(name);
	if (v == NULL || *v == '\0')
		return dflt;
	char *end = NULL;
	const unsigned long n = strspn(v, "0123456789") == strlen(v) ? strtoul(v, &end, 10) : 0;
	if (end == NULL || *end != '\0' || n < min || n > max) {
		fprintf(stderr, "bench: %s=%s: a whole number from %u to %u, please\n", name, v, min,
			max);
		bad_knobs++;
		return dflt;
	}
	return (unsigned)n;
}

/* BENCH_ONLY's words, each a known workload (a typo measured nothing). */
static int only_ok(const char *only)
{
	static const char *const known[] = { "uncontended", "contended", "failover", "scale",
					     "footprint", "single" };
	for (const char *p = only; p != NULL && *p != '\0';) {
		const size_t n = strcspn(p, ",");
		bool found = false;
		for (size_t k = 0; k < sizeof known / sizeof known[0] && !found; k++)
			found = strlen(known[k]) == n && strncmp(p, known[k], n) == 0;
		if (!found) {
			fprintf(stderr, "bench: BENCH_ONLY: '%.*s' is no workload (uncontended, "
				"contended, failover, scale, footprint, single)\n", (int)n, p);
			return -1;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: bench_load BUILD_DIR JSON_FILE [edgelock|redis|zookeeper|etcd]\n");
		return 2;
	}
	const char *which = argc == 4 ? argv[3] : "edgelock";
	signal(SIGPIPE, SIG_IGN);
	struct bench_opts o = { .seconds = env_u("BENCH_SECONDS", 5, 1, 3600),
				.failovers = env_u("BENCH_FAILOVERS", 10, 0, 1000),
				.idle = env_u("BENCH_IDLE", 1000, 0, 100000),
				.scale = { 100, 10000, 30000 },
				.only = getenv("BENCH_ONLY") };
	const char *locks = getenv("BENCH_LOCKS");
	if (locks != NULL && sscanf(locks, "%u,%u,%u", &o.scale[0], &o.scale[1], &o.scale[2]) != 3) {
		fprintf(stderr, "bench: BENCH_LOCKS is three counts, e.g. 100,10000,30000\n");
		return 2;
	}
	const int port = (int)env_u("BENCH_PORT", 27300, 1024, 65535 - 500);
	if (bad_knobs > 0 || only_ok(o.only) != 0)
		return 2;
	struct bench_target *t = NULL;
	if (strcmp(which, "edgelock") == 0)
		t = bench_edgelock(argv[1], port);
#ifdef BENCH_PEERS
	else if (strcmp(which, "redis") == 0)
		t = bench_redis(argv[1], port + 200);
	else if (strcmp(which, "zookeeper") == 0)
		t = bench_zookeeper(argv[1], port + 300);
	else if (strcmp(which, "etcd") == 0)
		t = bench_etcd(argv[1], port + 400);
#endif
	if (t == NULL) {
		fprintf(stderr, "bench: no target %s in this build\n", which);
		return 2;
	}
	if (t->handicap != NULL)
		bench_note("%s driven as: %s", t->name, t->handicap);
	const int rc = bench_run_all(t, &o);
	if (rc != 0)
		bench_note("the run stopped early (see the messages above)");
	bench_note("%s; %u s per timed phase; figures are noisy on a shared machine",
		   t->one_node ? "one node on loopback, fsync per acknowledged write"
			       : "3 nodes (single-16: 1 node) on loopback, fsync per acknowledged write",
		   o.seconds);
	return bench_report(t->name, argv[2]) == 0 && rc == 0 ? 0 : 1;
}
