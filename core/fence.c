/*
 * fence.c - the fence kit (el_fence.h): a resource's highest accepted
 * fencing token, checked and advanced per request, recorded durably before
 * a higher token is accepted.
 */
#include <stddef.h>

#include "el_assert.h"
#include "el_config.h"
#include "el_error.h"
#include "el_fence.h"

void el_fence_init(struct el_fence *f, uint64_t restored_highest, el_fence_persist_fn persist,
		   void *ctx)
{
	EL_ASSERT(f != NULL);
	f->highest = restored_highest;
	f->persist = persist;
	f->ctx = ctx;
}

int el_fence_check(const struct el_fence *f, uint64_t token)
{
	EL_ASSERT(f != NULL);
	/* No grant carries 0 or a token past EL_INDEX_MAX (a token is the Raft
	 * index of its grant): accepting one would fence off every real token
	 * for good, on the word of one bad request. */
	if (token == 0 || token > EL_INDEX_MAX)
		return EL_EINVAL;
	return token < f->highest ? EL_ESTALE : EL_OK;
}

int el_fence_accept(struct el_fence *f, uint64_t token)
{
	const int err = el_fence_check(f, token);
	if (err != EL_OK || token == f->highest)
		return err;
	/* A higher token: durable first, so a restart can never fall back
	 * below a token this resource already acted on. */
	if (f->persist != NULL) {
		const int perr = f->persist(f->ctx, token);
		if (perr != EL_OK)
			return perr < 0 ? perr : EL_EIO;
	}
	const uint64_t before = f->highest;
	f->highest = token;
	EL_ASSERT(f->highest > before); /* the fence only ever moves up */
	return EL_OK;
}

uint64_t el_fence_highest(const struct el_fence *f)
{
	EL_ASSERT(f != NULL);
	return f->highest;
}
