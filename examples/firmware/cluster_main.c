/*
 * cluster_main.c - the firmware example: a three-node edgelock cluster on one
 * Cortex-M, timed by SysTick. A client (el_fw_client) opens a session and
 * takes and releases a lock COMMANDS times at whichever node leads; it checks
 * that fencing tokens rise. Reports over semihosting and exits 0, or 1 when
 * that fails or takes more than DEADLINE_MS of board time.
 *
 *   make BOARD=mps2-an385
 *   tests/target/qemu-run.sh mps2-an385 build/boards/mps2-an385/cluster.elf
 */
#include "board.h"
#include "el_bm_clock.h"
#include "el_bm_log.h"
#include "el_bm_seed.h"
#include "el_fw_client.h"
#include "el_fw_cluster.h"

#define COMMANDS 40u
#define DEADLINE_MS 20000u

static struct el_fw_cluster cluster;
static struct el_fw_client client;

static void log_new_leader(uint64_t now, int *seen)
{
	int l = el_fw_cluster_leader(&cluster);
	if (l < 0 || l == *seen)
		return;
	el_bm_logf("t=%llu ms: node %u leads term %llu\n", (unsigned long long)now,
		   (unsigned)cluster.node[l].id,
		   (unsigned long long)el_raft_term(&cluster.node[l].node.raft));
	*seen = l;
}

/* Submit the client's next command, or hand it the answer it waits for. */
static void serve_client(void)
{
	if (client.waiting) {
		const struct el_node_reply *r = el_fw_cluster_reply(&cluster, client.req_id);
		if (r != 0)
			el_fw_client_answer(&client, r);
		return;
	}
	struct el_lock_cmd cmd;
	el_fw_client_next(&client, &cmd);
	if (el_fw_cluster_submit(&cluster, client.req_id, &cmd) != 0)
		client.waiting = false; /* no leader yet, or busy: again next time */
}

int main(void)
{
	el_bm_clock_start(EL_BOARD_CPU_HZ);
	el_bm_logf("edgelock firmware example on %s: 3 nodes\n", EL_BOARD_NAME);
	el_fw_client_init(&client);
	if (el_fw_cluster_init(&cluster, el_bm_seed(0), el_bm_now_ms()) != 0)
		return 1;
	int leader_seen = -1;
	for (uint64_t last = UINT64_MAX; el_bm_now_ms() < DEADLINE_MS && client.err == 0;) {
		uint64_t now = el_bm_now_ms();
		if (now == last) {
			el_bm_idle();
			continue;
		}
		last = now;
		el_fw_cluster_step(&cluster, now);
		log_new_leader(now, &leader_seen);
		serve_client();
		if (client.done == COMMANDS) {
			el_bm_logf("t=%llu ms: %u lock commands committed, last fencing token %llu\n",
				   (unsigned long long)now, (unsigned)client.done,
				   (unsigned long long)client.last_token);
			return 0;
		}
	}
	el_bm_logf("failed: %u commands done, error %d\n", (unsigned)client.done, client.err);
	return 1;
}
