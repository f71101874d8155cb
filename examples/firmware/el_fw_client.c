/*
 * el_fw_client.c - the example client's little protocol (see el_fw_client.h):
 * a session that holds all the table's locks at once and closes; then a
 * session that acquires and releases "door" alternately.
 */
#include <string.h>

#include "el_error.h"
#include "el_fw_client.h"

void el_fw_client_init(struct el_fw_client *w)
{
	memset(w, 0, sizeof *w);
}

void el_fw_client_next(struct el_fw_client *w, struct el_lock_cmd *cmd)
{
	memset(cmd, 0, sizeof *cmd);
	w->req_id++;
	w->waiting = true;
	if (w->session == 0) {
		cmd->type = EL_CMD_OPEN_SESSION;
		cmd->ttl_ms = 60000;
		cmd->client_len = 4;
		memcpy(cmd->client, "demo", 4);
		return;
	}
	cmd->session = w->session;
	if (!w->filled && w->held == EL_LOCKS_MAX) {
		cmd->type = EL_CMD_CLOSE_SESSION; /* releases every hold; carries no seq */
		return;
	}
	cmd->seq = w->seq + 1u;
	if (!w->filled) { /* "L<held>": one more distinct lock */
		cmd->type = EL_CMD_ACQUIRE;
		uint32_t n = w->held, len = 0;
		char digits[5];
		do {
			digits[len++] = (char)('0' + n % 10u);
			n /= 10u;
		} while (n != 0 && len < sizeof digits);
		cmd->name[0] = 'L';
		for (uint32_t i = 0; i < len; i++)
			cmd->name[1 + i] = digits[len - 1 - i];
		cmd->name_len = (uint8_t)(1 + len);
		return;
	}
	cmd->type = w->token == 0 ? EL_CMD_ACQUIRE : EL_CMD_RELEASE;
	cmd->token = w->token;
	cmd->name_len = 4;
	memcpy(cmd->name, "door", 4);
}

static void take_result(struct el_fw_client *w, const struct el_node_reply *r)
{
	if (w->session == 0) {
		w->session = r->session;
		return;
	}
	if (!w->filled && w->held == EL_LOCKS_MAX) { /* the close: a new session next */
		w->filled = true;
		w->session = 0;
		w->seq = 0;
		return;
	}
	w->seq++;
	if (!w->filled) {
		if (r->token <= w->last_token)
			w->err = EL_ESTALE;
		w->last_token = r->token;
		w->held++;
		return;
	}
	if (w->token != 0) { /* a release */
		w->token = 0;
		return;
	}
	if (r->token <= w->last_token) /* a grant must carry a higher token */
		w->err = EL_ESTALE;
	w->token = w->last_token = r->token;
}

void el_fw_client_answer(struct el_fw_client *w, const struct el_node_reply *r)
{
	if (!w->waiting || r->req_id != w->req_id)
		return;
	w->waiting = false;
	if (r->err == EL_ENOTLEADER)
		return; /* retried by the next el_fw_client_next, same seq */
	if (r->err != EL_OK) {
		w->err = r->err;
		return;
	}
	take_result(w, r);
	w->done++;
}
