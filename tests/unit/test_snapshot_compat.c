/*
 * test_snapshot_compat.c - a snapshot of the release before semaphores
 * (version 2, snapshot_v2.h, bytes written by that release) restores on
 * this one with every lock, holder, waiter, token and lock-delay as it was,
 * and is written back as version 3; on a profile built without
 * EL_SNAPSHOT_READS_V2 it is refused as another version, changing nothing.
 */
#include <string.h>

#include "el_error.h"
#include "el_lock.h"
#include "el_test.h"
#include "snapshot_v2.h"

static struct el_lock_table T, T2;
static struct el_lock_query Q;
static uint8_t snap[EL_SNAPSHOT_MAX], snap2[EL_SNAPSHOT_MAX];

#if EL_SNAPSHOT_READS_V2

static void test_v2_restores_as_it_was(void)
{
	el_lock_init(&T);
	EL_CHECK_EQ(el_lock_snapshot_check(snapshot_v2, sizeof(snapshot_v2), 9), EL_OK);
	EL_CHECK_EQ(el_lock_restore(&T, snapshot_v2, sizeof(snapshot_v2)), EL_OK);
	EL_CHECK_EQ(T.last_index, 9);
	EL_CHECK_EQ(el_lock_query(&T, "pump", 4, &Q), EL_OK);
	EL_CHECK_EQ(Q.limit, 0);
	EL_CHECK_EQ(Q.mode, EL_LOCK_EXCLUSIVE);
	EL_CHECK_EQ(Q.n_holders, 1);
	EL_CHECK_EQ(Q.holders[0].session, 1);
	EL_CHECK_EQ(Q.holders[0].token, 4);
	EL_CHECK_EQ(Q.n_waiters, 1);
	EL_CHECK_EQ(Q.waiters[0].session, 2);
	EL_CHECK_EQ(el_lock_query(&T, "cfg", 3, &Q), EL_OK);
	EL_CHECK_EQ(Q.mode, EL_LOCK_SHARED);
	EL_CHECK_EQ(Q.n_holders, 1); /* dev-c's share ended with its session */
	EL_CHECK_EQ(Q.holders[0].session, 1);
	EL_CHECK_EQ(el_lock_query(&T, "valve", 5, &Q), EL_OK);
	EL_CHECK(Q.delayed);
	EL_CHECK_EQ(Q.n_delayed, 1);
	EL_CHECK_EQ(Q.n_holders, 0);
	EL_CHECK_EQ(Q.delay_token, 8); /* the expired hold's token */
	/* written back in this release's format, and that restores the same */
	const int n = el_lock_snapshot(&T, snap, sizeof(snap));
	EL_CHECK(n > 0);
	EL_CHECK_EQ(snap[0], 0x86);
	EL_CHECK_EQ(snap[1], EL_LOCK_SNAPSHOT_VERSION);
	el_lock_init(&T2);
	EL_CHECK_EQ(el_lock_restore(&T2, snap, (uint32_t)n), EL_OK);
	EL_CHECK_EQ(el_lock_snapshot(&T2, snap2, sizeof(snap2)), n);
	EL_CHECK(memcmp(snap, snap2, (size_t)n) == 0);
}

/* Every byte of the version 2 snapshot changed in turn: restore either
 * refuses it (the table untouched) or takes a consistent table; never a
 * crash, and a version 2 record is never read as version 3 or back. */
static void test_v2_damaged_is_refused_or_consistent(void)
{
	uint8_t buf[sizeof(snapshot_v2)];
	int refused = 0;
	for (uint32_t i = 0; i < sizeof(buf); i++) {
		memcpy(buf, snapshot_v2, sizeof(buf));
		buf[i] ^= 0x01;
		el_lock_init(&T2);
		const int rc = el_lock_restore(&T2, buf, sizeof(buf));
		EL_CHECK(rc == EL_OK || rc == EL_EDECODE || rc == EL_EVERSION);
		refused += rc != EL_OK;
		if (rc != EL_OK)
			EL_CHECK_EQ(T2.last_index, 0);
	}
	EL_CHECK(refused > (int)sizeof(buf) / 2);
	/* version 2 bytes labelled version 3 do not pass as version 3 */
	memcpy(buf, snapshot_v2, sizeof(buf));
	buf[1] = EL_LOCK_SNAPSHOT_VERSION;
	EL_CHECK_EQ(el_lock_restore(&T2, buf, sizeof(buf)), EL_EDECODE);
}

#else

static void test_v2_refused_without_the_reader(void)
{
	el_lock_init(&T);
	EL_CHECK_EQ(el_lock_restore(&T, snapshot_v2, sizeof(snapshot_v2)), EL_EVERSION);
	EL_CHECK_EQ(T.last_index, 0);
}

#endif

void el_suite_snapshot_compat(void)
{
#if EL_SNAPSHOT_READS_V2
	EL_RUN(test_v2_restores_as_it_was);
	EL_RUN(test_v2_damaged_is_refused_or_consistent);
#else
	EL_RUN(test_v2_refused_without_the_reader);
#endif
	(void)snap;
	(void)snap2;
	(void)T2;
	(void)Q;
}
