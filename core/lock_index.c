/*
 * lock_index.c - where the lock table finds things: which slots of a pool are
 * in use (and the lowest free one), the lock of a name, the session of an id.
 *
 * With EL_INDEXED (el_config.h) a command costs what it touches:
 *   - each pool has a two-level bitmap (a bit per slot, a bit per full word),
 *     so the lowest free slot and the next slot in use are a few word scans;
 *   - names and session ids sit in open-addressing hash tables (linear
 *     probing, at most half full, deletion by backward shift, so no
 *     tombstones pile up). Names are hashed with HalfSipHash-1-3 under this
 *     replica's random key: a client cannot pick names that collide (the
 *     reason Redis and Python key their hashes); ids are entry indexes the
 *     cluster chose and need only a keyed multiply.
 * Without it (the microcontroller config) the same functions scan the
 * records: 16 of each there, where a scan costs no more than a hash.
 *
 * Either way a new record takes the lowest free slot, a pure function of
 * which slots are in use, so replicas lay out their pools identically
 * whatever their hash keys; the indexes are derived state, never written to
 * a snapshot (restore rebuilds them).
 */
#include <string.h>

#include "el_assert.h"
#include "el_lock_internal.h"

static const uint32_t pool_size[EL_POOLS] = {EL_SESSIONS_MAX, EL_LOCKS_MAX, EL_CLAIMS_MAX,
					     EL_WATCHES_MAX, EL_VALUES_MAX};

#if EL_INDEXED

/* ---- Bitmaps ----------------------------------------------------------------- */

struct bitmap {
	uint32_t *used;
	uint32_t *full;
};

static struct bitmap bitmap_of(const struct el_lock_table *t, enum el_lock_pool pool)
{
	struct el_lock_index *x = (struct el_lock_index *)&t->idx; /* callers keep const */
	switch (pool) {
	case EL_POOL_SESSIONS: return (struct bitmap){x->sessions.used, x->sessions.full};
	case EL_POOL_LOCKS: return (struct bitmap){x->locks.used, x->locks.full};
	case EL_POOL_CLAIMS: return (struct bitmap){x->claims.used, x->claims.full};
	case EL_POOL_WATCHES: return (struct bitmap){x->watches.used, x->watches.full};
	default: EL_ASSERT(pool == EL_POOL_VALUES); break;
	}
	return (struct bitmap){x->values.used, x->values.full};
}

/* Index of the lowest set bit of x (x != 0), by a de Bruijn sequence: no
 * count-trailing-zeros helper from libgcc on cores without the instruction
 * (tests/check-core.sh allows the core none). */
static uint32_t lowest_one(uint32_t x)
{
	static const uint8_t debruijn[32] = {0,  1,  28, 2,  29, 14, 24, 3,  30, 22, 20,
					     15, 25, 17, 4,  8,  31, 27, 13, 23, 21, 19,
					     16, 7,  26, 12, 18, 6,  11, 5,  10, 9};
	EL_ASSERT(x != 0);
	return debruijn[((x & (0u - x)) * 0x077CB531u) >> 27];
}

static uint32_t lowest_zero(uint32_t word) { return lowest_one(~word); }

bool el_lock__slot_used(const struct el_lock_table *t, enum el_lock_pool pool, el_slot_t slot)
{
	EL_ASSERT(slot < pool_size[pool]);
	const struct bitmap b = bitmap_of(t, pool);
	return (b.used[slot / 32] >> (slot % 32)) & 1u;
}

el_slot_t el_lock__lowest_free(const struct el_lock_table *t, enum el_lock_pool pool)
{
	const struct bitmap b = bitmap_of(t, pool);
	const uint32_t n = pool_size[pool], words = EL_WORDS_(n);
	for (uint32_t i = 0; i < EL_WORDS_(words); i++) {
		if (b.full[i] == UINT32_MAX)
			continue;
		const uint32_t w = i * 32 + lowest_zero(b.full[i]);
		if (w >= words)
			return EL_LOCK_NONE;
		EL_ASSERT(b.used[w] != UINT32_MAX); /* the summary bit says not full */
		const uint32_t slot = w * 32 + lowest_zero(b.used[w]);
		return slot < n ? (el_slot_t)slot : EL_LOCK_NONE;
	}
	return EL_LOCK_NONE;
}

el_slot_t el_lock__next_used(const struct el_lock_table *t, enum el_lock_pool pool, uint32_t from)
{
	const struct bitmap b = bitmap_of(t, pool);
	const uint32_t n = pool_size[pool];
	if (from >= n)
		return EL_LOCK_NONE;
	uint32_t w = from / 32;
	uint32_t bits = b.used[w] & (UINT32_MAX << (from % 32));
	while (bits == 0) {
		if (++w >= EL_WORDS_(n))
			return EL_LOCK_NONE;
		bits = b.used[w];
	}
	const uint32_t slot = w * 32 + lowest_one(bits);
	EL_ASSERT(slot < n);
	return (el_slot_t)slot;
}

void el_lock__mark(struct el_lock_table *t, enum el_lock_pool pool, el_slot_t slot, bool used)
{
	EL_ASSERT(slot < pool_size[pool]);
	const struct bitmap b = bitmap_of(t, pool);
	uint32_t *word = &b.used[slot / 32], *summary = &b.full[slot / 32 / 32];
	const uint32_t bit = 1u << (slot % 32), full_bit = 1u << (slot / 32 % 32);
	EL_ASSERT(((*word & bit) != 0) != used); /* a change, never a repeat */
	*word = used ? (*word | bit) : (*word & ~bit);
	*summary = *word == UINT32_MAX ? (*summary | full_bit) : (*summary & ~full_bit);
}

/* ---- Hashes -------------------------------------------------------------------- */

static uint32_t rotl(uint32_t x, unsigned b) { return (x << b) | (x >> (32u - b)); }

static void sip_round(uint32_t v[4])
{
	v[0] += v[1]; v[1] = rotl(v[1], 5); v[1] ^= v[0]; v[0] = rotl(v[0], 16);
	v[2] += v[3]; v[3] = rotl(v[3], 8); v[3] ^= v[2];
	v[0] += v[3]; v[3] = rotl(v[3], 7); v[3] ^= v[0];
	v[2] += v[1]; v[1] = rotl(v[1], 13); v[1] ^= v[2]; v[2] = rotl(v[2], 16);
}

static uint32_t load_le(const uint8_t *p, uint32_t n)
{
	uint32_t v = 0;
	for (uint32_t i = 0; i < n; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

/* HalfSipHash-1-3 (Aumasson and Bernstein), 32-bit output. */
uint32_t el_lock__hash_name(uint64_t key, const char *name, uint32_t len)
{
	const uint8_t *p = (const uint8_t *)name;
	const uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
	uint32_t v[4] = {k0, k1, 0x6c796765u ^ k0, 0x74656462u ^ k1};
	uint32_t i = 0;
	for (; i + 4 <= len; i += 4) {
		const uint32_t m = load_le(p + i, 4);
		v[3] ^= m;
		sip_round(v);
		v[0] ^= m;
	}
	const uint32_t last = (len << 24) | load_le(p + i, len - i);
	v[3] ^= last;
	sip_round(v);
	v[0] ^= last;
	v[2] ^= 0xffu;
	sip_round(v);
	sip_round(v);
	sip_round(v);
	return v[1] ^ v[3];
}

static uint32_t hash_id(uint64_t key, uint64_t id)
{
	const uint64_t x = (id ^ key) * UINT64_C(0x9E3779B97F4A7C15);
	return (uint32_t)(x >> 32) ^ (uint32_t)x;
}

/* ---- Open addressing ------------------------------------------------------------ */

/* One table: its buckets (slot + 1; 0 empty), and the home bucket of a slot. */
struct table {
	el_slot_t *b;
	uint32_t mask;
	const struct el_lock_table *t;
	bool locks; /* lock names; else session ids */
};

static uint32_t home_of(const struct table *h, el_slot_t slot)
{
	const struct el_lock_table *t = h->t;
	if (h->locks)
		return el_lock__hash_name(t->index_key, t->locks[slot].name,
					  t->locks[slot].name_len) & h->mask;
	return hash_id(t->index_key, t->sessions[slot].id) & h->mask;
}

static struct table table_of(const struct el_lock_table *t, bool locks)
{
	struct el_lock_index *x = (struct el_lock_index *)&t->idx;
	if (locks)
		return (struct table){x->lock_buckets, EL_LOCK_BUCKETS - 1, t, true};
	return (struct table){x->session_buckets, EL_SESSION_BUCKETS - 1, t, false};
}

static void insert(const struct table *h, el_slot_t slot)
{
	uint32_t i = home_of(h, slot);
	for (uint32_t n = 0; h->b[i] != 0; n++) {
		EL_ASSERT(n <= h->mask); /* at most half full: an empty bucket exists */
		EL_ASSERT(h->b[i] != slot + 1);
		i = (i + 1) & h->mask;
	}
	h->b[i] = (el_slot_t)(slot + 1);
}

/* True when bucket k lies cyclically in (i, j]: an entry whose home is k may
 * not move down to i. */
static bool between(uint32_t i, uint32_t k, uint32_t j)
{
	return i <= j ? (i < k && k <= j) : (i < k || k <= j);
}

/* Remove slot and close the gap by shifting later entries of its run back
 * (Knuth 6.4, algorithm R), so every lookup still finds its entry. */
static void erase(const struct table *h, el_slot_t slot)
{
	uint32_t i = home_of(h, slot);
	for (uint32_t n = 0; h->b[i] != slot + 1; n++) {
		EL_ASSERT(n <= h->mask);
		EL_ASSERT(h->b[i] != 0); /* an indexed slot is found */
		i = (i + 1) & h->mask;
	}
	for (uint32_t j = (i + 1) & h->mask, n = 0; h->b[j] != 0; j = (j + 1) & h->mask, n++) {
		EL_ASSERT(n <= h->mask);
		if (between(i, home_of(h, (el_slot_t)(h->b[j] - 1)), j))
			continue;
		h->b[i] = h->b[j];
		i = j;
	}
	h->b[i] = 0;
}

void el_lock__index_lock(struct el_lock_table *t, el_slot_t lock, bool add)
{
	EL_ASSERT(lock < EL_LOCKS_MAX);
	EL_ASSERT(t->locks[lock].name_len != 0);
	const struct table h = table_of(t, true);
	if (add)
		insert(&h, lock);
	else
		erase(&h, lock);
}

void el_lock__index_session(struct el_lock_table *t, el_slot_t session, bool add)
{
	EL_ASSERT(session < EL_SESSIONS_MAX);
	EL_ASSERT(t->sessions[session].id != 0);
	const struct table h = table_of(t, false);
	if (add)
		insert(&h, session);
	else
		erase(&h, session);
}

el_slot_t el_lock__find(const struct el_lock_table *t, const char *name, uint32_t name_len)
{
	EL_ASSERT(name_len <= EL_NAME_MAX);
	if (name_len == 0)
		return EL_LOCK_NONE;
	const struct table h = table_of(t, true);
	uint32_t i = el_lock__hash_name(t->index_key, name, name_len) & h.mask;
	for (uint32_t n = 0; h.b[i] != 0; n++, i = (i + 1) & h.mask) {
		EL_ASSERT(n <= h.mask);
		const struct el_lock_entry *entry = &t->locks[h.b[i] - 1];
		if (entry->name_len == name_len && memcmp(entry->name, name, name_len) == 0)
			return (el_slot_t)(h.b[i] - 1);
	}
	return EL_LOCK_NONE;
}

el_slot_t el_lock_session_slot(const struct el_lock_table *t, uint64_t id)
{
	EL_ASSERT(t != NULL);
	if (id == 0)
		return EL_LOCK_NONE;
	const struct table h = table_of(t, false);
	uint32_t i = hash_id(t->index_key, id) & h.mask;
	for (uint32_t n = 0; h.b[i] != 0; n++, i = (i + 1) & h.mask) {
		EL_ASSERT(n <= h.mask);
		if (t->sessions[h.b[i] - 1].id == id)
			return (el_slot_t)(h.b[i] - 1);
	}
	return EL_LOCK_NONE;
}

#else /* !EL_INDEXED: scans */

bool el_lock__slot_used(const struct el_lock_table *t, enum el_lock_pool pool, el_slot_t slot)
{
	EL_ASSERT(slot < pool_size[pool]);
	switch (pool) {
	case EL_POOL_SESSIONS: return t->sessions[slot].id != 0;
	case EL_POOL_LOCKS: return t->locks[slot].name_len != 0;
	case EL_POOL_CLAIMS: return t->claims[slot].state != EL_CLAIM_FREE;
	case EL_POOL_WATCHES: return t->watches[slot].used != 0;
	default: break;
	}
	return t->values[slot].used != 0;
}

el_slot_t el_lock__lowest_free(const struct el_lock_table *t, enum el_lock_pool pool)
{
	for (uint32_t s = 0; s < pool_size[pool]; s++)
		if (!el_lock__slot_used(t, pool, (el_slot_t)s))
			return (el_slot_t)s;
	return EL_LOCK_NONE;
}

el_slot_t el_lock__next_used(const struct el_lock_table *t, enum el_lock_pool pool, uint32_t from)
{
	for (uint32_t s = from; s < pool_size[pool]; s++)
		if (el_lock__slot_used(t, pool, (el_slot_t)s))
			return (el_slot_t)s;
	return EL_LOCK_NONE;
}

el_slot_t el_lock__find(const struct el_lock_table *t, const char *name, uint32_t name_len)
{
	EL_ASSERT(name_len <= EL_NAME_MAX);
	if (name_len == 0)
		return EL_LOCK_NONE;
	for (el_slot_t l = 0; l < EL_LOCKS_MAX; l++) {
		const struct el_lock_entry *entry = &t->locks[l];
		if (entry->name_len == name_len && memcmp(entry->name, name, name_len) == 0)
			return l;
	}
	return EL_LOCK_NONE;
}

el_slot_t el_lock_session_slot(const struct el_lock_table *t, uint64_t id)
{
	EL_ASSERT(t != NULL);
	if (id == 0)
		return EL_LOCK_NONE;
	for (el_slot_t s = 0; s < EL_SESSIONS_MAX; s++)
		if (t->sessions[s].id == id)
			return s;
	return EL_LOCK_NONE;
}

#endif /* EL_INDEXED */

/* ---- Clearing -------------------------------------------------------------------- */

/* Empty the table (before a restore) at the cost of what it holds: the
 * records in use and the bitmaps' words, not the whole of every pool. */
void el_lock__clear(struct el_lock_table *t)
{
#if EL_INDEXED
	EL_LOCK_FOR_EACH(t, EL_POOL_SESSIONS, s) {
		el_lock__index_session(t, s, false);
		memset(&t->sessions[s], 0, sizeof(t->sessions[s]));
	}
	EL_LOCK_FOR_EACH(t, EL_POOL_LOCKS, l) {
		el_lock__index_lock(t, l, false);
		memset(&t->locks[l], 0, sizeof(t->locks[l]));
	}
	EL_LOCK_FOR_EACH(t, EL_POOL_CLAIMS, c)
		memset(&t->claims[c], 0, sizeof(t->claims[c]));
	EL_LOCK_FOR_EACH(t, EL_POOL_WATCHES, w)
		memset(&t->watches[w], 0, sizeof(t->watches[w]));
	EL_LOCK_FOR_EACH(t, EL_POOL_VALUES, v)
		memset(&t->values[v], 0, sizeof(t->values[v]));
	memset(&t->idx.sessions, 0, sizeof(t->idx.sessions));
	memset(&t->idx.locks, 0, sizeof(t->idx.locks));
	memset(&t->idx.claims, 0, sizeof(t->idx.claims));
	memset(&t->idx.watches, 0, sizeof(t->idx.watches));
	memset(&t->idx.values, 0, sizeof(t->idx.values));
	memset(&t->opens, 0, sizeof(t->opens));
	t->n_waiting = 0;
	t->last_index = 0;
#else
	el_lock_init(t);
#endif
}
