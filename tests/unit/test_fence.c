/*
 * test_fence.c - unit tests of the fence kit (core/fence.c): stale tokens
 * refused with nothing changed, equal tokens accepted, higher tokens
 * recorded durably before they are accepted, a failed record refusing the
 * request, a restart from the recorded token, and the top of the 64-bit
 * range with no wrap. Runs on the host and on every board under QEMU.
 */
#include <stdint.h>

#include "el_config.h"
#include "el_error.h"
#include "el_fence.h"
#include "el_test.h"

/* A stand-in for a resource's storage: what was made durable, in order. */
struct store {
	uint64_t durable;  /* the last highest recorded */
	uint32_t writes;   /* persist calls */
	int fail_next;     /* an error the next call returns, 0: none */
};

static int save_highest(void *ctx, uint64_t highest)
{
	struct store *s = ctx;
	s->writes++;
	if (s->fail_next != 0) {
		const int err = s->fail_next;
		s->fail_next = 0;
		return err;
	}
	s->durable = highest;
	return EL_OK;
}

static void test_fence_first_token_and_order(void)
{
	struct store s = {0};
	struct el_fence f;
	el_fence_init(&f, 0, save_highest, &s);
	EL_CHECK_EQ(el_fence_highest(&f), 0);
	EL_CHECK_EQ(el_fence_accept(&f, 7), EL_OK);
	EL_CHECK_EQ(el_fence_highest(&f), 7);
	EL_CHECK_EQ(s.durable, 7);
	EL_CHECK_EQ(el_fence_accept(&f, 12), EL_OK);
	EL_CHECK_EQ(el_fence_highest(&f), 12);
	EL_CHECK_EQ(s.durable, 12);
	EL_CHECK_EQ(s.writes, 2);
}

static void test_fence_stale_token_refused_nothing_changes(void)
{
	struct store s = {0};
	struct el_fence f;
	el_fence_init(&f, 0, save_highest, &s);
	EL_CHECK_EQ(el_fence_accept(&f, 20), EL_OK);
	const uint32_t writes = s.writes;
	EL_CHECK_EQ(el_fence_accept(&f, 19), EL_ESTALE);
	EL_CHECK_EQ(el_fence_accept(&f, 1), EL_ESTALE);
	EL_CHECK_EQ(el_fence_check(&f, 19), EL_ESTALE);
	EL_CHECK_EQ(el_fence_highest(&f), 20);
	EL_CHECK_EQ(s.durable, 20);
	EL_CHECK_EQ(s.writes, writes); /* a refusal records nothing */
}

/* The same holder writing twice, or shared holders of one grant. */
static void test_fence_equal_token_accepted_without_a_write(void)
{
	struct store s = {0};
	struct el_fence f;
	el_fence_init(&f, 0, save_highest, &s);
	EL_CHECK_EQ(el_fence_accept(&f, 33), EL_OK);
	EL_CHECK_EQ(el_fence_accept(&f, 33), EL_OK);
	EL_CHECK_EQ(el_fence_accept(&f, 33), EL_OK);
	EL_CHECK_EQ(s.writes, 1);
	EL_CHECK_EQ(el_fence_highest(&f), 33);
}

static void test_fence_check_does_not_advance(void)
{
	struct store s = {0};
	struct el_fence f;
	el_fence_init(&f, 5, save_highest, &s);
	EL_CHECK_EQ(el_fence_check(&f, 9), EL_OK);
	EL_CHECK_EQ(el_fence_check(&f, 5), EL_OK);
	EL_CHECK_EQ(el_fence_highest(&f), 5);
	EL_CHECK_EQ(s.writes, 0);
	EL_CHECK_EQ(el_fence_accept(&f, 4), EL_ESTALE); /* 9 was only checked */
	EL_CHECK_EQ(el_fence_accept(&f, 6), EL_OK);
}

/* A record that fails must refuse the request: accepting a token that a
 * restart would forget could let an older holder back in afterwards. */
static void test_fence_failed_record_refuses(void)
{
	struct store s = {0};
	struct el_fence f;
	el_fence_init(&f, 0, save_highest, &s);
	EL_CHECK_EQ(el_fence_accept(&f, 10), EL_OK);
	s.fail_next = EL_EIO;
	EL_CHECK_EQ(el_fence_accept(&f, 11), EL_EIO);
	EL_CHECK_EQ(el_fence_highest(&f), 10);
	EL_CHECK_EQ(s.durable, 10);
	s.fail_next = EL_ENOSPC; /* the hook's own code comes back */
	EL_CHECK_EQ(el_fence_accept(&f, 11), EL_ENOSPC);
	s.fail_next = 3; /* a hook breaking its contract still refuses */
	EL_CHECK_EQ(el_fence_accept(&f, 11), EL_EIO);
	EL_CHECK_EQ(el_fence_highest(&f), 10);
	EL_CHECK_EQ(el_fence_accept(&f, 11), EL_OK); /* storage back */
	EL_CHECK_EQ(s.durable, 11);
}

/* After a restart the fence starts from what was recorded: a holder fenced
 * off before the restart stays fenced off. */
static void test_fence_restart_keeps_the_fence(void)
{
	struct store s = {0};
	struct el_fence f;
	el_fence_init(&f, 0, save_highest, &s);
	EL_CHECK_EQ(el_fence_accept(&f, 40), EL_OK);
	EL_CHECK_EQ(el_fence_accept(&f, 55), EL_OK);
	struct el_fence g; /* the resource after a power cut */
	el_fence_init(&g, s.durable, save_highest, &s);
	EL_CHECK_EQ(el_fence_accept(&g, 40), EL_ESTALE);
	EL_CHECK_EQ(el_fence_accept(&g, 55), EL_OK);
	EL_CHECK_EQ(el_fence_accept(&g, 56), EL_OK);
	EL_CHECK_EQ(s.durable, 56);
}

static void test_fence_without_persistence(void)
{
	struct el_fence f;
	el_fence_init(&f, 0, NULL, NULL);
	EL_CHECK_EQ(el_fence_accept(&f, 3), EL_OK);
	EL_CHECK_EQ(el_fence_accept(&f, 2), EL_ESTALE);
	EL_CHECK_EQ(el_fence_highest(&f), 3);
}

static void test_fence_token_zero_invalid(void)
{
	struct store s = {0};
	struct el_fence f;
	el_fence_init(&f, 0, save_highest, &s);
	EL_CHECK_EQ(el_fence_accept(&f, 0), EL_EINVAL);
	EL_CHECK_EQ(el_fence_check(&f, 0), EL_EINVAL);
	EL_CHECK_EQ(s.writes, 0);
	EL_CHECK_EQ(el_fence_highest(&f), 0);
}

/* Tokens are Raft indexes, at most EL_INDEX_MAX: the top of that range
 * fences off everything below it, however far below; a token above it no
 * grant carries is refused and changes nothing (it would fence off every
 * real token for good). */
static void test_fence_top_of_range(void)
{
	struct store s = {0};
	struct el_fence f;
	el_fence_init(&f, EL_INDEX_MAX - 1, save_highest, &s);
	EL_CHECK_EQ(el_fence_accept(&f, 1), EL_ESTALE);
	EL_CHECK_EQ(el_fence_accept(&f, EL_INDEX_MAX + 1), EL_EINVAL);
	EL_CHECK_EQ(el_fence_accept(&f, UINT64_MAX), EL_EINVAL);
	EL_CHECK_EQ(el_fence_check(&f, UINT64_MAX), EL_EINVAL);
	EL_CHECK_EQ(s.writes, 0);
	EL_CHECK_EQ(el_fence_accept(&f, EL_INDEX_MAX), EL_OK);
	EL_CHECK_EQ(s.durable, EL_INDEX_MAX);
	EL_CHECK_EQ(el_fence_accept(&f, EL_INDEX_MAX), EL_OK);
	EL_CHECK_EQ(el_fence_accept(&f, EL_INDEX_MAX - 1), EL_ESTALE);
	EL_CHECK_EQ(el_fence_accept(&f, 0), EL_EINVAL);
	EL_CHECK_EQ(el_fence_highest(&f), EL_INDEX_MAX);
}

void el_suite_fence(void)
{
	EL_RUN(test_fence_first_token_and_order);
	EL_RUN(test_fence_stale_token_refused_nothing_changes);
	EL_RUN(test_fence_equal_token_accepted_without_a_write);
	EL_RUN(test_fence_check_does_not_advance);
	EL_RUN(test_fence_failed_record_refuses);
	EL_RUN(test_fence_restart_keeps_the_fence);
	EL_RUN(test_fence_without_persistence);
	EL_RUN(test_fence_token_zero_invalid);
	EL_RUN(test_fence_top_of_range);
}
