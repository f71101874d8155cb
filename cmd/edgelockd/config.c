/*
 * config.c - edgelockd's config file and flags (el_daemon_config.h).
 *
 * libinih calls us once per key but does not say on which line; reading
 * through ini_parse_stream with our own line reader lets every message name
 * its line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "el_daemon_config.h"
#include "el_error.h"
#include "el_ini_line.h"
#include "el_platform.h"
#include "el_url.h"

#define SEEN_MAX 64 /* distinct keys remembered for the twice-given check */

struct reader {
	FILE *f;
	const char *file;
	int line;
	int errors;
	bool cut; /* the reading ended at a line it cannot take */
	struct el_dcfg *cfg;
	uint32_t n_seen;
	struct {
		char name[48]; /* "section/key" */
		int line;
	} seen[SEEN_MAX];
};

void el_dcfg_defaults(struct el_dcfg *c)
{
	/* No memset: c is already zero (see el_daemon_config.h), and writing
	 * zeros over its 280 KiB [acl] table would make every page resident. */
	snprintf(c->cluster, sizeof c->cluster, "edgelock");
	c->client_cert_required = true;
	c->election_ms = 1000;
	c->heartbeat_ms = 100;
	c->check_quorum = true;
	c->max_clients = 1024;
	c->client_queue = 1024;
	/* 1,024 frames of an event with a long name (about 120 bytes queued
	 * each): the frame bound still binds first for small frames, this one
	 * for big replies (a LIST of 32 locks is 2.4 KiB). With it, a
	 * connection that never reads pins about as much as its TLS buffers
	 * (65 KiB), not 2.4 MiB (cmd/edgelockd/README.md, "Limits"). */
	c->client_queue_bytes = 131072;
	/* All client queues together: without a bound, max_clients (1,024)
	 * connections that never read pinned 128 KiB each, 128 MiB (and
	 * their TLS buffers), on a board whose daemon has 16 MiB. 4 MiB is 32
	 * connections at client_queue_bytes: a client that reads holds
	 * nothing here (the kernel's socket buffer takes its replies), so
	 * only many that do not read at once reach it; and it leaves a
	 * daemon's 16 MiB room for its 3.5 MiB idle, the live log and the
	 * connections' TLS buffers (README.md, "Limits"). */
	c->client_queues_total_bytes = EL_DCFG_CLIENT_QUEUES_TOTAL;
	c->peer_queue = 1024;
	/* A peer's queue by bytes too: Raft bounds what a follower that stops
	 * reading is sent in appends (EL_INFLIGHT_MAX of them, 290 KiB at
	 * most, and the kernel's socket buffers take those), not the snapshot
	 * chunks resent to it (32 KiB each, one per heartbeat and per read
	 * round): 1,024 of those took a leader from 7 to 40 MiB resident
	 * within a second (README.md, "Limits"). 1 MiB holds the whole
	 * inflight window three times over. */
	c->peer_queue_bytes = 1048576;
	c->sessions_per_client = 64;
	c->connections_per_client = 64;
	c->requests_per_client = 64;
	/* A quarter of the table: a fleet's devices hold a few locks each,
	 * and no one identity can take all locks or watches from the others. */
	c->claims_per_client = EL_LOCKS_MAX / 4 > 0 ? EL_LOCKS_MAX / 4 : 1;
	c->watches_per_client = EL_WATCHES_MAX / 4 > 0 ? EL_WATCHES_MAX / 4 : 1;
	/* 10 minutes: how long a dead client's locks stay (docs/security.md) */
	c->max_session_ttl_ms = 600000;
	c->net_threads = 2; /* no effect (cmd/edgelockd/README.md) */
	c->log_level = EL_LOG_INFO;
}

/* s for a message: control bytes and quotes as \xHH, so a garbage file
 * cannot write to the terminal (at most 64 bytes shown). */
static const char *shown(const char *s, char *buf, size_t cap)
{
	size_t n = 0;
	for (; *s != '\0' && n + 5 < cap && n < 64; s++) {
		const unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
			n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", c);
		else
			buf[n++] = (char)c;
	}
	buf[n] = '\0';
	return buf;
}

static int bad(const char *where, const char *section, const char *key, const char *why,
	       const char *value)
{
	char s[96], k[96], v[96];
	/* an address's form: "::1:9111" gets the brackets it lacks */
	const char *hint = strstr(why, "HOST:PORT") != NULL ? el_url_hint(value) : "";
	fprintf(stderr, "edgelockd: %s: [%s] %s = \"%s\": %s%s\n", where,
		shown(section, s, sizeof s), shown(key, k, sizeof k), shown(value, v, sizeof v), why,
		hint);
	return EL_EINVAL;
}

static int set_u32(uint32_t *out, const char *v, uint32_t lo, uint32_t hi)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || v[0] == '-' || x < lo || x > hi)
		return EL_EINVAL;
	*out = (uint32_t)x;
	return EL_OK;
}

static int set_bool(bool *out, const char *v)
{
	if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcmp(v, "1"))
		*out = true;
	else if (!strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcmp(v, "0"))
		*out = false;
	else
		return EL_EINVAL;
	return EL_OK;
}

/* 0 or 2..64, as when nng used it; no effect since (cmd/edgelockd/README.md). */
static int set_net_threads(uint32_t *out, const char *v)
{
	uint32_t n;
	if (set_u32(&n, v, 0, 64) != EL_OK || n == 1)
		return EL_EINVAL;
	*out = n;
	return EL_OK;
}

static int set_str(char *out, size_t cap, const char *v)
{
	if (v[0] == '\0' || strlen(v) >= cap)
		return EL_EINVAL;
	memcpy(out, v, strlen(v) + 1);
	return EL_OK;
}

static int set_addr(char *out, const char *v)
{
	char host[EL_CW_ADDR_MAX], port[8];
	if (strncmp(v, "tls+tcp://", 10) != 0 ||
	    el_url_parse(v, host, sizeof host, port, sizeof port) != EL_OK)
		return EL_EINVAL;
	return set_str(out, EL_CW_ADDR_MAX, v);
}

/* http://HOST:PORT/PATH: a host (an IPv6 one in brackets), a port
 * 1..65535, a path (docs/metrics.md), split as the listener splits it. */
static int set_http(char *out, const char *v)
{
	char host[EL_CW_ADDR_MAX], port[8];
	if (el_url_http_parse(v, host, sizeof host, port, sizeof port, NULL) != EL_OK)
		return EL_EINVAL;
	return set_str(out, EL_CW_ADDR_MAX, v);
}

static int set_peer(struct el_dcfg *c, const char *key, const char *v)
{
	uint32_t id;
	if (set_u32(&id, key, 1, UINT32_MAX) != EL_OK)
		return EL_EINVAL;
	for (uint32_t i = 0; i < c->n_peers; i++)
		if (c->peers[i].id == id)
			return set_addr(c->peers[i].addr, v);
	if (c->n_peers == EL_DCFG_PEERS_MAX || c->n_peers == EL_NODES_MAX)
		return EL_EFULL;
	c->peers[c->n_peers].id = id;
	if (set_addr(c->peers[c->n_peers].addr, v) != EL_OK)
		return EL_EINVAL;
	c->n_peers++;
	return EL_OK;
}

/* "warning" too: the log lines say "warning:", and journalctl -p calls it so */
static int set_level(int *out, const char *v)
{
	static const char *names[] = { "debug", "info", "warn", "error" };
	for (int i = 0; i < 4; i++)
		if (!strcasecmp(v, names[i])) {
			*out = i;
			return EL_OK;
		}
	if (strcasecmp(v, "warning") != 0)
		return EL_EINVAL;
	*out = EL_LOG_WARN;
	return EL_OK;
}

/* Which EL_DCFG_BAD_* bit a refused value of section/key sets (0: none,
 * nothing else is checked against that key). */
static uint32_t bad_bit(const char *section, const char *key)
{
	static const struct {
		const char *section, *key;
		uint32_t bit;
	} bits[] = {
		{ "node", "id", EL_DCFG_BAD_ID },
		{ "node", "data_dir", EL_DCFG_BAD_DATA_DIR },
		{ "node", "peer_addr", EL_DCFG_BAD_PEER_ADDR },
		{ "node", "client_addr", EL_DCFG_BAD_CLIENT_ADDR },
		{ "tls", "ca_file", EL_DCFG_BAD_CA_FILE },
		{ "tls", "cert_key_file", EL_DCFG_BAD_CERT_KEY_FILE },
		{ "timing", "election_ms", EL_DCFG_BAD_TIMING },
		{ "timing", "heartbeat_ms", EL_DCFG_BAD_TIMING },
		{ "limits", "client_queue_bytes", EL_DCFG_BAD_QUEUE_BYTES },
		{ "limits", "client_queues_total_bytes", EL_DCFG_BAD_QUEUE_BYTES },
	};
	for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
		if (!strcmp(section, bits[i].section) && !strcmp(key, bits[i].key))
			return bits[i].bit;
	return 0;
}

/* libinih keeps quotes as part of the value: cluster = "ops2" names the
 * cluster "ops2" with its quotes, which nodes written without them refuse
 * as another cluster. No path, address, name or number here is meant with
 * quotes around it, so such a value is refused, saying what to write. */
static bool quoted(const char *v, const char *key, char *why, size_t cap)
{
	const size_t n = strlen(v);
	if (n < 2 || (v[0] != '"' && v[0] != '\'') || v[n - 1] != v[0])
		return false;
	char inner[96], shown_inner[96];
	snprintf(inner, sizeof inner, "%.*s", (int)(n - 2), v + 1);
	char kb[96];
	snprintf(why, cap, "quotes are not part of the syntax: write %s = %s",
		 shown(key, kb, sizeof kb), shown(inner, shown_inner, sizeof shown_inner));
	return true;
}

#define IS(s, k) (!strcmp(section, s) && !strcmp(key, k))
#define ADDR_WHY "must be tls+tcp://HOST:PORT, PORT 1..65535 (under 96 chars)"

int el_dcfg_set(struct el_dcfg *c, const char *section, const char *key, const char *v,
		const char *where)
{
	int rc;
	const char *why = "invalid value";
	static char quote_why[256];
	if (strcmp(section, "acl") != 0 && quoted(v, key, quote_why, sizeof quote_why))
		rc = EL_EINVAL, why = quote_why;
	else if (IS("node", "id"))
		rc = set_u32(&c->id, v, 1, UINT32_MAX), why = "must be a node id 1..4294967295";
	else if (IS("node", "data_dir"))
		rc = set_str(c->data_dir, sizeof c->data_dir, v), why = "must be a path";
	else if (IS("node", "peer_addr"))
		rc = set_addr(c->peer_addr, v), why = ADDR_WHY;
	else if (IS("node", "client_addr"))
		rc = set_addr(c->client_addr, v), why = ADDR_WHY;
	else if (IS("node", "cluster"))
		rc = set_str(c->cluster, sizeof c->cluster, v), why = "must be a name under 64 chars";
	else if (IS("node", "metrics"))
		rc = set_http(c->metrics, v), why = "must be http://HOST:PORT/PATH (under 96 chars)";
	else if (IS("tls", "ca_file"))
		rc = set_str(c->ca_file, sizeof c->ca_file, v), why = "must be a path";
	else if (IS("tls", "cert_key_file"))
		rc = set_str(c->cert_key_file, sizeof c->cert_key_file, v), why = "must be a path";
	else if (IS("tls", "crl_file"))
		rc = set_str(c->crl_file, sizeof c->crl_file, v), why = "must be a path";
	else if (IS("tls", "client_auth")) {
		rc = EL_OK;
		why = "must be required or optional";
		if (!strcmp(v, "required"))
			c->client_cert_required = true;
		else if (!strcmp(v, "optional"))
			c->client_cert_required = false;
		else
			rc = EL_EINVAL;
	} else if (!strcmp(section, "acl")) {
		static char acl_err[160];
		rc = el_acl_add(&c->acl, key, v, acl_err, sizeof acl_err);
		why = acl_err;
	} else if (!strcmp(section, "peers"))
		rc = set_peer(c, key, v),
		why = "must be <node id> = tls+tcp://HOST:PORT (PORT 1..65535), at most 7";
	else if (IS("timing", "election_ms"))
		rc = set_u32(&c->election_ms, v, 50, 60000), why = "must be 50..60000";
	else if (IS("timing", "heartbeat_ms"))
		rc = set_u32(&c->heartbeat_ms, v, 5, 10000), why = "must be 5..10000";
	else if (IS("timing", "check_quorum"))
		rc = set_bool(&c->check_quorum, v), why = "must be true or false";
	else if (IS("limits", "max_clients"))
		rc = set_u32(&c->max_clients, v, 1, 65000), why = "must be 1..65000";
	else if (IS("limits", "client_queue"))
		rc = set_u32(&c->client_queue, v, 16, 1000000), why = "must be 16..1000000";
	else if (IS("limits", "client_queue_bytes"))
		rc = set_u32(&c->client_queue_bytes, v, 16384, UINT32_MAX),
		why = "must be 16384..4294967295";
	else if (IS("limits", "client_queues_total_bytes"))
		rc = set_u32(&c->client_queues_total_bytes, v, 0, UINT32_MAX),
		c->client_queues_total_given = rc == EL_OK,
		why = "must be 0 (no bound) or client_queue_bytes..4294967295";
	else if (IS("limits", "peer_queue"))
		rc = set_u32(&c->peer_queue, v, 16, 1000000), why = "must be 16..1000000";
	else if (IS("limits", "peer_queue_bytes"))
		rc = set_u32(&c->peer_queue_bytes, v, 65536, UINT32_MAX),
		why = "must be 65536..4294967295";
	else if (IS("limits", "connections_per_client"))
		rc = set_u32(&c->connections_per_client, v, 0, 65000), why = "must be 0..65000";
	else if (IS("limits", "sessions_per_client"))
		rc = set_u32(&c->sessions_per_client, v, 0, 1000000), why = "must be 0..1000000";
	else if (IS("limits", "requests_per_client"))
		rc = set_u32(&c->requests_per_client, v, 1, 65000), why = "must be 1..65000";
	else if (IS("limits", "claims_per_client"))
		rc = set_u32(&c->claims_per_client, v, 0, 1000000), why = "must be 0..1000000";
	else if (IS("limits", "watches_per_client"))
		rc = set_u32(&c->watches_per_client, v, 0, 1000000), why = "must be 0..1000000";
	else if (IS("limits", "max_session_ttl_ms"))
		rc = set_u32(&c->max_session_ttl_ms, v, 1000, UINT32_MAX),
		why = "must be 1000..4294967295";
	else if (IS("limits", "net_threads"))
		rc = set_net_threads(&c->net_threads, v),
		why = "must be 0 or 2..64 (kept for older configs; no effect)";
	else if (IS("log", "level"))
		rc = set_level(&c->log_level, v), why = "must be debug, info, warn (or warning) or error";
	else
		rc = EL_EINVAL, why = "unknown key";
	if (rc == EL_OK)
		return EL_OK;
	c->bad |= bad_bit(section, key);
	return bad(where, section, key, why, v);
}

/* A key given twice is refused rather than the last one winning: two
 * values for one setting are a mistake (a merge gone wrong, a copied
 * block), and which one the node runs with should not depend on order.
 * [acl] rules may repeat a pattern (net/el_acl.h). */
static bool given_twice(struct reader *r, const char *section, const char *key)
{
	char name[sizeof r->seen[0].name];
	uint32_t id;
	if (!strcmp(section, "acl"))
		return false;
	/* A [peers] key is a node id, whatever its spelling: 2 and 02 (or +2)
	 * are one node, and set_peer let the second replace the first's
	 * address without a word. */
	if (!strcmp(section, "peers") && set_u32(&id, key, 1, UINT32_MAX) == EL_OK)
		snprintf(name, sizeof name, "peers/%u", id);
	else
		snprintf(name, sizeof name, "%s/%s", section, key);
	for (uint32_t i = 0; i < r->n_seen; i++)
		if (!strcmp(r->seen[i].name, name)) {
			char sb[96], kb[96];
			fprintf(stderr, "edgelockd: %s:%d: [%s] %s given twice (first on line %d)\n",
				r->file, r->line, shown(section, sb, sizeof sb), shown(key, kb, sizeof kb),
				r->seen[i].line);
			return true;
		}
	if (r->n_seen < SEEN_MAX) {
		memcpy(r->seen[r->n_seen].name, name, sizeof name);
		r->seen[r->n_seen++].line = r->line;
	}
	return false;
}

static int handler(void *user, const char *section, const char *key, const char *value)
{
	struct reader *r = user;
	char where[EL_DCFG_PATH_MAX + 32];
	snprintf(where, sizeof where, "%s:%d", r->file, r->line);
	if (given_twice(r, section, key) || el_dcfg_set(r->cfg, section, key, value, where) != EL_OK)
		r->errors++;
	return 1; /* go on: report every problem */
}

/* One line for libinih, read whole: a line it cannot take whole (over
 * num - 1 = 199 characters in Debian's build, or with a NUL byte) is
 * refused, never read in parts, and ends the reading (el_ini_line.h): the
 * file is refused anyway, and /dev/zero has no next line. */
static char *read_line(char *str, int num, void *stream)
{
	struct reader *r = stream;
	enum el_ini_line why;
	char *s = el_ini_line(str, num, r->f, &why);
	if (s == NULL && why == EL_INI_LINE_OK)
		return NULL;
	r->line++;
	if (why == EL_INI_LINE_NUL)
		fprintf(stderr, "edgelockd: %s:%d: a NUL byte in the line\n", r->file, r->line);
	else if (why == EL_INI_LINE_LONG)
		fprintf(stderr, "edgelockd: %s:%d: line longer than %d characters\n", r->file,
			r->line, num - 1);
	r->errors += why != EL_INI_LINE_OK;
	r->cut = r->cut || s == NULL;
	return s;
}

int el_dcfg_load(struct el_dcfg *c, const char *file)
{
	struct reader r = { .file = file, .cfg = c };
	r.f = fopen(file, "r");
	if (r.f == NULL) {
		fprintf(stderr, "edgelockd: %s: cannot open: %s\n", file, strerror(errno));
		return EL_EIO;
	}
	struct stat st; /* glibc opens a directory for reading; reads then fail */
	if (fstat(fileno(r.f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "edgelockd: %s: is a directory, not a config file\n", file);
		fclose(r.f);
		return EL_EIO;
	}
	int rc = ini_parse_stream(read_line, &r, handler, &r);
	fclose(r.f);
	if (rc > 0) {
		fprintf(stderr, "edgelockd: %s:%d: not a section, key = value or comment\n", file,
			rc);
		r.errors++;
	}
	if (r.cut)
		return EL_EIO;
	return r.errors == 0 && rc >= 0 ? EL_OK : EL_EINVAL;
}

uint32_t el_dcfg_client_queues_total(const struct el_dcfg *c)
{
	/* an older config that raised client_queue_bytes past the default
	 * total still starts, with a total that lets one such queue fill */
	if (c->client_queues_total_given)
		return c->client_queues_total_bytes;
	return c->client_queue_bytes > EL_DCFG_CLIENT_QUEUES_TOTAL ? c->client_queue_bytes
								   : EL_DCFG_CLIENT_QUEUES_TOTAL;
}

/* A [tls] file named but not readable (unset ones are "missing" above). */
static int readable(const char *where, const char *key, const char *path)
{
	if (path[0] == '\0' || access(path, R_OK) == 0)
		return EL_OK;
	fprintf(stderr, "edgelockd: %s: [tls] %s %s: cannot read: %s\n", where, key, path,
		strerror(errno));
	return EL_EINVAL;
}

static int missing(const char *where, const char *what)
{
	fprintf(stderr, "edgelockd: %s: missing %s\n", where, what);
	return EL_EINVAL;
}

int el_dcfg_check(const struct el_dcfg *c, const char *where)
{
	/* a key whose value was refused was said so: not missing too */
	int rc = c->bad != 0 ? EL_EINVAL : EL_OK;
	if (c->id == 0 && !(c->bad & EL_DCFG_BAD_ID))
		rc = missing(where, "[node] id (or --id)");
	if (c->data_dir[0] == '\0' && !(c->bad & EL_DCFG_BAD_DATA_DIR))
		rc = missing(where, "[node] data_dir (or --data-dir)");
	if (c->peer_addr[0] == '\0' && !(c->bad & EL_DCFG_BAD_PEER_ADDR))
		rc = missing(where, "[node] peer_addr");
	if (c->client_addr[0] == '\0' && !(c->bad & EL_DCFG_BAD_CLIENT_ADDR))
		rc = missing(where, "[node] client_addr");
	if (c->ca_file[0] == '\0' && !(c->bad & EL_DCFG_BAD_CA_FILE))
		rc = missing(where, "[tls] ca_file");
	if (c->cert_key_file[0] == '\0' && !(c->bad & EL_DCFG_BAD_CERT_KEY_FILE))
		rc = missing(where, "[tls] cert_key_file");
	if (c->heartbeat_ms * 3 > c->election_ms && !(c->bad & EL_DCFG_BAD_TIMING)) {
		fprintf(stderr, "edgelockd: %s: [timing] heartbeat_ms (%u) must be at most a third "
			"of election_ms (%u)\n", where, c->heartbeat_ms, c->election_ms);
		rc = EL_EINVAL;
	}
	/* Under one connection's own bound, the total would close a client
	 * before that bound, as the largest queue: a mistake, said so. */
	if (c->client_queues_total_given && c->client_queues_total_bytes != 0 &&
	    c->client_queues_total_bytes < c->client_queue_bytes &&
	    !(c->bad & EL_DCFG_BAD_QUEUE_BYTES)) {
		fprintf(stderr, "edgelockd: %s: [limits] client_queues_total_bytes (%u) must be 0 "
			"(no bound) or at least client_queue_bytes (%u)\n", where,
			c->client_queues_total_bytes, c->client_queue_bytes);
		rc = EL_EINVAL;
	}
	if (c->peer_addr[0] != '\0' && !strcmp(c->peer_addr, c->client_addr)) {
		fprintf(stderr, "edgelockd: %s: [node] peer_addr and client_addr are both %s: "
			"peers and clients need a port each\n", where, c->peer_addr);
		rc = EL_EINVAL;
	}
	rc = readable(where, "ca_file", c->ca_file) == EL_OK ? rc : EL_EINVAL;
	rc = readable(where, "cert_key_file", c->cert_key_file) == EL_OK ? rc : EL_EINVAL;
	rc = readable(where, "crl_file", c->crl_file) == EL_OK ? rc : EL_EINVAL;
	for (uint32_t i = 0; i < c->n_peers && c->peer_addr[0] != '\0'; i++)
		if (c->peers[i].id == c->id && strcmp(c->peers[i].addr, c->peer_addr) != 0) {
			fprintf(stderr, "edgelockd: %s: [peers] %u = %s differs from [node] "
				"peer_addr %s\n", where, c->id, c->peers[i].addr, c->peer_addr);
			rc = EL_EINVAL;
		}
	return rc;
}
