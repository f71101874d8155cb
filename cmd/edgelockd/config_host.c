/*
 * config_host.c - the config checks only this machine can make
 * (el_dcfg_check_host, el_daemon_config.h): run by --check-config and by
 * every start, so that what would fail (or misbehave) once the node runs is
 * refused before, with what to do. Apart from config.c's checks because
 * they look at the system (names resolved, files' modes): the config
 * fuzzer runs config.c on any bytes and must not resolve what it made up.
 */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "el_daemon_config.h"
#include "el_error.h"
#include "el_storage.h" /* EL_STORAGE_ROFS_WHY */
#include "el_url.h"

/* The host and port of url: "tls+tcp://HOST:PORT", or [node] metrics'
 * "http://HOST:PORT/PATH" (el_url.h, as metrics_http.c's listener splits
 * it). 0 when it is neither. */
static int split(const char *url, char *host, size_t host_cap, char *port, size_t port_cap)
{
	if (strncmp(url, "http://", 7) != 0)
		return el_url_parse(url, host, host_cap, port, port_cap) == EL_OK;
	return el_url_http_parse(url, host, host_cap, port, port_cap, NULL) == EL_OK;
}

/* The address a listener on url binds (net_hs.c's listen_on and
 * metrics_http.c's take the first answer of getaddrinfo, "*" the
 * wildcard), or 0 when it cannot tell. Only a numeric host or localhost
 * when !lookup: [peers] names other machines, and the start must not wait
 * on DNS for them. */
static int bound(const char *url, bool lookup, struct sockaddr_storage *out)
{
	char host[256], port[16];
	if (!split(url, host, sizeof host, port, sizeof port))
		return 0;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	if (!lookup && strcasecmp(host, "localhost") != 0)
		hints.ai_flags |= AI_NUMERICHOST;
	struct addrinfo *ai = NULL;
	if (getaddrinfo(strcmp(host, "*") == 0 ? NULL : host, port, &hints, &ai) != 0)
		return 0;
	memset(out, 0, sizeof *out);
	memcpy(out, ai->ai_addr, ai->ai_addrlen < sizeof *out ? ai->ai_addrlen : sizeof *out);
	freeaddrinfo(ai);
	return 1;
}

static uint16_t port_of(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)a)->sin6_port
					: ((const struct sockaddr_in *)a)->sin_port;
}

/* 0.0.0.0 or :: (a listener there takes the port on every address), or
 * ::ffff:0.0.0.0, 0.0.0.0 written as IPv6. */
static bool wildcard(const struct sockaddr_storage *a)
{
	static const struct in6_addr any6 = IN6ADDR_ANY_INIT;
	if (a->ss_family == AF_INET6) {
		const struct in6_addr *x = &((const struct sockaddr_in6 *)a)->sin6_addr;
		return !memcmp(x, &any6, sizeof any6) ||
		       (IN6_IS_ADDR_V4MAPPED(x) && !x->s6_addr[12] && !x->s6_addr[13] &&
			!x->s6_addr[14] && !x->s6_addr[15]);
	}
	return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr));
	return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
	       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
}

/* Whether listeners on a and b would want one port: compared as the
 * addresses they resolve to, so localhost and 127.0.0.1 are one. */
static bool one_endpoint(const char *a, const char *b, bool lookup)
{
	if (!strcasecmp(a, b))
		return true;
	struct sockaddr_storage x, y;
	if (!bound(a, lookup, &x) || !bound(b, lookup, &y) || port_of(&x) != port_of(&y))
		return false;
	return same_addr(&x, &y) || (lookup && (wildcard(&x) || wildcard(&y)));
}

/* [node] metrics on the port of client_addr or peer_addr: the start
 * would fail with "Address already in use" (exit 2, which the shipped
 * unit restarts on, for ever), so it is refused here (exit 1) instead. */
static int check_metrics_addr(const struct el_dcfg *c, const char *where)
{
	int rc = EL_OK;
	const char *keys[2] = { "client_addr", "peer_addr" };
	const char *addrs[2] = { c->client_addr, c->peer_addr };
	for (uint32_t i = 0; i < 2 && c->metrics[0] != '\0'; i++)
		if (addrs[i][0] != '\0' && one_endpoint(c->metrics, addrs[i], true)) {
			fprintf(stderr, "edgelockd: %s: [node] metrics %s and %s %s are the same "
				"address and port: the metrics server needs a port of its own "
				"(give metrics another port)\n", where, c->metrics, keys[i], addrs[i]);
			rc = EL_EINVAL;
		}
	return rc;
}

bool el_dcfg_wildcard_addr(const char *url)
{
	struct sockaddr_storage a;
	return url[0] != '\0' && bound(url, false, &a) && wildcard(&a);
}

bool el_dcfg_same_endpoint(const char *a, const char *b)
{
	return one_endpoint(a, b, false);
}

/*
 * 0.0.0.0 or [::] listens on every address but is no address to reach:
 * peer_addr goes out in this node's hellos, client_addr in redirects and
 * `members list`, and a client sent to 0.0.0.0 dials its own machine (an
 * outside tester's client, in another namespace, was sent there by every
 * follower). Warned, not refused: a lone node needs no redirect. Another
 * node's [peers] address there is dialed on this machine: refused.
 */
static int check_wildcards(const struct el_dcfg *c, const char *where)
{
	const char *keys[2] = { "client_addr", "peer_addr" };
	const char *addrs[2] = { c->client_addr, c->peer_addr };
	for (uint32_t i = 0; i < 2; i++)
		if (el_dcfg_wildcard_addr(addrs[i]))
			fprintf(stderr, "edgelockd: %s: warning: [node] %s %s listens on every "
				"address but other nodes and clients are sent to it as written, "
				"which reaches their own machine: give this board's LAN address\n",
				where, keys[i], addrs[i]);
	int rc = EL_OK;
	for (uint32_t i = 0; i < c->n_peers; i++)
		if (c->peers[i].id != c->id && el_dcfg_wildcard_addr(c->peers[i].addr)) {
			fprintf(stderr, "edgelockd: %s: [peers] %u = %s is no address of node %u: "
				"dialed, it reaches this machine; give node %u's LAN address\n",
				where, c->peers[i].id, c->peers[i].addr, c->peers[i].id,
				c->peers[i].id);
			rc = EL_EINVAL;
		}
	return rc;
}

static int check_addrs(const struct el_dcfg *c, const char *where)
{
	int rc = EL_OK;
	if (c->peer_addr[0] != '\0' && c->client_addr[0] != '\0' &&
	    strcmp(c->peer_addr, c->client_addr) != 0 && /* that one el_dcfg_check says */
	    one_endpoint(c->peer_addr, c->client_addr, true)) {
		fprintf(stderr, "edgelockd: %s: [node] peer_addr %s and client_addr %s are the "
			"same address and port: peers and clients need a port each (give "
			"client_addr another port)\n", where, c->peer_addr, c->client_addr);
		rc = EL_EINVAL;
	}
	rc = check_metrics_addr(c, where) == EL_OK ? rc : EL_EINVAL;
	for (uint32_t i = 0; i < c->n_peers; i++)
		for (uint32_t j = i + 1; j < c->n_peers; j++)
			if (one_endpoint(c->peers[i].addr, c->peers[j].addr, false)) {
				fprintf(stderr, "edgelockd: %s: [peers] %u = %s and %u = %s are "
					"one address: every node needs its own peer address "
					"(fix the one that is wrong)\n", where, c->peers[i].id,
					c->peers[i].addr, c->peers[j].id, c->peers[j].addr);
				rc = EL_EINVAL;
			}
	return check_wildcards(c, where) == EL_OK ? rc : EL_EINVAL;
}

/* The directory dir would be made in (mkdir's parent, one level). */
static void parent_of(const char *dir, char *parent, size_t cap)
{
	snprintf(parent, cap, "%s", dir);
	char *slash = strrchr(parent, '/');
	if (slash == parent)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';
	else
		snprintf(parent, cap, ".");
}

#define STATE_DIR "/var/lib/edgelock" /* the shipped unit's StateDirectory= */

/*
 * A read-only data_dir is one condition, whenever it is met: the file
 * system mounted read-only before the start, or remounted so by the kernel
 * on a disk error (errors=remount-ro). It may pass (the disk mended and
 * remounted read-write), so the start fails with exit 2, which the shipped
 * unit retries; the config check said it as a config error (exit 1), and
 * the unit then stayed down after the remount (an outside tester).
 * Nor can statvfs or access() always see it: since Linux 6.12, ext4's
 * errors=remount-ro no longer sets the read-only flag, its writes fail with
 * EROFS while the mount says rw (what the tester's start met: LOCK could not
 * be opened, EROFS, and no advice). So refused (a write already failed
 * with EROFS) counts too. And statvfs cannot tell a file system mounted
 * read-only from the read-only view the unit's sandbox
 * (ProtectSystem=strict) gives of it: both set ST_RDONLY on the mount. So
 * the disk advice always, and the sandbox's as
 * well only where it may be the cause: data_dir outside StateDirectory=
 * (writable in the sandbox), in a process systemd started ($INVOCATION_ID;
 * by hand there is no sandbox, and a read-only file system is one).
 */
bool el_dcfg_read_only(const struct el_dcfg *c, bool refused, char *why, char *hint, size_t cap)
{
	struct stat st;
	struct statvfs vfs;
	char at[EL_DCFG_PATH_MAX];
	const char *dir = c->data_dir;
	if (dir[0] == '\0')
		return false;
	if (stat(dir, &st) == 0)
		snprintf(at, sizeof at, "%s", dir);
	else
		parent_of(dir, at, sizeof at); /* the start would make it there */
	const bool ro = refused || (statvfs(at, &vfs) == 0 && (vfs.f_flag & ST_RDONLY) != 0) ||
			(access(at, W_OK) != 0 && errno == EROFS);
	if (!ro)
		return false;
	const size_t n = strlen(STATE_DIR);
	const bool state_dir = strncmp(dir, STATE_DIR, n) == 0 && (dir[n] == '\0' || dir[n] == '/');
	const bool sandbox = !state_dir && getenv("INVOCATION_ID") != NULL;
	snprintf(why, cap, "data_dir %s is on a read-only file system: %s", dir,
		 EL_STORAGE_ROFS_WHY);
	hint[0] = '\0';
	if (sandbox)
		snprintf(hint, cap, "data_dir %s: or it is read-only in the systemd unit's sandbox: "
			 "under the shipped unit (ProtectSystem=strict) only " STATE_DIR
			 " (StateDirectory=) is writable: use it, or add ReadWritePaths=%s to the "
			 "unit", dir, dir);
	return true;
}

/* The data directory must be one this user can write (storage creates it
 * if its parent exists: one level, as mkdir). On a read-only file system:
 * said by --check-config (checking), left to the start otherwise, which
 * fails with exit 2, not 1 (el_dcfg_read_only). */
static int check_data_dir(const struct el_dcfg *c, const char *where, bool checking)
{
	struct stat st;
	char why[EL_DCFG_PATH_MAX * 2 + 400], hint[sizeof why];
	const char *dir = c->data_dir;
	if (dir[0] == '\0')
		return EL_OK;
	if (el_dcfg_read_only(c, false, why, hint, sizeof why)) {
		if (checking)
			fprintf(stderr, "edgelockd: %s: [node] %s\n", where, why);
		if (checking && hint[0] != '\0')
			fprintf(stderr, "edgelockd: %s: [node] %s\n", where, hint);
		return checking ? EL_EINVAL : EL_OK;
	}
	if (stat(dir, &st) != 0) {
		if (errno != ENOENT) {
			fprintf(stderr, "edgelockd: %s: [node] data_dir %s: %s\n", where, dir,
				strerror(errno));
			return EL_EINVAL;
		}
		char parent[EL_DCFG_PATH_MAX];
		parent_of(dir, parent, sizeof parent);
		if (access(parent, W_OK | X_OK) == 0)
			return EL_OK; /* the start makes it */
		fprintf(stderr, "edgelockd: %s: [node] data_dir %s does not exist and cannot be "
			"made in %s (%s): create it, owned by the user edgelockd runs as\n", where,
			dir, parent, strerror(errno));
		return EL_EINVAL;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "edgelockd: %s: [node] data_dir %s is not a directory: name a "
			"directory (it holds the WAL and snapshots)\n", where, dir);
		return EL_EINVAL;
	}
	if (access(dir, W_OK | X_OK) != 0 && st.st_uid == geteuid()) {
		/* chown would change nothing: its mode is what keeps its owner out */
		fprintf(stderr, "edgelockd: %s: [node] data_dir %s cannot be written by this user "
			"(uid %u), its owner (mode %04o): %s; chmod u+rwx %s\n", where, dir,
			(unsigned)geteuid(), (unsigned)(st.st_mode & 07777), strerror(errno), dir);
		return EL_EINVAL;
	}
	if (access(dir, W_OK | X_OK) != 0) {
		fprintf(stderr, "edgelockd: %s: [node] data_dir %s cannot be written by this user "
			"(uid %u): %s; chown it to the user edgelockd runs as\n", where, dir,
			(unsigned)geteuid(), strerror(errno));
		return EL_EINVAL;
	}
	return EL_OK;
}

/*
 * Who may read or replace the [tls] files. The private key must not be
 * readable by every user: as OpenSSH refuses an unprotected key and
 * Debian's ssl-cert keeps keys 0640 root:ssl-cert, a group may read it (a
 * deployment that gives the daemon's group the key is legitimate), "others"
 * never: any local account could then pose as this node to the cluster.
 * Nor may anyone but its owner write it (0602, 0620): whoever replaces the
 * key, with a certificate of theirs, is this node. The CA file and the CRL
 * decide whom the node trusts: every user may read them, but one who may
 * write the CA file adds a trust anchor and mints any node's or client's
 * name, and one who may write the CRL un-revokes (an older CRL of the CA).
 * Group-writable is refused too: Debian's ssl-cert gives its group read
 * access to keys only, /etc/ssl/certs is root's alone, and a group that
 * may write the trust anchor is every identity of the cluster. Refused
 * rather than warned: a warning in a log nobody reads leaves the door
 * open. SIGHUP checks them too (daemon.c): a file swapped in with the
 * wrong mode is not loaded.
 */
static int tls_mode(const char *key, const char *path, const char *holds, mode_t bad,
		    const char *fix, char *why, size_t cap)
{
	struct stat st;
	if (path[0] == '\0' || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
	    !(st.st_mode & bad))
		return EL_OK; /* unreadable ones are said by el_dcfg_check */
	const mode_t m = st.st_mode & bad;
	const char *who_does = (m & S_IROTH) ? "every user may read"
			       : (m & S_IWOTH) ? "every user may replace" : "its group may replace";
	snprintf(why, cap, "[tls] %s %s %s and %s it (mode %04o): %s", key, path, holds,
		 who_does, (unsigned)(st.st_mode & 07777), fix);
	return EL_EINVAL;
}

/*
 * A file's mode guards it only as well as its directories do: in one that
 * every user may write, anyone renames their own file over it (or, higher
 * up, a directory of theirs over the path). Refused, with the sticky bit
 * excepted (/tmp: only a file's owner may rename it there). Group-writable
 * directories are let be: a user's checkout under umask 002 has them.
 */
static int open_dirs(const char *what, const char *path, char *why, size_t cap)
{
	char dir[PATH_MAX];
	if (path[0] == '\0' || realpath(path, dir) == NULL)
		return EL_OK; /* unreadable ones are said by el_dcfg_check */
	for (char *slash = strrchr(dir, '/'); slash != NULL; slash = strrchr(dir, '/')) {
		slash[slash == dir] = '\0'; /* "/x" -> "/": the root is checked too */
		struct stat st;
		if (stat(dir, &st) == 0 && (st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
			snprintf(why, cap, "%s %s is in %s, a directory every user may write "
				 "(mode %04o): anyone may put a file of theirs in its place; chmod o-w "
				 "%s (or keep the file elsewhere)", what, path, dir,
				 (unsigned)(st.st_mode & 07777), dir);
			return EL_EINVAL;
		}
		if (slash == dir)
			break;
	}
	return EL_OK;
}

int el_dcfg_tls_modes(const struct el_dcfg *c, char *why, size_t cap)
{
	static const char trust_fix[] = "chmod 644 it (only its owner may write it)";
	if (open_dirs("[tls] cert_key_file", c->cert_key_file, why, cap) != EL_OK ||
	    open_dirs("[tls] ca_file", c->ca_file, why, cap) != EL_OK ||
	    open_dirs("[tls] crl_file", c->crl_file, why, cap) != EL_OK)
		return EL_EINVAL;
	if (tls_mode("cert_key_file", c->cert_key_file, "holds the private key",
		     S_IROTH | S_IWOTH | S_IWGRP,
		     "chmod 600 it (or 640, for a group that must read it)", why, cap) != EL_OK ||
	    tls_mode("ca_file", c->ca_file, "names the certificates trusted", S_IWOTH | S_IWGRP,
		     trust_fix, why, cap) != EL_OK ||
	    tls_mode("crl_file", c->crl_file, "says which certificates are revoked",
		     S_IWOTH | S_IWGRP, trust_fix, why, cap) != EL_OK)
		return EL_EINVAL;
	return EL_OK;
}

static int check_tls_modes(const struct el_dcfg *c, const char *where)
{
	char why[EL_DCFG_PATH_MAX + 200];
	const int rc = el_dcfg_tls_modes(c, why, sizeof why);
	if (rc != EL_OK)
		fprintf(stderr, "edgelockd: %s: %s\n", where, why);
	return rc;
}

int el_dcfg_check_host(const struct el_dcfg *c, const char *where, bool checking)
{
	int rc = check_addrs(c, where);
	rc = check_data_dir(c, where, checking) == EL_OK ? rc : EL_EINVAL;
	return check_tls_modes(c, where) == EL_OK ? rc : EL_EINVAL;
}

/* The config file names whom the node trusts ([tls], [acl]: admin rights)
 * and where its state lives: one every user may write (or may rename over)
 * lets any local account give itself the cluster. Its group may write it
 * (an operators' group editing /etc/edgelock is common). */
int el_dcfg_config_mode(const char *path)
{
	struct stat st;
	char why[2 * EL_DCFG_PATH_MAX + 200];
	if (path == NULL || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return EL_OK; /* unreadable: el_dcfg_load says so */
	if (st.st_mode & S_IWOTH) {
		fprintf(stderr, "edgelockd: %s: every user may write this config file (mode %04o), "
			"which names whom the node trusts ([tls], [acl]): chmod o-w %s\n", path,
			(unsigned)(st.st_mode & 07777), path);
		return EL_EINVAL;
	}
	if (open_dirs("the config file", path, why, sizeof why) != EL_OK) {
		fprintf(stderr, "edgelockd: %s: %s\n", path, why);
		return EL_EINVAL;
	}
	return EL_OK;
}

/* One path only root may use: a file nobody but its root owner may read, a
 * directory nobody but its root owner may write. Appended to list. */
static void root_only(const char *what, const char *path, bool dir, char *list, size_t cap)
{
	struct stat st;
	const mode_t others = dir ? (S_IWGRP | S_IWOTH) : (S_IRGRP | S_IROTH);
	if (path == NULL || path[0] == '\0' || stat(path, &st) != 0 || st.st_uid != 0 ||
	    (st.st_mode & others) != 0)
		return;
	const size_t used = strlen(list);
	snprintf(list + used, cap - used, "%s%s %s (root's, mode %04o)", used ? ", " : "", what,
		 path, (unsigned)(st.st_mode & 07777));
}

/* --check-config as root reads every file and writes every directory, so
 * "valid" says nothing of the user the daemon runs as (the shipped unit's
 * edgelock), which may then fail to start on a key only root may read (an
 * outside tester). Not an error: a node may run as root. */
void el_dcfg_root_note(const struct el_dcfg *c, const char *config)
{
	if (geteuid() != 0)
		return;
	char list[4 * EL_DCFG_PATH_MAX + 400] = "";
	root_only("the config file", config, false, list, sizeof list);
	root_only("[tls] cert_key_file", c->cert_key_file, false, list, sizeof list);
	root_only("[tls] ca_file", c->ca_file, false, list, sizeof list);
	root_only("[tls] crl_file", c->crl_file, false, list, sizeof list);
	root_only("[node] data_dir", c->data_dir, true, list, sizeof list);
	fprintf(stderr, "edgelockd: %s: checked as root, who may read and write anything%s%s; "
		"a daemon run as another user (the shipped unit's edgelock) needs them its own: "
		"check as that user (runuser -u edgelock -- edgelockd --check-config %s)\n",
		config != NULL ? config : "flags", list[0] ? ": only root may use " : "", list,
		config != NULL ? config : "FILE");
}
