/*
 * test_client_wire.c - unit tests of the client protocol codec
 * (core/client_wire.c, docs/protocol.md): round trips of every message type,
 * the pinned example bytes of the document, the version and type head, the
 * key rules (order, masks, unknown keys), ranges, nested arrays, required
 * fields, encoder refusals, and every truncation and single-bit flip of a
 * full message (refused cleanly or decoded to a valid message).
 */
#include <stdint.h>
#include <string.h>

#include "el_cbor.h"
#include "el_client_wire.h"
#include "el_error.h"
#include "el_test.h"

static struct el_cw_msg tx, rx;
static uint8_t buf[EL_CW_MSG_MAX], buf2[EL_CW_MSG_MAX];

static void set_text(char *dst, uint8_t *len, const char *s)
{
	*len = (uint8_t)strlen(s);
	memcpy(dst, s, *len);
}

/* A message of type t with every field the type may carry set. */
static void build(uint8_t t)
{
	memset(&tx, 0, sizeof tx);
	tx.type = t;
	tx.id = 0x1122334455667788ull;
	if (t == EL_CW_EVENT) {
		tx.id = 0;
		tx.kind = EL_CW_EV_GRANTED;
		tx.session = 7;
		tx.seq = 3;
		tx.token = 99;
		tx.lease_ms = 1234;
		set_text(tx.name, &tx.name_len, "door");
		return;
	}
	if (t == EL_CW_ERROR) {
		tx.err = EL_EDECODE;
		return;
	}
	uint8_t req = t > EL_CW_REPLY_BASE ? (uint8_t)(t - EL_CW_REPLY_BASE) : t;
	bool reply = t > EL_CW_REPLY_BASE;
	if (reply) {
		tx.err = EL_ENOTLEADER;
		tx.leader = 3;
		set_text(tx.leader_addr, &tx.leader_addr_len, "tls+tcp://127.0.0.1:7003");
	}
	if (!reply && req == EL_CW_OPEN_SESSION) {
		tx.ttl_ms = 10000;
		tx.nonce = UINT64_MAX;
		set_text(tx.client, &tx.client_len, "sensor-7");
	} else if (!reply && (req == EL_CW_KEEPALIVE || req == EL_CW_CLOSE_SESSION)) {
		tx.session = 42;
	} else if (!reply && req >= EL_CW_ACQUIRE && req <= EL_CW_UNWATCH) {
		tx.session = 42;
		tx.seq = 5;
		set_text(tx.name, &tx.name_len, "pump/1");
		if (req == EL_CW_ACQUIRE) {
			tx.mode = EL_LOCK_SHARED;
			tx.wait_ms = EL_WAIT_FOREVER;
			tx.delay_ms = 500;
		}
		if (req == EL_CW_CAMPAIGN) {
			tx.wait_ms = 100;
			tx.delay_ms = 1;
		}
		if (req == EL_CW_RELEASE || req == EL_CW_RESIGN || req == EL_CW_PROCLAIM)
			tx.token = 1ull << 40;
		if (req == EL_CW_CAMPAIGN || req == EL_CW_PROCLAIM) {
			tx.value_len = EL_VALUE_MAX;
			memset(tx.value, 0xab, EL_VALUE_MAX);
		}
	} else if (!reply && req == EL_CW_QUERY) {
		set_text(tx.name, &tx.name_len, "q");
	} else if (!reply && req == EL_CW_LIST) {
		tx.cursor = 77;
		tx.limit = EL_CW_LIST_MAX;
	} else if (!reply && req >= EL_CW_MEMBER_ADD && req <= EL_CW_TRANSFER) {
		tx.node = 4;
		if (req == EL_CW_MEMBER_ADD) {
			tx.learner = true;
			set_text(tx.peer_addr, &tx.peer_addr_len, "tls+tcp://10.0.0.4:7100");
			set_text(tx.client_addr, &tx.client_addr_len, "tls+tcp://10.0.0.4:7200");
		}
	} else if (reply && req <= EL_CW_UNWATCH) {
		tx.session = 9;
		tx.token = 1000;
		tx.count = 2;
		tx.queued = true;
		tx.index = 1000;
	} else if (reply && req == EL_CW_QUERY) {
		set_text(tx.name, &tx.name_len, "pump/1");
		tx.mode = EL_LOCK_SHARED;
		tx.delayed = true;
		tx.delay_token = 5;
		tx.n_waiters = 300;
		tx.n_watches = 2;
		tx.value_len = 3;
		memcpy(tx.value, "abc", 3);
		tx.n_holders = EL_HOLDERS_MAX;
		for (int i = 0; i < EL_HOLDERS_MAX; i++) {
			tx.holders[i].session = (uint64_t)i + 1;
			tx.holders[i].token = (uint64_t)i + 100;
			tx.holders[i].count = 1;
			tx.holders[i].grant_ms = 123456789;
			set_text(tx.holders[i].client, &tx.holders[i].client_len, "dev");
		}
		tx.n_waiters_listed = EL_QUERY_WAITERS_MAX;
		for (int i = 0; i < EL_QUERY_WAITERS_MAX; i++) {
			tx.waiters[i].session = (uint64_t)i + 50;
			tx.waiters[i].seq = 1;
			tx.waiters[i].wait_ms = EL_WAIT_FOREVER;
			tx.waiters[i].mode = (uint8_t)(i & 1);
		}
	} else if (reply && req == EL_CW_LIST) {
		tx.cursor = 33;
		tx.n_locks_listed = EL_CW_LIST_MAX;
		for (int i = 0; i < EL_CW_LIST_MAX; i++) {
			struct el_cw_lock *l = &tx.locks[i];
			l->name_len = EL_NAME_MAX;
			memset(l->name, 'a' + i % 26, EL_NAME_MAX);
			l->mode = (uint8_t)(i & 1);
			l->n_holders = (uint8_t)(i % EL_HOLDERS_MAX);
			l->n_waiters = (uint16_t)i;
			l->token = (uint64_t)i * 1000;
			l->delayed = i % 3 == 0;
		}
	} else if (reply && req == EL_CW_STATUS) {
		tx.node = 1;
		tx.role = EL_LEADER;
		tx.term = 12;
		tx.commit = 400;
		tx.applied = 399;
		tx.last_index = 401;
		tx.n_sessions = 8192;
		tx.n_locks = 32768;
		tx.n_members = EL_NODES_MAX;
		for (int i = 0; i < EL_NODES_MAX; i++) {
			struct el_cw_member *mb = &tx.members[i];
			mb->node = (el_id_t)i + 1;
			mb->role = EL_MEMBER_VOTER;
			mb->reachable = i % 2 == 0;
			mb->match = 400;
			mb->peer_addr_len = EL_CW_ADDR_MAX;
			memset(mb->peer_addr, 'p', EL_CW_ADDR_MAX);
			set_text(mb->client_addr, &mb->client_addr_len, "tls+tcp://h:1");
		}
	} else if (reply && req >= EL_CW_MEMBER_ADD && req <= EL_CW_TRANSFER) {
		tx.node = 4;
		tx.index = 77;
	} else if (req == EL_CW_SNAPSHOT) {
		tx.index = 5000;
		tx.offset = 8192;
		if (reply) {
			tx.total = 1u << 23;
			tx.chunk_len = EL_CW_CHUNK_MAX;
			for (uint32_t i = 0; i < EL_CW_CHUNK_MAX; i++)
				tx.chunk[i] = (uint8_t)(i * 7);
		}
	}
}

static const uint8_t all_types[] = {
	1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
	65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83,
	EL_CW_EVENT, EL_CW_ERROR,
};

static void test_round_trip_every_type(void)
{
	for (uint32_t i = 0; i < sizeof all_types; i++) {
		build(all_types[i]);
		int n = el_cw_encode(&tx, buf, sizeof buf);
		EL_CHECK(n > 0);
		EL_CHECK_EQ(el_cw_decode(&rx, buf, (uint32_t)n), EL_OK);
		EL_CHECK(memcmp(&tx, &rx, sizeof tx) == 0);
		int n2 = el_cw_encode(&rx, buf2, sizeof buf2);
		EL_CHECK(n2 == n && memcmp(buf, buf2, (size_t)n) == 0);
	}
}

static void test_worst_case_fits(void)
{
	static const uint8_t big[] = { 75, 76, 77, EL_CW_REPLY(EL_CW_SNAPSHOT) };
	for (uint32_t i = 0; i < sizeof big; i++) {
		build(big[i]);
		int n = el_cw_encode(&tx, buf, sizeof buf);
		EL_CHECK(n > 0 && (uint32_t)n <= EL_CW_MSG_MAX);
		EL_CHECK_EQ(el_cw_encode(&tx, buf, (uint32_t)n - 1), EL_EFULL);
	}
	build(EL_CW_REPLY(EL_CW_SNAPSHOT)); /* a chunk past its bound is refused */
	tx.chunk_len = EL_CW_CHUNK_MAX + 1;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
}

/* The example of docs/protocol.md, byte for byte. */
static void test_document_example(void)
{
	static const uint8_t open[] = { 0xa4, 0, 1, 1, 1, 2, 1, 9, 0x19, 0x27, 0x10 };
	memset(&tx, 0, sizeof tx);
	tx.type = EL_CW_OPEN_SESSION;
	tx.id = 1;
	tx.ttl_ms = 10000;
	int n = el_cw_encode(&tx, buf, sizeof buf);
	EL_CHECK_EQ(n, (int)sizeof open);
	EL_CHECK(memcmp(buf, open, sizeof open) == 0);
	/* {0:1, 1:4, 2:2, 4:7, 5:1, 6:"a"} */
	static const uint8_t acq[] = { 0xa6, 0, 1, 1, 4, 2, 2, 4, 7, 5, 1, 6, 0x61, 'a' };
	EL_CHECK_EQ(el_cw_decode(&rx, acq, sizeof acq), EL_OK);
	EL_CHECK(rx.type == EL_CW_ACQUIRE && rx.id == 2 && rx.session == 7 && rx.seq == 1);
	EL_CHECK(rx.name_len == 1 && rx.name[0] == 'a' && rx.wait_ms == 0 && rx.mode == 0);
	uint8_t p[4];
	el_cw_put_prefix(p, 0x0102a0b0);
	EL_CHECK(p[0] == 1 && p[1] == 2 && p[2] == 0xa0 && p[3] == 0xb0);
	EL_CHECK_EQ(el_cw_get_prefix(p), 0x0102a0b0);
}

/* Writes a map of n (key, uint value) pairs, in the order given. */
static uint32_t raw_map(const uint64_t *kv, uint32_t pairs)
{
	struct el_cbor_enc e;
	el_cbor_enc_init(&e, buf, sizeof buf);
	el_cbor_put_map(&e, pairs);
	for (uint32_t i = 0; i < pairs; i++) {
		el_cbor_put_uint(&e, kv[2 * i]);
		el_cbor_put_uint(&e, kv[2 * i + 1]);
	}
	int n = el_cbor_enc_finish(&e);
	return n > 0 ? (uint32_t)n : 0;
}

static void test_version_and_type(void)
{
	const uint64_t other_version[] = { 0, 2, 1, 18, 2, 55 };
	EL_CHECK_EQ(el_cw_decode(&rx, buf, raw_map(other_version, 3)), EL_EVERSION);
	EL_CHECK(rx.id == 55 && rx.type == 18); /* kept for the error reply */
	const uint64_t ping[] = { 0, 1, 1, 18, 2, 55 };
	EL_CHECK_EQ(el_cw_decode(&rx, buf, raw_map(ping, 3)), EL_OK);
	const uint64_t unknown_type[] = { 0, 1, 1, 20, 2, 55 };
	EL_CHECK_EQ(el_cw_decode(&rx, buf, raw_map(unknown_type, 3)), EL_EDECODE);
	EL_CHECK(rx.id == 55 && rx.type == 20);
	const uint64_t no_version[] = { 1, 18, 2, 55 };
	EL_CHECK_EQ(el_cw_decode(&rx, buf, raw_map(no_version, 2)), EL_EDECODE);
	const uint64_t no_id[] = { 0, 1, 1, 18 };
	EL_CHECK_EQ(el_cw_decode(&rx, buf, raw_map(no_id, 2)), EL_EDECODE);
	const uint64_t zero_id[] = { 0, 1, 1, 18, 2, 0 };
	EL_CHECK_EQ(el_cw_decode(&rx, buf, raw_map(zero_id, 3)), EL_EDECODE);
	/* not a map at all, and the empty input */
	static const uint8_t arr[] = { 0x82, 0, 1 };
	EL_CHECK_EQ(el_cw_decode(&rx, arr, sizeof arr), EL_EDECODE);
	EL_CHECK_EQ(el_cw_decode(&rx, arr, 0), EL_EDECODE);
}

static void test_key_rules(void)
{
	/* a key the type does not carry: session on PING */
	const uint64_t extra[] = { 0, 1, 1, 18, 2, 5, 4, 9 };
	EL_CHECK_EQ(el_cw_decode(&rx, buf, raw_map(extra, 4)), EL_EDECODE);
	/* an unknown key */
	const uint64_t unknown[] = { 0, 1, 1, 18, 2, 5, 47, 1 };
	EL_CHECK_EQ(el_cw_decode(&rx, buf, raw_map(unknown, 4)), EL_EDECODE);
	/* keys out of order, and repeated (el_cbor's writer refuses; write raw) */
	static const uint8_t swapped[] = { 0xa3, 0, 1, 2, 5, 1, 18 };
	EL_CHECK_EQ(el_cw_decode(&rx, swapped, sizeof swapped), EL_EDECODE);
	static const uint8_t late[] = { 0xa6, 0, 1, 1, 4, 2, 2, 5, 1, 4, 7, 6, 0x61, 'a' };
	EL_CHECK_EQ(el_cw_decode(&rx, late, sizeof late), EL_EDECODE);
	static const uint8_t dup[] = { 0xa4, 0, 1, 1, 2, 2, 5, 2, 5 };
	EL_CHECK_EQ(el_cw_decode(&rx, dup, sizeof dup), EL_EDECODE);
	/* trailing bytes after the map */
	const uint64_t ok[] = { 0, 1, 1, 18, 2, 5 };
	uint32_t n = raw_map(ok, 3);
	buf[n] = 0;
	EL_CHECK_EQ(el_cw_decode(&rx, buf, n + 1), EL_EDECODE);
	/* an explicit zero is the same as absent */
	const uint64_t zero_mode[] = { 0, 1, 1, 4, 2, 5, 4, 7, 5, 1 };
	struct el_cbor_enc e;
	el_cbor_enc_init(&e, buf, sizeof buf);
	el_cbor_put_map(&e, 7);
	for (int i = 0; i < 5; i++) {
		el_cbor_put_uint(&e, zero_mode[2 * i]);
		el_cbor_put_uint(&e, zero_mode[2 * i + 1]);
	}
	el_cbor_put_uint(&e, EL_CW_K_NAME);
	el_cbor_put_text(&e, "x", 1);
	el_cbor_put_uint(&e, EL_CW_K_MODE);
	el_cbor_put_uint(&e, 0);
	int len = el_cbor_enc_finish(&e);
	EL_CHECK(len > 0);
	EL_CHECK_EQ(el_cw_decode(&rx, buf, (uint32_t)len), EL_OK);
	EL_CHECK(rx.mode == EL_LOCK_EXCLUSIVE && rx.name_len == 1);
}

static void test_ranges_and_types(void)
{
	/* mode 2 */
	build(EL_CW_ACQUIRE);
	tx.mode = 2;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
	tx.mode = 1;
	int n = el_cw_encode(&tx, buf, sizeof buf);
	EL_CHECK(n > 0);
	/* find the mode value (key 7, value 1) and make it 2 */
	for (int i = 0; i + 1 < n; i++)
		if (buf[i] == EL_CW_K_MODE && buf[i + 1] == 1) {
			buf[i + 1] = 2;
			break;
		}
	EL_CHECK_EQ(el_cw_decode(&rx, buf, (uint32_t)n), EL_EDECODE);
	/* wait_ms above 32 bits */
	struct el_cbor_enc e;
	el_cbor_enc_init(&e, buf, sizeof buf);
	el_cbor_put_map(&e, 7);
	el_cbor_put_uint(&e, 0); el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, 1); el_cbor_put_uint(&e, 4);
	el_cbor_put_uint(&e, 2); el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, 4); el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, 5); el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, 6); el_cbor_put_text(&e, "n", 1);
	el_cbor_put_uint(&e, 8); el_cbor_put_uint(&e, 1ull << 32);
	n = el_cbor_enc_finish(&e);
	EL_CHECK_EQ(el_cw_decode(&rx, buf, (uint32_t)n), EL_EDECODE);
	/* the name as bytes instead of text; a name one byte too long */
	el_cbor_enc_init(&e, buf, sizeof buf);
	el_cbor_put_map(&e, 3);
	el_cbor_put_uint(&e, 0); el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, 1); el_cbor_put_uint(&e, 11);
	el_cbor_put_uint(&e, 2); el_cbor_put_uint(&e, 1);
	n = el_cbor_enc_finish(&e);
	EL_CHECK_EQ(el_cw_decode(&rx, buf, (uint32_t)n), EL_EDECODE); /* QUERY needs a name */
	char longname[EL_NAME_MAX + 1];
	memset(longname, 'n', sizeof longname);
	for (int variant = 0; variant < 3; variant++) {
		el_cbor_enc_init(&e, buf, sizeof buf);
		el_cbor_put_map(&e, 4);
		el_cbor_put_uint(&e, 0); el_cbor_put_uint(&e, 1);
		el_cbor_put_uint(&e, 1); el_cbor_put_uint(&e, 11);
		el_cbor_put_uint(&e, 2); el_cbor_put_uint(&e, 1);
		el_cbor_put_uint(&e, 6);
		if (variant == 0)
			el_cbor_put_bytes(&e, (const uint8_t *)"ab", 2);
		else if (variant == 1)
			el_cbor_put_text(&e, longname, EL_NAME_MAX + 1);
		else
			el_cbor_put_text(&e, longname, EL_NAME_MAX);
		n = el_cbor_enc_finish(&e);
		EL_CHECK_EQ(el_cw_decode(&rx, buf, (uint32_t)n), variant == 2 ? EL_OK : EL_EDECODE);
	}
	/* err must be <= 0 */
	build(EL_CW_REPLY(EL_CW_PING));
	tx.err = 1;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
}

static void test_required_fields(void)
{
	build(EL_CW_ACQUIRE);
	tx.seq = 0;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
	build(EL_CW_RELEASE);
	tx.token = 0;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
	build(EL_CW_OPEN_SESSION);
	tx.ttl_ms = 0;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
	build(EL_CW_EVENT);
	tx.id = 1;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
	build(EL_CW_ERROR);
	tx.err = 0;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
	/* a field outside the type's keys is refused, not silently dropped */
	build(EL_CW_PING);
	tx.session = 3;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
	/* nested: a holder without its session; too many members */
	build(EL_CW_REPLY(EL_CW_QUERY));
	tx.holders[2].session = 0;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
	build(EL_CW_REPLY(EL_CW_STATUS));
	tx.n_members = EL_NODES_MAX + 1;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
	build(EL_CW_REPLY(EL_CW_STATUS));
	tx.members[0].role = 4;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
}

static void test_nested_rules(void)
{
	struct el_cbor_enc e;
	/* a holder map with a key a holder does not have (node) */
	el_cbor_enc_init(&e, buf, sizeof buf);
	el_cbor_put_map(&e, 4);
	el_cbor_put_uint(&e, 0); el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, 1); el_cbor_put_uint(&e, EL_CW_REPLY(EL_CW_QUERY));
	el_cbor_put_uint(&e, 2); el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, EL_CW_K_HOLDERS);
	el_cbor_put_array(&e, 1);
	el_cbor_put_map(&e, 2);
	el_cbor_put_uint(&e, EL_CW_K_SESSION); el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, EL_CW_K_NODE); el_cbor_put_uint(&e, 1);
	int n = el_cbor_enc_finish(&e);
	EL_CHECK(n > 0);
	EL_CHECK_EQ(el_cw_decode(&rx, buf, (uint32_t)n), EL_EDECODE);
	/* a holder nested one level deeper than allowed (array in the map) */
	el_cbor_enc_init(&e, buf, sizeof buf);
	el_cbor_put_map(&e, 4);
	el_cbor_put_uint(&e, 0); el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, 1); el_cbor_put_uint(&e, EL_CW_REPLY(EL_CW_QUERY));
	el_cbor_put_uint(&e, 2); el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, EL_CW_K_HOLDERS);
	el_cbor_put_array(&e, 1);
	el_cbor_put_map(&e, 1);
	el_cbor_put_uint(&e, EL_CW_K_SESSION);
	el_cbor_put_array(&e, 0);
	n = el_cbor_enc_finish(&e);
	EL_CHECK(n > 0);
	EL_CHECK_EQ(el_cw_decode(&rx, buf, (uint32_t)n), EL_EDECODE);
	/* more waiters than a reply lists */
	el_cbor_enc_init(&e, buf, sizeof buf);
	el_cbor_put_map(&e, 4);
	el_cbor_put_uint(&e, 0); el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, 1); el_cbor_put_uint(&e, EL_CW_REPLY(EL_CW_QUERY));
	el_cbor_put_uint(&e, 2); el_cbor_put_uint(&e, 1);
	el_cbor_put_uint(&e, EL_CW_K_WAITERS);
	el_cbor_put_array(&e, EL_QUERY_WAITERS_MAX + 1);
	for (int i = 0; i < EL_QUERY_WAITERS_MAX + 1; i++) {
		el_cbor_put_map(&e, 1);
		el_cbor_put_uint(&e, EL_CW_K_SESSION);
		el_cbor_put_uint(&e, 1);
	}
	n = el_cbor_enc_finish(&e);
	EL_CHECK(n > 0);
	EL_CHECK_EQ(el_cw_decode(&rx, buf, (uint32_t)n), EL_EDECODE);
}

/* Every prefix of a full message is refused; every single-bit flip either is
 * refused or decodes to a valid message that round-trips. */
static void test_truncation_and_flips(void)
{
	static const uint8_t types[] = { EL_CW_ACQUIRE, 75, 76, 77 };
	static uint8_t orig[EL_CW_MSG_MAX];
	for (uint32_t t = 0; t < sizeof types; t++) {
		build(types[t]);
		int n = el_cw_encode(&tx, orig, sizeof orig);
		EL_CHECK(n > 0);
		for (int cut = 0; cut < n; cut++)
			EL_CHECK_EQ(el_cw_decode(&rx, orig, (uint32_t)cut), EL_EDECODE);
		for (int bit = 0; bit < n * 8; bit += (types[t] == EL_CW_ACQUIRE ? 1 : 7)) {
			memcpy(buf, orig, (size_t)n);
			buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			int rc = el_cw_decode(&rx, buf, (uint32_t)n);
			EL_CHECK(rc == EL_OK || rc == EL_EDECODE || rc == EL_EVERSION);
			if (rc == EL_OK) {
				EL_CHECK_EQ(el_cw_check(&rx), EL_OK);
				EL_CHECK(el_cw_encode(&rx, buf2, sizeof buf2) > 0);
			}
		}
	}
}

/* A semaphore's limit (key permits): on ACQUIRE, its reply (EL_ELIMIT),
 * QUERY replies and LIST's locks; refused with shared mode, past
 * EL_SEM_LIMIT_MAX, or on a type that does not carry it. */
static void test_permits(void)
{
	memset(&tx, 0, sizeof tx);
	tx.type = EL_CW_ACQUIRE;
	tx.id = 5;
	tx.session = 42;
	tx.seq = 1;
	tx.permits = 3;
	set_text(tx.name, &tx.name_len, "rollout");
	int n = el_cw_encode(&tx, buf, sizeof buf);
	EL_CHECK(n > 0);
	EL_CHECK_EQ(el_cw_decode(&rx, buf, (uint32_t)n), EL_OK);
	EL_CHECK_EQ(rx.permits, 3);
	tx.mode = EL_LOCK_SHARED;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
	tx.mode = EL_LOCK_EXCLUSIVE;
	tx.permits = EL_SEM_LIMIT_MAX + 1;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
	tx.permits = 2;
	tx.type = EL_CW_WATCH;
	EL_CHECK_EQ(el_cw_encode(&tx, buf, sizeof buf), EL_EINVAL);
	memset(&tx, 0, sizeof tx);
	tx.type = EL_CW_REPLY(EL_CW_ACQUIRE);
	tx.id = 5;
	tx.err = EL_ELIMIT;
	tx.permits = 3;
	n = el_cw_encode(&tx, buf, sizeof buf);
	EL_CHECK_EQ(el_cw_decode(&rx, buf, (uint32_t)n), EL_OK);
	EL_CHECK_EQ(rx.err, EL_ELIMIT);
	EL_CHECK_EQ(rx.permits, 3);
	memset(&tx, 0, sizeof tx);
	tx.type = EL_CW_REPLY(EL_CW_LIST);
	tx.id = 6;
	tx.n_locks_listed = 1;
	set_text(tx.locks[0].name, &tx.locks[0].name_len, "rollout");
	tx.locks[0].permits = 3;
	tx.locks[0].n_holders = 2;
	n = el_cw_encode(&tx, buf, sizeof buf);
	EL_CHECK_EQ(el_cw_decode(&rx, buf, (uint32_t)n), EL_OK);
	EL_CHECK_EQ(rx.locks[0].permits, 3);
	EL_CHECK_EQ(rx.locks[0].n_holders, 2);
}

static void test_is_request(void)
{
	EL_CHECK(el_cw_is_request(EL_CW_OPEN_SESSION) && el_cw_is_request(EL_CW_PING));
	EL_CHECK(!el_cw_is_request(0) && !el_cw_is_request(EL_CW_REPLY(EL_CW_PING)));
	EL_CHECK(!el_cw_is_request(EL_CW_EVENT) && !el_cw_is_request(20));
}

void el_suite_client_wire(void);
void el_suite_client_wire(void)
{
	EL_RUN(test_round_trip_every_type);
	EL_RUN(test_worst_case_fits);
	EL_RUN(test_document_example);
	EL_RUN(test_version_and_type);
	EL_RUN(test_key_rules);
	EL_RUN(test_ranges_and_types);
	EL_RUN(test_required_fields);
	EL_RUN(test_nested_rules);
	EL_RUN(test_truncation_and_flips);
	EL_RUN(test_permits);
	EL_RUN(test_is_request);
}
