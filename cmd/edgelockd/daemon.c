/*
 * daemon.c - edgelockd's loop (DESIGN.md "edgelockd, the loop").
 *
 * One thread owns the node. Each turn: wait on the network's wake fd until
 * input or the node's next deadline; drain everything queued (peer messages
 * stepped in, client requests submitted); tick when due; then run the ready
 * loop: send a leader's appends (they promise nothing of our disk, so the
 * followers' writes overlap ours), persist the whole batch with one fsync
 * (port/posix, group commit), only then send the other Raft messages,
 * deliver replies and events, and advance. A storage failure stops the loop
 * before anything of that batch is acknowledged (the node must restart and
 * recover).
 *
 * Start: a new cluster is bootstrapped only with --bootstrap on an empty data
 * directory; a node joining an existing cluster starts empty with --join and
 * waits to be added; a plain start needs a directory that holds state. So a
 * node never silently starts a second cluster over existing data. Nor on
 * another node's: the directory names the node whose state it holds (owner.c).
 * Stop (SIGTERM): a leader hands leadership to a caught-up voter with a live
 * link first, then the node exits within a few seconds.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__ /* malloc_trim */
#include <malloc.h>
#endif

#include "el_daemon.h"
#include "el_dirlock.h"
#include "el_error.h"
#include "el_io.h"
#include "el_log_ring.h"
#include "el_peer_hello.h"
#include "el_platform.h"
#include "el_storage_raft.h"

#define TURN_MAX_MS 100     /* wake at least this often */
#define BATCHES_PER_TURN 64 /* ready batches per turn before reading input again */
#define STOP_MAX_MS 3000    /* a leader's grace to transfer leadership */
#define STOP_FLUSH_MS 200   /* let queued frames leave before closing */
#define TRIM_EVERY_MS 10000 /* free heap pages back to the kernel (give_back_memory) */
#define REMOVED_QUIET_ELECTIONS 5u /* check_removed */
#define REMOVED_FILE "removed"     /* in data_dir: this node stopped on its removal */

/* True when dir holds Raft state (a snapshot or WAL segments), unless
 * those files hold nothing of a cluster (el_storage_holds_nothing: no
 * snapshot, one WAL segment whose whole batches hold only hard states of
 * zeros: what a --bootstrap whose first write found the disk full left,
 * or a crash before its configuration was written). Such a directory
 * recovers as term 0 with an empty log and no configuration, the state of
 * an empty one: a plain start on it ran with 0 members for ever, and
 * --bootstrap was refused over it (an outside tester). It is safe to call
 * empty, so that --bootstrap, --join and restore may run over it: a node
 * that voted, or holds an entry or a configuration, has it on disk (a vote
 * is sent only once its batch is synced; a configuration is a snapshot
 * file or an entry), and any doubt counts as state. */
bool el_d_has_state(const char *dir)
{
	DIR *dp = opendir(dir);
	bool found = false;
	if (dp == NULL)
		return false;
	for (struct dirent *e = readdir(dp); e != NULL && !found; e = readdir(dp))
		found = strcmp(e->d_name, "snapshot") == 0 || strncmp(e->d_name, "wal-", 4) == 0;
	closedir(dp);
	return found && !el_storage_holds_nothing(dir);
}

/*
 * A node that stopped on its removal (check_removed) left REMOVED_FILE in
 * its data directory. Started again on that data it is no member: it would
 * only redial the members, which refuse it, idle for good. So it refuses
 * to start, saying how to come back, with exit 1 (a config error: systemd
 * does not restart it), as etcd refuses a removed member. The file rather
 * than the log's configuration alone: a node added back after a wipe
 * replays its old removal before the entry that adds it again, and a crash
 * between the two leaves a log that ends without it though it is a member
 * (open_node then lets check_removed decide, as it does while running).
 * Only with state: a wiped directory has no file left to hold against it.
 */
static int check_not_removed(const struct el_daemon *d)
{
	char path[sizeof d->cfg.data_dir + sizeof REMOVED_FILE + 1], why[320] = "";
	snprintf(path, sizeof path, "%s/%s", d->cfg.data_dir, REMOVED_FILE);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return EL_OK;
	if (fgets(why, sizeof why, f) != NULL)
		why[strcspn(why, "\n")] = '\0';
	fclose(f);
	/* two lines: with an outdated incarnation's reason, one line ran past
	 * el_log's and lost its end (found by an outside tester) */
	el_log(EL_LOG_ERROR, "node %u was removed from the cluster (or found its data outdated "
	       "by a --force-new-cluster or restore) and stopped then (%s: %s)", d->cfg.id, path,
	       why);
	el_log(EL_LOG_ERROR, "node %u: its data is no member's. To bring it back: wipe data_dir "
	       "%s, start it with "
	       "--join, and run `edgelock members add %u PEER_ADDR CLIENT_ADDR` (if `edgelock "
	       "status` still lists node %u, it was added back while it was down: `edgelock "
	       "members remove %u` first)", d->cfg.id, d->cfg.data_dir, d->cfg.id, d->cfg.id,
	       d->cfg.id);
	if (strstr(why, "incarnation") != NULL) /* el_d_retire's from peers.c, not a removal */
		el_d_retire_advice(d);
	return EL_ESTOPPED;
}

/* A newer incarnation's hello need not mean a --force-new-cluster or a
 * restore: the sender's file may be damaged or copied from another
 * cluster, or this node's lost (read as generation 0) or replaced. Then
 * this node's data is good, maybe the only good copy, and the wipe that
 * the other lines advise would destroy it (found by an outside tester). */
void el_d_retire_advice(const struct el_daemon *d)
{
	el_log(EL_LOG_ERROR, "node %u: if no --force-new-cluster or restore was run, an "
	       "incarnation file is wrong instead (the other node's damaged or replaced, or this "
	       "node's lost or replaced): do NOT wipe this node. Copy a good member's "
	       "DATA_DIR/incarnation (a healthy cluster's all match) over each wrong one, its node "
	       "stopped, delete %s/%s and start this node", d->cfg.id,
	       d->cfg.data_dir, REMOVED_FILE);
	/* an outside tester restored one lost node from a backup beside two
	 * healthy ones, which then stopped, and the lines above read as "wipe" */
	el_log(EL_LOG_ERROR, "node %u: if a restore or --force-new-cluster was run on some nodes "
	       "only, while this cluster still ran (one lost node restored from a backup, say), "
	       "those nodes are wrong, not this one: do NOT wipe this node", d->cfg.id);
	el_log(EL_LOG_ERROR, "node %u: stop those nodes, wipe their data_dir, delete %s/%s, start "
	       "this node, then bring them back with --join and `edgelock members add` (a restore "
	       "is for a whole cluster that is down)", d->cfg.id, d->cfg.data_dir, REMOVED_FILE);
}

/* A node already runs on the data directory (it holds the lock, on the
 * directory itself too: el_dirlock.h, so a removed LOCK file does not hide
 * it): say so first, with its pid, since every other advice (bootstrap,
 * join, restart) would only meet that lock next. */
static int check_not_running(const struct el_daemon *d, bool bootstrap)
{
	const long pid = el_dirlock_holder(d->cfg.data_dir);
	if (pid < 0)
		return EL_OK;
	char who[80] = " (pid unknown: its LOCK file, which names it, was removed)";
	if (pid > 0)
		snprintf(who, sizeof who, " (pid %ld)", pid);
	el_log(EL_LOG_ERROR, "data_dir %s is in use by a running edgelockd%s: %s. To restart "
	       "it, stop that process first (systemctl restart edgelockd, or kill -TERM it and "
	       "start again); a second node on this machine needs its own data_dir and ports",
	       d->cfg.data_dir, who, bootstrap ? "it is already a member of a cluster, "
	       "nothing to bootstrap" : "this node already runs");
	return EL_ELOCKED;
}

/* A read-only data_dir may pass (a disk mended, remounted read-write):
 * EL_EIO, exit 2, which the shipped unit retries (el_dcfg_read_only).
 * refused: storage's open already failed with EROFS. */
static int check_writable(const struct el_daemon *d, bool refused)
{
	char why[2 * EL_DCFG_PATH_MAX + 400], hint[sizeof why];
	if (!el_dcfg_read_only(&d->cfg, refused, why, hint, sizeof why))
		return EL_OK;
	el_log(EL_LOG_ERROR, "%s; not starting (exit 2: the shipped unit tries again)", why);
	if (hint[0] != '\0') /* a line of its own: one would lose its end */
		el_log(EL_LOG_ERROR, "%s", hint);
	return EL_EIO;
}

static int check_start_mode(const struct el_daemon *d, bool bootstrap, bool join)
{
	if (check_not_running(d, bootstrap) != EL_OK)
		return EL_ELOCKED;
	if (check_writable(d, false) != EL_OK)
		return EL_EIO;
	bool state = el_d_has_state(d->cfg.data_dir);
	/* another node's data first: its removed file is not this node's */
	if (el_d_owner_guard(d->cfg.data_dir, d->cfg.id, state, false) != EL_OK)
		return EL_EINVAL;
	if (state && check_not_removed(d) != EL_OK)
		return EL_ESTOPPED;
	if (bootstrap && state) {
		el_log(EL_LOG_ERROR, "data_dir %s already holds a cluster's state: refusing to "
		       "bootstrap a second cluster over it (start without --bootstrap)",
		       d->cfg.data_dir);
		return EL_EINVAL;
	}
	if (d->force_new_cluster && !state) {
		el_log(EL_LOG_ERROR, "data_dir %s is empty: --force-new-cluster restarts a "
		       "node from the state it holds", d->cfg.data_dir);
		return EL_EINVAL;
	}
	if (join && state) /* etcd, too, ignores --initial-cluster on a restart */
		el_log(EL_LOG_WARN, "--join ignored: data_dir %s holds this node's state, so it "
		       "restarts as the member it was", d->cfg.data_dir);
	if (!bootstrap && !join && !state && el_d_incarnation_joining(d->cfg.data_dir)) {
		el_log(EL_LOG_ERROR, "data_dir %s: this node was started with --join and has "
		       "not had the cluster's state yet: start it with --join again (after "
		       "`edgelock members add`, if not done)", d->cfg.data_dir);
		return EL_EINVAL;
	}
	if (!bootstrap && !join && !state) {
		el_log(EL_LOG_ERROR, "data_dir %s is empty: start a new cluster with --bootstrap, "
		       "or join an existing one with --join and `edgelock members add`",
		       d->cfg.data_dir);
		return EL_EINVAL;
	}
	return EL_OK;
}

int el_d_conf_of(const struct el_dcfg *cfg, struct el_conf *c, const char *what)
{
	bool self = false;
	memset(c, 0, sizeof(*c));
	for (uint32_t i = 0; i < cfg->n_peers && i < EL_NODES_MAX; i++) {
		c->m[c->n++] = (struct el_member){ cfg->peers[i].id, EL_MEMBER_VOTER };
		self = self || cfg->peers[i].id == cfg->id;
	}
	if (!self)
		el_log(EL_LOG_ERROR, "%s: [peers] must list every initial member, this node (%u) "
		       "too", what, cfg->id);
	return self ? EL_OK : EL_EINVAL;
}

static int bootstrap_conf(struct el_daemon *d)
{
	struct el_conf c;
	const int rc = el_d_conf_of(&d->cfg, &c, "--bootstrap");
	if (rc != EL_OK)
		return rc;
	el_log(EL_LOG_INFO, "bootstrapping a new cluster of %u voters", c.n);
	return el_raft_bootstrap(el_node_raft(d->node), &c);
}

/* Lost quorum: this node, as loaded, becomes the one voter of a new
 * configuration (el_raft_force_new_cluster), loudly. */
static int force_new_cluster(struct el_daemon *d)
{
	const struct el_raft *r = el_node_raft(d->node);
	/* the next incarnation first: the old members, restarted on their
	 * old data, must find this node refusing them (incarnation.c) */
	struct el_d_incarnation next;
	char name[48];
	int rc = el_d_incarnation_next(&d->inc, &next);
	if (rc == EL_OK)
		rc = el_d_incarnation_save(d->cfg.data_dir, &next);
	if (rc != EL_OK) {
		el_log(EL_LOG_ERROR, "--force-new-cluster: cannot move to a new incarnation: %s",
		       el_strerror(rc));
		return rc;
	}
	d->inc = next;
	el_d_incarnation_name(&d->inc, name, sizeof name);
	el_log(EL_LOG_WARN, "--force-new-cluster: this node's data is now incarnation %s of "
	       "the cluster: members holding older data are refused and stop when they hear "
	       "of it", name);
	el_log(EL_LOG_WARN, "--force-new-cluster: node %u leaves the %u-member configuration "
	       "and becomes its ONLY voter, with the %llu entries it holds; entries only the "
	       "other members had are lost. Never restart those members with their old data: "
	       "wipe them and add them back with --join and `edgelock members add`.",
	       d->cfg.id, el_raft_conf(r)->n, (unsigned long long)el_raft_last_index(r));
	rc = el_raft_force_new_cluster(el_node_raft(d->node));
	if (rc != EL_OK)
		el_log(EL_LOG_ERROR, "--force-new-cluster: %s%s", el_strerror(rc),
		       rc == EL_EINVAL ? " (this node is not a member of its own configuration)" : "");
	return rc;
}

/* A log that ends with this node's own removal, with no REMOVED_FILE (the
 * node was stopped or killed before check_removed stopped it, or an older
 * release ran it): it was a member, so check_removed may stop it, once no
 * newer entry reaches it for REMOVED_QUIET_ELECTIONS election timeouts. A
 * node added back meanwhile is sent the entries after its removal and
 * runs on. The configuration before the latest must hold it: a snapshot's
 * alone cannot tell a removed node from one added back after a wipe. */
static void note_own_removal(struct el_daemon *d)
{
	const struct el_raft *r = el_node_raft(d->node);
	struct el_conf before;
	if (el_conf_find(el_raft_conf(r), d->cfg.id) != NULL)
		return;
	el_d_previous_conf(r, &before);
	if (el_conf_find(&before, d->cfg.id) == NULL)
		return;
	d->was_member = true;
	el_log(EL_LOG_WARN, "node %u: its log ends with its removal from the cluster (entry "
	       "%llu): it stops by itself unless a newer entry (adding it back) reaches it "
	       "within %u election timeouts", d->cfg.id, (unsigned long long)r->conf_index,
	       REMOVED_QUIET_ELECTIONS);
}

/* Which incarnation this node's data is of (incarnation.c). A new
 * cluster's is generation 0 with its voters' digest; a node joining with
 * no state says so on disk, so that a restart after its first entries,
 * before it adopted the cluster's incarnation, does not read its data as
 * generation 0 and stop on the first hello of a forced or restored cluster. */
static int open_incarnation(struct el_daemon *d, bool bootstrap, bool state)
{
	const char *dir = d->cfg.data_dir;
	if (bootstrap) {
		struct el_conf voters;
		int rc = el_d_conf_of(&d->cfg, &voters, "--bootstrap");
		if (rc == EL_OK)
			el_d_incarnation_of_bootstrap(&voters, &d->inc);
		return rc == EL_OK ? el_d_incarnation_save(dir, &d->inc) : rc;
	}
	int rc = el_d_incarnation_load(dir, state, &d->inc);
	if (rc == EL_OK && !state && !d->inc.known)
		rc = el_d_incarnation_save(dir, &d->inc);
	return rc;
}

/* Why the data could not be opened, and for damage what to do: no restart
 * repairs it, and the way back depends on whether the others are up. */
static void storage_refused(const struct el_daemon *d, int rc)
{
	const char *io = el_io_last_failure();
	el_log(EL_LOG_ERROR, "data_dir %s: %s%s%s%s", d->cfg.data_dir, el_strerror(rc),
	       rc == EL_EIO && io[0] != '\0' ? " (" : "", rc == EL_EIO ? io : "",
	       rc == EL_EIO && io[0] != '\0' ? ")" : "");
	if (rc == EL_EIO && el_io_last_errno() == EROFS) /* ext4 since 6.12: el_dcfg_read_only */
		(void)check_writable(d, true);
	if (rc == EL_ECORRUPT)
		el_log(EL_LOG_ERROR, "data_dir %s: no restart repairs this. With the other members "
		       "up, replace the node as a dead board (edgelock members remove %u, keep "
		       "the directory aside, start empty with --join, edgelock members add: "
		       "docs/operations.md); if it may hold the last copy, see \"Lost quorum\" there",
		       d->cfg.data_dir, d->cfg.id);
}

static int open_node(struct el_daemon *d, bool bootstrap)
{
	const struct el_node_config nc = { .raft = {
		.id = d->cfg.id,
		.election_ms_min = d->cfg.election_ms,
		.heartbeat_ms = d->cfg.heartbeat_ms,
		.prevote = true,
		.check_quorum = d->cfg.check_quorum,
	}, .zeroed = true }; /* calloc below: the tables cost only what they hold */
	/* a bootstrap's first batch failing is said by el_d_unbootstrap */
	const struct el_storage_options so = { .offline = bootstrap };
	uint64_t seed = 0;
	int rc = el_random_seed(&seed);
	if (rc == EL_OK)
		rc = el_storage_open(&d->st, d->cfg.data_dir, &so);
	if (rc != EL_OK) {
		storage_refused(d, rc);
		return rc;
	}
	/* this node's id first, before any state of it is written (owner.c) */
	const bool state = el_d_has_state(d->cfg.data_dir);
	rc = el_d_owner_guard(d->cfg.data_dir, d->cfg.id, state, true);
	if (rc == EL_OK)
		rc = open_incarnation(d, bootstrap, state);
	if (rc != EL_OK)
		return rc;
	d->node = calloc(1, sizeof *d->node);
	if (d->node == NULL)
		return EL_EFULL;
	rc = el_node_init(d->node, &nc, seed);
	if (rc == EL_OK)
		rc = bootstrap ? bootstrap_conf(d) : el_storage_load_raft(d->st, el_node_raft(d->node));
	d->bootstrapping = bootstrap;
	if (rc == EL_OK && d->force_new_cluster)
		rc = force_new_cluster(d);
	if (rc != EL_OK) {
		el_log(EL_LOG_ERROR, "cannot start the node: %s", el_strerror(rc));
		return rc;
	}
	d->now_ms = el_now_ms();
	el_node_start(d->node, d->now_ms);
	note_own_removal(d);
	const struct el_raft *r = el_node_raft(d->node);
	el_log(EL_LOG_INFO, "node %u: term %llu, log up to %llu (committed up to %llu), %u "
	       "members", d->cfg.id, (unsigned long long)el_raft_term(r),
	       (unsigned long long)el_raft_last_index(r), (unsigned long long)el_raft_commit(r),
	       el_raft_conf(r)->n);
	return EL_OK;
}

/* How long a peer link may leave bytes unacknowledged before it is closed
 * and redialed (net/el_net.h): two election timeouts, at least 2 s (a busy
 * LAN's retransmits recover well within that), at most 30 s. */
static uint32_t peer_user_timeout_ms(uint32_t election_ms)
{
	const uint32_t t = 2u * election_ms;
	return t < 2000u ? 2000u : t > 30000u ? 30000u : t;
}

static int open_net(struct el_daemon *d)
{
	const struct el_net_config nc = {
		.peer_listen = d->cfg.peer_addr,
		.client_listen = d->cfg.client_addr,
		.ca_file = d->cfg.ca_file,
		.cert_key_file = d->cfg.cert_key_file,
		.client_cert_required = d->cfg.client_cert_required,
		.max_clients = d->cfg.max_clients,
		.peer_frame_max = EL_WIRE_MSG_MAX,
		.client_frame_max = EL_CW_FRAME_MAX,
		.client_sendq_max = d->cfg.client_queue,
		.client_sendq_bytes_max = d->cfg.client_queue_bytes,
		.client_sendq_total_max = el_dcfg_client_queues_total(&d->cfg),
		.peer_sendq_max = d->cfg.peer_queue,
		.peer_sendq_bytes_max = d->cfg.peer_queue_bytes,
		.inq_per_conn_max = 256,
		.peer_user_timeout_ms = peer_user_timeout_ms(d->cfg.election_ms),
	};
	int rc = el_net_start(&d->net, &nc);
	if (rc == EL_OK)
		rc = el_d_clients_open(d);
	if (rc != EL_OK)
		return rc;
	el_d_book_set(d, d->cfg.id, d->cfg.peer_addr, (uint32_t)strlen(d->cfg.peer_addr),
		      d->cfg.client_addr, (uint32_t)strlen(d->cfg.client_addr));
	for (uint32_t i = 0; i < d->cfg.n_peers; i++)
		el_d_book_set(d, d->cfg.peers[i].id, d->cfg.peers[i].addr,
			      (uint32_t)strlen(d->cfg.peers[i].addr), "", 0);
	el_log(EL_LOG_INFO, "listening: peers %s, clients %s", d->cfg.peer_addr,
	       d->cfg.client_addr);
	return EL_OK;
}

/* This node's identity for the challenge and proof of every connection
 * (net/el_ident.h): its certificate must say OU=node and CN=node<id>, the
 * name every other node checks, and be neither expired nor revoked by
 * [tls] crl_file. Loaded into *out; why not goes to the log at level lvl.
 * The start, SIGHUP and --check-config all check the files here. */
int el_d_load_ident(const struct el_dcfg *cfg, struct el_ident **out, bool reload, char *why,
		    size_t cap)
{
	char err[512] = "", want[32];
	const char *crl = cfg->crl_file[0] != '\0' ? cfg->crl_file : NULL;
	int rc;
	if (reload)
		rc = el_ident_reload_crl(out, cfg->ca_file, cfg->cert_key_file, NULL, crl, err,
					 sizeof err);
	else
		rc = el_ident_load_crl(out, cfg->ca_file, cfg->cert_key_file, NULL, crl, err,
				       sizeof err);
	if (rc != EL_OK) {
		snprintf(why, cap, "[tls] %s", err);
		return rc;
	}
	snprintf(want, sizeof want, "node%u", cfg->id);
	if (el_ident_role_of(*out) != EL_IDENT_NODE || strcmp(el_ident_name(*out), want) != 0) {
		snprintf(why, cap, "[tls] cert_key_file %s: node %u needs a certificate with "
			 "OU=node and CN=%s, this one is CN=%s (%s)", cfg->cert_key_file,
			 cfg->id, want, el_ident_name(*out),
			 el_ident_role_of(*out) == EL_IDENT_NODE ? "OU=node" : "OU=client");
		el_ident_free(*out);
		*out = NULL;
		return EL_EPERM; /* not this node's: open_ident */
	}
	return EL_OK;
}

static int open_ident(struct el_daemon *d)
{
	char why[700];
	const int rc = el_d_load_ident(&d->cfg, &d->ident, false, why, sizeof why);
	if (rc != EL_OK)
		el_log(EL_LOG_ERROR, "%s", why);
	/* Another node's certificate, or a client's, stays refused until
	 * someone installs this node's: exit 1, not restarted by the unit (it
	 * restarted every 2 s: an outside tester). Its dates, a file not yet
	 * readable (a disk mounted late), may pass: exit 2. */
	return rc == EL_EPERM ? EL_ESTOPPED : rc;
}

/* SIGHUP: the identity material and the TLS configurations, both from the
 * files as started. The files' modes are checked as at the start, then
 * the identity (this node's name, dates, CRL), so a certificate the proofs would refuse never reaches TLS either.
 * The loop is the one user of d->ident, so no lock; connections already up
 * keep what they were opened with (their TLS session and their proof): the
 * cluster is not dropped. A challenge already sent keeps its nonce, which is
 * per connection, not per el_ident. */
void el_d_reload(struct el_daemon *d)
{
	static const char kept[] = "SIGHUP: kept the old certificates: ";
	struct el_ident *next = NULL;
	char why[700];
	if (el_dcfg_tls_modes(&d->cfg, why, sizeof why) != EL_OK ||
	    el_d_load_ident(&d->cfg, &next, true, why, sizeof why) != EL_OK) {
		el_log(EL_LOG_ERROR, "%s%s", kept, why);
		return;
	}
	if (el_net_reload_tls(d->net) != EL_OK) {
		el_log(EL_LOG_ERROR, "%sthe TLS layer could not load them", kept);
		el_ident_free(next);
		return;
	}
	el_ident_free(d->ident);
	d->ident = next;
	d->crl_said = 0; /* the new CRL's nextUpdate, looked at in this turn */
	d->crl_checked_ms = 0;
	el_log(EL_LOG_INFO, "SIGHUP: reloaded [tls] ca_file %s, cert_key_file %s%s%s for new "
	       "connections (TLS and identity proofs)", d->cfg.ca_file, d->cfg.cert_key_file,
	       d->cfg.crl_file[0] != '\0' ? ", crl_file " : " (no crl_file)", d->cfg.crl_file);
	if (el_ident_own_revoked(next))
		el_log(EL_LOG_ERROR, "SIGHUP: crl_file %s revokes this node's own certificate "
		       "(%s): applied to every other certificate all the same; the members that "
		       "load it refuse this node's new peer connections, and it will not start "
		       "with it: install a new certificate (docs/security.md) and send SIGHUP",
		       d->cfg.crl_file, d->cfg.cert_key_file);
}

/* A data_dir refused as it is (empty without --bootstrap or --join, another
 * node's, bootstrapped over, damaged) stays refused on every restart until
 * someone acts, and each restart only repeats the line: EL_ESTOPPED tells
 * main.c to exit 1, which the shipped unit does not restart (an outside
 * tester watched it restart every 2 s for ever). A data_dir in use and an
 * I/O error may pass: they stay exit 2, restarted. */
static int refused_for_good(int rc)
{
	return rc == EL_EINVAL || rc == EL_ECORRUPT ? EL_ESTOPPED : rc;
}

int el_d_open(struct el_daemon *d, bool bootstrap, bool join)
{
	d->cluster = el_peer_digest(d->cfg.cluster);
	int rc = check_start_mode(d, bootstrap, join);
	if (rc != EL_OK)
		return refused_for_good(rc);
	rc = open_ident(d);
	if (rc == EL_OK)
		rc = refused_for_good(open_node(d, bootstrap));
	if (rc == EL_OK)
		rc = open_net(d);
	if (rc == EL_OK)
		rc = el_d_metrics_open(d);
	return rc;
}

void el_d_close(struct el_daemon *d)
{
	el_d_metrics_close(d);
	if (d->net != NULL)
		el_net_stop(d->net);
	if (d->st != NULL)
		el_storage_close(d->st);
	if (d->ident != NULL)
		el_ident_free(d->ident);
	d->ident = NULL;
	free(d->clients);
	d->clients = NULL;
	free(d->snap_buf);
	d->snap_buf = NULL;
	free(d->node);
	d->net = NULL;
	d->st = NULL;
	d->node = NULL;
}

/* Steps 1-4 of the ready loop; a storage error ends the loop (sticky). */
static int ready_loop(struct el_daemon *d)
{
	for (int k = 0; k < BATCHES_PER_TURN && el_node_has_ready(d->node); k++) {
		struct el_node_ready rd;
		el_node_ready(d->node, &rd);
		/* A leader's appends go out before its own fsync, so the followers'
		 * writes overlap it (el_raft.h, step 3; thesis 10.2.1). */
		for (uint32_t i = 0; i < rd.raft.n_msgs; i++)
			if (el_raft_msg_may_lead(&rd.raft.msgs[i]))
				el_d_peer_send(d, &rd.raft.msgs[i]);
		const uint64_t t0 = el_d_metrics_clock(); /* metrics, and diag.c's slow persist */
		int rc = el_storage_persist_ready(d->st, &rd.raft, el_node_raft(d->node));
		/* nothing of a bootstrap durable (no entry, no term): undo it */
		if (rc != EL_OK && d->bootstrapping && el_storage_last_index(d->st) == 0 &&
		    el_storage_hard_state(d->st).term == 0)
			el_d_unbootstrap(&d->cfg, rc);
		if (rc != EL_OK) {
			el_log(EL_LOG_ERROR, "storage failed (%s): stopping (exit 3) without "
			       "acknowledging anything more; the line before says what to do",
			       el_strerror(rc));
			return rc;
		}
		if (d->bootstrapping && el_storage_last_index(d->st) > 0) {
			d->bootstrapping = false; /* its configuration is durable */
			el_storage_set_offline(d->st, false);
		}
		el_d_metrics_batch(d, &rd, t0);
		el_d_diag_batch(d, &rd, t0);
		for (uint32_t i = 0; i < rd.raft.n_msgs; i++)
			if (!el_raft_msg_may_lead(&rd.raft.msgs[i]))
				el_d_peer_send(d, &rd.raft.msgs[i]);
		for (uint32_t i = 0; i < rd.n_replies; i++)
			el_d_reply(d, &rd.replies[i]);
		for (uint32_t i = 0; i < rd.n_events; i++)
			el_d_event(d, &rd.events[i]);
		if (rd.events_dropped > 0)
			el_d_gap(d);
		el_d_entries_ahead(d, &rd.raft);
		rc = el_node_advance(d->node, &rd, d->now_ms);
		if (rc != EL_OK) {
			el_log(EL_LOG_ERROR, "node stopped: %s", el_strerror(rc));
			return rc;
		}
	}
	return EL_OK;
}

static void drain_input(struct el_daemon *d)
{
	struct el_net_item *it = el_net_drain(d->net);
	while (it != NULL) {
		struct el_net_item *next = it->next;
		switch (it->kind) {
		case EL_NET_PEER_FRAME: el_d_peer_frame(d, it->conn, it->data, it->len); break;
		case EL_NET_PEER_CLOSED: el_d_peer_closed(d, it->conn); break;
		case EL_NET_PEER_LINK_LOST: el_d_peer_link_lost(d, it->peer); break;
		case EL_NET_CLIENT_FRAME: el_d_client_frame(d, it->conn, it->data, it->len); break;
		case EL_NET_CLIENT_CLOSED: el_d_client_closed(d, it->conn); break;
		case EL_NET_CLIENT_BAD: el_d_client_bad(d, it->conn); break;
		case EL_NET_PEER_DIALED: el_d_peer_dialed(d, it->conn, it->peer); break;
		case EL_NET_PEER_OUT_FRAME:
			el_d_peer_out_frame(d, it->conn, it->peer, it->data, it->len);
			break;
		case EL_NET_PEER_OPENED: el_d_peer_opened(d, it->conn); break;
		case EL_NET_CLIENT_OPENED: el_d_client_opened(d, it->conn); break;
		default: break;
		}
		el_net_item_free(d->net, it);
		it = next;
	}
}

static void begin_stop(struct el_daemon *d)
{
	struct el_raft *r = el_node_raft(d->node);
	d->stopping = true;
	d->stop_deadline_ms = d->now_ms + STOP_FLUSH_MS;
	el_d_notify_stopping(d);
	if (el_raft_state(r) != EL_LEADER) {
		el_log(EL_LOG_INFO, "stopping");
		return;
	}
	const el_id_t id = el_d_transfer_target(d);
	if (id != 0 && el_raft_transfer(r, id, d->now_ms) == EL_OK) {
		el_log(EL_LOG_INFO, "stopping: handing leadership to node %u", id);
		d->stop_deadline_ms = d->now_ms + STOP_MAX_MS;
		return;
	}
	el_log(EL_LOG_WARN, "stopping: no voter to hand leadership to");
}

/* A stopping leader waits until it has handed over, then flushes briefly. */
static bool stop_done(struct el_daemon *d)
{
	if (el_raft_state(el_node_raft(d->node)) != EL_LEADER &&
	    d->stop_deadline_ms > d->now_ms + STOP_FLUSH_MS)
		d->stop_deadline_ms = d->now_ms + STOP_FLUSH_MS;
	return d->now_ms >= d->stop_deadline_ms;
}

/* One line whenever the role, term or known leader changes. */
static void log_role(struct el_daemon *d)
{
	const struct el_raft *r = el_node_raft(d->node);
	static const char *names[] = { "follower", "pre-candidate", "candidate", "leader" };
	uint64_t key = el_raft_term(r) << 8 ^ (uint64_t)el_raft_state(r) << 4 ^ el_raft_leader(r);
	if (key == d->role_key)
		return;
	d->role_key = key;
	if (el_raft_state(r) == EL_LEADER)
		d->leader_since_ms = d->now_ms; /* el_d_peer_silent counts from here */
	if (el_raft_leader(r) != 0)
		d->leaderless_since_ms = 0;
	else if (d->leaderless_since_ms == 0)
		d->leaderless_since_ms = d->now_ms; /* and from here, while campaigning */
	el_log_set_term(el_raft_term(r));
	el_log(EL_LOG_INFO, "node %u: %s, term %llu, leader %u", d->cfg.id,
	       names[el_raft_state(r) & 3], (unsigned long long)el_raft_term(r), el_raft_leader(r));
	el_d_diag_role(d); /* why, at warning when it is trouble */
	el_d_events_leader(d); /* no longer leading: the attached sessions' GAP */
}

/* A node removed from the configuration stops by itself once it knows the
 * removal committed (thesis 4.2.2: a removed server is no longer part of the
 * cluster). A node that was never a member (joining, not yet added) waits. A
 * removed follower learns it from the leader (notify_removed); one the
 * leader cannot reach then may never learn it: it stays up, idle, until its
 * operator stops it. A node removed, wiped and added
 * again replays its old removal, batches before the entry that adds it back
 * (found by tests/chaos): so a removal is final only once the log has not
 * grown for REMOVED_QUIET_ELECTIONS election timeouts, since the leader keeps
 * sending a member the entries that follow and sends a removed node none. */
/* Leave REMOVED_FILE in data_dir, synced (check_not_removed reads it at
 * the next start). Best effort: without it a restart idles as before. */
static void mark_removed(const struct el_daemon *d, const char *why)
{
	char path[sizeof d->cfg.data_dir + sizeof REMOVED_FILE + 1], line[320];
	snprintf(path, sizeof path, "%s/%s", d->cfg.data_dir, REMOVED_FILE);
	int n = snprintf(line, sizeof line, "%s\n", why);
	if (n >= (int)sizeof line)
		n = (int)sizeof line - 1;
	const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	const int dir = open(d->cfg.data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const bool ok = fd >= 0 && dir >= 0 && write(fd, line, (size_t)n) == n && fsync(fd) == 0 &&
			fsync(dir) == 0;
	if (!ok)
		el_log(EL_LOG_WARN, "cannot write %s: %s; a restart on this data will not know it "
		       "was removed", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	if (dir >= 0)
		close(dir);
}

static void check_removed(struct el_daemon *d)
{
	const struct el_raft *r = el_node_raft(d->node);
	if (el_conf_find(el_raft_conf(r), d->cfg.id) != NULL) {
		d->was_member = true;
		d->removed_seen_ms = 0;
		return;
	}
	if (!d->was_member || d->stopping || el_raft_commit(r) < r->conf_index)
		return;
	if (d->removed_seen_ms == 0 || d->removed_last_index != el_raft_last_index(r)) {
		d->removed_seen_ms = d->now_ms; /* (re)start the quiet period */
		d->removed_last_index = el_raft_last_index(r);
		return;
	}
	if (d->now_ms - d->removed_seen_ms < REMOVED_QUIET_ELECTIONS * (uint64_t)d->cfg.election_ms)
		return;
	el_log(EL_LOG_INFO, "node %u: removed from the cluster (entry %llu): stopping", d->cfg.id,
	       (unsigned long long)r->conf_index);
	char why[96];
	snprintf(why, sizeof why, "node %u removed by entry %llu of term %llu", d->cfg.id,
		 (unsigned long long)r->conf_index, (unsigned long long)el_raft_term(r));
	el_d_retire(d, why);
}

void el_d_retire(struct el_daemon *d, const char *why)
{
	if (d->stopping)
		return;
	mark_removed(d, why);
	d->stopping = true;
	d->stop_deadline_ms = d->now_ms + STOP_FLUSH_MS; /* the last replies and acks go out */
	el_d_notify_stopping(d);
}

/* A removed follower learns that its removal committed from the leader.
 * The leader stops replicating to a node as soon as the entry removing it
 * is appended (the configuration applies on append, thesis 4.1), so such a
 * node may hold neither that entry nor its commit: it kept trying to
 * pre-campaign and never stopped. Once the removal is committed, the
 * leader sends each node it dropped an ordinary APPEND of the current
 * leader carrying the removal entry and a commit index that covers it. The
 * removed node's core takes it only if its log matches up to the entry
 * before (log matching; one further behind refuses it and keeps running,
 * as before), and then knows it is out; check_removed stops it. Sent every
 * heartbeat for REMOVED_QUIET_ELECTIONS election timeouts. */
static void notify_removed(struct el_daemon *d)
{
	const struct el_raft *r = el_node_raft(d->node);
	const uint64_t at = r->conf_index;
	if (el_raft_state(r) != EL_LEADER || at == 0 || el_raft_commit(r) < at)
		return;
	if (d->notice_index != at) {
		d->notice_index = at;
		d->notice_until_ms = d->now_ms + REMOVED_QUIET_ELECTIONS * (uint64_t)d->cfg.election_ms;
		d->notice_next_ms = 0;
	}
	const struct el_entry *removal = el_raft_entry(r, at);
	const uint64_t prev_term = el_raft_term_at(r, at - 1);
	if (d->now_ms >= d->notice_until_ms || d->now_ms < d->notice_next_ms || removal == NULL ||
	    (prev_term == 0 && at > 1))
		return; /* over, not yet, or compacted away: nothing to show */
	d->notice_next_ms = d->now_ms + d->cfg.heartbeat_ms;
	struct el_conf before;
	el_d_previous_conf(r, &before);
	for (uint32_t i = 0; i < before.n; i++) {
		const el_id_t id = before.m[i].id;
		if (id == d->cfg.id || el_conf_find(el_raft_conf(r), id) != NULL)
			continue;
		const struct el_msg m = { .type = EL_MSG_APPEND, .from = d->cfg.id, .to = id,
					  .term = el_raft_term(r), .index = at - 1,
					  .log_term = prev_term, .commit = at,
					  .n_entries = 1, .entries = removal };
		el_d_peer_send(d, &m);
	}
}

/* Memory no longer used goes back to the kernel, so the resident set
 * follows use. After a compaction (or an installed snapshot): the log ring's
 * pages that hold no live entry (port/posix/log_ring.c). Every
 * TRIM_EVERY_MS, and once a leader is first known: the free pages inside
 * glibc's heaps (malloc_trim), such as
 * the TLS buffers of closed connections and start-up's temporaries, which
 * glibc itself returns only from the top of a heap. */
static void give_back_memory(struct el_daemon *d)
{
	struct el_raft *r = el_node_raft(d->node);
	if (el_raft_snapshot(r)->index != d->ring_released_at) {
		d->ring_released_at = el_raft_snapshot(r)->index;
		el_log_ring_release(r);
	}
#ifdef __GLIBC__
	/* Also once start-up is over (peers linked, a leader known), so that
	 * its temporaries (configuration, certificates, handshakes) do not stay
	 * resident for the first TRIM_EVERY_MS. */
	const bool settled = !d->trimmed_settled && el_raft_leader(r) != 0;
	if (settled || d->now_ms - d->trimmed_ms >= TRIM_EVERY_MS) {
		d->trimmed_settled |= settled;
		d->trimmed_ms = d->now_ms;
		malloc_trim(0);
	}
#endif
}

int el_d_run(struct el_daemon *d, const volatile int *stop_signal,
	     volatile int *reload_signal)
{
	d->now_ms = el_now_ms();
	el_d_notify_init(d);
	for (;;) {
		log_role(d);
		d->now_ms = el_now_ms();
		el_d_notify_turn(d); /* READY=1 at the first turn; the watchdog from here */
		if (*stop_signal && !d->stopping)
			begin_stop(d);
		if (*reload_signal) {
			*reload_signal = 0; /* a SIGHUP during the reload asks for another */
			el_d_reload(d);
		}
		if (d->stopping && stop_done(d))
			return EL_OK;
		uint64_t due = el_node_deadline(d->node);
		uint64_t wait = due <= d->now_ms ? 0 : due - d->now_ms;
		struct pollfd pfd = { .fd = el_net_fd(d->net), .events = POLLIN };
		if (poll(&pfd, 1, (int)(wait < TURN_MAX_MS ? wait : TURN_MAX_MS)) < 0 &&
		    errno != EINTR)
			return EL_EIO;
		d->now_ms = el_now_ms();
		drain_input(d);
		el_d_expiring(d);
		el_d_clients_unproven(d);
		el_d_peers_unproven(d);
		if (d->now_ms >= el_node_deadline(d->node))
			el_node_tick(d->node, d->now_ms);
		log_role(d); /* before the replies and sends: their lines name the new term */
		int rc = ready_loop(d);
		if (rc != EL_OK)
			return rc;
		give_back_memory(d);
		check_removed(d);
		notify_removed(d);
		el_d_limits_turn(d); /* refusals held back, once their second is over */
		el_d_admin_wait_turn(d); /* membership changes committed (or not) */
		el_d_serve_turn(d);
		el_d_peers_turn(d);
		el_d_crl_turn(d);
		el_d_metrics_turn(d);
	}
}
