/*
 * lock_check_test.c - the lock table's invariant check (core/lock_check.c)
 * catches each kind of broken table. A consistent table is built through
 * real commands; then, one at a time, a copy is corrupted the way a bug in
 * the lock code would leave it, and el_lock__check_invariants() must panic
 * (in a child process, so the run goes on) naming core/lock_check.c. The
 * untouched table must pass. Host only: it needs fork().
 *
 * Ends with "N passed, N failed".
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "el_error.h"
#include "el_lock.h"
#include "el_lock_internal.h"
#include "el_test.h"

EL_TEST_MAIN_DEFINITIONS

static struct el_lock_table good, bad;
static struct el_lock_result res;
static uint64_t next_index;

static int apply(struct el_lock_cmd *c)
{
	uint8_t buf[EL_ENTRY_DATA_MAX];
	const int n = el_lock_cmd_encode(c, buf, sizeof(buf));
	if (n < 0)
		return -1000 + n;
	el_lock_apply(&good, ++next_index, buf, (uint32_t)n, &res);
	return res.err;
}

static uint64_t open_session(void)
{
	struct el_lock_cmd c = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = 1000, .now_ms = 1};
	return apply(&c) == EL_OK ? res.session : 0;
}

static int acquire(uint64_t s, const char *name, uint8_t mode, uint32_t wait_ms)
{
	struct el_lock_cmd c = {.type = EL_CMD_ACQUIRE, .session = s, .seq = next_index + 1,
				.mode = mode, .wait_ms = wait_ms, .now_ms = 5};
	c.name_len = (uint8_t)strlen(name);
	memcpy(c.name, name, c.name_len);
	return apply(&c);
}

static int take_permit(uint64_t s, const char *name, uint8_t limit, uint32_t wait_ms)
{
	struct el_lock_cmd c = {.type = EL_CMD_ACQUIRE, .session = s, .seq = next_index + 1,
				.limit = limit, .wait_ms = wait_ms, .now_ms = 5};
	c.name_len = (uint8_t)strlen(name);
	memcpy(c.name, name, c.name_len);
	return apply(&c);
}

static int watch(uint64_t s, const char *name)
{
	struct el_lock_cmd c = {.type = EL_CMD_WATCH, .session = s, .seq = next_index + 1};
	c.name_len = (uint8_t)strlen(name);
	memcpy(c.name, name, c.name_len);
	return apply(&c);
}

/* Run the check on t in a child; true when it panicked in lock_check.c. */
static bool check_panics(const struct el_lock_table *t)
{
	int fds[2];
	if (pipe(fds) != 0)
		return false;
	fflush(NULL);
	const pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		close(fds[0]);
		alarm(10); /* a check that loops (a cycle it does not bound) fails too */
		el_lock__check_invariants(t);
		_exit(0); /* passed: no panic */
	}
	close(fds[1]);
	char out[512] = {0};
	size_t got = 0;
	for (ssize_t n; got < sizeof(out) - 1 &&
			(n = read(fds[0], out + got, sizeof(out) - 1 - got)) > 0;)
		got += (size_t)n;
	close(fds[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	return WIFSIGNALED(status) && strstr(out, "lock_check.c") != NULL;
}

/* The table every case corrupts: L held exclusively by a with b queued,
 * S held shared by c, W watched by d, D in its lock-delay. */
static el_slot_t a, b, c, d, l_lock, s_lock, w_lock;

static void build(void)
{
	el_lock_init(&good);
	next_index = 0;
	const uint64_t ida = open_session(), idb = open_session(), idc = open_session();
	const uint64_t idd = open_session();
	EL_CHECK_EQ(acquire(ida, "L", EL_LOCK_EXCLUSIVE, 0), EL_OK);
	EL_CHECK_EQ(acquire(idb, "L", EL_LOCK_EXCLUSIVE, 5000), EL_OK);
	EL_CHECK(res.queued);
	EL_CHECK_EQ(acquire(idc, "S", EL_LOCK_SHARED, 0), EL_OK);
	EL_CHECK_EQ(watch(idd, "W"), EL_OK);
	a = el_lock_session_slot(&good, ida);
	b = el_lock_session_slot(&good, idb);
	c = el_lock_session_slot(&good, idc);
	d = el_lock_session_slot(&good, idd);
	l_lock = el_lock__find(&good, "L", 1);
	s_lock = el_lock__find(&good, "S", 1);
	w_lock = el_lock__find(&good, "W", 1);
	EL_CHECK(l_lock != EL_LOCK_NONE && s_lock != EL_LOCK_NONE && w_lock != EL_LOCK_NONE);
	memcpy(&bad, &good, sizeof(good));
}

static void test_good_table_passes(void)
{
	build();
	el_lock__check_invariants(&good); /* a panic here ends the run: fails it */
	EL_CHECK(!check_panics(&good));
}

static void test_fencing_corruptions(void)
{
	build();
	const el_slot_t hold = el_lock__find_claim(&good, l_lock, a, EL_CLAIM_HOLD);
	bad.locks[l_lock].last_token = bad.claims[hold].token - 1; /* token above last */
	EL_CHECK(check_panics(&bad));
	build();
	bad.locks[l_lock].last_token = bad.last_index + 1; /* last token in the future */
	EL_CHECK(check_panics(&bad));
	build();
	bad.claims[hold].token = 0; /* a hold without a token */
	EL_CHECK(check_panics(&bad));
}

static void test_holder_corruptions(void)
{
	build();
	bad.locks[l_lock].n_holders = 2; /* count differs from the holds */
	EL_CHECK(check_panics(&bad));
	build();
	const el_slot_t hold = el_lock__find_claim(&good, s_lock, c, EL_CLAIM_HOLD);
	bad.claims[hold].mode = EL_LOCK_EXCLUSIVE; /* a hold's mode is not its lock's */
	EL_CHECK(check_panics(&bad));
	build();
	bad.locks[l_lock].delayed = 1; /* held during its lock-delay */
	bad.locks[l_lock].delay_ms = 100;
	bad.locks[l_lock].delay_token = 1;
	EL_CHECK(check_panics(&bad));
	build();
	bad.sessions[a].id = 0; /* a hold of a session that is gone */
	EL_CHECK(check_panics(&bad));
}

static void test_queue_corruptions(void)
{
	build();
	const el_slot_t hold = el_lock__find_claim(&good, l_lock, a, EL_CLAIM_HOLD);
	memset(&bad.claims[hold], 0, sizeof(bad.claims[hold])); /* b could be granted */
	bad.locks[l_lock].n_holders = 0;
	EL_CHECK(check_panics(&bad));
	build();
	const el_slot_t head = bad.locks[l_lock].wait_head;
	bad.claims[head].next = head; /* a cycle */
	EL_CHECK(check_panics(&bad));
	build();
	bad.locks[l_lock].wait_tail = EL_LOCK_NONE; /* tail lost */
	EL_CHECK(check_panics(&bad));
	build();
	bad.n_waiting = 0; /* the waiter count differs */
	EL_CHECK(check_panics(&bad));
	build();
	bad.claims[head].lock = s_lock; /* a waiter in another lock's queue */
	EL_CHECK(check_panics(&bad));
}

/* P: a semaphore of 2 held by a and c, b queued. */
static void test_semaphore_corruptions(void)
{
#if EL_SEMAPHORES
	build();
	const uint64_t ida = good.sessions[a].id, idb = good.sessions[b].id;
	EL_CHECK_EQ(take_permit(ida, "P", 2, 0), EL_OK);
	EL_CHECK_EQ(take_permit(good.sessions[c].id, "P", 2, 0), EL_OK);
	EL_CHECK_EQ(take_permit(idb, "P", 2, 5000), EL_OK);
	EL_CHECK(res.queued);
	const el_slot_t p = el_lock__find(&good, "P", 1);
	memcpy(&bad, &good, sizeof(good));
	EL_CHECK(!check_panics(&bad));
	bad.locks[p].limit = 1; /* more holders than permits */
	EL_CHECK(check_panics(&bad));
	memcpy(&bad, &good, sizeof(good));
	bad.locks[p].limit = 3; /* b queued by a free permit */
	EL_CHECK(check_panics(&bad));
	memcpy(&bad, &good, sizeof(good));
	bad.locks[p].delayed = 1; /* a delayed permit beyond the limit */
	bad.locks[p].delay_ms = 100;
	bad.locks[p].delay_token = 1;
	EL_CHECK(check_panics(&bad));
	memcpy(&bad, &good, sizeof(good));
	bad.locks[p].limit = EL_SEM_LIMIT_MAX + 1; /* a limit past the config's */
	EL_CHECK(check_panics(&bad));
#endif
}

static void test_table_corruptions(void)
{
	build();
	bad.locks[w_lock].n_watches = 0; /* a watched lock that counts none */
	EL_CHECK(check_panics(&bad));
	build();
	memcpy(bad.locks[s_lock].name, "L", 1); /* two locks named L */
	EL_CHECK(check_panics(&bad));
	build();
	bad.sessions[d].id = bad.sessions[c].id; /* two sessions with one id */
	EL_CHECK(check_panics(&bad));
	build();
	bad.locks[EL_LOCKS_MAX - 1].last_token = 1; /* a free slot not empty */
	EL_CHECK(check_panics(&bad));
	build();
	bad.watches[EL_WATCHES_MAX - 1].lock = (uint16_t)EL_LOCKS_MAX; /* a watch of no lock */
	bad.watches[EL_WATCHES_MAX - 1].session = d;
	EL_CHECK(check_panics(&bad));
	build();
	bad.sessions[b].renew_index = bad.last_index + 5; /* renewed in the future */
	EL_CHECK(check_panics(&bad));
}

int main(void)
{
	EL_RUN(test_good_table_passes);
	EL_RUN(test_fencing_corruptions);
	EL_RUN(test_holder_corruptions);
	EL_RUN(test_queue_corruptions);
	EL_RUN(test_semaphore_corruptions);
	EL_RUN(test_table_corruptions);
	return el_test_end();
}
