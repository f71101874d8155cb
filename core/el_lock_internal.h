/*
 * el_lock_internal.h - helpers shared by the lock table's source files
 * (lock.c, lock_table.c, lock_snapshot.c). Not part of the API.
 */
#ifndef EL_LOCK_INTERNAL_H
#define EL_LOCK_INTERNAL_H

#include "el_lock.h"

/* Lookups; EL_LOCK_NONE when absent. */
uint16_t el_lock__find(const struct el_lock_table *t, const char *name, uint32_t name_len);
uint16_t el_lock__find_claim(const struct el_lock_table *t, uint16_t lock, uint16_t session,
			     uint8_t state);
/* Allocation of the lowest free slot; EL_LOCK_NONE when the pool is full. */
uint16_t el_lock__alloc_lock(struct el_lock_table *t, const char *name, uint32_t name_len);
uint16_t el_lock__alloc_claim(struct el_lock_table *t, uint16_t lock, uint16_t session);
uint16_t el_lock__alloc_value(struct el_lock_table *t, const uint8_t *data, uint32_t len);
uint16_t el_lock__alloc_session(struct el_lock_table *t);
/* Free a lock slot that nothing refers to any more (no holder, waiter,
 * delay or watch); otherwise nothing happens. */
void el_lock__maybe_free_lock(struct el_lock_table *t, uint16_t lock);
/* Free a claim (and its value); unlinks it first if it waits. */
void el_lock__free_claim(struct el_lock_table *t, uint16_t claim);

/* Record an event for a client; counted in events_dropped when full. */
void el_lock__emit(const struct el_lock_table *t, struct el_lock_result *res, uint8_t kind,
		   uint16_t session, uint64_t seq, uint64_t token, uint16_t lock);
/* Tell each watcher of lock that its holders (or value) changed. */
void el_lock__notify_watchers(const struct el_lock_table *t, uint16_t lock, uint8_t kind,
			      struct el_lock_result *res);

/* True when a request of mode could be granted now without passing anyone. */
bool el_lock__grantable(const struct el_lock_table *t, uint16_t lock, uint8_t mode);
/* Turn claim into a hold granted by entry index; returns its token. */
uint64_t el_lock__grant(struct el_lock_table *t, uint16_t claim, uint64_t index, uint64_t now_ms);
/* Append claim to its lock's queue. */
void el_lock__enqueue(struct el_lock_table *t, uint16_t claim);
/* After holders/waiters of lock changed: grant whoever is next in FIFO order,
 * tell watchers, free the lock if unused. holders_changed forces a watcher
 * notification even when nobody was granted. */
void el_lock__settle(struct el_lock_table *t, uint16_t lock, uint64_t index, uint64_t now_ms,
		     bool holders_changed, struct el_lock_result *res);

/* lock_check.c: the table's invariants; a broken one panics (EL_ASSERT).
 * The whole table: after every restore, and after every command when
 * EL_LOCK_AUDIT is 1. One lock in use (its holders, queue and counts): after
 * every command, the lock it named. */
void el_lock__check_invariants(const struct el_lock_table *t);
void el_lock__check_lock(const struct el_lock_table *t, uint16_t lock);

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
