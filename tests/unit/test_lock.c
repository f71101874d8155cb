/*
 * test_lock.c - unit tests of the replicated lock table (el_lock.h): every
 * command, every error path, FIFO fairness, lock-delay, exactly-once replies,
 * elections, watches, full tables, and snapshot/restore.
 *
 * Commands go through the real byte encoding (encode, then el_lock_apply) so
 * the codec is exercised on every step. Big structs are static: these tests
 * also run on a Cortex-M under QEMU with a small stack.
 */
#include <stddef.h>
#include <string.h>

#include "el_error.h"
#include "el_lock.h"
#include "el_lock_internal.h"
#include "el_test.h"

/* The replicated records of two tables are the same bytes: everything but
 * each replica's own hash key and the layout of its index buckets. */
static bool same_records(const struct el_lock_table *a, const struct el_lock_table *b)
{
	const size_t from = offsetof(struct el_lock_table, sessions);
	const size_t to = offsetof(struct el_lock_table, opens) + sizeof(a->opens);
	return a->last_index == b->last_index &&
	       memcmp((const char *)a + from, (const char *)b + from, to - from) == 0;
}

static struct el_lock_table T;
static struct el_lock_table T2;
static struct el_lock_result R;
static struct el_lock_query Q;
static uint8_t snap[EL_SNAPSHOT_MAX];
static uint8_t snap2[EL_SNAPSHOT_MAX];
static uint64_t next_index; /* the Raft index of the next applied entry */

static void reset(void)
{
	el_lock_init(&T);
	next_index = 0;
}

/* Apply a command through its byte encoding; returns R.err. */
static int apply(const struct el_lock_cmd *c)
{
	uint8_t buf[EL_ENTRY_DATA_MAX];
	const int n = el_lock_cmd_encode(c, buf, sizeof(buf));
	if (n < 0)
		return -1000 + n; /* a test bug: never a lock error code */
	el_lock_apply(&T, ++next_index, buf, (uint32_t)n, &R);
	el_lock__check_invariants(&T); /* panics (fails the run) on a broken table */
	return R.err;
}

static void set_name(struct el_lock_cmd *c, const char *name)
{
	c->name_len = (uint8_t)strlen(name);
	memcpy(c->name, name, c->name_len);
}

static uint64_t open_s(const char *client, uint32_t ttl_ms)
{
	struct el_lock_cmd c = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = ttl_ms, .now_ms = 1};
	c.client_len = (uint8_t)strlen(client);
	memcpy(c.client, client, c.client_len);
	return apply(&c) == EL_OK ? R.session : 0;
}

static int session_cmd(uint8_t type, uint64_t s, uint64_t token)
{
	struct el_lock_cmd c = {.type = type, .session = s, .token = token};
	return apply(&c);
}

static int expire(uint64_t s)
{
	const el_slot_t slot = el_lock_session_slot(&T, s);
	return session_cmd(EL_CMD_EXPIRE_SESSION, s, slot == EL_LOCK_NONE ? 1 : T.sessions[slot].renew_index);
}

static int acq(uint64_t s, uint64_t seq, const char *name, uint8_t mode, uint32_t wait_ms,
	       uint32_t delay_ms)
{
	struct el_lock_cmd c = {.type = EL_CMD_ACQUIRE, .session = s, .seq = seq, .mode = mode,
				.wait_ms = wait_ms, .delay_ms = delay_ms,
				.now_ms = 1000 + next_index + 1}; /* stamp = 1000 + its index */
	set_name(&c, name);
	return apply(&c);
}

static int tok_cmd(uint8_t type, uint64_t s, uint64_t seq, const char *name, uint64_t token)
{
	struct el_lock_cmd c = {.type = type, .session = s, .seq = seq, .token = token};
	set_name(&c, name);
	return apply(&c);
}

static int rel(uint64_t s, uint64_t seq, const char *name, uint64_t token)
{
	return tok_cmd(EL_CMD_RELEASE, s, seq, name, token);
}

static int campaign(uint64_t s, uint64_t seq, const char *name, const char *value, uint32_t wait_ms)
{
	struct el_lock_cmd c = {.type = EL_CMD_CAMPAIGN, .session = s, .seq = seq, .wait_ms = wait_ms};
	set_name(&c, name);
	c.value_len = (uint8_t)strlen(value);
	memcpy(c.value, value, c.value_len);
	return apply(&c);
}

static int proclaim(uint64_t s, uint64_t seq, const char *name, uint64_t token, const char *value)
{
	struct el_lock_cmd c = {.type = EL_CMD_PROCLAIM, .session = s, .seq = seq, .token = token};
	set_name(&c, name);
	c.value_len = (uint8_t)strlen(value);
	memcpy(c.value, value, c.value_len);
	return apply(&c);
}

static int wait_timeout(uint64_t s, uint64_t seq, const char *name)
{
	struct el_lock_cmd c = {.type = EL_CMD_WAIT_TIMEOUT, .session = s, .seq = seq};
	set_name(&c, name);
	return apply(&c);
}

static int delay_end(const char *name, uint64_t token)
{
	struct el_lock_cmd c = {.type = EL_CMD_DELAY_END, .token = token};
	set_name(&c, name);
	return apply(&c);
}

static int watch(uint8_t type, uint64_t s, uint64_t seq, const char *name)
{
	struct el_lock_cmd c = {.type = type, .session = s, .seq = seq};
	set_name(&c, name);
	return apply(&c);
}

static int query(const char *name) { return el_lock_query(&T, name, (uint32_t)strlen(name), &Q); }

/* Index of the event of kind for session in R, or -1. */
static int find_event(uint8_t kind, uint64_t s)
{
	for (int i = 0; i < R.n_events; i++)
		if (R.events[i].kind == kind && R.events[i].session == s)
			return i;
	return -1;
}

/* Snapshot T, restore into T2, compare bytes and memory. */
static int snapshot_roundtrip(void)
{
	const int n = el_lock_snapshot(&T, snap, sizeof(snap));
	if (n <= 0)
		return -1;
	el_lock_init(&T2);
	if (el_lock_restore(&T2, snap, (uint32_t)n) != EL_OK)
		return -2;
	const int n2 = el_lock_snapshot(&T2, snap2, sizeof(snap2));
	if (n2 != n || memcmp(snap, snap2, (size_t)n) != 0)
		return -3;
	return same_records(&T, &T2) ? 0 : -4;
}

/* ---- Commands ---------------------------------------------------------- */

static void test_cmd_roundtrip(void)
{
	struct el_lock_cmd c = {.type = EL_CMD_ACQUIRE, .session = 7, .seq = 3, .mode = EL_LOCK_SHARED,
				.wait_ms = 500, .delay_ms = 100, .now_ms = 123456789};
	struct el_lock_cmd d;
	uint8_t buf[EL_ENTRY_DATA_MAX];
	set_name(&c, "printer");
	const int n = el_lock_cmd_encode(&c, buf, sizeof(buf));
	EL_CHECK(n > 0);
	EL_CHECK_EQ(el_lock_cmd_decode(&d, buf, (uint32_t)n), EL_OK);
	EL_CHECK(memcmp(&c, &d, sizeof(c)) == 0);
	/* the largest command fits an entry */
	struct el_lock_cmd big = {.type = EL_CMD_CAMPAIGN, .session = UINT64_MAX, .seq = UINT64_MAX,
				  .wait_ms = UINT32_MAX, .delay_ms = UINT32_MAX, .now_ms = UINT64_MAX};
	big.name_len = EL_NAME_MAX;
	memset(big.name, 'n', EL_NAME_MAX);
	big.value_len = EL_VALUE_MAX;
	memset(big.value, 0xff, EL_VALUE_MAX);
	const int m = el_lock_cmd_encode(&big, buf, sizeof(buf));
	EL_CHECK(m > 0 && m <= (int)EL_LOCK_CMD_ENCODED_MAX);
	EL_CHECK_EQ(el_lock_cmd_decode(&d, buf, (uint32_t)m), EL_OK);
	EL_CHECK(memcmp(&big, &d, sizeof(big)) == 0);
	EL_CHECK_EQ(el_lock_cmd_encode(&c, buf, 8), EL_EFULL);
}

static void test_cmd_decode_rejects(void)
{
	struct el_lock_cmd c = {.type = EL_CMD_RELEASE, .session = 1, .seq = 1, .token = 9};
	struct el_lock_cmd d;
	uint8_t buf[EL_ENTRY_DATA_MAX];
	set_name(&c, "x");
	const int n = el_lock_cmd_encode(&c, buf, sizeof(buf));
	EL_CHECK(n > 0);
	for (int cut = 0; cut < n; cut++) /* every truncation */
		EL_CHECK_EQ(el_lock_cmd_decode(&d, buf, (uint32_t)cut), EL_EDECODE);
	buf[n] = 0;
	EL_CHECK_EQ(el_lock_cmd_decode(&d, buf, (uint32_t)n + 1), EL_EDECODE); /* trailing byte */
	buf[1] = 2; /* version 2 */
	EL_CHECK_EQ(el_lock_cmd_decode(&d, buf, (uint32_t)n), EL_EVERSION);
	buf[1] = 1;
	buf[2] = 14; /* unknown type */
	EL_CHECK_EQ(el_lock_cmd_decode(&d, buf, (uint32_t)n), EL_EDECODE);
	buf[2] = EL_CMD_RELEASE;
	buf[0] = 0x8c; /* 12 items */
	EL_CHECK_EQ(el_lock_cmd_decode(&d, buf, (uint32_t)n), EL_EDECODE);
	buf[0] = 0x8d;
	EL_CHECK_EQ(el_lock_cmd_decode(&d, buf, (uint32_t)n), EL_OK);
	/* a field the type does not use, or a missing required one */
	c.wait_ms = 5;
	EL_CHECK_EQ(el_lock_cmd_encode(&c, buf, sizeof(buf)), EL_EINVAL);
	c.wait_ms = 0;
	c.token = 0;
	EL_CHECK_EQ(el_lock_cmd_check(&c), EL_EINVAL);
	c.token = 9;
	c.name_len = 0;
	EL_CHECK_EQ(el_lock_cmd_check(&c), EL_EINVAL);
	c.name_len = EL_NAME_MAX + 1;
	EL_CHECK_EQ(el_lock_cmd_check(&c), EL_EINVAL);
	struct el_lock_cmd camp = {.type = EL_CMD_CAMPAIGN, .session = 1, .seq = 1, .mode = EL_LOCK_SHARED};
	set_name(&camp, "e");
	EL_CHECK_EQ(el_lock_cmd_check(&camp), EL_EINVAL); /* elections are exclusive */
	struct el_lock_cmd none = {.type = 0};
	EL_CHECK_EQ(el_lock_cmd_check(&none), EL_EINVAL);
}

static void test_malformed_entry_is_noop(void)
{
	reset();
	const uint64_t s = open_s("a", 1000);
	EL_CHECK(s != 0);
	EL_CHECK_EQ(el_lock_snapshot(&T, snap, sizeof(snap)) > 0, 1);
	const uint8_t junk[] = {0xff, 0x00, 0x13};
	el_lock_apply(&T, ++next_index, junk, sizeof(junk), &R);
	EL_CHECK_EQ(R.err, EL_EDECODE);
	EL_CHECK_EQ(T.last_index, next_index);
	el_lock_apply(&T, ++next_index, junk, 0, &R);
	EL_CHECK_EQ(R.err, EL_EDECODE);
	struct el_lock_usage u;
	el_lock_usage(&T, &u);
	EL_CHECK_EQ(u.sessions, 1);
	EL_CHECK_EQ(u.locks, 0);
	/* a decoded command that does not validate is a no-op too */
	struct el_lock_cmd bad = {.type = EL_CMD_ACQUIRE, .session = s};
	el_lock_apply_cmd(&T, ++next_index, &bad, &R);
	EL_CHECK_EQ(R.err, EL_EINVAL);
}

/* ---- Sessions ---------------------------------------------------------- */

static void test_session_open_keepalive_close(void)
{
	reset();
	const uint64_t s = open_s("sensor-7", 5000);
	EL_CHECK_EQ(s, 1); /* the id is the entry's index */
	const el_slot_t slot = el_lock_session_slot(&T, s);
	EL_CHECK(slot != EL_LOCK_NONE);
	EL_CHECK_EQ(T.sessions[slot].ttl_ms, 5000);
	EL_CHECK_EQ(session_cmd(EL_CMD_KEEPALIVE, s, 0), EL_OK);
	EL_CHECK_EQ(T.sessions[slot].renew_index, next_index);
	EL_CHECK_EQ(session_cmd(EL_CMD_KEEPALIVE, 99, 0), EL_EEXPIRED);
	EL_CHECK_EQ(session_cmd(EL_CMD_CLOSE_SESSION, s, 0), EL_OK);
	EL_CHECK_EQ(el_lock_session_slot(&T, s), EL_LOCK_NONE);
	EL_CHECK_EQ(session_cmd(EL_CMD_CLOSE_SESSION, s, 0), EL_EEXPIRED);
	EL_CHECK_EQ(acq(s, 1, "x", EL_LOCK_EXCLUSIVE, 0, 0), EL_EEXPIRED);
	EL_CHECK_EQ(open_s("z", 0), 0); /* ttl 0 does not validate */
}

static void test_sessions_full(void)
{
	reset();
	uint64_t first = 0;
	for (int i = 0; i < EL_SESSIONS_MAX; i++) {
		const uint64_t s = open_s("c", 1000);
		EL_CHECK(s != 0);
		if (i == 0)
			first = s;
	}
	EL_CHECK_EQ(acq(first, 1, "held", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	const uint64_t token = R.token;
	struct el_lock_cmd c = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = 1000};
	EL_CHECK_EQ(apply(&c), EL_EFULL);
	EL_CHECK_EQ(query("held"), EL_OK);
	EL_CHECK_EQ(Q.holders[0].token, token);
	EL_CHECK_EQ(session_cmd(EL_CMD_CLOSE_SESSION, first + 1, 0), EL_OK);
	EL_CHECK(open_s("again", 1000) != 0); /* a freed slot is reused */
}

static void test_expire_stale_renewal(void)
{
	reset();
	const uint64_t s = open_s("a", 1000);
	EL_CHECK_EQ(acq(s, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	const uint64_t decided_on = T.sessions[el_lock_session_slot(&T, s)].renew_index;
	EL_CHECK_EQ(session_cmd(EL_CMD_KEEPALIVE, s, 0), EL_OK); /* renewed meanwhile */
	EL_CHECK_EQ(session_cmd(EL_CMD_EXPIRE_SESSION, s, decided_on), EL_ESTALE);
	EL_CHECK(el_lock_session_slot(&T, s) != EL_LOCK_NONE);
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK_EQ(expire(s), EL_OK);
	EL_CHECK_EQ(el_lock_session_slot(&T, s), EL_LOCK_NONE);
	EL_CHECK_EQ(query("L"), EL_ENOTFOUND);
	EL_CHECK_EQ(expire(s), EL_EEXPIRED);
}

/* ---- Acquire / release ------------------------------------------------- */

static void test_acquire_release_exclusive(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	EL_CHECK_EQ(R.token, next_index); /* the token is the granting entry's index */
	EL_CHECK_EQ(R.count, 1);
	const uint64_t token = R.token;
	EL_CHECK_EQ(acq(b, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_EBUSY);
	EL_CHECK_EQ(acq(b, 2, "L", EL_LOCK_SHARED, 0, 0), EL_EBUSY);
	EL_CHECK_EQ(rel(b, 3, "L", token), EL_ENOTFOUND); /* not b's */
	EL_CHECK_EQ(rel(a, 2, "L", token - 1), EL_ESTALE);
	EL_CHECK_EQ(query("L"), EL_OK); /* the stale release changed nothing */
	EL_CHECK_EQ(Q.n_holders, 1);
	EL_CHECK_EQ(rel(a, 3, "L", token), EL_OK);
	EL_CHECK_EQ(R.count, 0);
	EL_CHECK_EQ(query("L"), EL_ENOTFOUND); /* freed */
	EL_CHECK_EQ(rel(a, 4, "L", token), EL_ENOTFOUND);
	EL_CHECK_EQ(acq(b, 4, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	EL_CHECK(R.token > token);
}

static void test_reentrant(void)
{
	reset();
	const uint64_t a = open_s("a", 1000);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	const uint64_t token = R.token;
	EL_CHECK_EQ(acq(a, 2, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	EL_CHECK_EQ(R.token, token);
	EL_CHECK_EQ(R.count, 2);
	EL_CHECK_EQ(acq(a, 3, "L", EL_LOCK_SHARED, 0, 0), EL_EINVAL); /* no upgrade/downgrade */
	EL_CHECK_EQ(rel(a, 4, "L", token), EL_OK);
	EL_CHECK_EQ(R.count, 1);
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK_EQ(Q.holders[0].count, 1);
	EL_CHECK_EQ(rel(a, 5, "L", token), EL_OK);
	EL_CHECK_EQ(query("L"), EL_ENOTFOUND);
}

static void test_shared_and_no_barging(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000), c = open_s("c", 1000),
		       d = open_s("d", 1000);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_SHARED, 0, 0), EL_OK);
	EL_CHECK_EQ(acq(b, 1, "L", EL_LOCK_SHARED, 0, 0), EL_OK);
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK_EQ(Q.n_holders, 2);
	EL_CHECK_EQ(acq(c, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_EBUSY);
	EL_CHECK_EQ(acq(c, 2, "L", EL_LOCK_EXCLUSIVE, EL_WAIT_FOREVER, 0), EL_OK);
	EL_CHECK(R.queued);
	/* a shared request may not pass the queued exclusive one */
	EL_CHECK_EQ(acq(d, 1, "L", EL_LOCK_SHARED, 0, 0), EL_EBUSY);
	EL_CHECK_EQ(acq(c, 3, "L", EL_LOCK_EXCLUSIVE, 100, 0), EL_EBUSY); /* already queued */
}

static void test_shared_holder_limit(void)
{
	reset();
	uint64_t s[EL_HOLDERS_MAX + 1];
	for (int i = 0; i <= EL_HOLDERS_MAX; i++)
		s[i] = open_s("s", 1000);
	for (int i = 0; i < EL_HOLDERS_MAX; i++)
		EL_CHECK_EQ(acq(s[i], 1, "L", EL_LOCK_SHARED, 0, 0), EL_OK);
	EL_CHECK_EQ(acq(s[EL_HOLDERS_MAX], 1, "L", EL_LOCK_SHARED, 0, 0), EL_EBUSY);
	EL_CHECK_EQ(acq(s[EL_HOLDERS_MAX], 2, "L", EL_LOCK_SHARED, 10, 0), EL_OK);
	EL_CHECK(R.queued);
	const uint64_t token = T.claims[0].token;
	EL_CHECK_EQ(rel(s[0], 2, "L", token), EL_OK);
	EL_CHECK(find_event(EL_EV_GRANTED, s[EL_HOLDERS_MAX]) >= 0);
}

static void test_fifo_grants(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000), c = open_s("c", 1000),
		       d = open_s("d", 1000), e = open_s("e", 1000);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	const uint64_t ta = R.token;
	EL_CHECK_EQ(acq(b, 5, "L", EL_LOCK_EXCLUSIVE, 1000, 0), EL_OK);
	EL_CHECK_EQ(acq(c, 5, "L", EL_LOCK_SHARED, 1000, 0), EL_OK);
	EL_CHECK_EQ(acq(d, 5, "L", EL_LOCK_SHARED, EL_WAIT_FOREVER, 0), EL_OK);
	EL_CHECK_EQ(acq(e, 5, "L", EL_LOCK_EXCLUSIVE, 1000, 0), EL_OK);
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK_EQ(Q.n_waiters, 4);
	EL_CHECK_EQ(Q.waiters[0].session, b);
	EL_CHECK_EQ(Q.waiters[3].session, e);
	/* release by a: only b (the head) is woken */
	EL_CHECK_EQ(rel(a, 2, "L", ta), EL_OK);
	const int gb = find_event(EL_EV_GRANTED, b);
	EL_CHECK(gb >= 0);
	EL_CHECK_EQ(R.events[gb].token, next_index);
	EL_CHECK_EQ(R.events[gb].seq, 5);
	EL_CHECK_EQ(find_event(EL_EV_GRANTED, c), -1);
	const uint64_t tb = next_index;
	EL_CHECK(tb > ta);
	/* release by b: c and d (consecutive shared) together, not e */
	EL_CHECK_EQ(rel(b, 6, "L", tb), EL_OK);
	EL_CHECK(find_event(EL_EV_GRANTED, c) >= 0);
	EL_CHECK(find_event(EL_EV_GRANTED, d) >= 0);
	EL_CHECK_EQ(find_event(EL_EV_GRANTED, e), -1);
	const uint64_t tcd = next_index;
	EL_CHECK_EQ(rel(c, 6, "L", tcd), EL_OK);
	EL_CHECK_EQ(find_event(EL_EV_GRANTED, e), -1);
	EL_CHECK_EQ(rel(d, 6, "L", tcd), EL_OK);
	EL_CHECK(find_event(EL_EV_GRANTED, e) >= 0);
	EL_CHECK(next_index > tcd);
	/* the stored reply of a granted waiter now carries its token */
	EL_CHECK_EQ(acq(e, 5, "L", EL_LOCK_EXCLUSIVE, 1000, 0), EL_OK);
	EL_CHECK(!R.queued);
	EL_CHECK_EQ(R.token, next_index - 1);
}

static void test_tokens_rise_across_locks(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000);
	uint64_t last = 0;
	for (int i = 0; i < 20; i++) {
		const char *name = (i % 2) ? "x" : "y";
		const uint64_t s = (i % 3) ? a : b;
		EL_CHECK_EQ(acq(s, (uint64_t)(100 + 2 * i), name, EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
		EL_CHECK(R.token > last);
		last = R.token;
		EL_CHECK_EQ(rel(s, (uint64_t)(101 + 2 * i), name, last), EL_OK);
	}
}

/* ---- Timeouts, close, expiry, lock-delay ------------------------------- */

static void test_wait_timeout(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000), c = open_s("c", 1000);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_SHARED, 0, 0), EL_OK);
	EL_CHECK_EQ(acq(b, 7, "L", EL_LOCK_EXCLUSIVE, 500, 0), EL_OK);
	EL_CHECK_EQ(acq(c, 3, "L", EL_LOCK_SHARED, 500, 0), EL_OK);
	EL_CHECK(R.queued); /* behind b */
	EL_CHECK_EQ(wait_timeout(b, 6, "L"), EL_ESTALE); /* another request */
	EL_CHECK_EQ(wait_timeout(a, 1, "L"), EL_ESTALE); /* a holds, does not wait */
	EL_CHECK_EQ(wait_timeout(b, 7, "L"), EL_OK);
	EL_CHECK(find_event(EL_EV_WAIT_TIMEOUT, b) >= 0);
	/* b's removal unblocks c, shared with a */
	EL_CHECK(find_event(EL_EV_GRANTED, c) >= 0);
	EL_CHECK_EQ(wait_timeout(b, 7, "L"), EL_ESTALE);
	/* a retry of b's request learns the timeout, without queueing again */
	EL_CHECK_EQ(acq(b, 7, "L", EL_LOCK_EXCLUSIVE, 500, 0), EL_ETIMEDOUT);
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK_EQ(Q.n_waiters, 0);
	EL_CHECK_EQ(Q.n_holders, 2);
}

static void test_close_releases_and_cancels(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000), w = open_s("w", 1000);
	EL_CHECK_EQ(watch(EL_CMD_WATCH, w, 1, "L"), EL_OK);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 30000), EL_OK);
	EL_CHECK_EQ(acq(a, 2, "M", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	EL_CHECK_EQ(acq(b, 1, "L", EL_LOCK_EXCLUSIVE, EL_WAIT_FOREVER, 0), EL_OK);
	EL_CHECK_EQ(acq(a, 3, "N", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	EL_CHECK_EQ(acq(b, 2, "N", EL_LOCK_EXCLUSIVE, 100, 0), EL_OK);
	EL_CHECK_EQ(session_cmd(EL_CMD_CLOSE_SESSION, b, 0), EL_OK);
	EL_CHECK(find_event(EL_EV_CANCELED, b) >= 0);
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK_EQ(Q.n_waiters, 0);
	EL_CHECK_EQ(session_cmd(EL_CMD_CLOSE_SESSION, a, 0), EL_OK);
	/* a clean close never delays: L is free again (only the watch remains) */
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK(!Q.delayed);
	EL_CHECK_EQ(Q.n_holders, 0);
	EL_CHECK(find_event(EL_EV_HOLDER_CHANGED, w) >= 0);
	EL_CHECK_EQ(query("M"), EL_ENOTFOUND);
	struct el_lock_usage u;
	el_lock_usage(&T, &u);
	EL_CHECK_EQ(u.holds, 0);
	EL_CHECK_EQ(u.waits, 0);
}

static void test_expire_lock_delay(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000), c = open_s("c", 1000);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 5000), EL_OK);
	const uint64_t ta = R.token;
	EL_CHECK_EQ(acq(b, 1, "L", EL_LOCK_EXCLUSIVE, EL_WAIT_FOREVER, 0), EL_OK);
	EL_CHECK_EQ(expire(a), EL_OK);
	EL_CHECK_EQ(find_event(EL_EV_GRANTED, b), -1); /* delayed, not granted */
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK(Q.delayed);
	EL_CHECK_EQ(Q.delay_token, ta);
	EL_CHECK_EQ(T.locks[0].delay_ms, 5000);
	EL_CHECK_EQ(acq(c, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_EDELAYED);
	EL_CHECK_EQ(acq(c, 2, "L", EL_LOCK_SHARED, 100, 0), EL_OK);
	EL_CHECK(R.queued); /* waiting is allowed, behind b */
	EL_CHECK_EQ(delay_end("L", ta + 1), EL_ESTALE);
	EL_CHECK_EQ(delay_end("nope", ta), EL_ENOTFOUND);
	EL_CHECK_EQ(delay_end("L", ta), EL_OK);
	const int g = find_event(EL_EV_GRANTED, b);
	EL_CHECK(g >= 0);
	EL_CHECK_EQ(R.events[g].token, next_index);
	EL_CHECK_EQ(find_event(EL_EV_GRANTED, c), -1);
	EL_CHECK_EQ(delay_end("L", ta), EL_ESTALE);
}

static void test_expire_without_delay_and_shared(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK); /* no delay asked */
	EL_CHECK_EQ(acq(a, 2, "S", EL_LOCK_SHARED, 0, 9000), EL_OK); /* shared: never delayed */
	EL_CHECK_EQ(acq(b, 1, "L", EL_LOCK_EXCLUSIVE, 100, 0), EL_OK);
	EL_CHECK_EQ(expire(a), EL_OK);
	EL_CHECK(find_event(EL_EV_GRANTED, b) >= 0);
	EL_CHECK_EQ(query("S"), EL_ENOTFOUND);
}

static void test_delay_is_capped(void)
{
	reset();
	const uint64_t a = open_s("a", 1000);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, UINT32_MAX), EL_OK);
	EL_CHECK_EQ(expire(a), EL_OK);
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK(Q.delayed);
	EL_CHECK_EQ(T.locks[0].delay_ms, EL_LOCK_DELAY_MAX_MS);
}

/* ---- Exactly-once ------------------------------------------------------ */

static void test_exactly_once(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000);
	EL_CHECK_EQ(acq(a, 10, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	const uint64_t token = R.token;
	EL_CHECK_EQ(acq(a, 10, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK); /* retry */
	EL_CHECK_EQ(R.token, token);
	EL_CHECK_EQ(R.count, 1);
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK_EQ(Q.holders[0].count, 1); /* not acquired twice */
	EL_CHECK_EQ(acq(a, 9, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_ESTALE);
	EL_CHECK_EQ(acq(b, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_EBUSY);
	EL_CHECK_EQ(acq(b, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_EBUSY); /* same answer */
	EL_CHECK_EQ(acq(b, 2, "L", EL_LOCK_EXCLUSIVE, 100, 0), EL_OK);
	EL_CHECK(R.queued);
	EL_CHECK_EQ(acq(b, 2, "L", EL_LOCK_EXCLUSIVE, 100, 0), EL_OK);
	EL_CHECK(R.queued);
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK_EQ(Q.n_waiters, 1);
	/* the stored replies survive a snapshot */
	EL_CHECK_EQ(snapshot_roundtrip(), 0);
	EL_CHECK_EQ(el_lock_restore(&T, snap, (uint32_t)el_lock_snapshot(&T2, snap, sizeof(snap))), EL_OK);
	EL_CHECK_EQ(rel(a, 11, "L", token), EL_OK);
	EL_CHECK_EQ(rel(a, 11, "L", token), EL_OK); /* retried release: not a second one */
	EL_CHECK_EQ(R.count, 0);
	EL_CHECK_EQ(acq(b, 2, "L", EL_LOCK_EXCLUSIVE, 100, 0), EL_OK);
	EL_CHECK(!R.queued);
	EL_CHECK_EQ(R.token, next_index - 2);
}

/* ---- Elections and watches --------------------------------------------- */

static void test_election(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000), o = open_s("obs", 1000);
	EL_CHECK_EQ(watch(EL_CMD_WATCH, o, 1, "leader"), EL_OK);
	EL_CHECK_EQ(R.token, 0); /* nobody leads yet */
	EL_CHECK_EQ(campaign(a, 1, "leader", "a:7000", 0), EL_OK);
	const uint64_t ta = R.token;
	EL_CHECK(find_event(EL_EV_HOLDER_CHANGED, o) >= 0);
	EL_CHECK_EQ(campaign(b, 1, "leader", "b:7000", 0), EL_EBUSY);
	EL_CHECK_EQ(campaign(b, 2, "leader", "b:7000", EL_WAIT_FOREVER), EL_OK);
	EL_CHECK(R.queued);
	EL_CHECK_EQ(campaign(a, 2, "leader", "again", 0), EL_OK); /* already leading */
	EL_CHECK_EQ(R.token, ta);
	EL_CHECK_EQ(query("leader"), EL_OK);
	EL_CHECK_EQ(Q.holders[0].session, a);
	EL_CHECK_EQ(Q.value_len, 6);
	EL_CHECK(memcmp(Q.value, "a:7000", 6) == 0);
	EL_CHECK_EQ(proclaim(b, 3, "leader", ta, "x"), EL_ENOTFOUND);
	EL_CHECK_EQ(proclaim(a, 3, "leader", ta, "a:7001"), EL_OK);
	EL_CHECK(find_event(EL_EV_VALUE_CHANGED, o) >= 0);
	EL_CHECK_EQ(query("leader"), EL_OK);
	EL_CHECK(memcmp(Q.value, "a:7001", 6) == 0);
	EL_CHECK_EQ(tok_cmd(EL_CMD_RESIGN, a, 4, "leader", ta - 1), EL_ESTALE);
	EL_CHECK_EQ(tok_cmd(EL_CMD_RESIGN, a, 5, "leader", ta), EL_OK);
	EL_CHECK(find_event(EL_EV_GRANTED, b) >= 0);
	EL_CHECK(find_event(EL_EV_HOLDER_CHANGED, o) >= 0);
	EL_CHECK_EQ(query("leader"), EL_OK);
	EL_CHECK_EQ(Q.holders[0].session, b);
	EL_CHECK(memcmp(Q.value, "b:7000", 6) == 0);
	struct el_lock_usage u;
	el_lock_usage(&T, &u);
	EL_CHECK_EQ(u.values, 1); /* a's value was freed */
	/* a plain lock has no value to proclaim */
	EL_CHECK_EQ(acq(a, 6, "plain", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	EL_CHECK_EQ(proclaim(a, 7, "plain", R.token, "v"), EL_EINVAL);
	/* nor is campaigning on it a success that drops the value (an outside
	 * tester: el_campaign returned OK, and no one ever saw the value) */
	EL_CHECK_EQ(campaign(a, 8, "plain", "v", 0), EL_EINVAL);
	EL_CHECK_EQ(query("plain"), EL_OK);
	EL_CHECK_EQ(Q.value_len, 0);
	EL_CHECK_EQ(Q.holders[0].count, 1);
}

/* A watcher's HOLDER_CHANGED names the newest token still held, as a query
 * does: after the newest of two shared holds is released, the older one's
 * (an outside tester saw the released grant's token, held by no one). */
static void test_watch_token_is_newest_held(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000), w = open_s("w", 1000);
	EL_CHECK_EQ(watch(EL_CMD_WATCH, w, 1, "S"), EL_OK);
	EL_CHECK_EQ(acq(a, 1, "S", EL_LOCK_SHARED, 0, 0), EL_OK);
	const uint64_t ta = R.token;
	EL_CHECK_EQ(acq(b, 1, "S", EL_LOCK_SHARED, 0, 0), EL_OK);
	const uint64_t tb = R.token;
	int ev = find_event(EL_EV_HOLDER_CHANGED, w);
	EL_CHECK(ev >= 0 && R.events[ev].token == tb);
	EL_CHECK_EQ(rel(b, 2, "S", tb), EL_OK);
	ev = find_event(EL_EV_HOLDER_CHANGED, w);
	EL_CHECK(ev >= 0);
	EL_CHECK_EQ(R.events[ev].token, ta);
	EL_CHECK_EQ(rel(a, 2, "S", ta), EL_OK);
	ev = find_event(EL_EV_HOLDER_CHANGED, w);
	EL_CHECK(ev >= 0);
	EL_CHECK_EQ(R.events[ev].token, 0); /* free */
}

static void test_watch_unwatch(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), w = open_s("w", 1000);
	EL_CHECK_EQ(watch(EL_CMD_UNWATCH, w, 1, "L"), EL_ENOTFOUND);
	EL_CHECK_EQ(watch(EL_CMD_WATCH, w, 2, "L"), EL_OK);
	EL_CHECK_EQ(query("L"), EL_OK); /* a watch keeps the lock's record */
	EL_CHECK_EQ(Q.n_watches, 1);
	EL_CHECK_EQ(watch(EL_CMD_WATCH, w, 3, "L"), EL_OK); /* idempotent */
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK_EQ(Q.n_watches, 1);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	const uint64_t token = R.token;
	const int ev = find_event(EL_EV_HOLDER_CHANGED, w);
	EL_CHECK(ev >= 0);
	EL_CHECK_EQ(R.events[ev].token, R.token);
	EL_CHECK_EQ(R.events[ev].name_len, 1);
	EL_CHECK_EQ(watch(EL_CMD_UNWATCH, w, 4, "L"), EL_OK);
	EL_CHECK_EQ(rel(a, 2, "L", token), EL_OK);
	EL_CHECK_EQ(R.n_events, 0);
	EL_CHECK_EQ(query("L"), EL_ENOTFOUND);
}

/* ---- Full tables ------------------------------------------------------- */

static void test_locks_full(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000);
	char name[8];
	/* locks run out first, or the claim pool when a board has fewer claims */
	const int fit = EL_LOCKS_MAX < EL_CLAIMS_MAX ? EL_LOCKS_MAX : EL_CLAIMS_MAX;
	for (int i = 0; i < fit; i++) {
		name[0] = 'k';
		name[1] = (char)('a' + i % 26);
		name[2] = (char)('a' + (i / 26) % 26);
		name[3] = (char)('a' + i / 676);
		name[4] = 0;
		EL_CHECK_EQ(acq(a, (uint64_t)i + 1, name, EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	}
	EL_CHECK_EQ(acq(a, 1000, "one-more", EL_LOCK_EXCLUSIVE, 0, 0), EL_EFULL);
	if (fit == EL_LOCKS_MAX)
		EL_CHECK_EQ(watch(EL_CMD_WATCH, b, 1, "one-more"), EL_EFULL);
	struct el_lock_usage u;
	el_lock_usage(&T, &u);
	EL_CHECK_EQ(u.locks, fit);
	EL_CHECK_EQ(u.holds, fit);
	EL_CHECK_EQ(query("kaaa"), EL_OK); /* nothing granted was disturbed */
	EL_CHECK_EQ(Q.holders[0].session, a);
	EL_CHECK(el_lock_snapshot(&T, snap, sizeof(snap)) > 0);
	EL_CHECK_EQ(snapshot_roundtrip(), 0);
}

static void test_waiters_and_watches_full(void)
{
	reset();
	const uint64_t a = open_s("a", 1000);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	uint64_t seq = 1;
	uint32_t queued = 0;
	for (int i = 0; i < EL_SESSIONS_MAX - 1 && queued < EL_WAITERS_MAX; i++) {
		const uint64_t s = open_s("w", 1000);
		EL_CHECK(s != 0);
		EL_CHECK_EQ(acq(s, ++seq, "L", EL_LOCK_SHARED, 100, 0), EL_OK);
		queued++;
		if (queued < EL_WATCHES_MAX)
			EL_CHECK_EQ(watch(EL_CMD_WATCH, s, ++seq, "L"), EL_OK);
	}
	if (queued < EL_WAITERS_MAX)
		return; /* a board config with fewer waiters than sessions: not reachable */
	EL_CHECK_EQ(acq(a, 2, "M", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	EL_CHECK_EQ(acq(T.sessions[1].id, 99999, "M", EL_LOCK_EXCLUSIVE, 100, 0), EL_EFULL);
}

static void test_values_full(void)
{
	reset();
	char name[4] = "e00";
	uint64_t s = open_s("a", 1000);
	for (int i = 0; i < EL_VALUES_MAX; i++) {
		name[1] = (char)('a' + i / 26);
		name[2] = (char)('a' + i % 26);
		EL_CHECK_EQ(campaign(s, (uint64_t)i + 1, name, "v", 0), EL_OK);
	}
	EL_CHECK_EQ(campaign(s, 1000, "last", "v", 0), EL_EFULL);
	EL_CHECK_EQ(query("last"), EL_ENOTFOUND); /* no half-made record left */
	EL_CHECK_EQ(snapshot_roundtrip(), 0);
}

static void test_event_overflow(void)
{
	reset();
	const uint64_t a = open_s("a", 1000);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	const uint64_t token = R.token;
	uint64_t seq = 1;
	const int watchers = EL_WATCHES_MAX < EL_SESSIONS_MAX - 1 ? EL_WATCHES_MAX : EL_SESSIONS_MAX - 1;
	for (int i = 0; i < watchers; i++)
		EL_CHECK_EQ(watch(EL_CMD_WATCH, open_s("w", 1000), ++seq, "L"), EL_OK);
	EL_CHECK_EQ(rel(a, 2, "L", token), EL_OK);
	EL_CHECK_EQ(R.n_events, watchers < EL_LOCK_EVENTS_MAX ? watchers : EL_LOCK_EVENTS_MAX);
	EL_CHECK_EQ(R.events_dropped, watchers > EL_LOCK_EVENTS_MAX ? watchers - EL_LOCK_EVENTS_MAX : 0);
}

/* ---- Query ------------------------------------------------------------- */

static void test_query(void)
{
	reset();
	const uint64_t a = open_s("gw-1", 1000), b = open_s("b", 1000);
	EL_CHECK_EQ(query(""), EL_EINVAL);
	EL_CHECK_EQ(query("L"), EL_ENOTFOUND);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	const uint64_t grant_index = next_index;
	EL_CHECK_EQ(acq(b, 1, "L", EL_LOCK_SHARED, 777, 0), EL_OK);
	EL_CHECK_EQ(query("L"), EL_OK);
	EL_CHECK_EQ(Q.mode, EL_LOCK_EXCLUSIVE);
	EL_CHECK_EQ(Q.n_holders, 1);
	EL_CHECK_EQ(Q.holders[0].session, a);
	EL_CHECK_EQ(Q.holders[0].client_len, 4);
	EL_CHECK(memcmp(Q.holders[0].client, "gw-1", 4) == 0);
	EL_CHECK_EQ(Q.holders[0].grant_ms, 1000 + grant_index); /* the proposer's stamp */
	EL_CHECK_EQ(Q.holders[0].token, grant_index);
	EL_CHECK_EQ(Q.n_waiters, 1);
	EL_CHECK_EQ(Q.waiters[0].session, b);
	EL_CHECK_EQ(Q.waiters[0].wait_ms, 777);
	EL_CHECK_EQ(Q.waiters[0].mode, EL_LOCK_SHARED);
}

/* ---- Snapshot ---------------------------------------------------------- */

/* A table with some of everything. */
static void build_busy_table(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 2000), c = open_s("c", 3000),
		       d = open_s("d", 4000);
	acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 3000);
	acq(b, 1, "L", EL_LOCK_EXCLUSIVE, 500, 0);
	acq(c, 1, "L", EL_LOCK_SHARED, EL_WAIT_FOREVER, 0);
	acq(a, 2, "S", EL_LOCK_SHARED, 0, 0);
	acq(b, 2, "S", EL_LOCK_SHARED, 0, 0);
	campaign(c, 2, "E", "val-c", 0);
	campaign(d, 1, "E", "val-d", 100);
	watch(EL_CMD_WATCH, d, 2, "E");
	watch(EL_CMD_WATCH, d, 3, "L");
	acq(d, 4, "X", EL_LOCK_EXCLUSIVE, 0, 1000);
	acq(a, 3, "X", EL_LOCK_EXCLUSIVE, 300, 0);
	const uint64_t e = open_s("e", 1000);
	acq(e, 1, "D", EL_LOCK_EXCLUSIVE, 0, 2000);
	expire(e); /* leaves D delayed */
}

static void test_snapshot_roundtrip(void)
{
	el_lock_init(&T);
	EL_CHECK_EQ(snapshot_roundtrip(), 0); /* empty */
	build_busy_table();
	struct el_lock_usage u;
	el_lock_usage(&T, &u);
	EL_CHECK(u.holds >= 4 && u.waits >= 3 && u.watches == 2 && u.values == 2);
	EL_CHECK_EQ(query("D"), EL_OK);
	EL_CHECK(Q.delayed);
	EL_CHECK_EQ(snapshot_roundtrip(), 0);
	/* the restored table behaves the same: apply one more command to both */
	struct el_lock_cmd c = {.type = EL_CMD_CLOSE_SESSION, .session = 1};
	el_lock_apply_cmd(&T, next_index + 1, &c, &R);
	el_lock_apply_cmd(&T2, next_index + 1, &c, &R);
	EL_CHECK(memcmp(&T, &T2, sizeof(T)) == 0);
	EL_CHECK_EQ(el_lock_snapshot(&T, snap, 16), EL_EFULL);
}

static void test_determinism(void)
{
	build_busy_table();
	const int n = el_lock_snapshot(&T, snap2, sizeof(snap2));
	memcpy(&T2, &T, sizeof(T));
	build_busy_table(); /* the same commands again, from scratch */
	const int m = el_lock_snapshot(&T, snap, sizeof(snap));
	EL_CHECK(n > 0);
	EL_CHECK_EQ(n, m);
	EL_CHECK(memcmp(snap, snap2, (size_t)n) == 0);
	EL_CHECK(memcmp(&T, &T2, sizeof(T)) == 0);
}

static void test_restore_rejects(void)
{
	build_busy_table();
	const int n = el_lock_snapshot(&T, snap, sizeof(snap));
	EL_CHECK(n > 0);
	memcpy(snap2, snap, (size_t)n);
	el_lock_init(&T2);
	EL_CHECK_EQ(query("L"), EL_OK);
	const uint64_t before = T2.last_index;
	for (int cut = 0; cut < n; cut++) /* every truncation fails, T2 untouched */
		EL_CHECK(el_lock_restore(&T2, snap, (uint32_t)cut) != EL_OK);
	EL_CHECK_EQ(T2.last_index, before);
	/* trailing garbage */
	snap[n] = 0;
	EL_CHECK_EQ(el_lock_restore(&T, snap, (uint32_t)n + 1), EL_EDECODE);
	/* wrong version: byte 1 is the version */
	snap[1] = EL_LOCK_SNAPSHOT_VERSION + 1;
	EL_CHECK_EQ(el_lock_restore(&T, snap, (uint32_t)n), EL_EVERSION);
	snap[1] = EL_LOCK_SNAPSHOT_VERSION;
	/* byte flips: each either fails cleanly (table unchanged) or restores a
	 * table that snapshots to exactly the flipped bytes */
	memcpy(&T2, &T, sizeof(T));
	int rejected = 0;
	for (int i = 0; i < n; i++) {
		snap[i] ^= 0x5a;
		const int err = el_lock_restore(&T, snap, (uint32_t)n);
		if (err != EL_OK) {
			rejected++;
			EL_CHECK(memcmp(&T, &T2, sizeof(T)) == 0);
		} else {
			el_lock__check_invariants(&T); /* an accepted table is consistent */
			const int m = el_lock_snapshot(&T, snap2, sizeof(snap2));
			EL_CHECK_EQ(m, n);
			EL_CHECK(memcmp(snap, snap2, (size_t)n) == 0);
			memcpy(&T, &T2, sizeof(T));
		}
		snap[i] ^= 0x5a;
	}
	EL_CHECK(rejected > n / 2);
}

static void test_restore_rejects_bad_references(void)
{
	reset();
	const uint64_t a = open_s("a", 1000);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	const int n = el_lock_snapshot(&T, snap, sizeof(snap));
	EL_CHECK(n > 0);
	/* find the holder record [claim 0, session 0, ...] and point it at session 5 */
	int at = -1;
	for (int i = 0; i + 3 < n; i++)
		if (snap[i] == 0x87 && snap[i + 1] == 0 && snap[i + 2] == 0)
			at = i + 2;
	EL_CHECK(at > 0);
	snap[at] = 5;
	memcpy(&T2, &T, sizeof(T));
	EL_CHECK_EQ(el_lock_restore(&T, snap, (uint32_t)n), EL_EDECODE);
	EL_CHECK(memcmp(&T, &T2, sizeof(T)) == 0);
}

/* Snapshot the table as it is, then require that a restore refuses it and
 * leaves the table restored into untouched. */
static void expect_restore_refused(const struct el_lock_table *broken)
{
	const int n = el_lock_snapshot(broken, snap, sizeof(snap));
	EL_CHECK(n > 0);
	EL_CHECK_EQ(el_lock_snapshot_check(snap, (uint32_t)n, UINT64_MAX), EL_EDECODE);
	el_lock_init(&T2);
	EL_CHECK_EQ(el_lock_restore(&T2, snap, (uint32_t)n), EL_EDECODE);
	EL_CHECK_EQ(T2.last_index, 0u);
	EL_CHECK_EQ(T2.locks[0].name_len, 0u);
}

/* Tables no history can make are refused at restore (issue 8): a holder's
 * token above its lock's last token (fencing would go backwards after the
 * restore), and a waiter at the head of a queue it could be granted from. */
static void test_restore_refuses_inconsistent_tables(void)
{
	static struct el_lock_table broken;
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000);
	EL_CHECK_EQ(acq(a, 1, "L", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	EL_CHECK_EQ(acq(b, 1, "L", EL_LOCK_EXCLUSIVE, 5000, 0), EL_OK);
	EL_CHECK(R.queued);
	const el_slot_t l = el_lock__find(&T, "L", 1);
	const el_slot_t a_s = el_lock_session_slot(&T, a);
	const el_slot_t hold = el_lock__find_claim(&T, l, a_s, EL_CLAIM_HOLD);
	EL_CHECK(hold != EL_LOCK_NONE);
	/* the untouched table restores: the edits below are what is refused */
	int n = el_lock_snapshot(&T, snap, sizeof(snap));
	el_lock_init(&T2);
	EL_CHECK_EQ(el_lock_restore(&T2, snap, (uint32_t)n), EL_OK);
	/* 1. the holder's token above the lock's last token */
	memcpy(&broken, &T, sizeof(T));
	broken.locks[l].last_token = broken.claims[hold].token - 1;
	expect_restore_refused(&broken);
	/* 2. nobody holds L, yet b waits at the head of its queue */
	memcpy(&broken, &T, sizeof(T));
	memset(&broken.claims[hold], 0, sizeof(broken.claims[hold]));
	broken.locks[l].n_holders = 0;
#if EL_INDEXED
	broken.locks[l].holders = EL_LOCK_NONE;
#endif
	expect_restore_refused(&broken);
	/* 3. a shared waiter behind a shared holder, with room for more */
	reset();
	const uint64_t c = open_s("c", 1000), d = open_s("d", 1000);
	EL_CHECK_EQ(acq(c, 1, "S", EL_LOCK_SHARED, 0, 0), EL_OK);
	EL_CHECK_EQ(acq(d, 1, "S", EL_LOCK_EXCLUSIVE, 5000, 0), EL_OK);
	EL_CHECK(R.queued);
	const el_slot_t sl = el_lock__find(&T, "S", 1);
	memcpy(&broken, &T, sizeof(T));
	broken.claims[broken.locks[sl].wait_head].mode = EL_LOCK_SHARED;
	expect_restore_refused(&broken);
}

/* Patch the first occurrence of from[] in snap[0..n) to to[]; false if absent. */
static bool patch(int n, const uint8_t *from, const uint8_t *to, int len)
{
	for (int i = 0; i + len <= n; i++) {
		if (memcmp(snap + i, from, (size_t)len) == 0) {
			memcpy(snap + i, to, (size_t)len);
			return true;
		}
	}
	return false;
}

/* Two sessions with one id, or two locks with one name, are refused by the
 * check Raft runs and by restore, which leaves the table as it was (a
 * hostile leader's snapshot used to pass the check and then stop the node
 * in the invariant check: found by fuzz_snapshot). */
static void test_restore_refuses_duplicates(void)
{
	reset();
	const uint64_t a = open_s("a", 1000), b = open_s("b", 1000);
	EL_CHECK(a == 1 && b == 2); /* ids are entry indexes */
	EL_CHECK_EQ(acq(a, 1, "lk-a", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	EL_CHECK_EQ(acq(b, 1, "lk-b", EL_LOCK_EXCLUSIVE, 0, 0), EL_OK);
	int n = el_lock_snapshot(&T, snap, sizeof(snap));
	EL_CHECK(n > 0);
	/* session record [slot 1, id 2, ...] -> id 1 */
	EL_CHECK(patch(n, (const uint8_t[]){0x8a, 0x01, 0x02}, (const uint8_t[]){0x8a, 0x01, 0x01}, 3));
	EL_CHECK_EQ(el_lock_snapshot_check(snap, (uint32_t)n, UINT64_MAX), EL_EDECODE);
	memcpy(&T2, &T, sizeof(T));
	EL_CHECK_EQ(el_lock_restore(&T2, snap, (uint32_t)n), EL_EDECODE);
	EL_CHECK(memcmp(&T2, &T, sizeof(T)) == 0);
	n = el_lock_snapshot(&T, snap, sizeof(snap));
	/* lock "lk-b" -> "lk-a" */
	EL_CHECK(patch(n, (const uint8_t[]){0x64, 'l', 'k', '-', 'b'},
		       (const uint8_t[]){0x64, 'l', 'k', '-', 'a'}, 5));
	EL_CHECK_EQ(el_lock_snapshot_check(snap, (uint32_t)n, UINT64_MAX), EL_EDECODE);
	EL_CHECK_EQ(el_lock_restore(&T2, snap, (uint32_t)n), EL_EDECODE);
	EL_CHECK(memcmp(&T2, &T, sizeof(T)) == 0);
}

static void test_full_snapshot_bound(void)
{
	/* Fill sessions with longest client names, locks with longest names,
	 * and check the snapshot stays within the stated bound. */
	reset();
	struct el_lock_cmd c = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = UINT32_MAX};
	c.client_len = EL_CLIENT_NAME_MAX;
	memset(c.client, 'c', EL_CLIENT_NAME_MAX);
	for (int i = 0; i < EL_SESSIONS_MAX; i++)
		EL_CHECK_EQ(apply(&c), EL_OK);
	struct el_lock_cmd l = {.type = EL_CMD_CAMPAIGN, .session = 1, .wait_ms = 0};
	l.name_len = EL_NAME_MAX;
	memset(l.name, 'n', EL_NAME_MAX);
	l.value_len = EL_VALUE_MAX;
	for (int i = 0; i < EL_LOCKS_MAX && i < EL_CLAIMS_MAX; i++) {
		l.name[0] = (char)('A' + i % 26);
		l.name[1] = (char)('A' + (i / 26) % 26);
		l.seq = (uint64_t)i + 1;
		l.type = i < EL_VALUES_MAX ? EL_CMD_CAMPAIGN : EL_CMD_ACQUIRE;
		l.value_len = i < EL_VALUES_MAX ? EL_VALUE_MAX : 0;
		EL_CHECK_EQ(apply(&l), EL_OK);
	}
	const int n = el_lock_snapshot(&T, snap, sizeof(snap));
	EL_CHECK(n > 0 && n <= (int)EL_LOCK_SNAPSHOT_BOUND);
	EL_CHECK_EQ(snapshot_roundtrip(), 0);
}

/* ---- Random histories ----------------------------------------------------- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

/* Table invariants a valid history keeps; 0 when all hold. */
static int check_invariants(void)
{
	for (uint32_t l = 0; l < EL_LOCKS_MAX; l++) {
		const struct el_lock_entry *L = &T.locks[l];
		if (L->name_len == 0)
			continue;
		uint32_t holders = 0;
		for (uint32_t c = 0; c < EL_CLAIMS_MAX; c++)
			holders += T.claims[c].state == EL_CLAIM_HOLD && T.claims[c].lock == l;
		if (holders != L->n_holders)
			return 1;
		if (L->limit != 0) { /* a semaphore: at most N, and no free permit by a waiter */
			if (holders + L->delayed > L->limit)
				return 5;
			if (L->wait_head != EL_LOCK_NONE && holders + L->delayed < L->limit)
				return 6;
			continue;
		}
		if (L->mode == EL_LOCK_EXCLUSIVE && holders > 1)
			return 2;
		if (L->wait_head != EL_LOCK_NONE && !L->delayed &&
		    (holders == 0 || (T.claims[L->wait_head].mode == EL_LOCK_SHARED &&
				      L->mode == EL_LOCK_SHARED && holders < EL_HOLDERS_MAX)))
			return 3; /* a grantable head was left waiting */
		if (holders == 0 && L->wait_head == EL_LOCK_NONE && !L->delayed && L->n_watches == 0)
			return 4; /* an unused lock was not freed */
	}
	return 0;
}

/* Tokens of successive grants of one lock rise (shared grants of one entry
 * share theirs; a semaphore's, "c" when EL_SEMAPHORES, never do). last[] is
 * indexed by the lock's first letter. */
static uint64_t last_grant[3];

static int note_grant(const char *name, uint64_t token)
{
	const int k = name[0] - 'a';
	if (token < last_grant[k] || (token == last_grant[k] && token != next_index))
		return 1;
	if (EL_SEMAPHORES && k == 2 && token == last_grant[k])
		return 1;
	last_grant[k] = token;
	return 0;
}

static int note_result(const char *name, int was_acquire)
{
	/* a new grant (not a re-entry or a campaign by the leader) */
	const int granted = was_acquire && R.err == EL_OK && !R.queued && R.count == 1 &&
			    R.token == next_index;
	if (granted && note_grant(name, R.token))
		return 1;
	for (int i = 0; i < R.n_events; i++)
		if (R.events[i].kind == EL_EV_GRANTED && note_grant(R.events[i].name, R.events[i].token))
			return 1;
	return 0;
}

/* A random claim of session s on name (holding or waiting), or NULL. */
static const struct el_lock_claim *claim_of(uint64_t s, const char *name, uint8_t state)
{
	const el_slot_t slot = el_lock_session_slot(&T, s);
	for (uint32_t c = 0; slot != EL_LOCK_NONE && c < EL_CLAIMS_MAX; c++) {
		const struct el_lock_claim *C = &T.claims[c];
		if (C->state == state && C->session == slot && T.locks[C->lock].name[0] == name[0])
			return C;
	}
	return NULL;
}

/* One random command; returns 1 when it was an acquire or campaign on *name_out. */
static int random_step(uint64_t *sessions, uint64_t *seqs, int n_sessions, const char **name_out)
{
	static const char *names[3] = {"a", "b", "c"};
	const int k = (int)rnd((uint32_t)n_sessions);
	const char *name = names[rnd(3)];
	*name_out = name;
	const uint64_t s = sessions[k];
	const struct el_lock_claim *held = claim_of(s, name, EL_CLAIM_HOLD);
	const struct el_lock_claim *waits = claim_of(s, name, EL_CLAIM_WAIT);
	static const uint32_t waits_ms[3] = {0, 100, EL_WAIT_FOREVER};
	switch (rnd(10)) {
	case 0: case 1: case 2:
		if (EL_SEMAPHORES && name[0] == 'c') { /* "c" is a semaphore of 2 */
			struct el_lock_cmd c = {.type = EL_CMD_ACQUIRE, .session = s, .seq = ++seqs[k],
						.limit = EL_SEMAPHORES * 2, .wait_ms = waits_ms[rnd(3)],
						.delay_ms = rnd(2) * 500, .name_len = 1};
			c.name[0] = 'c';
			apply(&c);
			return 1;
		}
		acq(s, ++seqs[k], name, (uint8_t)rnd(2), waits_ms[rnd(3)], rnd(2) * 500);
		return 1;
	case 3: case 4:
		rel(s, ++seqs[k], name, held ? held->token : 1);
		break;
	case 5:
		if (waits) {
			wait_timeout(s, waits->seq, name);
			break;
		}
		campaign(s, ++seqs[k], name, "v", waits_ms[rnd(3)]);
		return 1;
	case 6:
		if (query(name) == EL_OK && Q.delayed)
			delay_end(name, Q.delay_token);
		else
			watch(rnd(2) ? EL_CMD_WATCH : EL_CMD_UNWATCH, s, ++seqs[k], name);
		break;
	case 7:
		session_cmd(EL_CMD_KEEPALIVE, s, 0);
		break;
	default:
		if (rnd(2))
			expire(s);
		else
			session_cmd(EL_CMD_CLOSE_SESSION, s, 0);
		sessions[k] = open_s("r", 1000);
		seqs[k] = 0;
		return 0;
	}
	return 0;
}

static void test_random_histories(void)
{
	for (uint64_t seed = 1; seed <= 8; seed++) {
		reset();
		rng_state = seed * 0x9E3779B97F4A7C15ull;
		memset(last_grant, 0, sizeof(last_grant));
		uint64_t sessions[6], seqs[6] = {0};
		for (int i = 0; i < 6; i++)
			sessions[i] = open_s("r", 1000);
		for (int step = 0; step < 400; step++) {
			const uint64_t before = next_index;
			const char *name = "a";
			const int acquired = random_step(sessions, seqs, 6, &name);
			if (next_index == before)
				continue;
			EL_CHECK(sessions[0] != 0);
			EL_CHECK_EQ(note_result(name, acquired), 0);
			EL_CHECK_EQ(check_invariants(), 0);
			if (step % 40 == 0)
				EL_CHECK_EQ(snapshot_roundtrip(), 0);
		}
		EL_CHECK_EQ(snapshot_roundtrip(), 0);
	}
}

void el_suite_lock(void);
void el_suite_lock(void)
{
	EL_RUN(test_cmd_roundtrip);
	EL_RUN(test_cmd_decode_rejects);
	EL_RUN(test_malformed_entry_is_noop);
	EL_RUN(test_session_open_keepalive_close);
	EL_RUN(test_sessions_full);
	EL_RUN(test_expire_stale_renewal);
	EL_RUN(test_acquire_release_exclusive);
	EL_RUN(test_reentrant);
	EL_RUN(test_shared_and_no_barging);
	EL_RUN(test_shared_holder_limit);
	EL_RUN(test_fifo_grants);
	EL_RUN(test_tokens_rise_across_locks);
	EL_RUN(test_wait_timeout);
	EL_RUN(test_close_releases_and_cancels);
	EL_RUN(test_expire_lock_delay);
	EL_RUN(test_expire_without_delay_and_shared);
	EL_RUN(test_delay_is_capped);
	EL_RUN(test_exactly_once);
	EL_RUN(test_election);
	EL_RUN(test_watch_unwatch);
	EL_RUN(test_watch_token_is_newest_held);
	EL_RUN(test_locks_full);
	EL_RUN(test_waiters_and_watches_full);
	EL_RUN(test_values_full);
	EL_RUN(test_event_overflow);
	EL_RUN(test_query);
	EL_RUN(test_snapshot_roundtrip);
	EL_RUN(test_determinism);
	EL_RUN(test_restore_rejects);
	EL_RUN(test_restore_rejects_bad_references);
	EL_RUN(test_restore_refuses_inconsistent_tables);
	EL_RUN(test_restore_refuses_duplicates);
	EL_RUN(test_full_snapshot_bound);
	EL_RUN(test_random_histories);
}
