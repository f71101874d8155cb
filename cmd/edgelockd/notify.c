/*
 * notify.c - edgelockd as a systemd Type=notify service (sd_notify(3),
 * sd_watchdog_enabled(3), spoken by sd_notify.c without libsystemd);
 * dist/edgelockd.service uses it.
 *
 *   READY=1     at the loop's first turn: storage recovered, listening, the
 *               node running (a --join node too: it must run to be added)
 *   STATUS=     "node 2: follower of 1, term 5", whenever that line changes
 *   WATCHDOG=1  from the loop, every half of WatchdogSec: a wedged loop stops
 *               petting and systemd kills and restarts the daemon
 *   STOPPING=1  when the clean stop begins (SIGTERM, or removed from the cluster)
 *
 * Without NOTIFY_SOCKET (not under systemd) el_sd_notify does nothing, and
 * without WATCHDOG_USEC (or with a WATCHDOG_PID that is not ours) there is no
 * watchdog. The state is file-local: one daemon, one thread, per process.
 */
#include <stdio.h>
#include <string.h>

#include "el_daemon.h"
#include "el_platform.h"
#include "el_sd_notify.h"

#define WATCHDOG_USEC_MIN 1000000u /* below: warned as too short for the loop */

static struct {
	bool ready;          /* READY=1 sent */
	bool warned;         /* an sd_notify error was logged */
	uint64_t wd_ms;      /* ping period (half the watchdog timeout); 0: none */
	uint64_t wd_next_ms; /* next ping due */
	char status[128];    /* last STATUS= sent */
} nt;

static void send_notify(const char *msg)
{
	int rc = el_sd_notify(msg);
	if (rc < 0 && !nt.warned) {
		nt.warned = true;
		el_log(EL_LOG_WARN, "sd_notify(\"%s\") failed: %s (logged once)", msg, strerror(-rc));
	}
}

/* The watchdog period from systemd's environment; call once before the loop. */
void el_d_notify_init(struct el_daemon *d)
{
	uint64_t usec = 0;
	int rc = el_sd_watchdog_enabled(&usec);
	if (rc < 0)
		el_log(EL_LOG_WARN, "systemd watchdog settings unusable: WATCHDOG_USEC or "
		       "WATCHDOG_PID: %s (no watchdog)", strerror(-rc));
	nt.wd_ms = rc > 0 ? usec / 2000 : 0;
	if (rc > 0 && nt.wd_ms == 0)
		nt.wd_ms = 1;
	nt.wd_next_ms = d->now_ms;
	if (nt.wd_ms > 0)
		el_log(EL_LOG_INFO, "systemd watchdog: %llu ms, a ping every %llu ms from the loop",
		       (unsigned long long)(usec / 1000), (unsigned long long)nt.wd_ms);
	/* A turn may wait up to 100 ms and then persist (an fdatasync, a
	 * snapshot): a ping every 500 ms or less is soon late on a slow disk,
	 * and systemd then kills a node that was working. Said, not refused. */
	if (rc > 0 && usec < WATCHDOG_USEC_MIN)
		el_log(EL_LOG_WARN, "systemd watchdog of %llu ms is too short for the loop (a turn "
		       "may wait 100 ms, then an fsync): a slow disk gets the node killed; set "
		       "WatchdogSec=2s or more", (unsigned long long)(usec / 1000));
}

static void status_line(const struct el_daemon *d, char *out, size_t cap)
{
	const struct el_raft *r = el_node_raft(d->node);
	unsigned long long term = (unsigned long long)el_raft_term(r);
	enum el_state s = el_raft_state(r);
	if (el_conf_find(el_raft_conf(r), d->cfg.id) == NULL && d->was_member)
		snprintf(out, cap, "node %u: removed from the cluster (entry %llu), term %llu",
			 d->cfg.id, (unsigned long long)r->conf_index, term);
	else if (el_conf_find(el_raft_conf(r), d->cfg.id) == NULL)
		snprintf(out, cap, "node %u: not a member yet, waiting to be added, term %llu",
			 d->cfg.id, term);
	else if (s == EL_LEADER)
		snprintf(out, cap, "node %u: leader, term %llu", d->cfg.id, term);
	else if (s == EL_FOLLOWER && el_raft_leader(r) != 0)
		snprintf(out, cap, "node %u: follower of %u, term %llu", d->cfg.id,
			 el_raft_leader(r), term);
	else
		snprintf(out, cap, "node %u: %s, no leader, term %llu", d->cfg.id,
			 s == EL_FOLLOWER ? "follower" : s == EL_CANDIDATE ? "candidate" :
			 "pre-candidate", term);
}

/* Every loop turn: READY=1 the first time, STATUS= on change (not once
 * stopping: that line stays), WATCHDOG=1 when due (until the exit). */
void el_d_notify_turn(struct el_daemon *d)
{
	char line[sizeof nt.status];
	status_line(d, line, sizeof line);
	if (!nt.ready || (!d->stopping && strcmp(line, nt.status) != 0)) {
		char msg[sizeof line + 32];
		snprintf(msg, sizeof msg, "%sSTATUS=%s", nt.ready ? "" : "READY=1\n", line);
		send_notify(msg);
		nt.ready = true;
		snprintf(nt.status, sizeof nt.status, "%s", line);
	}
	if (nt.wd_ms > 0 && d->now_ms >= nt.wd_next_ms) {
		send_notify("WATCHDOG=1");
		nt.wd_next_ms = d->now_ms + nt.wd_ms;
	}
}

/* The clean stop began: systemd shows "deactivating" until the exit. */
void el_d_notify_stopping(struct el_daemon *d)
{
	char msg[64];
	snprintf(msg, sizeof msg, "STOPPING=1\nSTATUS=node %u: stopping", d->cfg.id);
	send_notify(msg);
}
