/*
 * el_small_config.h - the "small" capacity limits of edgelock for
 * microcontrollers: 5 nodes, 16 sessions, 16 locks, a 32-entry log window.
 * A board's el_board_config.h includes it (and may override more before).
 *
 * The target is one node (core + port/baremetal) in 32 KiB of flash and
 * 16 KiB of RAM; `make size` checks it per board. RAM is dominated by the
 * replica: its log window (32 x 120 B), its snapshot buffer (EL_SNAPSHOT_MAX,
 * which must hold a full lock table: EL_LOCK_SNAPSHOT_BOUND; fewer holds and
 * waiters shrink that bound) and its outbox (EL_OUTBOX_MAX x 144 B). The
 * capacities the issue states (nodes, sessions, locks, log window) are fixed;
 * the limits below them are the ones traded for RAM (boards/README.md).
 *
 * Every node of one cluster must agree on EL_ENTRY_DATA_MAX and the
 * lock-table limits, and a sender's batch (EL_MSG_ENTRIES_MAX) and snapshot
 * chunk (EL_SNAPSHOT_CHUNK) must not exceed what a receiver accepts, so a
 * fleet with a small node uses these on all its members.
 */
#ifndef EL_SMALL_CONFIG_H
#define EL_SMALL_CONFIG_H

/* No assertion text in the image: file and line say which check broke. */
#define EL_ASSERT_TEXT 0

/* Raft */

#define EL_NODES_MAX 5
#define EL_LOG_WINDOW 32
#define EL_ENTRY_DATA_MAX 96       /* >= EL_LOCK_CMD_ENCODED_MAX (94 here) */
/* 3 entries per append (not 8): each entry costs 120 B in the link's decode
 * array and 118 B in its frame; the fourth went to holding every lock (the
 * claims below). With 2 appends in flight a follower still has 6 entries on
 * the way, about a fifth of the window. */
#define EL_MSG_ENTRIES_MAX 3
#define EL_INFLIGHT_MAX 2          /* pipelining depth per follower */
#define EL_OUTBOX_MAX (2 * EL_NODES_MAX) /* the least el_config.h allows */
#define EL_SNAPSHOT_MAX 2756       /* >= EL_LOCK_SNAPSHOT_BOUND (2753) */
/* No reading of pre-semaphore (version 2) snapshots: a board's RAM store
 * does not outlive a restart, so it never holds one (core/el_config.h). */
#define EL_SNAPSHOT_READS_V2 0
/* 320 B chunks (9 for a full snapshot): below this an APPEND, not a
 * SNAPSHOT, is the widest frame, so the link's frame is no bigger than
 * 3 entries need (port/baremetal/el_bm_link.h). */
#define EL_SNAPSHOT_CHUNK 320
#define EL_READS_MAX 1              /* one read barrier at a time (40 B each) */
#define EL_COMPACT_THRESHOLD 16
/* Scans, not indexes, over pools of 16 (core/el_config.h: EL_INDEXED). */
#define EL_INDEXED 0
/* Semaphores stay in (core/el_config.h: EL_SEMAPHORES): about 500 bytes of
 * flash, which leaves the M0+ boards some 40 bytes. Defining EL_SEMAPHORES 0
 * here gives back about 250 of them; every node of a cluster must agree. */
/* Lock-delays one command reports by slot; more (an expiring session that
 * held several delayed locks) make the leader scan the 16 locks. */
#define EL_LOCK_ARMED_DELAYS_MAX 1

/* Lock service */
#define EL_SESSIONS_MAX 16
#define EL_LOCKS_MAX 16
#define EL_HOLDERS_MAX 2
/* Holds and waits share 16 claims: all 16 locks held at once, or 12 while 4
 * acquires wait (examples/firmware/node_main.c holds them all on every board). */
#define EL_HOLDS_MAX 12
#define EL_WAITERS_MAX 4           /* queued acquires, all locks together */
#define EL_WATCHES_MAX 4
#define EL_VALUES_MAX 4
#define EL_LOCK_EVENTS_MAX 4
#define EL_NAME_MAX 16
#define EL_VALUE_MAX 8
#define EL_CLIENT_NAME_MAX 8
/* Recent session opens remembered for exactly-once OPEN_SESSION (16 B each):
 * a few local clients retrying. */
#define EL_OPENS_MAX 3
/* Client requests in flight plus undelivered replies (88 B each): a board's
 * node serves a few local clients, each with one request outstanding. */
#define EL_PENDING_MAX 4
/* Events one batch hands out: one command's worth (48 B each); more are
 * counted as dropped and clients learn by retrying (core/el_node.h). */
#define EL_NODE_EVENTS_MAX EL_LOCK_EVENTS_MAX

#endif /* EL_SMALL_CONFIG_H */
