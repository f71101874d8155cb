/*
 * node_main.c - one edgelock node as a board runs it: SysTick clock, RAM
 * store, the port's ready loop, and a transport plugged in through two weak
 * hooks (this repository has no MCU network driver; the defaults connect to
 * nothing). `make size` measures this image per board: it is the flash and
 * RAM cost of one node (core + port/baremetal) for the small config.
 *
 * Run under QEMU it bootstraps a one-member cluster (EL_FW_MEMBERS), elects
 * itself, and serves a local client (el_fw_client) that holds every lock of
 * the table at once, then takes and releases a lock until COMMANDS commands
 * are done, through several compactions; it
 * reports how much of its stack reserve it touched, and exits 1 if that
 * passed the reserve, a command failed or a fencing token did not rise.
 */
#include <stddef.h>

#include "board.h"
#include "el_bm_clock.h"
#include "el_bm_link.h"
#include "el_bm_log.h"
#include "el_bm_node.h"
#include "el_bm_seed.h"
#include "el_fw_client.h"

#ifndef EL_FW_NODE_ID
#define EL_FW_NODE_ID 1
#endif
#ifndef EL_FW_MEMBERS
#define EL_FW_MEMBERS 1
#endif
#define COMMANDS 64u
#define DEADLINE_MS 10000u
#define STACK_PAINT 0xA5u

static struct el_node node;
static struct el_bm_store store EL_BM_STORAGE; /* the simulated flash */
static struct el_fw_client client;
static struct el_bm_link link;

/* ---- the ready loop's hooks ---- */

static void hook_send(void *ctx, const struct el_msg *m)
{
	(void)ctx;
	el_bm_link_send(&link, m);
}

static void hook_reply(void *ctx, const struct el_node_reply *r)
{
	(void)ctx;
	el_fw_client_answer(&client, r);
}

static const struct el_bm_node_io io = { NULL, hook_send, hook_reply, NULL };

/* ---- stack high-water mark ---- */

extern uint8_t __stack_limit[], __stack_top[];

/* Fail when less than this much of the reserve stayed untouched. */
#define STACK_MARGIN 64u

/* Fill the unused part of the stack so its deepest use shows later. */
static void paint_stack(void)
{
	/* This frame's address: at or above sp, on every architecture. */
	const uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	for (volatile uint8_t *p = __stack_limit; (uintptr_t)p < sp - 64u; p++)
		*p = STACK_PAINT;
}

static uint32_t stack_reserve(void)
{
	return (uint32_t)((uintptr_t)__stack_top - (uintptr_t)__stack_limit);
}

static uint32_t stack_untouched(void)
{
	uint32_t reserve = stack_reserve();
	uint32_t n = 0;
	while (n < reserve && __stack_limit[n] == STACK_PAINT)
		n++;
	return n;
}

/* ---- the node ---- */

static int start_node(uint64_t now_ms)
{
	const struct el_node_config cfg = { .raft = {
		.id = EL_FW_NODE_ID, .election_ms_min = 150, .heartbeat_ms = 30,
		.prevote = true, .check_quorum = true,
	} };
	struct el_conf conf = { .n = EL_FW_MEMBERS };
	for (uint8_t i = 0; i < EL_FW_MEMBERS; i++)
		conf.m[i] = (struct el_member){ .id = (el_id_t)(i + 1u), .role = EL_MEMBER_VOTER };
	el_bm_store_init(&store);
	int err = el_node_init(&node, &cfg, el_bm_seed(EL_FW_NODE_ID));
	if (err == 0)
		err = el_raft_bootstrap(el_node_raft(&node), &conf);
	if (err == 0)
		el_node_start(&node, now_ms);
	return err;
}

/* One pass of the main loop: input, timers, the client, output. */
static int poll_node(uint64_t now_ms)
{
	for (const struct el_msg *m; (m = el_bm_link_poll(&link)) != NULL;)
		el_node_step(&node, m, now_ms);
	if (now_ms >= el_node_deadline(&node))
		el_node_tick(&node, now_ms);
	if (!client.waiting && client.err == 0) {
		struct el_lock_cmd cmd;
		el_id_t leader;
		el_fw_client_next(&client, &cmd);
		if (el_node_submit(&node, client.req_id, &cmd, now_ms, &leader) != 0)
			client.waiting = false; /* not leading yet: again next pass */
	}
	return el_bm_drive_node(&node, &store, &io, now_ms);
}

int main(void)
{
	paint_stack();
	el_bm_clock_start(EL_BOARD_CPU_HZ);
	el_fw_client_init(&client);
	int err = start_node(el_bm_now_ms());
	while (err == 0 && client.err == 0 && client.done < COMMANDS &&
	       el_bm_now_ms() < DEADLINE_MS)
		err = poll_node(el_bm_now_ms());
	uint32_t reserve = stack_reserve();
	uint32_t untouched = stack_untouched();
	el_bm_logf("node %u on %s: held %u of %u locks at once\n", (unsigned)EL_FW_NODE_ID,
		   EL_BOARD_NAME, (unsigned)client.held, (unsigned)EL_LOCKS_MAX);
	el_bm_logf("node %u on %s: %u lock commands applied (last token %llu), term %llu, "
		   "stack used %u of %u bytes, err %d\n",
		   (unsigned)EL_FW_NODE_ID, EL_BOARD_NAME, (unsigned)client.done,
		   (unsigned long long)client.last_token, (unsigned long long)el_raft_term(&node.raft),
		   (unsigned)(reserve - untouched), (unsigned)reserve, err != 0 ? err : client.err);
	return err == 0 && client.err == 0 && client.done == COMMANDS && untouched >= STACK_MARGIN
		       ? 0 : 1;
}
