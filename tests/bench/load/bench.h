/*
 * bench.h - the load generator of `make bench` (tests/bench/load/): the
 * workloads (workloads.c) drive any lock service through one interface,
 * struct bench_target, so the same workload code measures edgelock and, in
 * `make bench-compare`, its peers. Figures only, never pass/fail.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus /* peer_etcd.cc, gRPC's C++ client */
extern "C" {
#endif

#define BENCH_NODES_MAX 3

/* One lock service under test: a cluster of daemons this program started
 * (and stops) by PID, and per-thread clients. Calls return 0 or negative. */
struct bench_target {
	const char *name;     /* "edgelock", ... */
	const char *handicap; /* how it is driven, when that handicaps it; NULL: native */
	/* Start n fresh nodes (1 or 3) and wait until the service grants a lock. */
	int (*start)(struct bench_target *t, int n);
	void (*stop)(struct bench_target *t);
	/* A client (its own connection) holding one session. */
	void *(*client_open)(struct bench_target *t);
	void (*client_close)(void *c);
	int (*lock)(void *c, const char *name, uint32_t wait_ms, uint64_t *token);
	int (*unlock)(void *c, const char *name, uint64_t token);
	/* Idle sessions kept alive by the client library (scale workload);
	 * NULL: the service has no sessions. */
	void *(*idle_sessions_open)(struct bench_target *t, int n);
	void (*idle_sessions_close)(void *h);
	/* The node that leads now (index 0..n-1), -1: none (failover); NULL
	 * with one_node. */
	int (*leader)(struct bench_target *t);
	/* Restart node i after it was killed; wait until it serves again. */
	int (*restart)(struct bench_target *t, int i);
	/* The binaries whose sizes the footprint lists (NULL-terminated). */
	const char *const *binaries;
	bool one_node;              /* a single server only: no failover, no single-node rerun */
	int n;                      /* nodes running */
	pid_t pid[BENCH_NODES_MAX]; /* 0: not running */
	void *priv;
};

struct bench_target *bench_edgelock(const char *build, int port);
struct bench_target *bench_redis(const char *build, int port);
struct bench_target *bench_zookeeper(const char *build, int port);
struct bench_target *bench_etcd(const char *build, int port);

/* ---- procs.c: processes, /proc -------------------------------------------- */
uint64_t bench_now_ns(void);
void bench_sleep_ms(unsigned ms);
/* Fork and exec argv with stdout+stderr appended to log; the PID or -1. */
pid_t bench_spawn(char *const argv[], const char *log);
/* SIGTERM, wait up to 10 s, then SIGKILL; reaps. */
void bench_stop_pid(pid_t pid);
void bench_kill_pid(pid_t pid);   /* SIGKILL and reap */
uint64_t bench_cpu_ns(pid_t pid); /* on-CPU time so far (schedstat) */
uint64_t bench_rss_kib(pid_t pid, bool peak);
long bench_file_size(const char *path);
int bench_mkdir_p(const char *path);
int bench_rm_rf(const char *path);

/* ---- stats.c: latency samples --------------------------------------------- */
struct bench_samples {
	uint32_t *us; /* microseconds */
	size_t n, cap;
};
void bench_samples_add(struct bench_samples *s, uint64_t ns);
void bench_samples_merge(struct bench_samples *into, struct bench_samples *from);
/* p in [0,1]: the value in ms (sorts s). */
double bench_pct_ms(struct bench_samples *s, double p);
double bench_max_ms(struct bench_samples *s);
void bench_samples_free(struct bench_samples *s);

/* ---- report.c: the table and the JSON file -------------------------------- */
void bench_put(const char *workload, const char *metric, double value, const char *unit);
void bench_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int bench_report(const char *target, const char *json_path);

/* ---- workloads.c ---------------------------------------------------------- */
struct bench_opts {
	unsigned seconds;    /* each timed phase */
	unsigned failovers;  /* leader kills */
	unsigned idle;       /* idle sessions in the scale workload */
	unsigned scale[3];   /* locks held in the scale steps */
	const char *only;    /* comma-separated workload names; NULL: all */
};
int bench_run_all(struct bench_target *t, const struct bench_opts *o);

#ifdef __cplusplus
}
#endif

#endif /* BENCH_H */
