/*
 * el_fw_net.h - an in-memory network for nodes that share one chip: a
 * bounded FIFO of copied messages. A message is copied whole (its entries and
 * snapshot chunk too), because the sender's pointers die at el_raft_advance.
 * When the queue is full the message is dropped, as a lossy link would.
 */
#ifndef EL_FW_NET_H
#define EL_FW_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "el_raft.h"

#ifndef EL_FW_NET_QUEUE
#define EL_FW_NET_QUEUE 16
#endif

struct el_fw_packet {
	struct el_msg m;
	struct el_entry entries[EL_MSG_ENTRIES_MAX];
	uint8_t data[EL_SNAPSHOT_CHUNK];
};

struct el_fw_net {
	uint32_t head;
	uint32_t count;
	uint32_t dropped;
	struct el_fw_packet q[EL_FW_NET_QUEUE];
};

void el_fw_net_init(struct el_fw_net *n);
/* Queue a copy of m; false (and counted) when full or oversized. */
bool el_fw_net_send(struct el_fw_net *n, const struct el_msg *m);
/* The oldest packet, its pointers fixed to its own copies; NULL when empty.
 * Valid until the next el_fw_net_pop or el_fw_net_send. */
const struct el_msg *el_fw_net_peek(struct el_fw_net *n);
void el_fw_net_pop(struct el_fw_net *n);

#endif /* EL_FW_NET_H */
