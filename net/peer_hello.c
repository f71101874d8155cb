/*
 * peer_hello.c - the peer hello frame (el_peer_hello.h).
 */
#include <stdbool.h>
#include <string.h>

#include "el_cbor.h"
#include "el_config.h"
#include "el_error.h"
#include "el_lock.h"
#include "el_peer_hello.h"

int el_peer_hello_encode(const struct el_peer_hello *h, uint8_t *buf, uint32_t cap)
{
	struct el_cbor_enc e;
	if (h->node == 0 || h->peer_addr_len > EL_CW_ADDR_MAX ||
	    h->client_addr_len > EL_CW_ADDR_MAX || h->cluster_name_len > EL_PEER_HELLO_CLUSTER_MAX)
		return EL_EINVAL;
	el_cbor_enc_init(&e, buf, cap);
	el_cbor_put_map(&e, 7u + (h->cluster_name_len > 0 ? 1u : 0u) +
				    (h->has_incarnation ? 2u : 0u));
	el_cbor_put_uint(&e, 0);
	el_cbor_put_uint(&e, EL_PEER_HELLO_VERSION);
	el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, EL_PEER_HELLO_TYPE);
	el_cbor_put_uint(&e, 2);
	el_cbor_put_uint(&e, h->node);
	el_cbor_put_uint(&e, 3);
	el_cbor_put_uint(&e, h->cluster);
	el_cbor_put_uint(&e, 4);
	el_cbor_put_uint(&e, h->profile);
	el_cbor_put_uint(&e, 5);
	el_cbor_put_text(&e, h->peer_addr, h->peer_addr_len);
	el_cbor_put_uint(&e, 6);
	el_cbor_put_text(&e, h->client_addr, h->client_addr_len);
	if (h->cluster_name_len > 0) {
		el_cbor_put_uint(&e, 7);
		el_cbor_put_text(&e, h->cluster_name, h->cluster_name_len);
	}
	if (h->has_incarnation) {
		el_cbor_put_uint(&e, 8);
		el_cbor_put_uint(&e, h->generation);
		el_cbor_put_uint(&e, 9);
		el_cbor_put_uint(&e, h->nonce);
	}
	return el_cbor_enc_finish(&e);
}

/* The next key must be want; a miss is remembered in *bad. */
static void get_key(struct el_cbor_dec *d, uint64_t want, bool *bad)
{
	uint64_t k;
	el_cbor_get_uint(d, &k);
	if (k != want)
		*bad = true;
}

int el_peer_hello_decode(struct el_peer_hello *h, const uint8_t *buf, uint32_t len)
{
	struct el_cbor_dec d;
	uint32_t n;
	uint64_t v, t, node;
	const char *pa, *ca, *name = NULL;
	uint32_t pl, cl, name_len = 0;
	bool bad = false;
	memset(h, 0, sizeof *h);
	el_cbor_dec_init(&d, buf, len);
	el_cbor_get_map(&d, &n, 10);
	get_key(&d, 0, &bad);
	el_cbor_get_uint(&d, &v);
	if (!bad && el_cbor_dec_error(&d) == 0 && v != EL_PEER_HELLO_VERSION)
		return EL_EVERSION;
	get_key(&d, 1, &bad);
	el_cbor_get_uint(&d, &t);
	get_key(&d, 2, &bad);
	el_cbor_get_uint_max(&d, UINT32_MAX, &node);
	get_key(&d, 3, &bad);
	el_cbor_get_uint(&d, &h->cluster);
	get_key(&d, 4, &bad);
	el_cbor_get_uint(&d, &h->profile);
	get_key(&d, 5, &bad);
	el_cbor_get_text(&d, &pa, &pl, EL_CW_ADDR_MAX);
	get_key(&d, 6, &bad);
	el_cbor_get_text(&d, &ca, &cl, EL_CW_ADDR_MAX);
	/* 7 keys: neither optional part; 8: the name; 9: the incarnation;
	 * 10: both (keys 8 and 9 come together) */
	if (n == 8 || n == 10) { /* the name, never empty: an empty one would not encode back */
		get_key(&d, 7, &bad);
		el_cbor_get_text(&d, &name, &name_len, EL_PEER_HELLO_CLUSTER_MAX);
		bad = bad || name_len == 0;
	}
	uint64_t gen = 0;
	if (n >= 9) {
		get_key(&d, 8, &bad);
		el_cbor_get_uint_max(&d, UINT32_MAX, &gen);
		get_key(&d, 9, &bad);
		el_cbor_get_uint(&d, &h->nonce);
	}
	if (bad || n < 7 || el_cbor_dec_finish(&d) != 0 || t != EL_PEER_HELLO_TYPE || node == 0) {
		memset(h, 0, sizeof *h);
		return EL_EDECODE;
	}
	h->node = (el_id_t)node;
	h->has_incarnation = n >= 9;
	h->generation = (uint32_t)gen;
	h->peer_addr_len = (uint8_t)pl;
	h->client_addr_len = (uint8_t)cl;
	memcpy(h->peer_addr, pa, pl);
	memcpy(h->client_addr, ca, cl);
	h->cluster_name_len = (uint8_t)name_len;
	if (name_len > 0)
		memcpy(h->cluster_name, name, name_len);
	return EL_OK;
}

int el_peer_hello_is(const uint8_t *buf, uint32_t len)
{
	/* map head, 0, version, 1, then the type as a one-byte uint 0x18 0x64 */
	return len >= 6 && buf[1] == 0 && buf[3] == 1 && buf[4] == 0x18 &&
	       buf[5] == EL_PEER_HELLO_TYPE;
}

static uint64_t fnv(uint64_t h, uint64_t v)
{
	for (int i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Everything a member must share: what bounds entries, messages and
 * snapshots (the open-session table, EL_OPENS_MAX, is in the snapshot too:
 * a node with fewer slots refuses it and stops), and the log window (a
 * follower with a smaller one cannot take what a leader lets stand
 * uncommitted). Node-local limits (requests and reads in flight) are not. */
uint64_t el_peer_profile(void)
{
	static const uint64_t limits[] = {
		EL_NODES_MAX, EL_ENTRY_DATA_MAX, EL_SNAPSHOT_MAX, EL_SNAPSHOT_CHUNK,
		EL_SESSIONS_MAX, EL_LOCKS_MAX, EL_HOLDERS_MAX, EL_WAITERS_MAX, EL_WATCHES_MAX,
		EL_NAME_MAX, EL_VALUE_MAX, EL_CLIENT_NAME_MAX, EL_HOLDS_MAX, EL_VALUES_MAX,
		EL_MSG_ENTRIES_MAX, EL_OPENS_MAX, EL_LOG_WINDOW,
		/* a member without semaphores would apply a permit as a plain
		 * acquire and its table would part from the others' */
		EL_SEMAPHORES, EL_SEM_LIMIT_MAX,
	};
	uint64_t h = 0xcbf29ce484222325ull;
	for (unsigned i = 0; i < sizeof limits / sizeof limits[0]; i++)
		h = fnv(h, limits[i]);
	return h;
}

uint64_t el_peer_digest(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}
