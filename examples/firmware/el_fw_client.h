/*
 * el_fw_client.h - the firmware example's client. First it proves the node
 * can hold every lock of its table at once: one session takes EL_LOCKS_MAX
 * locks ("L0", "L1", ...) and then closes, which releases them all. Then a
 * second session takes the lock "door" and gives it back, over and over.
 * Every grant must carry a higher fencing token than the one before. It only
 * builds commands and reads answers; the caller submits and delivers them.
 */
#ifndef EL_FW_CLIENT_H
#define EL_FW_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "el_lock.h"
#include "el_node.h"

struct el_fw_client {
	uint64_t session;    /* 0 until OPEN_SESSION committed */
	uint64_t token;      /* of the current hold, 0 when free */
	uint64_t last_token; /* highest token granted so far */
	uint64_t seq;        /* last request seq that completed */
	uint64_t req_id;     /* of the request in flight */
	bool waiting;        /* a request is in flight */
	uint32_t done;       /* commands completed */
	uint16_t held;       /* locks of the first session held at once */
	bool filled;         /* the first session held every lock, then closed */
	int err;             /* first failure, 0 while fine */
};

void el_fw_client_init(struct el_fw_client *w);
/* The next command to submit (call when !waiting); sets req_id, waiting. */
void el_fw_client_next(struct el_fw_client *w, struct el_lock_cmd *cmd);
/* An answer to req_id. EL_ENOTLEADER clears waiting, so the same command
 * (same seq: exactly-once) goes out again; other errors end the client. */
void el_fw_client_answer(struct el_fw_client *w, const struct el_node_reply *r);

#endif /* EL_FW_CLIENT_H */
