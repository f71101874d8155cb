/*
 * el_lock_internal.h - helpers shared by the lock table's source files
 * (lock.c, lock_table.c, lock_snapshot.c). Not part of the API.
 */
#ifndef EL_LOCK_INTERNAL_H
#define EL_LOCK_INTERNAL_H

#include "el_lock.h"

/* lock_index.c: which slots are in use, and the lookups by key.
 * el_lock__mark records a slot taken or freed (the record says it too);
 * el_lock__index_* adds or removes a lock's name / a session's id. */
bool el_lock__slot_used(const struct el_lock_table *t, enum el_lock_pool pool, el_slot_t slot);
el_slot_t el_lock__lowest_free(const struct el_lock_table *t, enum el_lock_pool pool);
/* The first slot in use at or above from; EL_LOCK_NONE when none. */
el_slot_t el_lock__next_used(const struct el_lock_table *t, enum el_lock_pool pool, uint32_t from);
#if EL_INDEXED
void el_lock__mark(struct el_lock_table *t, enum el_lock_pool pool, el_slot_t slot, bool used);
void el_lock__index_lock(struct el_lock_table *t, el_slot_t lock, bool add);
void el_lock__index_session(struct el_lock_table *t, el_slot_t session, bool add);
#else /* the records say which slots are used; lookups scan */
#define el_lock__mark(t, pool, slot, used) ((void)0)
#define el_lock__index_lock(t, lock, add) ((void)0)
#define el_lock__index_session(t, session, add) ((void)0)
#endif
/* Empty the table at the cost of what it holds (restore). */
void el_lock__clear(struct el_lock_table *t);
uint32_t el_lock__hash_name(uint64_t key, const char *name, uint32_t len);
/* The lock of a name; EL_LOCK_NONE when absent. */
el_slot_t el_lock__find(const struct el_lock_table *t, const char *name, uint32_t name_len);

/* Iterate the slots in use of a pool, in ascending order. */
#define EL_LOCK_FOR_EACH(t, pool, slot)                                      \
	for (el_slot_t slot = el_lock__next_used((t), (pool), 0); slot != EL_LOCK_NONE; \
	     slot = el_lock__next_used((t), (pool), (uint32_t)slot + 1u))

/* The holders of a lock, the claims of a session, the watches of a session
 * and the watches of a lock, in ascending slot order: lists with EL_INDEXED, scans of the pool
 * without (the microcontroller config's pools of 16). Nothing may be freed
 * inside these loops. */
#if EL_INDEXED
#define EL_LOCK_FOR_HOLDERS(t, l, c) \
	for (el_slot_t c = (t)->locks[l].holders; c != EL_LOCK_NONE; c = (t)->claims[c].next)
#define EL_LOCK_FOR_SESSION_CLAIMS(t, s, c) \
	for (el_slot_t c = (t)->sessions[s].claims; c != EL_LOCK_NONE; c = (t)->claims[c].sess_next)
#define EL_LOCK_FOR_SESSION_WATCHES(t, s, w) \
	for (el_slot_t w = (t)->sessions[s].watches; w != EL_LOCK_NONE; w = (t)->watches[w].sess_next)
#define EL_LOCK_FOR_LOCK_WATCHES(t, l, w) \
	for (el_slot_t w = (t)->locks[l].watches; w != EL_LOCK_NONE; w = (t)->watches[w].next)
#else
#define EL_LOCK_FOR_HOLDERS(t, l, c)                           \
	for (el_slot_t c = 0; c < EL_CLAIMS_MAX; c++)          \
		if ((t)->claims[c].state == EL_CLAIM_HOLD && (t)->claims[c].lock == (l))
#define EL_LOCK_FOR_SESSION_CLAIMS(t, s, c)                    \
	for (el_slot_t c = 0; c < EL_CLAIMS_MAX; c++)          \
		if ((t)->claims[c].state != EL_CLAIM_FREE && (t)->claims[c].session == (s))
#define EL_LOCK_FOR_SESSION_WATCHES(t, s, w)                   \
	for (el_slot_t w = 0; w < EL_WATCHES_MAX; w++)         \
		if ((t)->watches[w].used && (t)->watches[w].session == (s))
#define EL_LOCK_FOR_LOCK_WATCHES(t, l, w)                      \
	for (el_slot_t w = 0; w < EL_WATCHES_MAX; w++)         \
		if ((t)->watches[w].used && (t)->watches[w].lock == (l))
#endif

/* lock_table.c: records. take_* fills a given free slot (restore), alloc_*
 * the lowest free one (EL_LOCK_NONE when the pool is full). */
void el_lock__take_session(struct el_lock_table *t, el_slot_t s, uint64_t id);
void el_lock__free_session(struct el_lock_table *t, el_slot_t s);
void el_lock__take_lock(struct el_lock_table *t, el_slot_t lock, const char *name,
			uint32_t name_len);
el_slot_t el_lock__alloc_lock(struct el_lock_table *t, const char *name, uint32_t name_len);
/* Free a lock slot that nothing refers to any more (no holder, waiter,
 * delay or watch); otherwise nothing happens. */
void el_lock__maybe_free_lock(struct el_lock_table *t, el_slot_t lock);
void el_lock__take_value(struct el_lock_table *t, el_slot_t v, const uint8_t *data, uint32_t len);
el_slot_t el_lock__alloc_value(struct el_lock_table *t, const uint8_t *data, uint32_t len);
/* A claim of session on lock, in no lock list yet: grant or enqueue it next. */
void el_lock__take_claim(struct el_lock_table *t, el_slot_t claim, el_slot_t lock,
			 el_slot_t session);
el_slot_t el_lock__alloc_claim(struct el_lock_table *t, el_slot_t lock, el_slot_t session);
/* The claim of session on lock in state; EL_LOCK_NONE when none. */
el_slot_t el_lock__find_claim(const struct el_lock_table *t, el_slot_t lock, el_slot_t session,
			      uint8_t state);
/* Free a claim (and its value); unlinks it from its lists first. */
void el_lock__free_claim(struct el_lock_table *t, el_slot_t claim);
void el_lock__take_watch(struct el_lock_table *t, el_slot_t w, el_slot_t lock, el_slot_t session);
el_slot_t el_lock__alloc_watch(struct el_lock_table *t, el_slot_t lock, el_slot_t session);
el_slot_t el_lock__find_watch(const struct el_lock_table *t, el_slot_t lock, el_slot_t session);
/* Free a watch, then its lock if nothing else refers to it. */
void el_lock__free_watch(struct el_lock_table *t, el_slot_t w);
/* Put a held claim into its lock's holders (ascending slots). */
void el_lock__link_holder(struct el_lock_table *t, el_slot_t claim);

/* Record an event for a client; counted in events_dropped when full. */
void el_lock__emit(const struct el_lock_table *t, struct el_lock_result *res, uint8_t kind,
		   el_slot_t session, uint64_t seq, uint64_t token, el_slot_t lock);
/* Report a lock put into lock-delay (res->armed_delays). */
void el_lock__armed_delay(struct el_lock_result *res, el_slot_t lock);
/* Tell each watcher of lock that its holders (or value) changed. */
uint64_t el_lock__newest_hold(const struct el_lock_table *t, el_slot_t lock);
void el_lock__notify_watchers(const struct el_lock_table *t, el_slot_t lock, uint8_t kind,
			      struct el_lock_result *res);

/* True when a request of mode could be granted now without passing anyone. */
bool el_lock__grantable(const struct el_lock_table *t, el_slot_t lock, uint8_t mode);
/* Turn claim into a hold granted by entry index; returns its token. */
uint64_t el_lock__grant(struct el_lock_table *t, el_slot_t claim, uint64_t index, uint64_t now_ms);
/* Append claim to its lock's queue. */
void el_lock__enqueue(struct el_lock_table *t, el_slot_t claim);
/* After holders/waiters of lock changed: grant whoever is next in FIFO order,
 * tell watchers, free the lock if unused. holders_changed forces a watcher
 * notification even when nobody was granted. */
void el_lock__settle(struct el_lock_table *t, el_slot_t lock, uint64_t index, uint64_t now_ms,
		     bool holders_changed, struct el_lock_result *res);

/* lock_check.c: the table's invariants; a broken one panics (EL_ASSERT).
 * The whole table: after every restore, and after every command when
 * EL_LOCK_AUDIT is 1. One lock in use (its holders, queue and counts): after
 * every command, the lock it named. */
void el_lock__check_invariants(const struct el_lock_table *t);
void el_lock__check_lock(const struct el_lock_table *t, el_slot_t lock);

/* lock_open.c: exactly-once OPEN_SESSION (a bounded table of recent opens). */
struct el_cbor_enc;
struct el_cbor_dec;
/* True when c retries an open the table remembers: res then holds the
 * session it created (EL_EEXPIRED if that session has ended since). */
bool el_lock__open_replayed(const struct el_lock_table *t, const struct el_lock_cmd *c,
			    struct el_lock_result *res);
/* Remember the session a successful open with a nonce created. */
void el_lock__open_remember(struct el_lock_table *t, const struct el_lock_cmd *c,
			    const struct el_lock_result *res);
/* The table's snapshot section, written and read (out NULL: validate only). */
void el_lock__opens_put(struct el_cbor_enc *e, const struct el_lock_table *t);
bool el_lock__opens_get(struct el_cbor_dec *d, struct el_lock_opens *out, uint64_t last_index);

#endif /* EL_LOCK_INTERNAL_H */
