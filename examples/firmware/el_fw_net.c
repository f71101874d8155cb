/*
 * el_fw_net.c - the bounded in-memory message queue (see el_fw_net.h).
 */
#include <string.h>

#include "el_fw_net.h"

void el_fw_net_init(struct el_fw_net *n)
{
	n->head = 0;
	n->count = 0;
	n->dropped = 0;
}

bool el_fw_net_send(struct el_fw_net *n, const struct el_msg *m)
{
	if (n->count == EL_FW_NET_QUEUE || m->n_entries > EL_MSG_ENTRIES_MAX ||
	    m->data_len > EL_SNAPSHOT_CHUNK) {
		n->dropped++;
		return false;
	}
	struct el_fw_packet *p = &n->q[(n->head + n->count) % EL_FW_NET_QUEUE];
	p->m = *m;
	if (m->n_entries > 0)
		memcpy(p->entries, m->entries, m->n_entries * sizeof m->entries[0]);
	if (m->data_len > 0)
		memcpy(p->data, m->data, m->data_len);
	n->count++;
	return true;
}

const struct el_msg *el_fw_net_peek(struct el_fw_net *n)
{
	if (n->count == 0)
		return NULL;
	struct el_fw_packet *p = &n->q[n->head];
	p->m.entries = p->m.n_entries > 0 ? p->entries : NULL;
	p->m.data = p->m.data_len > 0 ? p->data : NULL;
	return &p->m;
}

void el_fw_net_pop(struct el_fw_net *n)
{
	if (n->count == 0)
		return;
	n->head = (n->head + 1) % EL_FW_NET_QUEUE;
	n->count--;
}
