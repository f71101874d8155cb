/*
 * test_lock_open.c - exactly-once OPEN_SESSION (core/lock_open.c): a retried
 * open, carrying the nonce of its first attempt, returns the session that
 * attempt created and creates no second one, also across a snapshot and
 * restore; the table of recent opens is bounded. Commands go through their
 * byte encoding, as they do in the log. Static buffers only.
 */
#include <string.h>

#include "el_error.h"
#include "el_lock.h"
#include "el_test.h"

static struct el_lock_table OT;
static struct el_lock_result OR;
static uint8_t osnap[2048]; /* these tables are small (the target is tight) */
static uint64_t oindex;

static int oapply(struct el_lock_table *t, const struct el_lock_cmd *c)
{
	uint8_t buf[EL_ENTRY_DATA_MAX];
	struct el_lock_cmd back;
	const int n = el_lock_cmd_encode(c, buf, sizeof(buf));
	if (n < 0)
		return -1000 + n; /* a test bug: never a lock error code */
	if (el_lock_cmd_decode(&back, buf, (uint32_t)n) != EL_OK || back.nonce != c->nonce)
		return -2000; /* the nonce did not survive the codec */
	el_lock_apply(t, ++oindex, buf, (uint32_t)n, &OR);
	return OR.err;
}

static struct el_lock_cmd open_cmd(uint64_t nonce)
{
	struct el_lock_cmd c = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = 1000, .nonce = nonce};
	c.client_len = 2;
	memcpy(c.client, "cl", 2);
	return c;
}

static uint32_t sessions_in(const struct el_lock_table *t)
{
	struct el_lock_usage u;
	el_lock_usage(t, &u);
	return u.sessions;
}

static void test_retried_open_returns_same_session(void)
{
	el_lock_init(&OT);
	oindex = 0;
	const struct el_lock_cmd first = open_cmd(0x1234567890abcdefull);
	EL_CHECK_EQ(oapply(&OT, &first), EL_OK);
	const uint64_t s = OR.session;
	EL_CHECK(s != 0);
	/* the first answer was lost; the client sends the same open again */
	EL_CHECK_EQ(oapply(&OT, &first), EL_OK);
	EL_CHECK_EQ(OR.session, s);
	EL_CHECK_EQ(oapply(&OT, &first), EL_OK);
	EL_CHECK_EQ(OR.session, s);
	EL_CHECK_EQ(sessions_in(&OT), 1);
	/* another open (another nonce) is another session */
	const struct el_lock_cmd other = open_cmd(42);
	EL_CHECK_EQ(oapply(&OT, &other), EL_OK);
	EL_CHECK(OR.session != s);
	EL_CHECK_EQ(sessions_in(&OT), 2);
}

/* The table travels in snapshots: a retry applied on a replica restored
 * from a snapshot (a new leader, a restarted node) gets the same answer. */
static void test_retry_after_restore(void)
{
	el_lock_init(&OT);
	oindex = 0;
	const struct el_lock_cmd first = open_cmd(7);
	EL_CHECK_EQ(oapply(&OT, &first), EL_OK);
	const uint64_t s = OR.session;
	const struct el_lock_opens before = OT.opens;
	const int n = el_lock_snapshot(&OT, osnap, sizeof(osnap));
	EL_CHECK(n > 0);
	el_lock_init(&OT); /* a fresh replica */
	EL_CHECK_EQ(el_lock_restore(&OT, osnap, (uint32_t)n), EL_OK);
	EL_CHECK(memcmp(&OT.opens, &before, sizeof(before)) == 0);
	EL_CHECK_EQ(oapply(&OT, &first), EL_OK);
	EL_CHECK_EQ(OR.session, s);
	EL_CHECK_EQ(sessions_in(&OT), 1);
}

/* A retry whose session has ended since learns that, and opens nothing. */
static void test_retry_after_expiry(void)
{
	el_lock_init(&OT);
	oindex = 0;
	const struct el_lock_cmd first = open_cmd(99);
	EL_CHECK_EQ(oapply(&OT, &first), EL_OK);
	const uint64_t s = OR.session;
	const struct el_lock_cmd exp = {.type = EL_CMD_EXPIRE_SESSION, .session = s, .token = s};
	EL_CHECK_EQ(oapply(&OT, &exp), EL_OK);
	EL_CHECK_EQ(sessions_in(&OT), 0);
	EL_CHECK_EQ(oapply(&OT, &first), EL_EEXPIRED);
	EL_CHECK_EQ(sessions_in(&OT), 0);
}

/* The table is bounded: it remembers the last EL_OPENS_MAX opens, oldest
 * forgotten first, and a snapshot of a wrapped ring restores the same. */
static void test_opens_bounded(void)
{
	el_lock_init(&OT);
	oindex = 0;
	uint32_t opened = 0;
	const struct el_lock_cmd first = open_cmd(1000);
	EL_CHECK_EQ(oapply(&OT, &first), EL_OK);
	const uint64_t s = OR.session;
	for (uint64_t k = 1; k <= EL_OPENS_MAX; k++) {
		const struct el_lock_cmd c = open_cmd(1000 + k);
		opened += oapply(&OT, &c) == EL_OK;
		const struct el_lock_cmd close = {.type = EL_CMD_CLOSE_SESSION, .session = OR.session};
		EL_CHECK_EQ(oapply(&OT, &close), EL_OK);
	}
	EL_CHECK_EQ(opened, EL_OPENS_MAX);
	EL_CHECK_EQ(OT.opens.n, EL_OPENS_MAX);
	const struct el_lock_opens before = OT.opens;
	const int n = el_lock_snapshot(&OT, osnap, sizeof(osnap));
	EL_CHECK(n > 0);
	el_lock_init(&OT);
	EL_CHECK_EQ(el_lock_restore(&OT, osnap, (uint32_t)n), EL_OK);
	EL_CHECK(memcmp(&OT.opens, &before, sizeof(before)) == 0);
	/* the newest is still remembered (its session is closed) */
	const struct el_lock_cmd last = open_cmd(1000 + EL_OPENS_MAX);
	EL_CHECK_EQ(oapply(&OT, &last), EL_EEXPIRED);
	/* the first open was forgotten: its retry opens a new session */
	EL_CHECK_EQ(oapply(&OT, &first), EL_OK);
	EL_CHECK(OR.session != s);
}

/* A nonce belongs to OPEN_SESSION only. */
static void test_nonce_only_on_open(void)
{
	uint8_t buf[EL_ENTRY_DATA_MAX];
	struct el_lock_cmd c = {.type = EL_CMD_KEEPALIVE, .session = 5, .nonce = 3};
	EL_CHECK_EQ(el_lock_cmd_check(&c), EL_EINVAL);
	EL_CHECK_EQ(el_lock_cmd_encode(&c, buf, sizeof(buf)), EL_EINVAL);
}

void el_suite_lock_open(void)
{
	EL_RUN(test_retried_open_returns_same_session);
	EL_RUN(test_retry_after_restore);
	EL_RUN(test_retry_after_expiry);
	EL_RUN(test_opens_bounded);
	EL_RUN(test_nonce_only_on_open);
}
