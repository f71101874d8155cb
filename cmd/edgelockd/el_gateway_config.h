/*
 * el_gateway_config.h - the capacity profile of edgelockd on a Linux gateway
 * (the firmware profile in core/el_config.h stays as it is). Read through
 * -DEL_CONFIG_FILE: the daemon builds its own copy of the core and of
 * port/posix with these limits, since struct layouts depend on them.
 *
 * A gateway serves a fleet: thousands of devices, each a session with a few
 * locks; about a thousand client connections. Every node of one cluster must
 * be built with the same profile (the peer hello carries its digest and a
 * node refuses a peer whose digest differs).
 *
 * Memory: sizeof(struct el_node) with these limits is printed by
 * `edgelockd --version`; the daemon allocates it once at start.
 * Cost: the core finds locks, sessions and free slots through indexes and
 * keeps deadlines in a heap (EL_INDEXED), so a command costs what it
 * touches; `make bench-core` measures it. The node is allocated zeroed and
 * touches only the pages it uses.
 */
#ifndef EL_GATEWAY_CONFIG_H
#define EL_GATEWAY_CONFIG_H

#define EL_NODES_MAX 7
#define EL_ENTRY_DATA_MAX 256
/* Compaction: a snapshot is taken at most every EL_COMPACT_THRESHOLD
 * entries, and sooner only once the log has outgrown the snapshot
 * (EL_COMPACT_RATIO). The threshold bounds the live log, which is resident
 * memory: 280 B an entry whatever its size, as ring pages are given back
 * only after a compaction. 8,192 entries keep a daemon holding 30,000 locks
 * under 16 MiB at its peak (14.2 MiB in make bench; 32,768 made it
 * 20.9 MiB); tests/memory/gw_memory_test.c checks the budget. The price: a
 * big table's snapshot (30,000 locks: 1.6 MB, about 5 ms to encode and
 * 2.5 ms to write, fsync and rename, in the node's turn) four times as
 * often, 1.3 us of CPU per lock cycle with a full table (make bench-core).
 * etcd snapshots every 100,000 entries, but keeps its log on the heap and
 * counts memory in hundreds of MB. The ring holds 65,536 entries (18 MB on
 * paper, touched as it fills). */
#define EL_LOG_WINDOW 65536         /* > requests in flight, room to compact */
#define EL_COMPACT_THRESHOLD 8192
#define EL_MSG_ENTRIES_MAX 64
#define EL_INFLIGHT_MAX 16
#define EL_SESSIONS_MAX 8192
#define EL_LOCKS_MAX 32768
#define EL_WAITERS_MAX 32768
/* Holds and waits share one pool of 65,536 claims: every lock held while
 * as many acquires wait. Slot indexes are 32-bit from this size on
 * (EL_SLOT_BITS in core/el_config.h). */
#define EL_HOLDS_MAX 32768
#define EL_WATCHES_MAX 8192
#define EL_VALUES_MAX 2048
#define EL_PENDING_MAX 1024         /* client commands in flight */
#define EL_READS_MAX 256            /* linearizable reads in flight */
#define EL_SNAPSHOT_CHUNK (32 * 1024)
#define EL_SNAPSHOT_MAX (8 * 1024 * 1024) /* a full table is about 7 MiB */
#define EL_LOCK_EVENTS_MAX 64

#endif /* EL_GATEWAY_CONFIG_H */
