/*
 * fence_link.c - the fence kit (core/el_fence.h) as a C user gets it: this
 * program includes edgelock.h and el_fence.h and links
 * build/lib/libedgelock.a alone (no libedgelock_core.a, no core/fence.c;
 * mk/client.mk, `make test-lib-fence`). Its checks are the kit's rules in
 * brief; tests/unit/test_fence.c holds the rest.
 */
#include <stdint.h>
#include <string.h>

#include "edgelock.h"
#include "el_fence.h"
#include "el_test.h"

EL_TEST_MAIN_DEFINITIONS

/* The persistence hook: what a resource would fsync. */
static int save(void *ctx, uint64_t highest)
{
	*(uint64_t *)ctx = highest;
	return EL_OK;
}

static void test_accept_and_refuse(void)
{
	uint64_t saved = 0;
	struct el_fence f;
	el_fence_init(&f, 0, save, &saved);
	EL_CHECK_EQ(el_fence_accept(&f, 7), EL_OK);
	EL_CHECK_EQ(saved, 7);
	EL_CHECK_EQ(el_fence_accept(&f, 7), EL_OK); /* the same holder again */
	EL_CHECK_EQ(el_fence_check(&f, 6), EL_ESTALE);
	EL_CHECK_EQ(el_fence_accept(&f, 6), EL_ESTALE);
	EL_CHECK_EQ(el_fence_accept(&f, 0), EL_EINVAL);
	EL_CHECK_EQ(el_fence_highest(&f), 7);
	/* the library's el_strerror names the kit's refusal too */
	EL_CHECK(strlen(el_strerror(EL_ESTALE)) > 0);
}

static void test_restored(void)
{
	struct el_fence f;
	el_fence_init(&f, 40, NULL, NULL);
	EL_CHECK_EQ(el_fence_accept(&f, 39), EL_ESTALE);
	EL_CHECK_EQ(el_fence_accept(&f, 41), EL_OK);
	EL_CHECK_EQ(el_fence_highest(&f), 41);
}

int main(void)
{
	EL_RUN(test_accept_and_refuse);
	EL_RUN(test_restored);
	return el_test_end();
}
