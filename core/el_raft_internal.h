/*
 * el_raft_internal.h - helpers shared by the raft_*.c files; not public API.
 *
 * The replica is split by concern: raft.c (lifecycle, log, ready loop),
 * raft_election.c (roles and votes), raft_replication.c (appends, commit,
 * heartbeats, reads), raft_snapshot.c (compaction and InstallSnapshot),
 * raft_membership.c (configuration changes and leadership transfer).
 */
#ifndef EL_RAFT_INTERNAL_H
#define EL_RAFT_INTERNAL_H

#include "el_raft.h"

#define EL_RAFT_SLOT(index) ((uint32_t)((index) & (EL_LOG_WINDOW - 1)))

/* raft.c */
void el_raft__enter(struct el_raft *r, uint64_t now_ms);
void el_raft__check_invariants(const struct el_raft *r);
struct el_entry *el_raft__slot(struct el_raft *r, uint64_t index);
bool el_raft__log_full(const struct el_raft *r);
uint64_t el_raft__append_local(struct el_raft *r, uint8_t type, const uint8_t *data, uint16_t len);
void el_raft__truncate_from(struct el_raft *r, uint64_t index);
void el_raft__refresh_conf(struct el_raft *r);
void el_raft__set_conf(struct el_raft *r, const struct el_conf *conf, uint64_t index);
struct el_msg *el_raft__msg(struct el_raft *r, uint8_t type, el_id_t to);
void el_raft__purge_outbox(struct el_raft *r, uint64_t compacted_through, bool leader_msgs);
void el_raft__reset_election_timer(struct el_raft *r);
/* x % m without a 64-bit division (none linked on 32-bit boards). */
uint32_t el_raft__mod_u64_u32(uint64_t x, uint32_t m);
bool el_raft__conf_valid(const struct el_conf *c);
bool el_raft__can_campaign(const struct el_raft *r);
/* A configuration change takes the slot the no-op room rule (el_config.h)
 * keeps for it: at most one rides above EL_UNCOMMITTED_MAX uncommitted
 * entries (callers also require the previous change committed). */
static inline bool el_raft__conf_admissible(const struct el_raft *r)
{
	/* room in the window and below EL_INDEX_MAX, as for any append */
	return !el_raft__log_full(r) && r->last_index - r->commit <= EL_UNCOMMITTED_MAX;
}

/* Configuration queries. */
int el_raft__slot_of(const struct el_conf *c, el_id_t id);
uint32_t el_raft__voters(const struct el_conf *c);
bool el_raft__is_voter(const struct el_raft *r, el_id_t id);
static inline uint32_t el_raft__quorum(const struct el_conf *c) { return el_raft__voters(c) / 2 + 1; }

/* raft_election.c */
void el_raft__become_follower(struct el_raft *r, uint64_t term, el_id_t leader);
void el_raft__campaign(struct el_raft *r, bool forced);
void el_raft__handle_vote(struct el_raft *r, const struct el_msg *m);
void el_raft__handle_vote_resp(struct el_raft *r, const struct el_msg *m);

/* raft_replication.c */
struct el_progress *el_raft__progress(struct el_raft *r, el_id_t id);
/* Leader: a follower whose link closed is probed (raft_replication.c). */
void el_raft__probe_lost(struct el_raft *r, el_id_t id);
void el_raft__send_append(struct el_raft *r, struct el_progress *pr, bool allow_empty);
void el_raft__broadcast_append(struct el_raft *r, bool allow_empty);
void el_raft__broadcast_heartbeat(struct el_raft *r);
bool el_raft__maybe_commit(struct el_raft *r);
void el_raft__commit_to(struct el_raft *r, uint64_t commit);
void el_raft__handle_append(struct el_raft *r, const struct el_msg *m);
void el_raft__handle_append_resp(struct el_raft *r, const struct el_msg *m);
void el_raft__handle_heartbeat(struct el_raft *r, const struct el_msg *m);
void el_raft__handle_heartbeat_resp(struct el_raft *r, const struct el_msg *m);
void el_raft__start_reads(struct el_raft *r);
bool el_raft__committed_in_term(const struct el_raft *r);

/* raft_snapshot.c */
void el_raft__maybe_noop(struct el_raft *r);
bool el_raft__make_room(struct el_raft *r);
void el_raft__send_snapshot_chunk(struct el_raft *r, struct el_progress *pr);
int el_raft__handle_snapshot(struct el_raft *r, const struct el_msg *m);
void el_raft__handle_snapshot_resp(struct el_raft *r, const struct el_msg *m);

/* raft_membership.c */
void el_raft__remap_progress(struct el_raft *r);
void el_raft__maybe_promote(struct el_raft *r, struct el_progress *pr);
void el_raft__after_commit(struct el_raft *r);
void el_raft__maybe_finish_transfer(struct el_raft *r, struct el_progress *pr);

#endif /* EL_RAFT_INTERNAL_H */
