/*
 * el_node_internal.h - helpers shared by the node's source files (node.c,
 * node_apply.c, node_timer.c). Not part of the API: every name is el_node__*,
 * and nothing outside core/ includes it except white-box tests.
 */
#ifndef EL_NODE_INTERNAL_H
#define EL_NODE_INTERNAL_H

#include "el_node.h"

/* The lock table as snapshot bytes (the Raft replica's snapshot writer). */
int el_node__write_snapshot(void *ctx, uint8_t *buf, uint32_t cap);
/* Queue the reply of pending slot p (freed), with err. */
struct el_node_reply *el_node__finish(struct el_node *n, uint32_t p, int32_t err);
/* Notice a lost or gained leadership: fail requests, reset timers. */
void el_node__check_leadership(struct el_node *n, uint64_t now_ms);
/* The leader's timers (node_timer.c): disarm all; arm every live subject
 * (on becoming leader); arm what one applied command reports; propose the
 * commands of those due; the earliest deadline (UINT64_MAX: none). */
void el_node__timers_clear(struct el_node *n);
void el_node__timers_arm_all(struct el_node *n, uint64_t now_ms);
void el_node__timers_follow(struct el_node *n, const struct el_lock_result *res, uint64_t now_ms);
void el_node__timers_fire(struct el_node *n, uint64_t now_ms);
uint64_t el_node__timers_next(const struct el_node *n);

#endif /* EL_NODE_INTERNAL_H */
