/*
 * el_config.h - every capacity limit of the edgelock core, in one place.
 *
 * The core never allocates: each table and queue below is a fixed array whose
 * size is one of these limits, so sizeof(struct el_node) is the node's whole
 * RAM cost. A board overrides any limit by defining it before this header is
 * read, usually with -include boards/<name>/el_board_config.h, or by pointing
 * EL_CONFIG_FILE at its own header. Limits are checked at compile time below.
 *
 * Note: every node of one cluster must agree on EL_ENTRY_DATA_MAX and on the
 * limits of the lock table (a snapshot from a big node must fit a small one);
 * the daemon refuses a peer whose advertised limits differ.
 */
#ifndef EL_CONFIG_H
#define EL_CONFIG_H

#include <stdint.h>

#ifdef EL_CONFIG_FILE
#include EL_CONFIG_FILE
#endif

/* ---- Assertions ---------------------------------------------------------- */

/* 1: a failed EL_ASSERT hands el_panic the condition's text as well as its
 * file and line. 0 (the microcontroller config) calls el_panic_here() with
 * nothing, so a firmware image carries no assertion text and no file or line
 * at each check (about 5 KiB of flash on Cortex-M0+): the address it reports
 * names the check (addr2line; core/el_assert.h). */
#ifndef EL_ASSERT_TEXT
#define EL_ASSERT_TEXT 1
#endif

/* ---- Raft ---------------------------------------------------------------- */

/* Voters plus learners the configuration can name. */
#ifndef EL_NODES_MAX
#define EL_NODES_MAX 7
#endif

/* Entries kept in RAM between the snapshot and the last index. The leader
 * refuses proposals (EL_EFULL) beyond EL_UNCOMMITTED_MAX uncommitted entries
 * or a full window, and waits for commits and compaction. */
#ifndef EL_LOG_WINDOW
#define EL_LOG_WINDOW 512
#endif

/* Windows of at least this many entries learn a new commit index lazily:
 * with the next append, else the next heartbeat (raft_replication.c), which
 * saves an empty append and its acknowledgement per follower and commit. A
 * follower can apply and compact only what it knows is committed, so a
 * smaller window (the microcontroller profile) is told every commit at once
 * lest a heartbeat interval's entries fill it. */
#ifndef EL_COMMIT_LAZY_WINDOW_MIN
#define EL_COMMIT_LAZY_WINDOW_MIN 64
#endif

/* Largest command a log entry carries, in bytes. */
#ifndef EL_ENTRY_DATA_MAX
#define EL_ENTRY_DATA_MAX 256
#endif

/* Entries one AppendEntries message carries at most (batching): 32, or half
 * the window when that is smaller, so that every window the checks below
 * allow (down to 8) builds without setting this too. */
#ifndef EL_MSG_ENTRIES_MAX
#define EL_MSG_ENTRIES_MAX (EL_LOG_WINDOW / 2 < 32 ? EL_LOG_WINDOW / 2 : 32)
#endif

/* AppendEntries messages in flight to one follower (pipelining). */
#ifndef EL_INFLIGHT_MAX
#define EL_INFLIGHT_MAX 8
#endif

/* Messages one ready batch can hold. */
#ifndef EL_OUTBOX_MAX
#define EL_OUTBOX_MAX (4 * EL_NODES_MAX + 8)
#endif

/* Largest state-machine snapshot, in bytes. */
#ifndef EL_SNAPSHOT_MAX
#define EL_SNAPSHOT_MAX (64 * 1024)
#endif

/* Bytes of snapshot one InstallSnapshot message carries. */
#ifndef EL_SNAPSHOT_CHUNK
#define EL_SNAPSHOT_CHUNK 1024
#endif

/* Linearizable reads waiting for a quorum heartbeat round. */
#ifndef EL_READS_MAX
#define EL_READS_MAX 16
#endif

/* Compact the log once more than this many applied entries sit above the
 * snapshot (so after each ready round at most this many do). */
#ifndef EL_COMPACT_THRESHOLD
#define EL_COMPACT_THRESHOLD (EL_LOG_WINDOW / 2)
#endif

/* Window slots no client proposal may take: one for the no-op of a new leader
 * and one for a configuration change (see "No-op room" below). Not a knob. */
#define EL_RAFT_RESERVE 2

/* Entries a leader lets stand uncommitted (client proposals are refused with
 * EL_EFULL beyond it). The default is the most the no-op room rule allows,
 * capped at half the window less the reserve, so that the other half is left
 * to runs of failed leaders (see "No-op room" below). */
#ifndef EL_UNCOMMITTED_MAX
#define EL_UNCOMMITTED_MAX                                                          \
	((EL_LOG_WINDOW - EL_COMPACT_THRESHOLD - EL_RAFT_RESERVE) <                  \
			 EL_LOG_WINDOW / 2 - EL_RAFT_RESERVE                          \
		 ? (EL_LOG_WINDOW - EL_COMPACT_THRESHOLD - EL_RAFT_RESERVE)           \
		 : EL_LOG_WINDOW / 2 - EL_RAFT_RESERVE)
#endif

/* 1: a leader commits entries of earlier terms without an entry of its own
 * in two more ways (raft_replication.c): up to a commit index a follower
 * tells in its heartbeat reply (learn_commit), and up to the last index
 * durable on every voter while its configuration is committed
 * (commit_on_every_voter). So a leader whose window holds only earlier
 * terms' entries, and no slot for its no-op, still commits them (see "No-op
 * room" below). It matters at small windows (the simulator's window 8);
 * boards set 0 for its flash (boards/common/el_small_config.h). Nodes of
 * one cluster may differ: a reply without a commit index teaches nothing. */
#ifndef EL_LEARN_COMMIT
#define EL_LEARN_COMMIT 1
#endif

/* Terms and log indexes stay far below 2^64: a message or a stored state
 * beyond these bounds is refused (EL_EDECODE / EL_ECORRUPT), a node never
 * campaigns once its term has reached EL_TERM_MAX, and a leader never appends
 * past EL_INDEX_MAX, so no term or index can wrap. At a million elections or
 * entries a second, 2^62 lasts about 146,000 years. */
#define EL_TERM_MAX (UINT64_C(1) << 62)
#define EL_INDEX_MAX (UINT64_C(1) << 62)

/* ---- Codec -------------------------------------------------------------- */

/* Arrays and maps nest at most this deep in CBOR (a top-level array is depth 1). */
#ifndef EL_CBOR_DEPTH_MAX
#define EL_CBOR_DEPTH_MAX 8
#endif

/* ---- Lock service ------------------------------------------------------- */

#ifndef EL_SESSIONS_MAX
#define EL_SESSIONS_MAX 128
#endif

#ifndef EL_LOCKS_MAX
#define EL_LOCKS_MAX 256
#endif

/* Recent OPEN_SESSION nonces remembered, so that a retried open returns the
 * session its first attempt created (core/lock_open.c). */
#ifndef EL_OPENS_MAX
#define EL_OPENS_MAX 16
#endif

/* Holders of one lock at once (shared mode). */
#ifndef EL_HOLDERS_MAX
#define EL_HOLDERS_MAX 8
#endif

/* Semaphores (acquire with a limit N: at most N holders of one name,
 * core/lock.c). 1: compiled in; 0: an acquire with a limit is refused as
 * EL_EINVAL at its validation (el_lock_cmd_check), before it reaches the log,
 * so every node of one config agrees (the peer hello's profile carries it:
 * a cluster's nodes must share it like EL_ENTRY_DATA_MAX).
 * About 500 bytes of flash on a Cortex-M0+; 0 gives back about 250 of them
 * (boards/common/el_small_config.h keeps them in). */
#ifndef EL_SEMAPHORES
#define EL_SEMAPHORES 1
#endif

/* Restore lock-table snapshots of version 2 too (the release before
 * semaphores: no limit field, a boolean lock-delay), so that its backups and
 * data directories carry over, tokens and all. 0 on the firmware profile:
 * its store does not outlive a restart, and its flash is short. */
#ifndef EL_SNAPSHOT_READS_V2
#define EL_SNAPSHOT_READS_V2 1
#endif

/* Largest limit N a semaphore may have: its holders are a lock's holders,
 * so at most EL_HOLDERS_MAX. */
#ifndef EL_SEM_LIMIT_MAX
#define EL_SEM_LIMIT_MAX (EL_SEMAPHORES ? EL_HOLDERS_MAX : 0)
#endif

/* Queued acquires across all locks. */
#ifndef EL_WAITERS_MAX
#define EL_WAITERS_MAX 256
#endif

/* Watches on lock holder changes across all locks. */
#ifndef EL_WATCHES_MAX
#define EL_WATCHES_MAX 64
#endif

#ifndef EL_NAME_MAX
#define EL_NAME_MAX 64
#endif

/* Value published with an election (campaign). */
#ifndef EL_VALUE_MAX
#define EL_VALUE_MAX 64
#endif

/* Client name a session carries (who holds a lock, for operators). */
#ifndef EL_CLIENT_NAME_MAX
#define EL_CLIENT_NAME_MAX 32
#endif

/* Lock holds across all locks (a shared lock has up to EL_HOLDERS_MAX).
 * Holds and queued acquires share one pool of EL_HOLDS_MAX + EL_WAITERS_MAX
 * claims (granting a waiter must never fail), of which at most
 * EL_WAITERS_MAX may wait; holds may use the slots waiters leave free. */
#ifndef EL_HOLDS_MAX
#define EL_HOLDS_MAX 256
#endif

/* Election values held at once (elected leaders plus queued campaigns). */
#ifndef EL_VALUES_MAX
#define EL_VALUES_MAX 32
#endif

/* Events (grants to waiters, watch notifications) one applied command reports. */
#ifndef EL_LOCK_EVENTS_MAX
#define EL_LOCK_EVENTS_MAX 32
#endif

/* Events (grants, timeouts, watch notifications) one node batch hands out.
 * More are counted in events_dropped; clients then learn by retrying or
 * querying (core/el_node.h). */
#ifndef EL_NODE_EVENTS_MAX
#define EL_NODE_EVENTS_MAX (2 * EL_LOCK_EVENTS_MAX)
#endif

/* Locks one command can put into lock-delay and report to the leader's
 * timers by slot; an expiring session that held more makes the leader look
 * at every delayed lock instead (core/node_timer.c). */
#ifndef EL_LOCK_ARMED_DELAYS_MAX
#define EL_LOCK_ARMED_DELAYS_MAX 8
#endif

/* Longest lock-delay a holder may ask for; longer requests are capped. */
#ifndef EL_LOCK_DELAY_MAX_MS
#define EL_LOCK_DELAY_MAX_MS 60000u
#endif

/* Waiters one el_lock_query() lists (the total count is always given). */
#ifndef EL_QUERY_WAITERS_MAX
#define EL_QUERY_WAITERS_MAX 16
#endif

/* 1: check the whole lock table's invariants after every command (tests and
 * audit builds; O(table) per command); 0: the named lock's only, and the whole
 * table after every restore (core/lock_check.c). */
#ifndef EL_LOCK_AUDIT
#define EL_LOCK_AUDIT 0
#endif

/* 1: the lock table finds locks by name and sessions by id through hash
 * indexes, allocates slots from bitmaps, and the leader keeps its deadlines
 * in a min-heap, so a command costs what it touches, not what the tables
 * could hold (core/lock_index.c, core/node_timer.c). 0: plain scans over the
 * pools instead, about 1.5 KiB less code; the microcontroller config's pools
 * hold 16 records each, where a scan is as fast as a hash and the flash is
 * not there for both. Both lay out tables identically (the lowest free slot),
 * so their snapshots are the same bytes. */
#ifndef EL_INDEXED
#define EL_INDEXED 1
#endif

/* Width of the lock table's slot indexes: 16 bits while every pool has fewer
 * than 65,535 slots, else 32 (the gateway profile). */
#ifndef EL_SLOT_BITS
#if EL_SESSIONS_MAX >= 65535 || EL_LOCKS_MAX >= 65535 || \
	EL_HOLDS_MAX + EL_WAITERS_MAX >= 65535 || EL_WATCHES_MAX >= 65535 || EL_VALUES_MAX >= 65535
#define EL_SLOT_BITS 32
#else
#define EL_SLOT_BITS 16
#endif
#endif

/* Compaction follows the log's size, not a fixed count (as LogCabin does): a
 * node snapshots once the entries applied since its snapshot hold at least
 * EL_COMPACT_RATIO times the snapshot's bytes, and at least EL_COMPACT_MIN
 * entries; EL_COMPACT_THRESHOLD above stays the hard bound the log window
 * needs. A small table is written as soon as that is cheaper than replaying
 * the log; a big one only at the bound, so its cost is paid rarely. Also
 * once at the first applied entry, so that a bootstrapped configuration
 * (only in the snapshot at index 0) reaches a follower needing the log's
 * start (node_apply.c, maybe_compact). */
#ifndef EL_COMPACT_RATIO
#define EL_COMPACT_RATIO 2
#endif
#ifndef EL_COMPACT_MIN
#define EL_COMPACT_MIN (EL_COMPACT_THRESHOLD / 2 > 0 ? EL_COMPACT_THRESHOLD / 2 : 1)
#endif

/* Client requests the node holds while they commit. */
#ifndef EL_PENDING_MAX
#define EL_PENDING_MAX 64
#endif

/* ---- Compile-time checks ------------------------------------------------ */

_Static_assert(EL_NODES_MAX >= 1 && EL_NODES_MAX <= 15, "EL_NODES_MAX out of range");
_Static_assert(EL_LOG_WINDOW >= 8, "EL_LOG_WINDOW too small");
_Static_assert((EL_LOG_WINDOW & (EL_LOG_WINDOW - 1)) == 0, "EL_LOG_WINDOW must be a power of two");
_Static_assert(EL_MSG_ENTRIES_MAX >= 1 && EL_MSG_ENTRIES_MAX <= EL_LOG_WINDOW,
	       "EL_MSG_ENTRIES_MAX must be between 1 and EL_LOG_WINDOW");
_Static_assert(EL_INFLIGHT_MAX >= 1 && EL_INFLIGHT_MAX <= 64, "bad EL_INFLIGHT_MAX");
_Static_assert(EL_ENTRY_DATA_MAX >= 32 && EL_ENTRY_DATA_MAX <= 65535, "bad EL_ENTRY_DATA_MAX");
_Static_assert(EL_SNAPSHOT_CHUNK >= 16 && EL_SNAPSHOT_CHUNK <= EL_SNAPSHOT_MAX, "bad chunk");
_Static_assert(EL_OUTBOX_MAX >= 2 * EL_NODES_MAX, "outbox must fit a broadcast");
_Static_assert(EL_COMPACT_THRESHOLD >= 1, "EL_COMPACT_THRESHOLD must be at least 1");

/* No-op room. A leader can commit nothing until an entry of its own term (the
 * no-op it appends when elected) commits, and it can append nothing when the
 * window is full; so a node must never become leader with a full window that
 * only a commit could empty. The core keeps this invariant:
 *
 *   at a leader that has committed in its term, and at every follower whose
 *   log came from such a leader: last - commit <= EL_UNCOMMITTED_MAX + 1
 *
 * because client proposals are admitted only while last - commit is below
 * EL_UNCOMMITTED_MAX, a configuration change only after the leader committed
 * in its term, with the previous change committed and last - commit at most
 * EL_UNCOMMITTED_MAX (so at most one rides above it), and a follower's commit
 * is the leader's commit at sending time, which was at most
 * EL_UNCOMMITTED_MAX + 1 below the entries it carried. A node that missed
 * that commit (the leader's message lost, then the leader deposed) and is
 * elected learns it from its followers' heartbeat replies (learn_commit in
 * raft_replication.c: the entries up to it are in its log, Leader
 * Completeness); without that, its window could hold only entries of
 * earlier terms and no slot for its no-op (the configuration matrix,
 * window 8). When no survivor knows (the leader that committed them
 * crashed before it said so), it commits them once every voter holds them
 * (commit_on_every_voter, the Raft paper's own example in 5.4.2). After
 * each ready round the node has applied everything committed and compacted
 * once more than EL_COMPACT_THRESHOLD applied entries sat above the
 * snapshot, so a node elected leader holds at most
 *
 *   EL_COMPACT_THRESHOLD + EL_UNCOMMITTED_MAX + 1 entries,
 *
 * and the rule below leaves a slot for its no-op (and, once that commits and
 * everything before it with it, for a configuration change). A leader whose
 * no-op does not fit at the moment it is elected (entries committed but not
 * yet applied) appends it as soon as a slot frees, compacting on demand.
 * The one history this counting cannot bound is a run of leaders each
 * deposed before its own no-op committed: each leaves one more no-op to the
 * next (a slot per no-op is the price of a fixed window; a leader can commit
 * nothing without an entry of its term at the end of its log, Raft paper
 * figure 8). A node whose window is full compacts what it applied at once
 * (leader and follower alike), which gives such a run every slot above
 * EL_UNCOMMITTED_MAX + 1: EL_LOG_WINDOW - EL_UNCOMMITTED_MAX - 2 leaders in a
 * row may fail that way (4 at the smallest window with the default
 * EL_UNCOMMITTED_MAX, 256 at the default window); the first of them whose
 * no-op commits ends the run. A longer run fills the window, and with
 * EL_LEARN_COMMIT the next leader commits it once every voter holds it
 * (commit_on_every_voter): a stall until the last voter is back, not for
 * ever, unless the window also holds an uncommitted configuration change
 * (that rule then waits: a voter it removed might lack the entries). A
 * board that lowers EL_UNCOMMITTED_MAX buys a longer run. */
_Static_assert(EL_UNCOMMITTED_MAX >= 1, "EL_UNCOMMITTED_MAX must be at least 1");
_Static_assert(EL_COMPACT_THRESHOLD <= EL_LOG_WINDOW / 2,
	       "no-op room rule: EL_COMPACT_THRESHOLD may be at most half of EL_LOG_WINDOW");
_Static_assert(EL_COMPACT_THRESHOLD + EL_UNCOMMITTED_MAX + EL_RAFT_RESERVE <= EL_LOG_WINDOW,
	       "no-op room rule: EL_COMPACT_THRESHOLD + EL_UNCOMMITTED_MAX + EL_RAFT_RESERVE "
	       "must not exceed EL_LOG_WINDOW (a new leader must find a slot for its no-op)");
_Static_assert(EL_INDEX_MAX - EL_LOG_WINDOW > EL_LOG_WINDOW, "index bound below the window");
_Static_assert(EL_CBOR_DEPTH_MAX >= 1 && EL_CBOR_DEPTH_MAX <= 255, "bad EL_CBOR_DEPTH_MAX");
_Static_assert(EL_COMPACT_THRESHOLD >= 1 && EL_COMPACT_THRESHOLD < EL_LOG_WINDOW, "bad threshold");
_Static_assert(EL_INDEXED == 0 || EL_INDEXED == 1, "EL_INDEXED is 0 or 1");
_Static_assert(EL_LOCK_ARMED_DELAYS_MAX >= 1 && EL_LOCK_ARMED_DELAYS_MAX <= 255, "bad delays max");
_Static_assert(EL_SEMAPHORES == 0 || EL_SEMAPHORES == 1, "EL_SEMAPHORES is 0 or 1");
_Static_assert(EL_LEARN_COMMIT == 0 || EL_LEARN_COMMIT == 1, "EL_LEARN_COMMIT is 0 or 1");
_Static_assert(EL_SEMAPHORES ? (EL_SEM_LIMIT_MAX >= 1 && EL_SEM_LIMIT_MAX <= EL_HOLDERS_MAX)
			     : EL_SEM_LIMIT_MAX == 0,
	       "EL_SEM_LIMIT_MAX is 1..EL_HOLDERS_MAX with semaphores, else 0");
_Static_assert(EL_SLOT_BITS == 16 || EL_SLOT_BITS == 32, "EL_SLOT_BITS is 16 or 32");
_Static_assert(EL_COMPACT_MIN >= 1 && EL_COMPACT_MIN <= EL_COMPACT_THRESHOLD, "bad EL_COMPACT_MIN");
_Static_assert(EL_COMPACT_RATIO >= 1, "bad EL_COMPACT_RATIO");

#endif /* EL_CONFIG_H */
