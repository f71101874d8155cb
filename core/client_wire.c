/*
 * client_wire.c - client protocol messages to and from CBOR (el_client_wire.h,
 * docs/protocol.md).
 *
 * Table-driven: each key has a descriptor (CBOR kind, width, range, where the
 * field lives in its struct), each message type a mask of the keys it may
 * carry. The encoder writes the nonzero fields of the mask in key order; the
 * decoder reads keys in the ascending order el_cbor enforces, refuses any key
 * outside the type's mask and any value outside its range, then runs the same
 * el_cw_check the encoder runs first, so both sides accept the same messages.
 * Fields sent explicitly as zero are accepted (absent and zero mean the same;
 * a client in another language need not drop them), so unlike the Raft wire
 * the encoding is deterministic for what we write but not the only one read.
 *
 * Nested maps (holder, waiter, member, lock) use the same machinery with
 * their own descriptor tables; they never contain arrays, so decoding is two
 * levels of plain loops, no recursion.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "el_cbor.h"
#include "el_client_wire.h"
#include "el_error.h"

enum fkind { F_NONE = 0, F_UINT, F_INT, F_BOOL, F_TEXT, F_BYTES, F_ARRAY };

struct fdesc {
	uint8_t kind;
	uint8_t size;     /* bytes of the field (uint/int/bool) */
	uint16_t off;     /* offset of the field */
	uint16_t len_off; /* text/bytes: offset of the uint8_t length; array: of the count */
	uint64_t max;     /* uint: largest value; text/bytes/array: longest */
};

#define BIT(k) ((uint64_t)1 << (k))
#define U(st, f, mx) { F_UINT, sizeof(((struct st *)0)->f), offsetof(struct st, f), 0, mx }
#define B(st, f) { F_BOOL, sizeof(bool), offsetof(struct st, f), 0, 1 }
#define T(st, f, mx) { F_TEXT, 0, offsetof(struct st, f), offsetof(struct st, f##_len), mx }

/* Top-level fields of struct el_cw_msg, by key. */
static const struct fdesc msg_fields[EL_CW_K_MAX + 1] = {
		[EL_CW_K_TYPE] = U(el_cw_msg, type, 255),
	[EL_CW_K_ID] = U(el_cw_msg, id, UINT64_MAX),
	[EL_CW_K_ERR] = { F_INT, 4, offsetof(struct el_cw_msg, err), 0, 0 },
	[EL_CW_K_SESSION] = U(el_cw_msg, session, UINT64_MAX),
	[EL_CW_K_SEQ] = U(el_cw_msg, seq, UINT64_MAX),
	[EL_CW_K_NAME] = T(el_cw_msg, name, EL_NAME_MAX),
	[EL_CW_K_MODE] = U(el_cw_msg, mode, EL_LOCK_SHARED),
	[EL_CW_K_WAIT_MS] = U(el_cw_msg, wait_ms, UINT32_MAX),
	[EL_CW_K_TTL_MS] = U(el_cw_msg, ttl_ms, UINT32_MAX),
	[EL_CW_K_DELAY_MS] = U(el_cw_msg, delay_ms, UINT32_MAX),
	[EL_CW_K_TOKEN] = U(el_cw_msg, token, UINT64_MAX),
	[EL_CW_K_VALUE] = { F_BYTES, 0, offsetof(struct el_cw_msg, value),
			    offsetof(struct el_cw_msg, value_len), EL_VALUE_MAX },
	[EL_CW_K_CLIENT] = T(el_cw_msg, client, EL_CLIENT_NAME_MAX),
	[EL_CW_K_NONCE] = U(el_cw_msg, nonce, UINT64_MAX),
	[EL_CW_K_COUNT] = U(el_cw_msg, count, UINT32_MAX),
	[EL_CW_K_QUEUED] = B(el_cw_msg, queued),
	[EL_CW_K_LEADER] = U(el_cw_msg, leader, UINT32_MAX),
	[EL_CW_K_LEADER_ADDR] = T(el_cw_msg, leader_addr, EL_CW_ADDR_MAX),
	[EL_CW_K_KIND] = U(el_cw_msg, kind, EL_CW_EV_MAX),
	[EL_CW_K_NODE] = U(el_cw_msg, node, UINT32_MAX),
	[EL_CW_K_PEER_ADDR] = T(el_cw_msg, peer_addr, EL_CW_ADDR_MAX),
	[EL_CW_K_CLIENT_ADDR] = T(el_cw_msg, client_addr, EL_CW_ADDR_MAX),
	[EL_CW_K_ROLE] = U(el_cw_msg, role, EL_LEADER),
	[EL_CW_K_TERM] = U(el_cw_msg, term, UINT64_MAX),
	[EL_CW_K_COMMIT] = U(el_cw_msg, commit, UINT64_MAX),
	[EL_CW_K_APPLIED] = U(el_cw_msg, applied, UINT64_MAX),
	[EL_CW_K_INDEX] = U(el_cw_msg, index, UINT64_MAX),
	[EL_CW_K_MEMBERS] = { F_ARRAY, 0, offsetof(struct el_cw_msg, members),
			      offsetof(struct el_cw_msg, n_members), EL_NODES_MAX },
	[EL_CW_K_HOLDERS] = { F_ARRAY, 0, offsetof(struct el_cw_msg, holders),
			      offsetof(struct el_cw_msg, n_holders), EL_HOLDERS_MAX },
	[EL_CW_K_WAITERS] = { F_ARRAY, 0, offsetof(struct el_cw_msg, waiters),
			      offsetof(struct el_cw_msg, n_waiters_listed), EL_QUERY_WAITERS_MAX },
	[EL_CW_K_N_WAITERS] = U(el_cw_msg, n_waiters, UINT16_MAX),
	[EL_CW_K_N_WATCHES] = U(el_cw_msg, n_watches, UINT16_MAX),
	[EL_CW_K_DELAYED] = B(el_cw_msg, delayed),
	[EL_CW_K_DELAY_TOKEN] = U(el_cw_msg, delay_token, UINT64_MAX),
	[EL_CW_K_LOCKS] = { F_ARRAY, 0, offsetof(struct el_cw_msg, locks),
			    offsetof(struct el_cw_msg, n_locks_listed), EL_CW_LIST_MAX },
	[EL_CW_K_CURSOR] = U(el_cw_msg, cursor, UINT64_MAX),
	[EL_CW_K_LIMIT] = U(el_cw_msg, limit, EL_CW_LIST_MAX),
	[EL_CW_K_LEARNER] = B(el_cw_msg, learner),
	[EL_CW_K_LEASE_MS] = U(el_cw_msg, lease_ms, UINT32_MAX),
	[EL_CW_K_N_SESSIONS] = U(el_cw_msg, n_sessions, UINT32_MAX),
	[EL_CW_K_N_LOCKS] = U(el_cw_msg, n_locks, UINT32_MAX),
	[EL_CW_K_LAST_INDEX] = U(el_cw_msg, last_index, UINT64_MAX),
	[EL_CW_K_OFFSET] = U(el_cw_msg, offset, UINT32_MAX),
	[EL_CW_K_TOTAL] = U(el_cw_msg, total, UINT32_MAX),
	/* size 2: a 16-bit length (the other strings' lengths are 8-bit) */
	[EL_CW_K_CHUNK] = { F_BYTES, 2, offsetof(struct el_cw_msg, chunk),
			    offsetof(struct el_cw_msg, chunk_len), EL_CW_CHUNK_MAX },
	[EL_CW_K_PERMITS] = U(el_cw_msg, permits, EL_SEM_LIMIT_MAX),
};

static const struct fdesc holder_fields[EL_CW_K_MAX + 1] = {
	[EL_CW_K_SESSION] = U(el_cw_holder, session, UINT64_MAX),
	[EL_CW_K_TOKEN] = U(el_cw_holder, token, UINT64_MAX),
	[EL_CW_K_CLIENT] = T(el_cw_holder, client, EL_CLIENT_NAME_MAX),
	[EL_CW_K_COUNT] = U(el_cw_holder, count, UINT32_MAX),
	[EL_CW_K_GRANT_MS] = U(el_cw_holder, grant_ms, UINT64_MAX),
};
static const struct fdesc waiter_fields[EL_CW_K_MAX + 1] = {
	[EL_CW_K_SESSION] = U(el_cw_waiter, session, UINT64_MAX),
	[EL_CW_K_SEQ] = U(el_cw_waiter, seq, UINT64_MAX),
	[EL_CW_K_MODE] = U(el_cw_waiter, mode, EL_LOCK_SHARED),
	[EL_CW_K_WAIT_MS] = U(el_cw_waiter, wait_ms, UINT32_MAX),
};
static const struct fdesc member_fields[EL_CW_K_MAX + 1] = {
	[EL_CW_K_NODE] = U(el_cw_member, node, UINT32_MAX),
	[EL_CW_K_PEER_ADDR] = T(el_cw_member, peer_addr, EL_CW_ADDR_MAX),
	[EL_CW_K_CLIENT_ADDR] = T(el_cw_member, client_addr, EL_CW_ADDR_MAX),
	[EL_CW_K_ROLE] = U(el_cw_member, role, EL_MEMBER_CATCHING_UP),
	[EL_CW_K_MATCH] = U(el_cw_member, match, UINT64_MAX),
	[EL_CW_K_REACHABLE] = B(el_cw_member, reachable),
};
static const struct fdesc lock_fields[EL_CW_K_MAX + 1] = {
	[EL_CW_K_NAME] = T(el_cw_lock, name, EL_NAME_MAX),
	[EL_CW_K_MODE] = U(el_cw_lock, mode, EL_LOCK_SHARED),
	[EL_CW_K_TOKEN] = U(el_cw_lock, token, UINT64_MAX),
	[EL_CW_K_N_WAITERS] = U(el_cw_lock, n_waiters, UINT16_MAX),
	[EL_CW_K_DELAYED] = B(el_cw_lock, delayed),
	[EL_CW_K_N_HOLDERS] = U(el_cw_lock, n_holders, EL_HOLDERS_MAX),
	[EL_CW_K_PERMITS] = U(el_cw_lock, permits, EL_SEM_LIMIT_MAX),
};

/* One nested element type: its struct size, fields and the key it needs. */
struct elem {
	const struct fdesc *fields;
	uint64_t mask;
	uint32_t size;
	uint8_t required;
};

static const struct elem *elem_of(uint8_t key)
{
	static const struct elem holder = { holder_fields,
		BIT(EL_CW_K_SESSION) | BIT(EL_CW_K_TOKEN) | BIT(EL_CW_K_CLIENT) |
		BIT(EL_CW_K_COUNT) | BIT(EL_CW_K_GRANT_MS), sizeof(struct el_cw_holder),
		EL_CW_K_SESSION };
	static const struct elem waiter = { waiter_fields,
		BIT(EL_CW_K_SESSION) | BIT(EL_CW_K_SEQ) | BIT(EL_CW_K_MODE) | BIT(EL_CW_K_WAIT_MS),
		sizeof(struct el_cw_waiter), EL_CW_K_SESSION };
	static const struct elem member = { member_fields,
		BIT(EL_CW_K_NODE) | BIT(EL_CW_K_PEER_ADDR) | BIT(EL_CW_K_CLIENT_ADDR) |
		BIT(EL_CW_K_ROLE) | BIT(EL_CW_K_MATCH) | BIT(EL_CW_K_REACHABLE),
		sizeof(struct el_cw_member), EL_CW_K_NODE };
	static const struct elem lock = { lock_fields,
		BIT(EL_CW_K_NAME) | BIT(EL_CW_K_MODE) | BIT(EL_CW_K_TOKEN) |
		BIT(EL_CW_K_N_WAITERS) | BIT(EL_CW_K_DELAYED) | BIT(EL_CW_K_N_HOLDERS) |
		BIT(EL_CW_K_PERMITS), sizeof(struct el_cw_lock), EL_CW_K_NAME };
	switch (key) {
	case EL_CW_K_HOLDERS: return &holder;
	case EL_CW_K_WAITERS: return &waiter;
	case EL_CW_K_MEMBERS: return &member;
	default: return &lock;
	}
}

/* ---- Which keys each type carries ---------------------------------------- */

#define HEAD (BIT(EL_CW_K_VERSION) | BIT(EL_CW_K_TYPE) | BIT(EL_CW_K_ID))
#define SSN (BIT(EL_CW_K_SESSION) | BIT(EL_CW_K_SEQ) | BIT(EL_CW_K_NAME))
#define REPLY (HEAD | BIT(EL_CW_K_ERR) | BIT(EL_CW_K_LEADER) | BIT(EL_CW_K_LEADER_ADDR))
#define CMD_REPLY (REPLY | BIT(EL_CW_K_SESSION) | BIT(EL_CW_K_TOKEN) | BIT(EL_CW_K_COUNT) | \
		   BIT(EL_CW_K_QUEUED) | BIT(EL_CW_K_INDEX) | BIT(EL_CW_K_PERMITS))
#define ADDRS (BIT(EL_CW_K_PEER_ADDR) | BIT(EL_CW_K_CLIENT_ADDR))

static uint64_t request_mask(uint8_t t)
{
	switch (t) {
	case EL_CW_OPEN_SESSION:
		return HEAD | BIT(EL_CW_K_TTL_MS) | BIT(EL_CW_K_CLIENT) | BIT(EL_CW_K_NONCE);
	case EL_CW_KEEPALIVE:
	case EL_CW_CLOSE_SESSION: return HEAD | BIT(EL_CW_K_SESSION);
	case EL_CW_ACQUIRE:
		return HEAD | SSN | BIT(EL_CW_K_MODE) | BIT(EL_CW_K_WAIT_MS) | BIT(EL_CW_K_DELAY_MS) |
		       BIT(EL_CW_K_PERMITS);
	case EL_CW_RELEASE:
	case EL_CW_RESIGN: return HEAD | SSN | BIT(EL_CW_K_TOKEN);
	case EL_CW_CAMPAIGN:
		return HEAD | SSN | BIT(EL_CW_K_WAIT_MS) | BIT(EL_CW_K_DELAY_MS) | BIT(EL_CW_K_VALUE);
	case EL_CW_PROCLAIM: return HEAD | SSN | BIT(EL_CW_K_TOKEN) | BIT(EL_CW_K_VALUE);
	case EL_CW_WATCH:
	case EL_CW_UNWATCH: return HEAD | SSN;
	case EL_CW_QUERY: return HEAD | BIT(EL_CW_K_NAME);
	case EL_CW_LIST: return HEAD | BIT(EL_CW_K_CURSOR) | BIT(EL_CW_K_LIMIT);
	case EL_CW_STATUS:
	case EL_CW_PING: return HEAD;
	case EL_CW_MEMBER_ADD: return HEAD | BIT(EL_CW_K_NODE) | ADDRS | BIT(EL_CW_K_LEARNER);
	case EL_CW_MEMBER_REMOVE:
	case EL_CW_MEMBER_PROMOTE:
	case EL_CW_TRANSFER: return HEAD | BIT(EL_CW_K_NODE);
	case EL_CW_SNAPSHOT: return HEAD | BIT(EL_CW_K_INDEX) | BIT(EL_CW_K_OFFSET);
	default: return 0;
	}
}

static uint64_t reply_mask(uint8_t req)
{
	if (req >= EL_CW_OPEN_SESSION && req <= EL_CW_UNWATCH)
		return CMD_REPLY;
	switch (req) {
	case EL_CW_QUERY:
		return REPLY | BIT(EL_CW_K_NAME) | BIT(EL_CW_K_MODE) | BIT(EL_CW_K_VALUE) |
		       BIT(EL_CW_K_HOLDERS) | BIT(EL_CW_K_WAITERS) | BIT(EL_CW_K_N_WAITERS) |
		       BIT(EL_CW_K_N_WATCHES) | BIT(EL_CW_K_DELAYED) | BIT(EL_CW_K_DELAY_TOKEN) |
		       BIT(EL_CW_K_PERMITS);
	case EL_CW_LIST: return REPLY | BIT(EL_CW_K_LOCKS) | BIT(EL_CW_K_CURSOR);
	case EL_CW_STATUS:
		return REPLY | BIT(EL_CW_K_NODE) | BIT(EL_CW_K_ROLE) | BIT(EL_CW_K_TERM) |
		       BIT(EL_CW_K_COMMIT) | BIT(EL_CW_K_APPLIED) | BIT(EL_CW_K_MEMBERS) |
		       BIT(EL_CW_K_N_SESSIONS) | BIT(EL_CW_K_N_LOCKS) | BIT(EL_CW_K_LAST_INDEX);
	case EL_CW_MEMBER_ADD:
	case EL_CW_MEMBER_REMOVE:
	case EL_CW_MEMBER_PROMOTE:
	case EL_CW_TRANSFER: return REPLY | BIT(EL_CW_K_NODE) | BIT(EL_CW_K_INDEX);
	case EL_CW_PING: return REPLY;
	case EL_CW_SNAPSHOT:
		return REPLY | BIT(EL_CW_K_INDEX) | BIT(EL_CW_K_OFFSET) | BIT(EL_CW_K_TOTAL) |
		       BIT(EL_CW_K_CHUNK);
	default: return 0;
	}
}

/* The keys type t may carry; 0 for an unknown type. */
static uint64_t type_mask(uint8_t t)
{
	if (t == EL_CW_EVENT)
		return HEAD | BIT(EL_CW_K_SESSION) | BIT(EL_CW_K_SEQ) | BIT(EL_CW_K_NAME) |
		       BIT(EL_CW_K_TOKEN) | BIT(EL_CW_K_KIND) | BIT(EL_CW_K_LEASE_MS);
	if (t == EL_CW_ERROR)
		return HEAD | BIT(EL_CW_K_ERR);
	if (t > EL_CW_REPLY_BASE && t <= EL_CW_REPLY(EL_CW_REQUEST_MAX))
		return reply_mask((uint8_t)(t - EL_CW_REPLY_BASE));
	return request_mask(t);
}

bool el_cw_is_request(uint8_t type)
{
	return type >= 1 && type <= EL_CW_REQUEST_MAX;
}

/* ---- Field access by descriptor ------------------------------------------ */

static uint64_t load_uint(const void *base, const struct fdesc *f)
{
	const uint8_t *p = (const uint8_t *)base + f->off;
	switch (f->size) {
	case 1: { uint8_t v; memcpy(&v, p, 1); return v; }
	case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
	case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
	default: { uint64_t v; memcpy(&v, p, 8); return v; }
	}
}

static void store_uint(void *base, const struct fdesc *f, uint64_t v)
{
	uint8_t *p = (uint8_t *)base + f->off;
	switch (f->size) {
	case 1: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
	case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
	default: memcpy(p, &v, 8); break;
	}
}

/* The length of a text, bytes or array field: 8 bits, 16 for size 2. */
static uint32_t load_len(const void *base, const struct fdesc *f)
{
	const uint8_t *p = (const uint8_t *)base + f->len_off;
	if (f->size == 2) {
		uint16_t v;
		memcpy(&v, p, 2);
		return v;
	}
	return p[0];
}

static void store_len(void *base, const struct fdesc *f, uint32_t n)
{
	uint8_t *p = (uint8_t *)base + f->len_off;
	if (f->size == 2) {
		const uint16_t v = (uint16_t)n;
		memcpy(p, &v, 2);
	} else {
		p[0] = (uint8_t)n;
	}
}

/* True when the field holds its zero value (and is left out). */
static bool is_zero(const void *base, const struct fdesc *f)
{
	switch (f->kind) {
	case F_UINT: return load_uint(base, f) == 0;
	case F_INT: { int32_t v; memcpy(&v, (const uint8_t *)base + f->off, 4); return v == 0; }
	case F_BOOL: return !((const bool *)((const uint8_t *)base + f->off))[0];
	default: return load_len(base, f) == 0;
	}
}

/* ---- Checking (both directions) ------------------------------------------ */

/* Every field outside mask is zero; every field inside is in range. */
static bool fields_ok(const void *base, const struct fdesc *tab, uint64_t mask)
{
	for (uint8_t k = 1; k <= EL_CW_K_MAX; k++) {
		const struct fdesc *f = &tab[k];
		if (f->kind == F_NONE)
			continue;
		if (!(mask & BIT(k))) {
			if (!is_zero(base, f))
				return false;
		} else if (f->kind == F_UINT) {
			if (load_uint(base, f) > f->max)
				return false;
		} else if (f->kind == F_INT) {
			int32_t v;
			memcpy(&v, (const uint8_t *)base + f->off, 4);
			if (v > 0)
				return false;
		} else if (f->kind == F_TEXT || f->kind == F_BYTES || f->kind == F_ARRAY) {
			if (load_len(base, f) > f->max)
				return false;
		}
	}
	return true;
}

/* Nested elements: in range and carrying their required key. */
static bool elems_ok(const struct el_cw_msg *m)
{
	static const uint8_t keys[] = { EL_CW_K_MEMBERS, EL_CW_K_HOLDERS, EL_CW_K_WAITERS,
					EL_CW_K_LOCKS };
	for (uint32_t j = 0; j < sizeof keys; j++) {
		const struct fdesc *f = &msg_fields[keys[j]];
		const struct elem *el = elem_of(keys[j]);
		const uint8_t *items = (const uint8_t *)m + f->off;
		for (uint8_t i = 0; i < load_len(m, f); i++) {
			const uint8_t *item = items + (uint32_t)i * el->size;
			if (!fields_ok(item, el->fields, el->mask) ||
			    is_zero(item, &el->fields[el->required]))
				return false;
		}
	}
	return true;
}

/* What each type needs to be nonzero. */
static bool required_ok(const struct el_cw_msg *m)
{
	uint8_t t = m->type;
	if (t == EL_CW_EVENT)
		return m->id == 0 && m->session != 0 && m->kind != 0;
	if (t == EL_CW_ERROR)
		return m->err < 0;
	if (m->id == 0)
		return false;
	switch (t) {
	case EL_CW_OPEN_SESSION: return m->ttl_ms != 0;
	case EL_CW_ACQUIRE: /* a semaphore's permits are exclusive */
		return m->session != 0 && m->seq != 0 && m->name_len != 0 &&
		       (m->permits == 0 || m->mode == EL_LOCK_EXCLUSIVE);
	case EL_CW_KEEPALIVE:
	case EL_CW_CLOSE_SESSION: return m->session != 0;
	case EL_CW_RELEASE:
	case EL_CW_RESIGN:
	case EL_CW_PROCLAIM:
		if (m->token == 0)
			return false;
		/* fall through */
	case EL_CW_CAMPAIGN:
	case EL_CW_WATCH:
	case EL_CW_UNWATCH: return m->session != 0 && m->seq != 0 && m->name_len != 0;
	case EL_CW_QUERY: return m->name_len != 0;
	case EL_CW_MEMBER_ADD:
	case EL_CW_MEMBER_REMOVE:
	case EL_CW_MEMBER_PROMOTE: return m->node != 0;
	default: return true;
	}
}

int el_cw_check(const struct el_cw_msg *m)
{
	uint64_t mask = type_mask(m->type);
	if (mask == 0 || !fields_ok(m, msg_fields, mask) || !elems_ok(m) || !required_ok(m))
		return EL_EINVAL;
	return EL_OK;
}

/* ---- Encoding ------------------------------------------------------------ */

static uint32_t count_present(const void *base, const struct fdesc *tab, uint64_t mask)
{
	uint32_t n = 0;
	for (uint8_t k = 1; k <= EL_CW_K_MAX; k++)
		if ((mask & BIT(k)) && !is_zero(base, &tab[k]))
			n++;
	return n;
}

static void put_scalar(struct el_cbor_enc *e, const void *base, const struct fdesc *f)
{
	const uint8_t *p = (const uint8_t *)base + f->off;
	switch (f->kind) {
	case F_UINT: el_cbor_put_uint(e, load_uint(base, f)); break;
	case F_INT: { int32_t v; memcpy(&v, p, 4); el_cbor_put_int(e, v); break; }
	case F_BOOL: el_cbor_put_bool(e, *(const bool *)p); break;
	case F_TEXT: el_cbor_put_text(e, (const char *)p, load_len(base, f)); break;
	default: el_cbor_put_bytes(e, p, load_len(base, f)); break;
	}
}

/* A nested element: scalars only. */
static void put_elem(struct el_cbor_enc *e, const void *base, const struct elem *el)
{
	el_cbor_put_map(e, count_present(base, el->fields, el->mask));
	for (uint8_t k = 1; k <= EL_CW_K_MAX; k++) {
		if ((el->mask & BIT(k)) && !is_zero(base, &el->fields[k])) {
			el_cbor_put_uint(e, k);
			put_scalar(e, base, &el->fields[k]);
		}
	}
}

static void put_array(struct el_cbor_enc *e, const struct el_cw_msg *m, uint8_t key)
{
	const struct fdesc *f = &msg_fields[key];
	const struct elem *el = elem_of(key);
	const uint8_t *items = (const uint8_t *)m + f->off;
	const uint8_t n = (uint8_t)load_len(m, f);
	el_cbor_put_array(e, n);
	for (uint8_t i = 0; i < n; i++)
		put_elem(e, items + (uint32_t)i * el->size, el);
}

int el_cw_encode(const struct el_cw_msg *m, uint8_t *buf, uint32_t cap)
{
	struct el_cbor_enc e;
	uint64_t mask = type_mask(m->type);
	if (el_cw_check(m) != EL_OK)
		return EL_EINVAL;
	el_cbor_enc_init(&e, buf, cap);
	el_cbor_put_map(&e, 1 + count_present(m, msg_fields, mask));
	el_cbor_put_uint(&e, EL_CW_K_VERSION);
	el_cbor_put_uint(&e, EL_CW_VERSION);
	for (uint8_t k = 1; k <= EL_CW_K_MAX; k++) {
		if (!(mask & BIT(k)) || is_zero(m, &msg_fields[k]))
			continue;
		el_cbor_put_uint(&e, k);
		if (msg_fields[k].kind == F_ARRAY)
			put_array(&e, m, k);
		else
			put_scalar(&e, m, &msg_fields[k]);
	}
	return el_cbor_enc_finish(&e);
}

/* ---- Decoding ------------------------------------------------------------ */

/* One value of kind f into base; false when it is refused. */
static bool get_scalar(struct el_cbor_dec *d, void *base, const struct fdesc *f)
{
	uint8_t *p = (uint8_t *)base + f->off;
	if (f->kind == F_UINT) {
		uint64_t v;
		el_cbor_get_uint_max(d, f->max, &v);
		store_uint(base, f, v);
	} else if (f->kind == F_INT) {
		int64_t v;
		el_cbor_get_int(d, &v);
		if (v > 0 || v < INT32_MIN)
			return false;
		int32_t x = (int32_t)v;
		memcpy(p, &x, 4);
	} else if (f->kind == F_BOOL) {
		el_cbor_get_bool(d, (bool *)p);
	} else {
		const uint8_t *s = NULL;
		uint32_t n = 0;
		if (f->kind == F_TEXT)
			el_cbor_get_text(d, (const char **)&s, &n, (uint32_t)f->max);
		else
			el_cbor_get_bytes(d, &s, &n, (uint32_t)f->max);
		if (el_cbor_dec_error(d) != 0)
			return false;
		if (n > 0)
			memcpy(p, s, n);
		store_len(base, f, n);
	}
	return el_cbor_dec_error(d) == 0;
}

/* The next key of a map, which must be in mask. */
static bool get_key(struct el_cbor_dec *d, uint64_t mask, uint8_t *key)
{
	uint64_t k;
	el_cbor_get_uint_max(d, EL_CW_K_MAX, &k);
	*key = (uint8_t)k;
	return el_cbor_dec_error(d) == 0 && (mask & BIT(k)) != 0;
}

static bool get_elem(struct el_cbor_dec *d, void *base, const struct elem *el)
{
	uint32_t n;
	el_cbor_get_map(d, &n, EL_CW_K_MAX + 1);
	for (uint32_t i = 0; i < n && el_cbor_dec_error(d) == 0; i++) {
		uint8_t k;
		if (!get_key(d, el->mask, &k) || !get_scalar(d, base, &el->fields[k]))
			return false;
	}
	return el_cbor_dec_error(d) == 0;
}

static bool get_array(struct el_cbor_dec *d, struct el_cw_msg *m, uint8_t key)
{
	const struct fdesc *f = &msg_fields[key];
	const struct elem *el = elem_of(key);
	uint8_t *items = (uint8_t *)m + f->off;
	uint32_t n;
	el_cbor_get_array(d, &n, (uint32_t)f->max);
	if (el_cbor_dec_error(d) != 0)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (!get_elem(d, items + i * el->size, el))
			return false;
	((uint8_t *)m)[f->len_off] = (uint8_t)n;
	return true;
}

/* Version and type; EL_EVERSION keeps reading id for the error reply. */
static int get_head(struct el_cbor_dec *d, struct el_cw_msg *m, uint32_t *pairs)
{
	uint64_t k, v, t = 0;
	el_cbor_get_map(d, pairs, EL_CW_K_MAX + 1);
	el_cbor_get_uint(d, &k);
	el_cbor_get_uint(d, &v);
	if (el_cbor_dec_error(d) != 0 || k != EL_CW_K_VERSION || *pairs < 2)
		return EL_EDECODE;
	el_cbor_get_uint(d, &k);
	el_cbor_get_uint_max(d, 255, &t);
	if (el_cbor_dec_error(d) != 0 || k != EL_CW_K_TYPE)
		return EL_EDECODE;
	m->type = (uint8_t)t;
	if (el_cbor_peek(d) == EL_CBOR_UINT && *pairs > 2) {
		struct el_cbor_dec save = *d;
		el_cbor_get_uint(d, &k);
		if (k == EL_CW_K_ID && el_cbor_peek(d) == EL_CBOR_UINT) {
			el_cbor_get_uint(d, &m->id);
			*pairs -= 1;
		} else {
			*d = save;
		}
	}
	*pairs -= 2;
	return v == EL_CW_VERSION ? EL_OK : EL_EVERSION;
}

int el_cw_decode(struct el_cw_msg *m, const uint8_t *buf, uint32_t len)
{
	struct el_cbor_dec d;
	uint32_t pairs;
	memset(m, 0, sizeof *m);
	el_cbor_dec_init(&d, buf, len);
	int rc = get_head(&d, m, &pairs);
	uint64_t mask = type_mask(m->type);
	bool ok = rc == EL_OK && mask != 0;
	for (uint32_t i = 0; ok && i < pairs; i++) {
		uint8_t k;
		ok = get_key(&d, mask, &k);
		if (ok && msg_fields[k].kind == F_ARRAY)
			ok = get_array(&d, m, k);
		else if (ok)
			ok = get_scalar(&d, m, &msg_fields[k]);
		ok = ok && el_cbor_dec_error(&d) == 0;
	}
	if (ok && el_cbor_dec_finish(&d) == 0 && el_cw_check(m) == EL_OK)
		return EL_OK;
	uint64_t id = m->id;
	uint8_t type = m->type;
	memset(m, 0, sizeof *m);
	m->id = id;
	m->type = type;
	return rc == EL_EVERSION ? EL_EVERSION : EL_EDECODE;
}
