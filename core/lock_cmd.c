/*
 * lock_cmd.c - lock-table commands as log entry data: validation, and a
 * fixed-layout CBOR encoding with a version field, decoded strictly.
 *
 * Layout (one array of 13 items, the same for every type, so a decoder has a
 * single straight path and no optional fields to get wrong):
 *   [version, type, session, seq, token, now_ms, ttl_ms, wait_ms, delay_ms,
 *    mode, name (text), value (bytes), client (text)]
 * Fields a type does not use must be zero/empty: one encoding per command.
 * OPEN_SESSION uses no token; its nonce travels in that item instead (the
 * layout, and so the size of every command, stays as it was). ACQUIRE uses
 * no token either; a semaphore's limit travels in that item (0: a lock).
 */
#include <string.h>

#include "el_assert.h"
#include "el_cbor.h"
#include "el_error.h"
#include "el_lock.h"

#define CMD_ITEMS 13

/* Which fields a command type uses; an R_ field must also be nonzero. */
enum {
	F_SESSION = 1 << 0,
	F_SEQ = 1 << 1,
	F_TOKEN = 1 << 2,
	F_TTL = 1 << 3,
	F_WAIT = 1 << 4,
	F_DELAY = 1 << 5,
	F_MODE = 1 << 6,
	F_NAME = 1 << 7,
	F_VALUE = 1 << 8,
	F_CLIENT = 1 << 9,
	F_NONCE = 1 << 10,
	F_LIMIT = 1 << 11,
};
#define LOCK_REQ (F_SESSION | F_SEQ | F_NAME)

static const uint16_t cmd_fields[EL_CMD_TYPE_MAX + 1] = {
	[EL_CMD_OPEN_SESSION] = F_TTL | F_CLIENT | F_NONCE,
	[EL_CMD_KEEPALIVE] = F_SESSION,
	[EL_CMD_CLOSE_SESSION] = F_SESSION,
	[EL_CMD_EXPIRE_SESSION] = F_SESSION | F_TOKEN,
	[EL_CMD_ACQUIRE] = LOCK_REQ | F_MODE | F_WAIT | F_DELAY | F_LIMIT,
	[EL_CMD_RELEASE] = LOCK_REQ | F_TOKEN,
	[EL_CMD_WAIT_TIMEOUT] = LOCK_REQ,
	[EL_CMD_DELAY_END] = F_NAME | F_TOKEN,
	[EL_CMD_CAMPAIGN] = LOCK_REQ | F_WAIT | F_DELAY | F_VALUE,
	[EL_CMD_RESIGN] = LOCK_REQ | F_TOKEN,
	[EL_CMD_PROCLAIM] = LOCK_REQ | F_TOKEN | F_VALUE,
	[EL_CMD_WATCH] = LOCK_REQ,
	[EL_CMD_UNWATCH] = LOCK_REQ,
};

/* Fields whose presence means "nonzero" (the others may be zero when used). */
#define F_REQUIRED (F_SESSION | F_SEQ | F_TOKEN | F_TTL | F_NAME)

int el_lock_cmd_check(const struct el_lock_cmd *c)
{
	if (c->type < 1 || c->type > EL_CMD_TYPE_MAX)
		return EL_EINVAL;
	if (c->mode > EL_LOCK_SHARED || c->name_len > EL_NAME_MAX || c->value_len > EL_VALUE_MAX ||
	    c->client_len > EL_CLIENT_NAME_MAX)
		return EL_EINVAL;
	/* A semaphore is one limit of exclusive permits: no shared mode. */
	if (c->limit > EL_SEM_LIMIT_MAX || (c->limit != 0 && c->mode != EL_LOCK_EXCLUSIVE))
		return EL_EINVAL;
	const uint16_t used = cmd_fields[c->type];
	const uint16_t nonzero = (uint16_t)((c->session ? F_SESSION : 0) | (c->seq ? F_SEQ : 0) |
					    (c->token ? F_TOKEN : 0) | (c->ttl_ms ? F_TTL : 0) |
					    (c->wait_ms ? F_WAIT : 0) | (c->delay_ms ? F_DELAY : 0) |
					    (c->mode ? F_MODE : 0) | (c->name_len ? F_NAME : 0) |
					    (c->value_len ? F_VALUE : 0) |
					    (c->client_len ? F_CLIENT : 0) |
					    (c->nonce ? F_NONCE : 0) | (c->limit ? F_LIMIT : 0));
	if ((nonzero & (uint16_t)~used) != 0)
		return EL_EINVAL; /* a field this type does not use is set */
	if ((used & F_REQUIRED & (uint16_t)~nonzero) != 0)
		return EL_EINVAL; /* a required field is missing */
	return EL_OK;
}

int el_lock_cmd_encode(const struct el_lock_cmd *c, uint8_t *buf, uint32_t cap)
{
	EL_ASSERT(c != NULL);
	EL_ASSERT(buf != NULL);
	if (el_lock_cmd_check(c) != EL_OK)
		return EL_EINVAL;
	struct el_cbor_enc e;
	el_cbor_enc_init(&e, buf, cap);
	el_cbor_put_array(&e, CMD_ITEMS);
	el_cbor_put_uint(&e, EL_LOCK_CMD_VERSION);
	el_cbor_put_uint(&e, c->type);
	el_cbor_put_uint(&e, c->session);
	el_cbor_put_uint(&e, c->seq);
	el_cbor_put_uint(&e, c->type == EL_CMD_OPEN_SESSION ? c->nonce
			     : c->type == EL_CMD_ACQUIRE ? c->limit
							 : c->token);
	el_cbor_put_uint(&e, c->now_ms);
	el_cbor_put_uint(&e, c->ttl_ms);
	el_cbor_put_uint(&e, c->wait_ms);
	el_cbor_put_uint(&e, c->delay_ms);
	el_cbor_put_uint(&e, c->mode);
	el_cbor_put_text(&e, c->name, c->name_len);
	el_cbor_put_bytes(&e, c->value, c->value_len);
	el_cbor_put_text(&e, c->client, c->client_len);
	const int n = el_cbor_enc_finish(&e);
	EL_ASSERT(n < 0 || (uint32_t)n <= cap);
	return n;
}

/* Copy a decoded string (pointing into the input) into a fixed field. */
static uint8_t copy_str(void *dst, const void *src, uint32_t n)
{
	EL_ASSERT(n <= 255);
	if (n > 0)
		memcpy(dst, src, n);
	return (uint8_t)n;
}

int el_lock_cmd_decode(struct el_lock_cmd *c, const uint8_t *buf, uint32_t len)
{
	EL_ASSERT(c != NULL);
	struct el_cbor_dec d;
	uint32_t items = 0;
	uint64_t ver = 0, type = 0, ttl = 0, wait = 0, delay = 0, mode = 0;
	const char *name = NULL, *client = NULL;
	const uint8_t *value = NULL;
	uint32_t name_len = 0, value_len = 0, client_len = 0;

	memset(c, 0, sizeof(*c));
	el_cbor_dec_init(&d, buf, len);
	el_cbor_get_array(&d, &items, CMD_ITEMS);
	if (el_cbor_dec_error(&d) != 0 || items != CMD_ITEMS)
		return EL_EDECODE;
	el_cbor_get_uint(&d, &ver);
	if (el_cbor_dec_error(&d) != 0)
		return EL_EDECODE;
	if (ver != EL_LOCK_CMD_VERSION)
		return EL_EVERSION;
	el_cbor_get_uint_max(&d, EL_CMD_TYPE_MAX, &type);
	el_cbor_get_uint(&d, &c->session);
	el_cbor_get_uint(&d, &c->seq);
	el_cbor_get_uint(&d, &c->token);
	el_cbor_get_uint(&d, &c->now_ms);
	el_cbor_get_uint_max(&d, UINT32_MAX, &ttl);
	el_cbor_get_uint_max(&d, UINT32_MAX, &wait);
	el_cbor_get_uint_max(&d, UINT32_MAX, &delay);
	el_cbor_get_uint_max(&d, EL_LOCK_SHARED, &mode);
	el_cbor_get_text(&d, &name, &name_len, EL_NAME_MAX);
	el_cbor_get_bytes(&d, &value, &value_len, EL_VALUE_MAX);
	el_cbor_get_text(&d, &client, &client_len, EL_CLIENT_NAME_MAX);
	if (el_cbor_dec_finish(&d) != 0) {
		memset(c, 0, sizeof(*c));
		return EL_EDECODE;
	}
	c->type = (uint8_t)type;
	c->ttl_ms = (uint32_t)ttl;
	c->wait_ms = (uint32_t)wait;
	c->delay_ms = (uint32_t)delay;
	c->mode = (uint8_t)mode;
	c->name_len = copy_str(c->name, name, name_len);
	c->value_len = copy_str(c->value, value, value_len);
	c->client_len = copy_str(c->client, client, client_len);
	if (c->type == EL_CMD_OPEN_SESSION) { /* its token item is the nonce */
		c->nonce = c->token;
		c->token = 0;
	} else if (c->type == EL_CMD_ACQUIRE) { /* its token item is the limit */
		if (c->token > EL_SEM_LIMIT_MAX)
			return EL_EINVAL;
		c->limit = (uint8_t)c->token;
		c->token = 0;
	}
	return el_lock_cmd_check(c);
}
