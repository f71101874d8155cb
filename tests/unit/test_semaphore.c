/*
 * test_semaphore.c - unit tests of semaphores in the lock table (el_lock.h):
 * an acquire with a limit N takes one of N permits. Limit and kind
 * mismatches, reentrancy, FIFO wake-up of exactly as many waiters as permits
 * freed, expiry with lock-delay on the expired permit only, the command
 * encoding, exactly-once retries (a limit mismatch, a queued acquire
 * granted meanwhile), and the snapshot round trip.
 *
 * Commands go through the byte encoding (el_lock_cmd_encode, el_lock_apply),
 * and the whole table's invariants are checked after each. Big structs are
 * static: these tests also run on a Cortex-M under QEMU.
 */
#include <string.h>

#include "el_error.h"
#include "el_lock.h"
#include "el_lock_internal.h"
#include "el_test.h"

#if EL_SEMAPHORES

static struct el_lock_table T;
static struct el_lock_table T2;
static struct el_lock_result R;
static struct el_lock_query Q;
static uint8_t snap[EL_SNAPSHOT_MAX];
static uint8_t snap2[EL_SNAPSHOT_MAX];
static uint64_t next_index;

static void reset(void)
{
	el_lock_init(&T);
	next_index = 0;
}

static int apply(const struct el_lock_cmd *c)
{
	uint8_t buf[EL_ENTRY_DATA_MAX];
	const int n = el_lock_cmd_encode(c, buf, sizeof(buf));
	if (n < 0)
		return -1000 + n; /* a test bug: never a lock error code */
	el_lock_apply(&T, ++next_index, buf, (uint32_t)n, &R);
	el_lock__check_invariants(&T);
	return R.err;
}

static uint64_t open_s(void)
{
	struct el_lock_cmd c = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = 1000, .client_len = 1};
	c.client[0] = 'c';
	return apply(&c) == EL_OK ? R.session : 0;
}

/* Acquire one permit of "S" (limit > 0) or the lock "S" (limit 0). */
static int sem(uint64_t s, uint64_t seq, uint8_t limit, uint32_t wait_ms, uint32_t delay_ms)
{
	struct el_lock_cmd c = {.type = EL_CMD_ACQUIRE, .session = s, .seq = seq, .limit = limit,
				.wait_ms = wait_ms, .delay_ms = delay_ms, .name_len = 1};
	c.name[0] = 'S';
	return apply(&c);
}

static int named(uint8_t type, uint64_t s, uint64_t seq, uint64_t token)
{
	struct el_lock_cmd c = {.type = type, .session = s, .seq = seq, .token = token,
				.name_len = 1};
	c.name[0] = 'S';
	return apply(&c);
}

static int close_s(uint64_t s)
{
	struct el_lock_cmd c = {.type = EL_CMD_CLOSE_SESSION, .session = s};
	return apply(&c);
}

static int expire(uint64_t s)
{
	struct el_lock_cmd c = {.type = EL_CMD_EXPIRE_SESSION, .session = s};
	c.token = T.sessions[el_lock_session_slot(&T, s)].renew_index;
	return apply(&c);
}

static int query(void) { return el_lock_query(&T, "S", 1, &Q); }

/* Grants to waiters in R, in event order, into granted[]; returns how many. */
static int grants(uint64_t *granted, int max)
{
	int n = 0;
	for (int i = 0; i < R.n_events; i++)
		if (R.events[i].kind == EL_EV_GRANTED && n < max)
			granted[n++] = R.events[i].session;
	return n;
}

static void test_encoding(void)
{
	struct el_lock_cmd c = {.type = EL_CMD_ACQUIRE, .session = 9, .seq = 1, .limit = 3,
				.name_len = 1}, d;
	uint8_t buf[EL_LOCK_CMD_ENCODED_MAX];
	c.name[0] = 'S';
	const int n = el_lock_cmd_encode(&c, buf, sizeof(buf));
	EL_CHECK(n > 0);
	EL_CHECK_EQ(el_lock_cmd_decode(&d, buf, (uint32_t)n), EL_OK);
	EL_CHECK_EQ(d.limit, 3);
	EL_CHECK_EQ(d.token, 0);
	c.limit = EL_SEM_LIMIT_MAX + 1; /* out of range */
	EL_CHECK_EQ(el_lock_cmd_encode(&c, buf, sizeof(buf)), EL_EINVAL);
	c.limit = 2;
	c.mode = EL_LOCK_SHARED; /* a semaphore has no shared mode */
	EL_CHECK_EQ(el_lock_cmd_encode(&c, buf, sizeof(buf)), EL_EINVAL);
	struct el_lock_cmd r = {.type = EL_CMD_RELEASE, .session = 9, .seq = 2, .token = 5,
				.limit = 2, .name_len = 1};
	r.name[0] = 'S';
	EL_CHECK_EQ(el_lock_cmd_check(&r), EL_EINVAL); /* only ACQUIRE carries a limit */
}

static void test_at_most_n_and_tokens(void)
{
	reset();
	uint64_t s[5];
	for (int i = 0; i < 5; i++)
		s[i] = open_s();
	uint64_t last = 0;
	for (int i = 0; i < 3; i++) {
		EL_CHECK_EQ(sem(s[i], 1, 3, 0, 0), EL_OK);
		EL_CHECK(!R.queued);
		EL_CHECK(R.token > last); /* each permit its own, rising token */
		last = R.token;
	}
	EL_CHECK_EQ(sem(s[3], 1, 3, 0, 0), EL_EBUSY); /* try: all three taken */
	EL_CHECK_EQ(query(), EL_OK);
	EL_CHECK_EQ(Q.limit, 3);
	EL_CHECK_EQ(Q.n_holders, 3);
	EL_CHECK_EQ(Q.holders[2].token, last);
}

static void test_limit_mismatch(void)
{
	reset();
	const uint64_t a = open_s(), b = open_s();
	EL_CHECK_EQ(sem(a, 1, 3, 0, 0), EL_OK);
	const uint64_t before = T.locks[0].last_token;
	EL_CHECK_EQ(sem(b, 1, 4, EL_WAIT_FOREVER, 0), EL_ELIMIT);
	EL_CHECK_EQ(R.count, 3); /* the reply names the semaphore's own limit */
	EL_CHECK_EQ(sem(b, 1, 4, EL_WAIT_FOREVER, 0), EL_ELIMIT); /* a retry: the same answer */
	EL_CHECK_EQ(R.count, 3);
	EL_CHECK_EQ(sem(a, 2, 2, 0, 0), EL_ELIMIT); /* the holder too */
	EL_CHECK_EQ(query(), EL_OK);
	EL_CHECK_EQ(Q.limit, 3); /* nothing changed */
	EL_CHECK_EQ(Q.n_holders, 1);
	EL_CHECK_EQ(Q.n_waiters, 0);
	EL_CHECK_EQ(T.locks[0].last_token, before);
	/* once unused, the next acquire decides the limit afresh */
	EL_CHECK_EQ(named(EL_CMD_RELEASE, a, 3, before), EL_OK);
	EL_CHECK_EQ(sem(b, 2, 4, 0, 0), EL_OK);
	EL_CHECK_EQ(query(), EL_OK);
	EL_CHECK_EQ(Q.limit, 4);
}

static void test_kind_mismatch(void)
{
	reset();
	const uint64_t a = open_s(), b = open_s();
	EL_CHECK_EQ(sem(a, 1, 0, 0, 0), EL_OK); /* "S" is a lock */
	EL_CHECK_EQ(sem(b, 1, 2, EL_WAIT_FOREVER, 0), EL_EKIND);
	reset();
	const uint64_t c = open_s(), d = open_s();
	EL_CHECK_EQ(sem(c, 1, 2, 0, 0), EL_OK); /* "S" is a semaphore */
	EL_CHECK_EQ(sem(d, 1, 0, EL_WAIT_FOREVER, 0), EL_EKIND); /* exclusive */
	struct el_lock_cmd sh = {.type = EL_CMD_ACQUIRE, .session = d, .seq = 2,
				 .mode = EL_LOCK_SHARED, .name_len = 1};
	sh.name[0] = 'S';
	EL_CHECK_EQ(apply(&sh), EL_EKIND); /* shared */
	struct el_lock_cmd camp = {.type = EL_CMD_CAMPAIGN, .session = d, .seq = 3, .name_len = 1};
	camp.name[0] = 'S';
	EL_CHECK_EQ(apply(&camp), EL_EKIND); /* an election */
	EL_CHECK_EQ(query(), EL_OK);
	EL_CHECK_EQ(Q.n_holders, 1);
	EL_CHECK_EQ(Q.n_waiters, 0);
}

static void test_reentrant(void)
{
	reset();
	const uint64_t a = open_s(), b = open_s();
	EL_CHECK_EQ(sem(a, 1, 2, 0, 0), EL_OK);
	const uint64_t token = R.token;
	EL_CHECK_EQ(sem(a, 2, 2, 0, 0), EL_OK);
	EL_CHECK_EQ(R.token, token); /* the same permit, counted */
	EL_CHECK_EQ(R.count, 2);
	EL_CHECK_EQ(query(), EL_OK);
	EL_CHECK_EQ(Q.n_holders, 1); /* one permit per session */
	EL_CHECK_EQ(sem(b, 1, 2, 0, 0), EL_OK); /* so the second is still free */
	EL_CHECK_EQ(named(EL_CMD_RELEASE, a, 3, token), EL_OK);
	EL_CHECK_EQ(R.count, 1);
	EL_CHECK_EQ(named(EL_CMD_RELEASE, a, 4, token), EL_OK);
	EL_CHECK_EQ(R.count, 0);
	EL_CHECK_EQ(query(), EL_OK);
	EL_CHECK_EQ(Q.n_holders, 1);
}

/* Three holders, five waiters: each freed permit wakes exactly one waiter,
 * the oldest, with a token above every earlier one. */
static void test_fifo_exactly_k(void)
{
	reset();
	uint64_t s[8], token[3], woken[4];
	for (int i = 0; i < 8; i++)
		s[i] = open_s();
	for (int i = 0; i < 3; i++) {
		EL_CHECK_EQ(sem(s[i], 1, 3, 0, 0), EL_OK);
		token[i] = R.token;
	}
	for (int i = 3; i < 8; i++) {
		EL_CHECK_EQ(sem(s[i], 1, 3, EL_WAIT_FOREVER, 0), EL_OK);
		EL_CHECK(R.queued);
	}
	EL_CHECK_EQ(named(EL_CMD_RELEASE, s[1], 2, token[1]), EL_OK);
	EL_CHECK_EQ(grants(woken, 4), 1);
	EL_CHECK_EQ(woken[0], s[3]);
	const uint64_t t3 = R.events[0].token;
	EL_CHECK_EQ(t3, next_index);
	/* exactly-once: the waiter's retry of its acquire learns the grant */
	EL_CHECK_EQ(sem(s[3], 1, 3, EL_WAIT_FOREVER, 0), EL_OK);
	EL_CHECK(!R.queued);
	EL_CHECK_EQ(R.token, t3);
	EL_CHECK_EQ(R.count, 1);
	EL_CHECK_EQ(sem(s[4], 1, 3, EL_WAIT_FOREVER, 0), EL_OK); /* still queued: said so again */
	EL_CHECK(R.queued);
	EL_CHECK_EQ(close_s(s[0]), EL_OK);
	EL_CHECK_EQ(grants(woken, 4), 1);
	EL_CHECK_EQ(woken[0], s[4]);
	EL_CHECK(R.events[0].token > t3);
	/* a waiter that leaves wakes nobody (it freed no permit) */
	EL_CHECK_EQ(close_s(s[6]), EL_OK);
	EL_CHECK_EQ(grants(woken, 4), 0);
	EL_CHECK_EQ(query(), EL_OK);
	EL_CHECK_EQ(Q.n_holders, 3);
	EL_CHECK_EQ(Q.n_waiters, 2);
	EL_CHECK_EQ(Q.waiters[0].session, s[5]); /* queue order kept */
	EL_CHECK_EQ(Q.waiters[1].session, s[7]);
}

/* An expired holder's permit stays in lock-delay; the other permits stay
 * usable; each DELAY_END frees one permit and wakes one waiter. */
static void test_expiry_delay(void)
{
	reset();
	const uint64_t a = open_s(), b = open_s(), c = open_s(), w1 = open_s(), w2 = open_s();
	EL_CHECK_EQ(sem(a, 1, 3, 0, 2000), EL_OK);
	const uint64_t ta = R.token;
	EL_CHECK_EQ(sem(b, 1, 3, 0, 500), EL_OK);
	const uint64_t tb = R.token;
	EL_CHECK_EQ(expire(a), EL_OK);
	EL_CHECK_EQ(R.n_armed_delays, 1);
	EL_CHECK_EQ(query(), EL_OK);
	EL_CHECK_EQ(Q.n_delayed, 1);
	EL_CHECK_EQ(Q.delay_token, ta);
	EL_CHECK_EQ(sem(c, 1, 3, 0, 0), EL_OK); /* the third permit is free */
	EL_CHECK_EQ(sem(w1, 1, 3, 0, 0), EL_EDELAYED); /* try: one permit is in its delay */
	EL_CHECK_EQ(sem(w1, 2, 3, EL_WAIT_FOREVER, 0), EL_OK);
	EL_CHECK(R.queued);
	EL_CHECK_EQ(sem(w2, 1, 3, EL_WAIT_FOREVER, 0), EL_OK);
	EL_CHECK_EQ(expire(b), EL_OK); /* a second delayed permit, nobody woken */
	EL_CHECK_EQ(R.n_events, 0);
	EL_CHECK_EQ(query(), EL_OK);
	EL_CHECK_EQ(Q.n_delayed, 2);
	EL_CHECK_EQ(Q.n_holders, 1);
	EL_CHECK_EQ(Q.delay_token, tb);
	EL_CHECK_EQ(T.locks[0].delay_ms, 2000); /* the longest asked for */
	EL_CHECK_EQ(named(EL_CMD_DELAY_END, 0, 0, ta), EL_ESTALE); /* a stale timer */
	EL_CHECK_EQ(named(EL_CMD_DELAY_END, 0, 0, tb), EL_OK);
	uint64_t woken[2];
	EL_CHECK_EQ(grants(woken, 2), 1);
	EL_CHECK_EQ(woken[0], w1);
	const uint64_t key = next_index;
	EL_CHECK_EQ(R.n_armed_delays, 1); /* the other permit's delay restarts */
	EL_CHECK_EQ(query(), EL_OK);
	EL_CHECK_EQ(Q.n_delayed, 1);
	EL_CHECK_EQ(Q.delay_token, key);
	EL_CHECK_EQ(named(EL_CMD_DELAY_END, 0, 0, key), EL_OK);
	EL_CHECK_EQ(grants(woken, 2), 1);
	EL_CHECK_EQ(woken[0], w2);
	EL_CHECK_EQ(query(), EL_OK);
	EL_CHECK_EQ(Q.n_delayed, 0);
	EL_CHECK_EQ(Q.n_holders, 3);
}

/* A lock-delay counts as the name in use: its kind and limit hold. */
static void test_delay_keeps_kind(void)
{
	reset();
	const uint64_t a = open_s(), b = open_s();
	EL_CHECK_EQ(sem(a, 1, 2, 0, 1000), EL_OK);
	EL_CHECK_EQ(expire(a), EL_OK);
	EL_CHECK_EQ(sem(b, 1, 0, 0, 0), EL_EKIND);
	EL_CHECK_EQ(sem(b, 2, 3, 0, 0), EL_ELIMIT);
	EL_CHECK_EQ(sem(b, 3, 2, 0, 0), EL_OK); /* the permit not delayed */
}

static void test_snapshot_roundtrip(void)
{
	reset();
	uint64_t s[6];
	for (int i = 0; i < 6; i++)
		s[i] = open_s();
	EL_CHECK_EQ(sem(s[0], 1, 3, 0, 1000), EL_OK);
	EL_CHECK_EQ(sem(s[1], 1, 3, 0, 0), EL_OK);
	EL_CHECK_EQ(sem(s[2], 1, 3, 0, 0), EL_OK);
	EL_CHECK_EQ(sem(s[3], 1, 3, EL_WAIT_FOREVER, 0), EL_OK);
	EL_CHECK_EQ(sem(s[4], 1, 3, 100, 0), EL_OK);
	EL_CHECK_EQ(expire(s[0]), EL_OK); /* one delayed permit */
	const int n = el_lock_snapshot(&T, snap, sizeof(snap));
	EL_CHECK(n > 0);
	el_lock_init(&T2);
	EL_CHECK_EQ(el_lock_restore(&T2, snap, (uint32_t)n), EL_OK);
	EL_CHECK_EQ(el_lock_snapshot(&T2, snap2, sizeof(snap2)), n);
	EL_CHECK(memcmp(snap, snap2, (size_t)n) == 0);
	EL_CHECK_EQ(el_lock_query(&T2, "S", 1, &Q), EL_OK);
	EL_CHECK_EQ(Q.limit, 3);
	EL_CHECK_EQ(Q.n_delayed, 1);
	EL_CHECK_EQ(Q.n_holders, 2);
	EL_CHECK_EQ(Q.n_waiters, 2);
	/* a table with more permits taken than its limit is refused */
	static struct el_lock_table broken;
	memcpy(&broken, &T, sizeof(T));
	broken.locks[0].limit = 2;
	const int k = el_lock_snapshot(&broken, snap2, sizeof(snap2));
	EL_CHECK(k > 0);
	el_lock_init(&T2);
	EL_CHECK_EQ(el_lock_restore(&T2, snap2, (uint32_t)k), EL_EDECODE);
	/* and so is one that left a waiter queued by a free permit */
	memcpy(&broken, &T, sizeof(T));
	broken.locks[0].limit = 4;
	const int m = el_lock_snapshot(&broken, snap2, sizeof(snap2));
	EL_CHECK_EQ(el_lock_restore(&T2, snap2, (uint32_t)m), EL_EDECODE);
	EL_CHECK_EQ(T2.last_index, 0); /* untouched */
}

#endif /* EL_SEMAPHORES */

void el_suite_semaphore(void);
void el_suite_semaphore(void)
{
#if EL_SEMAPHORES
	EL_RUN(test_encoding);
	EL_RUN(test_at_most_n_and_tokens);
	EL_RUN(test_limit_mismatch);
	EL_RUN(test_kind_mismatch);
	EL_RUN(test_reentrant);
	EL_RUN(test_fifo_exactly_k);
	EL_RUN(test_expiry_delay);
	EL_RUN(test_delay_keeps_kind);
	EL_RUN(test_snapshot_roundtrip);
#endif
}
