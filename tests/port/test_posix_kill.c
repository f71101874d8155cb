/*
 * test_posix_kill.c - the restart test. A child process runs the storage
 * workload (appends, hard-state changes, truncations, snapshots, segment
 * rotation and deletion) and, after each persist returns, reports the batch
 * number to the parent through a pipe. The parent SIGKILLs it at a random
 * point (during recovery, a write, an fsync, a rename ...), recovers a copy
 * of the directory, and requires exactly the acknowledged state, or the
 * state of the one batch in flight (whole, or one of its crash stages). The
 * next child recovers the original directory itself and goes on.
 *
 * usage: test_posix_kill SCRATCH_DIR KILLS [SEED]
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "el_error.h"
#include "el_platform.h"
#include "el_test.h"
#include "port_test_util.h"

EL_TEST_MAIN_DEFINITIONS

#define SEGMENT_BYTES 4096

static const struct pt_gen_opts opts = { .max_entries = 8, .snapshots = true, .truncations = true };
static const char *scratch;
static long kills = 200;
static uint64_t seed = 1;
static char dir[PATH_MAX], copy[PATH_MAX + 8];
static struct pt_model model; /* what the directory holds, as far as we know */
static uint64_t next_batch;
static unsigned outcome[4];   /* acked state, whole batch in flight, stage 1, stage 2 */

_Noreturn static void child(int fd)
{
	const struct el_storage_options o = { .segment_bytes = SEGMENT_BYTES };
	struct el_storage *st;
	struct pt_batch b;
	if (el_storage_open(&st, dir, &o) != EL_OK)
		_exit(3);
	for (uint64_t i = next_batch;; i++) {
		pt_gen_batch(&model, seed, i, &opts, &b);
		if (pt_persist(st, &b) != EL_OK)
			_exit(4);
		pt_model_apply(&model, &b);
		if (write(fd, &i, sizeof i) != sizeof i)
			_exit(5);
	}
}

/* Read acknowledgements until n more arrived (n < 0: until EOF). */
static long read_acks(int fd, long n, uint64_t *last, long *count)
{
	uint64_t v;
	long got = 0;
	while (n < 0 || got < n) {
		ssize_t r = read(fd, &v, sizeof v);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != (ssize_t)sizeof v)
			break;
		*last = v;
		(*count)++;
		got++;
	}
	return got;
}

/* Which state did the copy recover to? -1: none allowed. */
static int classify(const struct pt_model *got, const struct pt_model *acked,
		    const struct pt_batch *inflight)
{
	struct pt_model alt;
	if (pt_model_equal(got, acked))
		return 0;
	alt = *acked;
	pt_model_apply(&alt, inflight);
	if (pt_model_equal(got, &alt))
		return 1;
	for (int stage = 1; stage <= 2; stage++)
		if (pt_model_partial(acked, inflight, stage, &alt) && pt_model_equal(got, &alt))
			return 1 + stage;
	return -1;
}

static bool verify_round(long round, uint64_t first, long count, uint64_t last_ack)
{
	static struct pt_model acked, got;
	struct pt_batch b;
	uint64_t inflight = count > 0 ? last_ack + 1 : first;

	acked = model;
	for (uint64_t i = first; count > 0 && i <= last_ack; i++) {
		pt_gen_batch(&acked, seed, i, &opts, &b);
		pt_model_apply(&acked, &b);
	}
	pt_gen_batch(&acked, seed, inflight, &opts, &b);
	pt_rmrf(copy);
	mkdir(copy, 0700);
	pt_copy_dir(dir, copy);
	int rc = pt_open_load(copy, SEGMENT_BYTES, &got);
	int kind = rc == EL_OK ? classify(&got, &acked, &b) : -1;
	if (kind < 0) {
		printf("  round %ld: recovery rc %d does not match acked batch %lld (acks %ld)\n",
		       round, rc, count > 0 ? (long long)last_ack : -1LL, count);
		pt_model_print("acked", &acked);
		pt_model_print("got  ", &got);
		return false;
	}
	outcome[kind]++;
	model = got;
	next_batch = inflight + 1; /* any number both sides agree on */
	return true;
}

static bool one_round(long round, uint64_t *rng)
{
	int fds[2], status;
	uint64_t last_ack = 0, first = next_batch;
	long count = 0;
	pid_t pid;

	if (pipe(fds) != 0)
		return false;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child(fds[1]);
	}
	close(fds[1]);
	read_acks(fds[0], (long)(pt_rand(rng) % 24), &last_ack, &count);
	struct timespec ts = { 0, (long)(pt_rand(rng) % 1500) * 1000 };
	nanosleep(&ts, NULL);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	read_acks(fds[0], -1, &last_ack, &count);
	close(fds[0]);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
		printf("  round %ld: the child stopped on its own (exit %d)\n", round,
		       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
		return false;
	}
	return verify_round(round, first, count, last_ack);
}

static uint64_t round_rng;
static long round_no;

/* One kill and one recovery check: each is counted as a test. */
static void test_kill_round(void)
{
	EL_CHECK(one_round(round_no++, &round_rng));
}

static void test_summary(void)
{
	printf("  %ld kills: %u at the acknowledged state, %u with the batch in flight, "
	       "%u/%u in its snapshot stages; last index %llu, term %llu\n",
	       kills, outcome[0], outcome[1], outcome[2], outcome[3],
	       (unsigned long long)model.last, (unsigned long long)model.hs.term);
	EL_CHECK(outcome[0] + outcome[1] + outcome[2] + outcome[3] == (unsigned)kills);
	EL_CHECK(model.last > 0);
}

int main(int argc, char **argv)
{
	scratch = argc > 1 ? argv[1] : "/tmp";
	if (argc > 2)
		kills = strtol(argv[2], NULL, 10);
	if (argc > 3)
		seed = strtoull(argv[3], NULL, 10);
	el_log_set_level(EL_LOG_ERROR);
	pt_tmpdir(scratch, "kill", dir, sizeof dir);
	snprintf(copy, sizeof copy, "%s.copy", dir);
	printf("  seed %llu, %ld kills, directory %s\n", (unsigned long long)seed, kills, dir);
	round_rng = seed;
	pt_model_init(&model);
	for (long i = 0; i < kills; i++)
		EL_RUN(test_kill_round);
	EL_RUN(test_summary);
	if (el_test_failed == 0) {
		pt_rmrf(dir);
		pt_rmrf(copy);
	}
	return el_test_end();
}
