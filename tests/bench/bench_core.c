/*
 * bench_core.c - the CPU cost of the core, in process: one single-voter
 * el_node (no network, no persistence: each ready batch is advanced at once)
 * built with the capacity profile of the compiler flags (mk/bench.mk builds
 * it three times: firmware, default, gateway). With the node's clock held
 * still (no lease or wait ever expires) it measures, with other locks held
 * and then with the lock and session tables nearly full:
 *
 *   - one ACQUIRE + RELEASE of a free lock by one session, each a full
 *     submit -> ready -> advance round until its reply (median of 5 runs,
 *     each BENCH_RUN_S of CPU or BENCH_RUN_CYCLES cycles, whichever first);
 *   - one el_node_deadline() call (runs bounded the same way);
 *   - one el_lock_snapshot() of the node's table (and its size).
 *
 * Figures only: it never fails on speed. Filling a big table stops after
 * FILL_SECONDS of CPU (argv[2], default 100); the row says the level reached.
 * Progress goes to stderr, the table rows to stdout.
 *
 * usage: bench_core PROFILE_NAME [FILL_SECONDS] [--header]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "el_error.h"
#include "el_node.h"

#define RUNS 5
#define BENCH_RUN_S 0.2
#define BENCH_RUN_CYCLES 2000
#define DEADLINE_CALLS 200000
#define DEADLINE_CHUNK 1024
#define CYCLE_CHUNK 16 /* cycles between clock reads (a read costs ~0.5 us) */
#define OTHERS_A 100      /* other locks held in case (a), if the profile allows */
#define HOLDERS_A 8       /* sessions holding them */
#define TTL_MS 3600000u   /* leases never end: the clock is held still */
#define CYCLE_LOCK "cycle"

/* Commands in flight at once: below the pending table and the leader's
 * bound on uncommitted entries. */
#define BENCH_MIN(a, b) ((a) < (b) ? (a) : (b))
#define BATCH_MAX (BENCH_MIN(EL_PENDING_MAX, EL_UNCOMMITTED_MAX) > 1 \
		   ? BENCH_MIN(EL_PENDING_MAX, EL_UNCOMMITTED_MAX) - 1 : 1)

struct bench {
	struct el_node *n;
	uint64_t now;
	uint64_t next_req;
	/* the batch in flight: replies to req_ids [base, base + count) */
	uint64_t base;
	uint32_t count, got;
	struct el_node_reply replies[BATCH_MAX];
	/* sessions: [0] runs the cycles, the others hold locks */
	uint64_t *sessions;
	uint64_t *seqs;
	uint32_t n_sessions;
	uint32_t others;   /* other locks held: L0 .. L<others-1> */
	double t_start;    /* CPU time at start, for progress lines */
	double fill_s;     /* CPU seconds a fill may take */
	double fill_end;   /* CPU time the fill must stop at */
	const char *profile;
};

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static _Noreturn void die(const char *what, int err)
{
	fprintf(stderr, "bench_core: %s: %s (%d)\n", what, el_strerror(err), err);
	exit(1);
}

static void collect(struct bench *b, const struct el_node_ready *rd)
{
	for (uint32_t i = 0; i < rd->n_replies; i++) {
		const uint64_t id = rd->replies[i].req_id;
		if (id >= b->base && id - b->base < b->count) {
			b->replies[id - b->base] = rd->replies[i];
			b->got++;
		}
	}
}

/* Run ready/advance rounds until the node has nothing ready. */
static void drain(struct bench *b)
{
	while (el_node_has_ready(b->n)) {
		struct el_node_ready rd;
		el_node_ready(b->n, &rd);
		collect(b, &rd);
		const int err = el_node_advance(b->n, &rd, b->now);
		if (err != EL_OK)
			die("el_node_advance", err);
	}
}

/* Submit cmds[0..count) as one batch and drive them until every reply is in;
 * replies land in b->replies. */
static void run_batch(struct bench *b, const struct el_lock_cmd *cmds, uint32_t count)
{
	b->base = b->next_req;
	b->count = count;
	b->got = 0;
	b->next_req += count;
	for (uint32_t i = 0; i < count; i++) {
		el_id_t hint = 0;
		const int err = el_node_submit(b->n, b->base + i, &cmds[i], b->now, &hint);
		if (err != EL_OK)
			die("el_node_submit", err);
	}
	for (int round = 0; round < 1000 && b->got < count; round++)
		drain(b);
	if (b->got < count)
		die("replies missing", EL_EFULL);
}

static struct el_lock_cmd open_cmd(void)
{
	struct el_lock_cmd c = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = TTL_MS, .client_len = 5};
	memcpy(c.client, "bench", 5);
	return c;
}

static struct el_lock_cmd lock_cmd(struct bench *b, uint8_t type, uint32_t s, const char *name)
{
	struct el_lock_cmd c = {.type = type, .session = b->sessions[s], .seq = ++b->seqs[s]};
	c.name_len = (uint8_t)strlen(name);
	memcpy(c.name, name, c.name_len);
	return c;
}

/* Open sessions until there are `target` (or the fill time is up). */
static void open_sessions(struct bench *b, uint32_t target)
{
	struct el_lock_cmd cmds[BATCH_MAX];
	while (b->n_sessions < target && cpu_s() < b->fill_end) {
		uint32_t k = 0;
		while (k < BATCH_MAX && b->n_sessions + k < target)
			cmds[k++] = open_cmd();
		run_batch(b, cmds, k);
		for (uint32_t i = 0; i < k; i++) {
			if (b->replies[i].err != EL_OK)
				die("OPEN_SESSION", b->replies[i].err);
			b->sessions[b->n_sessions] = b->replies[i].session;
			b->seqs[b->n_sessions++] = 0;
		}
		if (b->n_sessions % 2048 < k)
			fprintf(stderr, "  %s: %u sessions open (%.1f s)\n", b->profile,
				(unsigned)b->n_sessions, cpu_s() - b->t_start);
	}
}

static void lock_name(char *buf, size_t cap, uint32_t i)
{
	snprintf(buf, cap, "L%u", (unsigned)i);
}

/* Acquire other locks, spread over sessions 1..holders, until `target` are
 * held (or the fill time is up). */
static void hold_locks(struct bench *b, uint32_t target, uint32_t holders)
{
	struct el_lock_cmd cmds[BATCH_MAX];
	char name[16];
	while (b->others < target && cpu_s() < b->fill_end) {
		uint32_t k = 0;
		for (; k < BATCH_MAX && b->others + k < target; k++) {
			lock_name(name, sizeof(name), b->others + k);
			cmds[k] = lock_cmd(b, EL_CMD_ACQUIRE, 1 + (b->others + k) % holders, name);
		}
		run_batch(b, cmds, k);
		for (uint32_t i = 0; i < k; i++)
			if (b->replies[i].err != EL_OK)
				die("ACQUIRE (fill)", b->replies[i].err);
		b->others += k;
		if (b->others % 4096 < k)
			fprintf(stderr, "  %s: %u locks held (%.1f s)\n", b->profile,
				(unsigned)b->others, cpu_s() - b->t_start);
	}
}

/* One ACQUIRE then RELEASE of the free cycle lock by session 0. */
static void cycle(struct bench *b)
{
	struct el_lock_cmd c = lock_cmd(b, EL_CMD_ACQUIRE, 0, CYCLE_LOCK);
	run_batch(b, &c, 1);
	if (b->replies[0].err != EL_OK)
		die("ACQUIRE", b->replies[0].err);
	c = lock_cmd(b, EL_CMD_RELEASE, 0, CYCLE_LOCK);
	c.token = b->replies[0].token;
	run_batch(b, &c, 1);
	if (b->replies[0].err != EL_OK)
		die("RELEASE", b->replies[0].err);
}

static int cmp_double(const void *a, const void *b)
{
	const double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v)
{
	qsort(v, RUNS, sizeof(v[0]), cmp_double);
	return v[RUNS / 2];
}

/* Microseconds of CPU per acquire+release cycle, median of RUNS runs (the
 * clock is read once per CYCLE_CHUNK cycles). */
static double bench_cycle(struct bench *b)
{
	double per[RUNS];
	for (int r = 0; r < RUNS; r++) {
		const double t0 = cpu_s();
		double t = t0;
		uint32_t k = 0;
		while (k < BENCH_RUN_CYCLES && t - t0 < BENCH_RUN_S) {
			for (uint32_t i = 0; i < CYCLE_CHUNK; i++)
				cycle(b);
			k += CYCLE_CHUNK;
			t = cpu_s();
		}
		per[r] = (t - t0) * 1e6 / k;
	}
	return median(per);
}

/* Nanoseconds per el_node_deadline() call, median of RUNS runs, each
 * BENCH_RUN_S of CPU or DEADLINE_CALLS calls, whichever first (the clock is
 * read once per DEADLINE_CHUNK calls). */
static double bench_deadline(const struct bench *b)
{
	double per[RUNS];
	volatile uint64_t sink = 0;
	for (int r = 0; r < RUNS; r++) {
		const double t0 = cpu_s();
		double t = t0;
		uint64_t acc = 0;
		uint32_t k = 0;
		while (k < DEADLINE_CALLS && t - t0 < BENCH_RUN_S) {
			for (uint32_t i = 0; i < DEADLINE_CHUNK; i++)
				acc += el_node_deadline(b->n);
			k += DEADLINE_CHUNK;
			t = cpu_s();
		}
		per[r] = (t - t0) * 1e9 / k;
		sink += acc;
	}
	(void)sink;
	return median(per);
}

/* Milliseconds per el_lock_snapshot() of the node's table, median of RUNS
 * runs; *size gets its length. */
static double bench_snapshot(const struct bench *b, uint8_t *buf, int *size)
{
	double per[RUNS];
	for (int r = 0; r < RUNS; r++) {
		const double t0 = cpu_s();
		*size = el_lock_snapshot(el_node_table(b->n), buf, EL_SNAPSHOT_MAX);
		per[r] = (cpu_s() - t0) * 1e3;
		if (*size < 0)
			die("el_lock_snapshot", *size);
	}
	return median(per);
}

/* A single-voter node, leader, its no-op committed; the clock then stays. */
static void make_leader(struct bench *b)
{
	const struct el_node_config cfg = {
		.raft = {.id = 1, .election_ms_min = 100, .heartbeat_ms = 20, .prevote = true,
			 .check_quorum = true}};
	struct el_conf conf = {.n = 1};
	conf.m[0].id = 1;
	conf.m[0].role = EL_MEMBER_VOTER;
	int err = el_node_init(b->n, &cfg, 42);
	if (err == EL_OK)
		err = el_raft_bootstrap(el_node_raft(b->n), &conf);
	if (err != EL_OK)
		die("init/bootstrap", err);
	b->now = 1000;
	el_node_start(b->n, b->now);
	for (int i = 0; i < 100 && el_raft_state(&b->n->raft) != EL_LEADER; i++) {
		if (el_node_deadline(b->n) > b->now)
			b->now = el_node_deadline(b->n);
		el_node_tick(b->n, b->now);
		drain(b);
	}
	if (el_raft_state(&b->n->raft) != EL_LEADER)
		die("no leader", EL_ENOTLEADER);
	drain(b);
}

static void print_header(void)
{
	printf("edgelock core benchmark: one single-voter el_node in process, no persistence,\n"
	       "clock held still; CPU time (CLOCK_PROCESS_CPUTIME_ID), median of %d runs.\n"
	       "acq+rel: ACQUIRE then RELEASE of a free lock, each submit->ready->advance until "
	       "its reply.\n"
	       "deadline: one el_node_deadline() call. snapshot: one el_lock_snapshot() of the "
	       "table.\n"
	       "compact: that snapshot spread over the entries between two compactions at the\n"
	       "most (EL_COMPACT_THRESHOLD; a cycle is 2 entries): the most compaction adds to a\n"
	       "cycle, whether or not a measured run happened to compact.\n\n",
	       RUNS);
	printf("%-8s %6s %5s %6s %10s  %-48s %10s %9s %9s %9s %9s\n", "profile", "locks", "sess",
	       "claims", "el_node", "table state", "acq+rel", "deadline", "snapshot", "snapshot",
	       "compact");
	printf("%-8s %6s %5s %6s %10s  %-48s %10s %9s %9s %9s %9s\n", "", "max", "max", "max",
	       "bytes", "", "us", "ns", "ms", "bytes", "us/cycle");
}

static void print_row(const struct bench *b, const char *state, double cyc, double dl,
		      double snap_ms, int snap_size)
{
	const double compact_us = snap_ms * 1000.0 * 2.0 / (double)EL_COMPACT_THRESHOLD;
	printf("%-8s %6u %5u %6u %10zu  %-48s %10.2f %9.1f %9.3f %9d %9.2f\n", b->profile,
	       (unsigned)EL_LOCKS_MAX, (unsigned)EL_SESSIONS_MAX, (unsigned)EL_CLAIMS_MAX,
	       sizeof(struct el_node), state, cyc, dl, snap_ms, snap_size, compact_us);
	fflush(stdout);
}

/* Measure at the current fill level and print one row. */
static void measure_row(struct bench *b, const char *state, uint8_t *buf)
{
	fprintf(stderr, "  %s: measuring %s (%.1f s)\n", b->profile, state, cpu_s() - b->t_start);
	const double cyc = bench_cycle(b);
	const double dl = bench_deadline(b);
	int size = 0;
	const double snap = bench_snapshot(b, buf, &size);
	print_row(b, state, cyc, dl, snap, size);
}

static uint32_t umin(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* Case (a): OTHERS_A other locks held (as many as fit beside the cycle lock). */
static void case_a(struct bench *b, uint8_t *buf)
{
	const uint32_t holders = umin(HOLDERS_A, EL_SESSIONS_MAX - 1);
	const uint32_t target = umin(OTHERS_A, umin(EL_LOCKS_MAX, EL_CLAIMS_MAX) - 1);
	b->fill_end = cpu_s() + b->fill_s;
	open_sessions(b, 1 + holders);
	hold_locks(b, target, holders);
	char state[64];
	snprintf(state, sizeof(state), "(a) %u other locks held%s", (unsigned)b->others,
		 target < OTHERS_A ? " (all that fit)" : "");
	measure_row(b, state, buf);
}

/* Case (b): lock and session tables full but a few slots (1/256 of each,
 * at least one; the cycle lock takes one of the free lock slots). */
static void case_b(struct bench *b, uint8_t *buf)
{
	const uint32_t spare_s = EL_SESSIONS_MAX / 256 > 1 ? EL_SESSIONS_MAX / 256 : 1;
	const uint32_t spare_l = EL_LOCKS_MAX / 256 > 1 ? EL_LOCKS_MAX / 256 : 1;
	const uint32_t target = umin(EL_LOCKS_MAX, EL_CLAIMS_MAX) - spare_l;
	b->fill_end = cpu_s() + b->fill_s;
	open_sessions(b, EL_SESSIONS_MAX - spare_s);
	hold_locks(b, target, b->n_sessions - 1);
	struct el_lock_usage u;
	el_lock_usage(el_node_table(b->n), &u);
	char state[64];
	snprintf(state, sizeof(state), "(b) %u locks, %u sess, %u claims%s", (unsigned)u.locks,
		 (unsigned)u.sessions, (unsigned)(u.holds + u.waits),
		 b->others < target ? " (capped)" : "");
	measure_row(b, state, buf);
}

int main(int argc, char **argv)
{
	static struct bench b;
	int header = 0;
	b.profile = "?";
	b.fill_s = 100;
	for (int i = 1, pos = 0; i < argc; i++) {
		if (strcmp(argv[i], "--header") == 0)
			header = 1;
		else if (pos++ == 0)
			b.profile = argv[i];
		else
			b.fill_s = atof(argv[i]);
	}
	b.n = calloc(1, sizeof(*b.n));
	b.sessions = calloc(EL_SESSIONS_MAX, sizeof(*b.sessions));
	b.seqs = calloc(EL_SESSIONS_MAX, sizeof(*b.seqs));
	uint8_t *buf = malloc(EL_SNAPSHOT_MAX);
	if (b.n == NULL || b.sessions == NULL || b.seqs == NULL || buf == NULL)
		die("out of memory", EL_EFULL);
	if (header)
		print_header();
	b.next_req = 1;
	b.t_start = cpu_s();
	make_leader(&b);
	fprintf(stderr, "bench_core %s: sizeof(struct el_node) = %zu, filling for at most %.0f s\n",
		b.profile, sizeof(struct el_node), b.fill_s);
	case_a(&b, buf);
	case_b(&b, buf);
	free(buf);
	free(b.seqs);
	free(b.sessions);
	free(b.n);
	return 0;
}
