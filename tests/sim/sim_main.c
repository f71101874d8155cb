/*
 * sim_main.c - the simulator's command line.
 *
 *   sim --seed N              run one seed (verbose with -v), exit 0 iff it passes
 *   sim --start S --count N   run N seeds from S; print each failing seed
 *   sim ... --expect-failure  for the bug self-test: stop at the first failing
 *                             seed and exit 0 if one failed, 1 if none did
 *   sim ... --names N         the workload draws its locks from N names
 *                             (1..256; default 3, "a" "b" "c": a seed run
 *                             without the flag is the same run as ever)
 *
 * Any 64-bit seed is valid. Every failure prints the seed and the command
 * that replays it. The closing line is "N passed, N failed".
 */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_assert.h"
#include "sim.h"

static struct sim the_sim;
static struct sim_totals {
	uint64_t steps, committed, conf_changes, transfers, installs, crashes;
	uint64_t grants, expiries, client_faults, reads;
	uint64_t probes, settled;
} totals;
static const char *argv0;
static jmp_buf panic_jump;
static char panic_text[256];

/* A core assertion inside the simulator is a finding, like a broken
 * invariant: report it with its seed instead of aborting the sweep. */
_Noreturn void el_panic(const char *file, int line, const char *expr)
{
	snprintf(panic_text, sizeof(panic_text), "core assertion %s:%d: %s", file, line, expr);
	longjmp(panic_jump, 1);
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-') {
		fprintf(stderr, "sim: not a 64-bit unsigned number: '%s'\n", s);
		return -1;
	}
	*out = v;
	return 0;
}

static int run_one(uint64_t seed, int verbose)
{
	struct sim *s = &the_sim;
	if (setjmp(panic_jump) != 0) {
		s->failed = true;
		snprintf(s->why, sizeof(s->why), "%s", panic_text);
	} else {
		sim_run(s, seed, verbose);
	}
	if (s->failed) {
		printf("FAIL seed %llu: %s (at %llu ms)\n", (unsigned long long)seed, s->why,
		       (unsigned long long)s->now_ms);
		if (sim_names == SIM_NAMES_DEFAULT)
			printf("  replay: make sim SEED=%llu\n", (unsigned long long)seed);
		else
			printf("  replay: %s --seed %llu --names %u -v\n", argv0,
			       (unsigned long long)seed, sim_names);
		return 1;
	}
	totals.steps += s->steps;
	totals.grants += s->grants_seen;
	totals.expiries += s->expiries_seen;
	totals.client_faults += s->client_faults;
	totals.reads += s->reads_checked;
	totals.probes += s->probes;
	totals.settled += s->stable_leader != 0;
	totals.committed += s->max_committed;
	totals.conf_changes += s->conf_changes;
	totals.transfers += s->transfers;
	totals.installs += s->snapshots_installed;
	totals.crashes += s->crashes;
	if (verbose)
		printf("seed %llu ok: %llu steps, %llu grants seen, %llu conf changes, %llu transfers, "
		       "%llu snapshots installed, %llu crashes\n",
		       (unsigned long long)seed, (unsigned long long)s->steps,
		       (unsigned long long)s->grants_seen, (unsigned long long)s->conf_changes,
		       (unsigned long long)s->transfers, (unsigned long long)s->snapshots_installed,
		       (unsigned long long)s->crashes);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t start = 1, count = 1;
	int verbose = 0, expect_failure = 0;
	argv0 = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-v")) {
			verbose = 1;
		} else if (!strcmp(a, "--expect-failure")) {
			expect_failure = 1;
		} else if ((!strcmp(a, "--seed") || !strcmp(a, "--start")) && i + 1 < argc) {
			if (parse_u64(argv[++i], &start) != 0)
				return 2;
		} else if (!strcmp(a, "--count") && i + 1 < argc) {
			if (parse_u64(argv[++i], &count) != 0)
				return 2;
		} else if (!strcmp(a, "--names") && i + 1 < argc) {
			uint64_t n;
			if (parse_u64(argv[++i], &n) != 0)
				return 2;
			if (n < 1 || n > SIM_NAMES_MAX) {
				fprintf(stderr, "sim: --names must be 1..%u\n", SIM_NAMES_MAX);
				return 2;
			}
			sim_names = (uint32_t)n;
		} else {
			fprintf(stderr, "usage: sim [--seed N | --start S --count N] [-v] [--expect-failure] "
					"[--names N]\n");
			return 2;
		}
	}
	uint64_t passed = 0, failed = 0;
	for (uint64_t k = 0; k < count; k++) {
		if (run_one(start + k, verbose))
			failed++;
		else
			passed++;
		if (expect_failure && failed > 0)
			break;
	}
	printf("totals: %llu messages delivered, %llu entries committed, %llu membership changes, "
	       "%llu transfers, %llu snapshot loads, %llu node crashes, %llu client faults, "
	       "%llu lock grants seen by clients, %llu sessions expired, %llu reads checked, %llu runs settled on a leader, %llu stability probes\n",
	       (unsigned long long)totals.steps, (unsigned long long)totals.committed,
	       (unsigned long long)totals.conf_changes, (unsigned long long)totals.transfers,
	       (unsigned long long)totals.installs, (unsigned long long)totals.crashes,
	       (unsigned long long)totals.client_faults, (unsigned long long)totals.grants,
	       (unsigned long long)totals.expiries, (unsigned long long)totals.reads,
	       (unsigned long long)totals.settled, (unsigned long long)totals.probes);
	printf("%llu passed, %llu failed\n", (unsigned long long)passed, (unsigned long long)failed);
	if (expect_failure)
		return failed > 0 ? 0 : 1;
	return failed == 0 ? 0 : 1;
}
