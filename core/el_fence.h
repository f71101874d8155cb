/*
 * el_fence.h - the fence kit: what a resource guarded by an edgelock lock
 * runs so that a stale holder cannot harm it (Kleppmann's fencing tokens,
 * Chubby's sequencers).
 *
 * A lock holder can lose its lock without knowing it yet (a pause longer
 * than its lease, a partition), and its late write then races the new
 * holder's. Every grant carries a fencing token, the Raft index of the entry
 * that granted it: strictly larger for every later grant of the lock. The
 * resource keeps the highest token it has accepted and refuses any request
 * that carries a lower one, so once the new holder has written, the old
 * holder's writes are refused, however late they arrive.
 *
 *   struct el_fence f;
 *   el_fence_init(&f, highest_from_storage, save_highest, &storage);
 *   ...on each request with a token:
 *   if (el_fence_accept(&f, token) != EL_OK) refuse the request;
 *   else perform it (the token is recorded before it returns);
 *
 * Rules, one per question a resource must answer:
 *   - a lower token than the highest accepted: EL_ESTALE, nothing changes;
 *   - the same token: accepted (the same holder writing again, or shared
 *     holders granted by one entry, which share its token);
 *   - a higher token: recorded through the persistence hook first, and
 *     accepted only when the hook succeeded, so after a restart the resource
 *     never accepts a token it had already fenced off; a hook failure is
 *     returned (EL_EIO or the hook's own code) and nothing changes;
 *   - token 0, or one above EL_INDEX_MAX (2^62, el_config.h), is never a
 *     grant's token: EL_EINVAL, nothing changes (one bad request cannot
 *     fence every real token off).
 * Tokens are compared as unsigned 64-bit numbers: no wrap is possible (a
 * cluster never appends past EL_INDEX_MAX).
 *
 * One struct per guarded resource; not thread-safe (a resource serialises its
 * writes anyway: call under the same mutex). Freestanding like the core:
 * no allocation, no libc I/O, usable in firmware and on Linux.
 */
#ifndef EL_FENCE_H
#define EL_FENCE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Make highest durable before returning 0 (an fsync, a flash write), or
 * return a negative EL_E* code. Called only with a token above every one
 * recorded before. */
typedef int (*el_fence_persist_fn)(void *ctx, uint64_t highest);

struct el_fence {
	uint64_t highest;            /* highest token accepted; 0: none yet */
	el_fence_persist_fn persist; /* NULL: a fence that forgets on restart */
	void *ctx;
};

/* Start from the highest token a previous run recorded (0 for a new
 * resource). persist may be NULL. */
void el_fence_init(struct el_fence *f, uint64_t restored_highest, el_fence_persist_fn persist,
		   void *ctx);
/* Would a request with this token be accepted? Changes nothing. */
int el_fence_check(const struct el_fence *f, uint64_t token);
/* Check and advance: EL_OK when the request may go ahead, EL_ESTALE for a
 * token below the highest accepted, EL_EINVAL for 0 or a token above
 * EL_INDEX_MAX, or the hook's error. */
int el_fence_accept(struct el_fence *f, uint64_t token);
/* The highest token accepted so far (0: none). */
uint64_t el_fence_highest(const struct el_fence *f);

#ifdef __cplusplus
}
#endif

#endif /* EL_FENCE_H */
