/*
 * el_small_config.h - the "small" capacity limits of edgelock for
 * microcontrollers: 5 nodes, 16 sessions, 16 locks, a 32-entry log window.
 * A board's el_board_config.h includes it. Every limit here is a default:
 * a board (or -D) that defines one before this header is read keeps its own
 * value, as core/el_config.h's defaults work, and core/el_config.h's
 * compile-time checks still hold it to its bounds.
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
#ifndef EL_ASSERT_TEXT
#define EL_ASSERT_TEXT 0
#endif

/* Raft */

#ifndef EL_NODES_MAX
#define EL_NODES_MAX 5
#endif
#ifndef EL_LOG_WINDOW
#define EL_LOG_WINDOW 32
#endif
#ifndef EL_ENTRY_DATA_MAX
#define EL_ENTRY_DATA_MAX 96       /* >= EL_LOCK_CMD_ENCODED_MAX (94 here) */
#endif
/* 3 entries per append (not 8): each entry costs 120 B in the link's decode
 * array and 118 B in its frame; the fourth went to holding every lock (the
 * claims below). With 2 appends in flight a follower still has 6 entries on
 * the way, about a fifth of the window. */
#ifndef EL_MSG_ENTRIES_MAX
#define EL_MSG_ENTRIES_MAX 3
#endif
#ifndef EL_INFLIGHT_MAX
#define EL_INFLIGHT_MAX 2          /* pipelining depth per follower */
#endif
#ifndef EL_OUTBOX_MAX
#define EL_OUTBOX_MAX (2 * EL_NODES_MAX) /* the least el_config.h allows */
#endif
#ifndef EL_SNAPSHOT_MAX
#define EL_SNAPSHOT_MAX 2756       /* >= EL_LOCK_SNAPSHOT_BOUND (2753) */
#endif
/* No reading of pre-semaphore (version 2) snapshots: a board's RAM store
 * does not outlive a restart, so it never holds one (core/el_config.h). */
#ifndef EL_SNAPSHOT_READS_V2
#define EL_SNAPSHOT_READS_V2 0
#endif
/* 320 B chunks (9 for a full snapshot): below this an APPEND, not a
 * SNAPSHOT, is the widest frame, so the link's frame is no bigger than
 * 3 entries need (port/baremetal/el_bm_link.h). */
#ifndef EL_SNAPSHOT_CHUNK
#define EL_SNAPSHOT_CHUNK 320
#endif
#ifndef EL_READS_MAX
#define EL_READS_MAX 1              /* one read barrier at a time (40 B each) */
#endif
#ifndef EL_COMPACT_THRESHOLD
#define EL_COMPACT_THRESHOLD 16
#endif
/* A leader does not take its followers' commit index (core/el_config.h:
 * EL_LEARN_COMMIT): 100 bytes the mixed-cluster image does not have, and at
 * this window the no-op room rule already covers a run of 16 leaders
 * deposed in a row. */
#ifndef EL_LEARN_COMMIT
#define EL_LEARN_COMMIT 0
#endif
/* Scans, not indexes, over pools of 16 (core/el_config.h: EL_INDEXED). */
#ifndef EL_INDEXED
#define EL_INDEXED 0
#endif
/* Semaphores stay in (core/el_config.h: EL_SEMAPHORES): about 500 bytes of
 * flash, which leaves the M0+ boards some 40 bytes. Defining EL_SEMAPHORES 0
 * here gives back about 250 of them; every node of a cluster must agree. */
/* Lock-delays one command reports by slot; more (an expiring session that
 * held several delayed locks) make the leader scan the 16 locks. */
#ifndef EL_LOCK_ARMED_DELAYS_MAX
#define EL_LOCK_ARMED_DELAYS_MAX 1
#endif

/* Lock service */
#ifndef EL_SESSIONS_MAX
#define EL_SESSIONS_MAX 16
#endif
#ifndef EL_LOCKS_MAX
#define EL_LOCKS_MAX 16
#endif
#ifndef EL_HOLDERS_MAX
#define EL_HOLDERS_MAX 2
#endif
/* Holds and waits share 16 claims: all 16 locks held at once, or 12 while 4
 * acquires wait (examples/firmware/node_main.c holds them all on every board). */
#ifndef EL_HOLDS_MAX
#define EL_HOLDS_MAX 12
#endif
#ifndef EL_WAITERS_MAX
#define EL_WAITERS_MAX 4           /* queued acquires, all locks together */
#endif
#ifndef EL_WATCHES_MAX
#define EL_WATCHES_MAX 4
#endif
#ifndef EL_VALUES_MAX
#define EL_VALUES_MAX 4
#endif
#ifndef EL_LOCK_EVENTS_MAX
#define EL_LOCK_EVENTS_MAX 4
#endif
#ifndef EL_NAME_MAX
#define EL_NAME_MAX 16
#endif
#ifndef EL_VALUE_MAX
#define EL_VALUE_MAX 8
#endif
#ifndef EL_CLIENT_NAME_MAX
#define EL_CLIENT_NAME_MAX 8
#endif
/* Recent session opens remembered for exactly-once OPEN_SESSION (16 B each):
 * a few local clients retrying. */
#ifndef EL_OPENS_MAX
#define EL_OPENS_MAX 3
#endif
/* Client requests in flight plus undelivered replies (88 B each): a board's
 * node serves a few local clients, each with one request outstanding. */
#ifndef EL_PENDING_MAX
#define EL_PENDING_MAX 4
#endif
/* Events one batch hands out: one command's worth (48 B each); more are
 * counted as dropped and clients learn by retrying (core/el_node.h). */
#ifndef EL_NODE_EVENTS_MAX
#define EL_NODE_EVENTS_MAX EL_LOCK_EVENTS_MAX
#endif

#endif /* EL_SMALL_CONFIG_H */
