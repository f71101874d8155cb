/*
 * el_daemon_config.h - edgelockd's settings: the config file (INI, read with
 * Debian's libinih) and the command-line flags that override it.
 *
 *   [node]    id, data_dir, peer_addr, client_addr, cluster, metrics
 *   [tls]     ca_file, cert_key_file, crl_file, client_auth = required | optional
 *   [peers]   <id> = <peer address>    every initial member, this node too
 *   [timing]  election_ms, heartbeat_ms, check_quorum
 *   [limits]  max_clients, client_queue, client_queue_bytes,
 *             client_queues_total_bytes, peer_queue,
 *             peer_queue_bytes,
 *             sessions_per_client,
 *             connections_per_client,
 *             requests_per_client, claims_per_client, watches_per_client,
 *             max_session_ttl_ms, net_threads
 *   [log]     level = debug | info | warn | error
 *   [acl]     <identity pattern> = <operations> : <name prefixes>   (net/el_acl.h)
 *
 * Every bad value is reported as "FILE:LINE: [section] key: why" and every
 * missing required key by name; el_dcfg_load reports them all, not just the
 * first, and fails if there was any. A key given twice (outside [acl]) and a
 * line libinih cannot read whole (over 199 characters, or with a NUL byte)
 * are errors too, and so is a value in quotes outside [acl]: libinih keeps
 * them as part of the value (cluster = "a" would name the cluster "a" with
 * its quotes), and no path, address, name or number here is meant with them.
 */
#ifndef EL_DAEMON_CONFIG_H
#define EL_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "el_acl.h"

#include "el_client_wire.h"
#include "el_raft.h"

#define EL_DCFG_PATH_MAX 512
#define EL_DCFG_PEERS_MAX 16

struct el_dcfg_peer {
	el_id_t id;
	char addr[EL_CW_ADDR_MAX];
};

struct el_dcfg {
	struct el_acl acl; /* the [acl] section: who may do what to which names */
	el_id_t id;
	char data_dir[EL_DCFG_PATH_MAX];
	char peer_addr[EL_CW_ADDR_MAX];
	char client_addr[EL_CW_ADDR_MAX];
	char cluster[64];
	char metrics[EL_CW_ADDR_MAX]; /* http://HOST:PORT/PATH, or "" (no metrics) */
	char ca_file[EL_DCFG_PATH_MAX];
	char cert_key_file[EL_DCFG_PATH_MAX];
	char crl_file[EL_DCFG_PATH_MAX]; /* "": no CRL */
	bool client_cert_required;
	uint32_t election_ms;
	uint32_t heartbeat_ms;
	bool check_quorum;
	uint32_t max_clients;
	uint32_t client_queue;
	uint32_t client_queue_bytes; /* bytes queued to one client before it is dropped */
	/* bytes queued to all clients together before the one with the
	 * largest queue is dropped; 0: no bound. Read it through
	 * el_dcfg_client_queues_total(): unset, it follows client_queue_bytes */
	uint32_t client_queues_total_bytes;
	bool client_queues_total_given;
	uint32_t peer_queue;
	uint32_t peer_queue_bytes; /* bytes queued to one peer before frames are dropped */
	uint32_t sessions_per_client; /* live sessions of one identity; 0: no limit */
	uint32_t connections_per_client; /* client connections of one identity here; 0: none */
	uint32_t requests_per_client; /* requests in flight of one connection */
	uint32_t claims_per_client;  /* locks, permits, campaigns held or waited for by
				      * one identity; 0: no limit */
	uint32_t watches_per_client; /* watches of one identity; 0: no limit */
	uint32_t max_session_ttl_ms; /* longest lease an OPEN_SESSION may ask */
	uint32_t net_threads; /* no effect since issue 14 (README.md); kept valid */
	int log_level; /* enum el_log_level */
	uint32_t n_peers;
	struct el_dcfg_peer peers[EL_DCFG_PEERS_MAX];
	uint32_t bad; /* EL_DCFG_BAD_*: keys given a value that was refused */
};

/* A key whose value was refused (and said so) is not also "missing", nor
 * compared with another key: one error per field, no follow-on noise. */
#define EL_DCFG_BAD_ID 0x01u
#define EL_DCFG_BAD_DATA_DIR 0x02u
#define EL_DCFG_BAD_PEER_ADDR 0x04u
#define EL_DCFG_BAD_CLIENT_ADDR 0x08u
#define EL_DCFG_BAD_CA_FILE 0x10u
#define EL_DCFG_BAD_CERT_KEY_FILE 0x20u
#define EL_DCFG_BAD_TIMING 0x40u
#define EL_DCFG_BAD_QUEUE_BYTES 0x80u

/* [limits] client_queues_total_bytes when not given: 32 queues at the
 * default client_queue_bytes (cmd/edgelockd/README.md, "Limits"). */
#define EL_DCFG_CLIENT_QUEUES_TOTAL (4u * 1024u * 1024u)

/* Defaults for everything that has one, into a ZEROED c (main's static
 * struct el_daemon): the keys without a default stay zero. */
void el_dcfg_defaults(struct el_dcfg *c);
/* Read FILE into c; prints every problem to stderr; 0, EL_EINVAL, or EL_EIO
 * for a FILE not read whole: it cannot be opened, is a directory, or its
 * reading ended at a line too long or with a NUL byte (the keys after it
 * were never read, so none is "missing"). */
int el_dcfg_load(struct el_dcfg *c, const char *file);
/* Set one key as the file would ("node", "id", "3"); for flags. */
int el_dcfg_set(struct el_dcfg *c, const char *section, const char *key, const char *value,
		const char *where);
/* Cross-field checks (required keys, heartbeat < election, ...). */
int el_dcfg_check(const struct el_dcfg *c, const char *where);
/* The bound on all client send queues together: [limits]
 * client_queues_total_bytes as given (0: none), else
 * EL_DCFG_CLIENT_QUEUES_TOTAL or client_queue_bytes if that is larger. */
uint32_t el_dcfg_client_queues_total(const struct el_dcfg *c);
/* What only this machine can tell, as the start would find it
 * (config_host.c): peer_addr and client_addr resolving to one port, two
 * [peers] at one address, a data_dir that is not a directory or cannot be
 * written (on a read-only file system: only when checking, --check-config),
 * [tls] files others may read or write (el_dcfg_tls_modes). */
int el_dcfg_check_host(const struct el_dcfg *c, const char *where, bool checking);
/* True when [node] data_dir (or the directory it would be made in) is on
 * a read-only file system, or refused (a write there already failed with
 * EROFS), with why[cap] ("data_dir D is on a read-only file system: " and
 * what to do) and hint[cap] ("" or, when it may be the systemd unit's
 * sandbox, its own line). A start that may pass (exit 2, el_d_open);
 * --check-config says it as an error. */
bool el_dcfg_read_only(const struct el_dcfg *c, bool refused, char *why, char *hint,
		       size_t cap);
/* EL_EINVAL, and why (the first file wrong, with the chmod to run), when
 * every user may read [tls] cert_key_file, or anyone but its owner may
 * write it, ca_file or crl_file (the start, --check-config and SIGHUP
 * refuse it). */
int el_dcfg_tls_modes(const struct el_dcfg *c, char *why, size_t cap);

/* Whether url's host is 0.0.0.0, [::] (or [::ffff:0.0.0.0]) or *: every
 * address of whoever dials it. No DNS (config_host.c). */
bool el_dcfg_wildcard_addr(const char *url);
/* Whether two addresses name one endpoint: the same port, IP addresses as
 * addresses ([::1] and [0:0::1] one), localhost as it resolves, other names
 * as written, case aside. No DNS: the node's loop calls it. */
bool el_dcfg_same_endpoint(const char *a, const char *b);

/* EL_EINVAL, said on stderr, when every user may write the config file
 * (or a directory above it, without the sticky bit): the start and
 * --check-config refuse it (config_host.c). */
int el_dcfg_config_mode(const char *path);

/* --check-config run as root: a warning on stderr that root's check says
 * nothing of the daemon's own user, naming the files and data_dir only root
 * may use (config_host.c). Nothing when not root. */
void el_dcfg_root_note(const struct el_dcfg *c, const char *config);

#endif /* EL_DAEMON_CONFIG_H */
