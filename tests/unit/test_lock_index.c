/*
 * test_lock_index.c - where the lock table finds things (core/lock_index.c),
 * tested directly: the lowest free slot and the slots in use of a pool, the
 * lock of a name and the session of an id, through inserts, deletions,
 * collisions (runs that wrap around the bucket array), a full table, reuse
 * of freed slots, and the same layout after the same history on two
 * replicas. Run with and without EL_INDEXED (suites unit and unit-linear):
 * what the scans and the indexes must agree on is checked in both builds,
 * the buckets and bitmaps themselves only where they exist.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "el_error.h"
#include "el_lock_internal.h"
#include "el_test.h"

static struct el_lock_table IA, IB;
static struct el_lock_result IR;
static uint64_t ia_index, ib_index;

static int run(struct el_lock_table *t, uint64_t *index, const struct el_lock_cmd *c)
{
	el_lock_apply_cmd(t, ++*index, c, &IR);
	return IR.err;
}

/* A new session's id; 0 when the open failed. */
static uint64_t open_on(struct el_lock_table *t, uint64_t *index)
{
	struct el_lock_cmd c = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = 1000};
	return run(t, index, &c) == EL_OK ? IR.session : 0;
}

static int lock_cmd(struct el_lock_table *t, uint64_t *index, uint8_t type, uint64_t s,
		    uint64_t seq, const char *name, uint64_t token)
{
	struct el_lock_cmd c = {.type = type, .session = s, .seq = seq, .token = token};
	c.name_len = (uint8_t)strlen(name);
	memcpy(c.name, name, c.name_len);
	return run(t, index, &c);
}

static void name_of(char *buf, size_t cap, const char *prefix, uint32_t i)
{
	snprintf(buf, cap, "%s%u", prefix, (unsigned)i);
}

static void reset_both(uint64_t key_a, uint64_t key_b)
{
	el_lock_init(&IA);
	el_lock_init(&IB);
	IA.index_key = key_a;
	IB.index_key = key_b;
	ia_index = ib_index = 0;
}

/* Every lock of a full table is found in its slot; freeing every other one
 * keeps the rest findable; new names take the freed slots, lowest first. */
static void test_fill_delete_reuse(void)
{
	char name[16];
	reset_both(0x1234, 0);
	const uint64_t s = open_on(&IA, &ia_index);
	EL_CHECK(s != 0);
	uint64_t seq = 0;
	for (uint32_t i = 0; i < EL_LOCKS_MAX; i++) {
		name_of(name, sizeof(name), "k", i);
		EL_CHECK_EQ(lock_cmd(&IA, &ia_index, EL_CMD_ACQUIRE, s, ++seq, name, 0), EL_OK);
		EL_CHECK_EQ(el_lock__find(&IA, name, (uint32_t)strlen(name)), (el_slot_t)i);
	}
	EL_CHECK_EQ(el_lock__lowest_free(&IA, EL_POOL_LOCKS), EL_LOCK_NONE);
	EL_CHECK_EQ(lock_cmd(&IA, &ia_index, EL_CMD_ACQUIRE, s, ++seq, "one-more", 0), EL_EFULL);
	for (uint32_t i = 0; i < EL_LOCKS_MAX; i += 2) {
		name_of(name, sizeof(name), "k", i);
		const el_slot_t l = el_lock__find(&IA, name, (uint32_t)strlen(name));
		EL_CHECK_EQ(lock_cmd(&IA, &ia_index, EL_CMD_RELEASE, s, ++seq, name,
				     IA.claims[el_lock__find_claim(&IA, l, 0, EL_CLAIM_HOLD)].token),
			    EL_OK);
	}
	el_lock__check_invariants(&IA);
	for (uint32_t i = 0; i < EL_LOCKS_MAX; i++) {
		name_of(name, sizeof(name), "k", i);
		const el_slot_t want = (i % 2) ? (el_slot_t)i : EL_LOCK_NONE;
		EL_CHECK_EQ(el_lock__find(&IA, name, (uint32_t)strlen(name)), want);
	}
	for (uint32_t i = 0; i < EL_LOCKS_MAX; i += 2) { /* reuse, lowest free first */
		name_of(name, sizeof(name), "r", i);
		EL_CHECK_EQ(el_lock__lowest_free(&IA, EL_POOL_LOCKS), (el_slot_t)i);
		EL_CHECK_EQ(lock_cmd(&IA, &ia_index, EL_CMD_ACQUIRE, s, ++seq, name, 0), EL_OK);
		EL_CHECK_EQ(el_lock__find(&IA, name, (uint32_t)strlen(name)), (el_slot_t)i);
	}
	el_lock__check_invariants(&IA);
}

/* Sessions by id: open the pool full, close every third, find the rest. */
static void test_session_index(void)
{
	uint64_t ids[EL_SESSIONS_MAX];
	reset_both(0x55, 0);
	for (uint32_t i = 0; i < EL_SESSIONS_MAX; i++) {
		ids[i] = open_on(&IA, &ia_index);
		EL_CHECK(ids[i] != 0);
	}
	struct el_lock_cmd full = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = 1000};
	EL_CHECK_EQ(run(&IA, &ia_index, &full), EL_EFULL);
	for (uint32_t i = 0; i < EL_SESSIONS_MAX; i += 3) {
		struct el_lock_cmd c = {.type = EL_CMD_CLOSE_SESSION, .session = ids[i]};
		EL_CHECK_EQ(run(&IA, &ia_index, &c), EL_OK);
	}
	for (uint32_t i = 0; i < EL_SESSIONS_MAX; i++) {
		const el_slot_t want = (i % 3) ? (el_slot_t)i : EL_LOCK_NONE;
		EL_CHECK_EQ(el_lock_session_slot(&IA, ids[i]), want);
	}
	EL_CHECK_EQ(el_lock_session_slot(&IA, ia_index + 1000), EL_LOCK_NONE);
	el_lock__check_invariants(&IA);
}

/* Two replicas applying one history: the same records whatever their keys;
 * with the same key, the very same bytes (buckets included). */
static void test_same_history_same_layout(void)
{
	char name[16];
	for (int same_key = 0; same_key < 2; same_key++) {
		reset_both(0xA5A5, same_key ? 0xA5A5 : 0x5A5A5A5A5ULL);
		const uint64_t sa = open_on(&IA, &ia_index), sb = open_on(&IB, &ib_index);
		EL_CHECK(sa != 0);
		EL_CHECK_EQ(sa, sb);
		uint64_t seq = 0, x = 12345;
		for (uint32_t step = 0; step < 4000; step++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			name_of(name, sizeof(name), "n", (uint32_t)(x >> 33) % (EL_LOCKS_MAX + 40));
			const uint8_t type = (x >> 20) % 3 ? EL_CMD_ACQUIRE : EL_CMD_RELEASE;
			const el_slot_t l = el_lock__find(&IA, name, (uint32_t)strlen(name));
			const el_slot_t c = l == EL_LOCK_NONE ? EL_LOCK_NONE
							  : el_lock__find_claim(&IA, l, 0, EL_CLAIM_HOLD);
			const uint64_t token = c == EL_LOCK_NONE ? 0 : IA.claims[c].token;
			const int ea = lock_cmd(&IA, &ia_index, type, sa, ++seq, name, token);
			EL_CHECK_EQ(lock_cmd(&IB, &ib_index, type, sb, seq, name, token), ea);
		}
		const size_t from = offsetof(struct el_lock_table, sessions);
		const size_t to = offsetof(struct el_lock_table, opens) + sizeof(IA.opens);
		EL_CHECK(memcmp((char *)&IA + from, (char *)&IB + from, to - from) == 0);
#if EL_INDEXED
		const bool same_buckets = memcmp(IA.idx.lock_buckets, IB.idx.lock_buckets,
						 sizeof(IA.idx.lock_buckets)) == 0;
		EL_CHECK(same_buckets == (same_key != 0));
		if (same_key)
			EL_CHECK(memcmp(&IA, &IB, sizeof(IA)) == 0);
#endif
		el_lock__check_invariants(&IA);
		el_lock__check_invariants(&IB);
	}
}

#if EL_INDEXED
/* Names whose home bucket is `home`, written into names[0..n). */
static void colliding_names(uint64_t key, uint32_t home, char names[][16], uint32_t n)
{
	uint32_t found = 0;
	for (uint32_t i = 0; found < n && i < 50u * 1000u * 1000u; i++) {
		name_of(names[found], 16, "c", i);
		const uint32_t h = el_lock__hash_name(key, names[found], (uint32_t)strlen(names[found]));
		if ((h & (EL_LOCK_BUCKETS - 1)) == home)
			found++;
	}
	EL_CHECK_EQ(found, n);
}

/* Runs of one home bucket, at the end of the array (so they wrap to its
 * start) and in the middle: deleting any member keeps every other one
 * findable, and the buckets close up (no tombstone is left behind). */
static void test_collisions_and_wrapping_runs(void)
{
	static char names[4][16];
	const uint32_t homes[2] = {EL_LOCK_BUCKETS - 1, EL_LOCK_BUCKETS / 2};
	for (uint32_t h = 0; h < 2; h++) {
		for (uint32_t victim = 0; victim < 4; victim++) {
			reset_both(0xC0FFEE, 0);
			colliding_names(IA.index_key, homes[h], names, 4);
			const uint64_t s = open_on(&IA, &ia_index);
			EL_CHECK(s != 0);
			for (uint32_t i = 0; i < 4; i++)
				EL_CHECK_EQ(lock_cmd(&IA, &ia_index, EL_CMD_ACQUIRE, s, i + 1, names[i], 0),
					    EL_OK);
			for (uint32_t i = 0; i < 4; i++) { /* one run from the home bucket */
				const uint32_t b = (homes[h] + i) & (EL_LOCK_BUCKETS - 1);
				EL_CHECK_EQ(IA.idx.lock_buckets[b], (el_slot_t)(i + 1));
			}
			const el_slot_t v = el_lock__find(&IA, names[victim], (uint32_t)strlen(names[victim]));
			const uint64_t token = IA.claims[el_lock__find_claim(&IA, v, 0, EL_CLAIM_HOLD)].token;
			EL_CHECK_EQ(lock_cmd(&IA, &ia_index, EL_CMD_RELEASE, s, 5, names[victim], token),
				    EL_OK);
			uint32_t used = 0;
			for (uint32_t b = 0; b < EL_LOCK_BUCKETS; b++)
				used += IA.idx.lock_buckets[b] != 0;
			EL_CHECK_EQ(used, 3u);
			EL_CHECK_EQ(IA.idx.lock_buckets[(homes[h] + 3) & (EL_LOCK_BUCKETS - 1)], 0);
			for (uint32_t i = 0; i < 4; i++) {
				const el_slot_t want = i == victim ? EL_LOCK_NONE : (el_slot_t)i;
				EL_CHECK_EQ(el_lock__find(&IA, names[i], (uint32_t)strlen(names[i])), want);
			}
			el_lock__check_invariants(&IA);
		}
	}
}

/* A run that wraps and mixes homes: a name at the last bucket, then two
 * whose home is bucket 0 (they sit at 0 and 1). Deleting the first must not
 * move them back across the wrap to the last bucket, before their home, or
 * they could no longer be found. */
static void test_wrapped_run_keeps_later_homes(void)
{
	static char last[1][16], first[2][16];
	reset_both(0xBEEF, 0);
	colliding_names(IA.index_key, EL_LOCK_BUCKETS - 1, last, 1);
	colliding_names(IA.index_key, 0, first, 2);
	const uint64_t s = open_on(&IA, &ia_index);
	EL_CHECK(s != 0);
	EL_CHECK_EQ(lock_cmd(&IA, &ia_index, EL_CMD_ACQUIRE, s, 1, last[0], 0), EL_OK);
	EL_CHECK_EQ(lock_cmd(&IA, &ia_index, EL_CMD_ACQUIRE, s, 2, first[0], 0), EL_OK);
	EL_CHECK_EQ(lock_cmd(&IA, &ia_index, EL_CMD_ACQUIRE, s, 3, first[1], 0), EL_OK);
	EL_CHECK_EQ(IA.idx.lock_buckets[1], 3); /* first[1], displaced by first[0] */
	const uint64_t token = IA.claims[el_lock__find_claim(&IA, 0, 0, EL_CLAIM_HOLD)].token;
	EL_CHECK_EQ(lock_cmd(&IA, &ia_index, EL_CMD_RELEASE, s, 4, last[0], token), EL_OK);
	EL_CHECK_EQ(IA.idx.lock_buckets[EL_LOCK_BUCKETS - 1], 0);
	EL_CHECK_EQ(el_lock__find(&IA, first[0], (uint32_t)strlen(first[0])), 1);
	EL_CHECK_EQ(el_lock__find(&IA, first[1], (uint32_t)strlen(first[1])), 2);
	el_lock__check_invariants(&IA);
}

/* The bitmap: lowest free and next used across word boundaries; a full pool
 * has no free slot; the summary word follows. */
static void test_bitmap_words(void)
{
	reset_both(0, 0);
	for (el_slot_t c = 0; c < 40; c++)
		el_lock__mark(&IA, EL_POOL_CLAIMS, c, true);
	EL_CHECK_EQ(el_lock__lowest_free(&IA, EL_POOL_CLAIMS), 40);
	EL_CHECK_EQ(el_lock__next_used(&IA, EL_POOL_CLAIMS, 33), 33);
	EL_CHECK_EQ(el_lock__next_used(&IA, EL_POOL_CLAIMS, 40), EL_LOCK_NONE);
	for (el_slot_t c = 40; c < EL_CLAIMS_MAX; c++)
		el_lock__mark(&IA, EL_POOL_CLAIMS, c, true);
	EL_CHECK_EQ(el_lock__lowest_free(&IA, EL_POOL_CLAIMS), EL_LOCK_NONE);
	EL_CHECK_EQ(IA.idx.claims.full[0], (uint32_t)((1ull << (EL_CLAIMS_MAX / 32)) - 1));
	el_lock__mark(&IA, EL_POOL_CLAIMS, 300, false);
	el_lock__mark(&IA, EL_POOL_CLAIMS, 301, false);
	EL_CHECK_EQ(el_lock__lowest_free(&IA, EL_POOL_CLAIMS), 300);
	EL_CHECK_EQ(el_lock__next_used(&IA, EL_POOL_CLAIMS, 300), 302);
	EL_CHECK_EQ(el_lock__next_used(&IA, EL_POOL_CLAIMS, EL_CLAIMS_MAX - 1), EL_CLAIMS_MAX - 1);
	el_lock_init(&IA);
}
#endif

void el_suite_lock_index(void)
{
	EL_RUN(test_fill_delete_reuse);
	EL_RUN(test_session_index);
	EL_RUN(test_same_history_same_layout);
#if EL_INDEXED
	EL_RUN(test_collisions_and_wrapping_runs);
	EL_RUN(test_wrapped_run_keeps_later_homes);
	EL_RUN(test_bitmap_words);
#endif
}
