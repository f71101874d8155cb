/*
 * main.c - the edgelock CLI: global options, where the cluster is (flags,
 * environment, config file), the command table, exit codes.
 */
#include <errno.h>
#include <signal.h>
#include <ini.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "el_cbor.h"
#include "el_cli.h"
#include "el_client_wire.h"
#include "el_config.h"
#include "el_ini_line.h"
#include "el_link.h"
#include "el_version.h"

static const char USAGE[] =
	"usage: edgelock [OPTIONS] COMMAND [ARGS]\n"
	"\n"
	"A client of an edgelock cluster: locks with fencing tokens, elections, status.\n"
	"\n"
	"commands:\n"
	"  lock [-n N] NAME [--ttl D] [--wait D] [--shared] [--lock-delay D] [--grace D]\n"
	"       -- CMD [ARGS]    run CMD while holding the lock NAME (-n N: one of\n"
	"                         the N permits of the semaphore NAME)\n"
	"  elect NAME VALUE [--ttl D] [--wait D] [--grace D] [-- CMD [ARGS]]\n"
	"                         become the leader of NAME, publish VALUE (and run CMD)\n"
	"  observe NAME           print the holder of NAME and every change\n"
	"  status                 members, roles, leader, term, commit, applied, last\n"
	"                         index per node\n"
	"  locks                  locks and semaphores (2/3 held) with their holders,\n"
	"                         tokens and waiters\n"
	"  members list           each member's id, role, addresses, and the leader\n"
	"  members add|remove|promote ...   change the membership, one at a time\n"
	"  transfer-leader [ID]   hand leadership to node ID (default: the most caught-up)\n"
	"  snapshot save FILE     a consistent backup of the lock table (admin)\n"
	"\n"
	"options (before or after the command; after a `--`, CMD's own):\n"
	"  --endpoints LIST       tls+tcp://HOST:PORT,... (or EDGELOCK_ENDPOINTS)\n"
	"  --ca FILE              the cluster CA (or EDGELOCK_CA)\n"
	"  --cert FILE            this client's certificate and key, PEM (or EDGELOCK_CERT)\n"
	"  --config FILE          a [client] config with endpoints, ca_file, cert_key_file\n"
	"                         (or EDGELOCK_CONFIG; default: the one `make run` writes,\n"
	"                         build/edgelock.conf, found next to this binary)\n"
	"  --timeout D            bound of one request, with retries (default 5s;\n"
	"                         0 is refused)\n"
	"  --json                 machine-readable output of status, locks, members\n"
	"                         list, observe: JSON Lines, one object per line (per\n"
	"                         endpoint, lock, change); no line for no locks; the\n"
	"                         other commands refuse it\n"
	"  -h, --help             this text; COMMAND --help for a command's\n"
	"  --version              the release, source revision and client protocol\n"
	"\n"
	"an option's value: --ttl 5s or --ttl=5s; a `--` ends the options\n"
	"durations: 500ms, 10s, 2m, 1h (a plain number is seconds), at most 1193h\n"
	"\n"
	"exit codes:\n"
	"  0         ok\n"
	"  1         refused (the message says why)\n"
	"  64        usage\n"
	"  69        no leader reachable (`status`: none of the nodes that answered\n"
	"            is or knows the leader; `lock`, `elect`: the session's lease\n"
	"            ran out while waiting, no grant made)\n"
	"  70        internal error\n"
	"  74        writing the output (stdout) failed, e.g. a full disk, or a\n"
	"            pipe whose reader left (`edgelock locks | head -1`) (not\n"
	"            `snapshot save`: its result is FILE, so a report line that\n"
	"            could not be written is only warned of)\n"
	"  75        lock held or not granted within --wait\n"
	"  76        lock lost while CMD ran (CMD was killed), or before CMD could\n"
	"            start (CMD not run)\n"
	"  77        permission denied or certificate rejected\n"
	"  78        bad configuration or certificate files; also when no endpoint's\n"
	"            certificate is signed by the CA given (a wrong --ca)\n"
	"  79        `lock -n N` on a semaphore that has another limit\n"
	"  126       CMD found but not executable\n"
	"  127       CMD not found\n"
	"  129       SIGHUP while `lock` or `elect` opened its session or waited\n"
	"            for the lock (as 130)\n"
	"  130       SIGINT while `lock` or `elect` opened its session or waited\n"
	"            for the lock: given up, CMD not run, nothing left held\n"
	"  143       SIGTERM while `lock` or `elect` opened its session or waited\n"
	"            for the lock (as 130)\n"
	"  CMD's     otherwise, `lock` and `elect` exit with CMD's status\n";

/* A duration's parse: DUR_LONG for one well formed but over
 * EL_CLI_DURATION_MAX ms, so the message can say so and give the bound. */
enum dur { DUR_OK, DUR_BAD, DUR_LONG };

static enum dur duration(const char *s, uint32_t *ms)
{
	char *end;
	if (*s < '0' || *s > '9') /* strtoull would take " 5", "+5" and "-5" */
		return DUR_BAD;
	const unsigned long long v = strtoull(s, &end, 10); /* ULLONG_MAX: too long */
	unsigned long long mul = 1000;
	if (strcmp(end, "ms") == 0)
		mul = 1;
	else if (strcmp(end, "s") == 0 || *end == '\0')
		mul = 1000;
	else if (strcmp(end, "m") == 0)
		mul = 60000;
	else if (strcmp(end, "h") == 0)
		mul = 3600000;
	else
		return DUR_BAD;
	if (v > EL_CLI_DURATION_MAX / mul)
		return DUR_LONG;
	*ms = (uint32_t)(v * mul);
	return DUR_OK;
}

bool el_cli_duration(const char *s, uint32_t *ms)
{
	return duration(s, ms) == DUR_OK;
}

int el_cli_duration_arg(const char *opt, const char *v, uint32_t *ms)
{
	const enum dur d = v != NULL ? duration(v, ms) : DUR_BAD;
	if (d == DUR_OK)
		return 0;
	char shown[4 * 32 + 1];
	if (v == NULL)
		fprintf(stderr, "edgelock: %s needs a duration (e.g. 10s)\n", opt);
	else if (d == DUR_BAD)
		fprintf(stderr, "edgelock: %s %s%s: not a duration (e.g. 10s)\n", opt,
			el_cli_text(v, strnlen(v, 32), shown, sizeof shown), strlen(v) > 32 ? "..." : "");
	else /* the cluster's own bound on a TTL is lower: say that too */
		fprintf(stderr, "edgelock: %s %s%s: too long (a duration is at most %luh)%s\n", opt,
			el_cli_text(v, strnlen(v, 32), shown, sizeof shown), strlen(v) > 32 ? "..." : "",
			(unsigned long)(EL_CLI_DURATION_MAX / 3600000u),
			strcmp(opt, "--ttl") == 0 ? "; the cluster allows a session's TTL up to its "
						    "[limits] max_session_ttl_ms, 10m by default" : "");
	return EL_EXIT_USAGE;
}

void el_cli_json_str(const char *s, size_t n)
{
	const bool utf8 = el_cbor_utf8_valid((const uint8_t *)s, (uint32_t)n);
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		const unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			printf("\\u%04x", c);
		else if (c >= 0x80 && !utf8)
			fputs("\\ufffd", stdout);
		else
			putchar(c);
	}
	putchar('"');
}

const char *el_cli_text(const char *s, size_t n, char *buf, size_t cap)
{
	const bool utf8 = el_cbor_utf8_valid((const uint8_t *)s, (uint32_t)n);
	size_t k = 0;
	bool c1 = false; /* the second byte of a C1 control, U+0080..U+009F */
	for (size_t i = 0; i < n && k + 5 <= cap; i++) {
		const unsigned char c = (unsigned char)s[i];
		const bool esc = c < 0x20 || c == 0x7f || c == '\\' || (c >= 0x80 && !utf8) || c1;
		c1 = utf8 && c == 0xc2 && i + 1 < n && (unsigned char)s[i + 1] < 0xa0;
		if (esc || c1)
			k += (size_t)snprintf(buf + k, cap - k, "\\x%02x", c);
		else
			buf[k++] = (char)c;
	}
	buf[k] = '\0';
	return buf;
}

int el_cli_fail(struct el_cli *cli, const char *what, int err)
{
	const char *why = cli->why != NULL      ? cli->why
			  : cli->client != NULL ? el_client_last_error(cli->client)
						: el_strerror(err);
	const size_t n = strlen(what), w = strlen(why), e = strlen(el_strerror(err));
	const bool bare = w >= e && strcmp(why + w - e, el_strerror(err)) == 0;
	/* A server's bare refusal, said in the operator's terms. EPERM ("lock
	 * x: permission denied") is its [acl]'s: the CLI uses only its own
	 * sessions. EDECODE of a request the CLI's own limits passed is a
	 * cluster of a smaller profile (a mixed cluster's: docs/mixed-cluster.md) */
	const char *hint = !bare ? ""
			   : err == EL_EPERM ? " (not allowed by the server's [acl] for this client's "
					       "certificate: docs/security.md)"
			   : err == EL_EDECODE ? " (out of the cluster's range: its capacity profile "
						 "takes less than this CLI, as a mixed cluster's does: "
						 "names of at most 16 bytes, election values of 8, "
						 "lock -n 2; docs/mixed-cluster.md)"
					       : "";
	/* "lock NAME: ..." or "open session: ...": said once */
	if (strncmp(why, what, n) == 0 && (why[n] == ' ' || why[n] == ':'))
		fprintf(stderr, "edgelock: %s%s\n", why, hint);
	else
		fprintf(stderr, "edgelock: %s: %s%s\n", what, why, hint);
	switch (err) {
	case EL_ETIMEDOUT: /* the library's "no leader reachable" too */
		if (el_cli_untrusted(why))
			return el_cli_untrusted_hint(cli);
		if (strstr(why, "certificate") != NULL || strstr(why, "Crypto") != NULL ||
		    strstr(why, "Peer") != NULL)
			return EL_EXIT_NOPERM;
		return EL_EXIT_UNAVAILABLE;
	case EL_EEXPIRED: /* the lease ran out: no leader answered for it */
		return EL_EXIT_UNAVAILABLE;
	case EL_EPERM:
		return el_cli_nocert_hint(cli);
	case EL_EBUSY:
	case EL_EDELAYED:
		return EL_EXIT_NOT_ACQUIRED;
	case EL_EINVAL:
		/* the library's own checks are the command line's fault; a
		 * cluster's [limits] refusing it (a TTL over max_session_ttl_ms)
		 * is a refusal, and the library's message names the key; a
		 * certificate whose CN is too long to own a session is a
		 * certificate file to replace */
		if (strstr(why, "certificate CN is") != NULL)
			return EL_EXIT_CONFIG;
		return strstr(why, "the cluster's [limits]") != NULL ? EL_EXIT_FAILED
								       : EL_EXIT_USAGE;
	case EL_ELIMIT:
		return EL_EXIT_LIMIT;
	default:
		return EL_EXIT_FAILED;
	}
}

int el_cli_nocert_hint(const struct el_cli *cli)
{
	/* the library names its own option (cert_key_file), not the CLI's */
	if (cli->cert_key_file == NULL || cli->cert_key_file[0] == '\0')
		fprintf(stderr, "edgelock: no client certificate was given: give --cert, set "
				"EDGELOCK_CERT, or cert_key_file in the [client] config\n");
	return EL_EXIT_NOPERM;
}

bool el_cli_untrusted(const char *why)
{
	const char *list = strstr(why, "(tried ");
	if (list == NULL)
		return strstr(why, EL_LINK_UNTRUSTED) != NULL;
	/* "(tried URL: WHY; URL: WHY)": a WHY with "; " in it counts as one
	 * more endpoint, never as one less, so it errs towards 69 */
	unsigned entries = 1, untrusted = 0;
	for (const char *p = list; (p = strstr(p, "; ")) != NULL; p += 2)
		entries++;
	for (const char *p = list; (p = strstr(p, EL_LINK_UNTRUSTED)) != NULL; p++)
		untrusted++;
	return untrusted == entries;
}

int el_cli_untrusted_hint(const struct el_cli *cli)
{
	fprintf(stderr, "edgelock: no endpoint's certificate is signed by the CA in %s (from %s): "
		"check that it is the cluster's CA (--ca, EDGELOCK_CA, or ca_file in the "
		"[client] config)\n", cli->ca_file, cli->ca_from);
	return EL_EXIT_CONFIG;
}

/* ---- Where the cluster is ----------------------------------------------- */

static char cfg_endpoints[1024], cfg_ca[PATH_MAX], cfg_cert[PATH_MAX];
static char cfg_path[PATH_MAX + 32] = "no config"; /* the config read (for messages) */

/* The file being read: libinih's line source (cfg_line) counts its lines,
 * so a key given twice can name both. */
struct cfg_file {
	FILE *fp;
	const char *path;
	int line, bad_line, max_len;
	int seen[3]; /* the line each [client] key was set on; 0: not yet */
};

static int on_ini(void *user, const char *section, const char *key, const char *value)
{
	static const char *const keys[3] = {"endpoints", "ca_file", "cert_key_file"};
	static char *const slots[3] = {cfg_endpoints, cfg_ca, cfg_cert};
	static const size_t caps[3] = {sizeof cfg_endpoints, sizeof cfg_ca, sizeof cfg_cert};
	struct cfg_file *f = user;
	if (strcmp(section, "client") != 0)
		return 1;
	for (unsigned k = 0; k < 3; k++) {
		if (strcmp(key, keys[k]) != 0)
			continue;
		/* As the daemon's config: two values for one setting are a
		 * mistake, and which one wins should not depend on order. */
		if (f->seen[k] != 0) {
			fprintf(stderr, "edgelock: %s:%d: [client] %s given twice (first on line "
				"%d)\n", f->path, f->line, key, f->seen[k]);
			return 0;
		}
		f->seen[k] = f->line;
		snprintf(slots[k], caps[k], "%s", value);
		return 1;
	}
	fprintf(stderr, "edgelock: unknown key '%s' in [client]\n", key);
	return 0;
}

/* One line for libinih, read whole; a line it cannot take whole (too long,
 * a NUL byte) ends the reading, and the file is refused for it
 * (el_ini_line.h). */
static char *cfg_line(char *str, int num, void *stream)
{
	struct cfg_file *f = stream;
	enum el_ini_line bad;
	char *s = el_ini_line(str, num, f->fp, &bad);
	if (s == NULL && bad == EL_INI_LINE_OK)
		return NULL;
	f->line++;
	if (bad != EL_INI_LINE_OK) {
		f->bad_line = f->line;
		f->max_len = num - 1;
	}
	return s;
}

/* The config `make run` writes: build/edgelock.conf, beside bin/. */
static const char *default_config(char *buf, size_t cap)
{
	char exe[PATH_MAX];
	const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	snprintf(buf, cap, "%s/../edgelock.conf", dirname(exe));
	return access(buf, R_OK) == 0 ? buf : NULL;
}

static int load_config(struct el_cli *cli)
{
	const char *path = cli->config != NULL ? cli->config : getenv("EDGELOCK_CONFIG");
	if (path != NULL && path[0] == '\0' && cli->config == NULL)
		path = NULL; /* EDGELOCK_CONFIG= (empty) is unset, as a shell user means it */
	if (path == NULL) {
		static char def[PATH_MAX + 32];
		path = default_config(def, sizeof def);
	}
	if (path == NULL)
		return 0;
	snprintf(cfg_path, sizeof cfg_path, "%s", path);
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		fprintf(stderr, "edgelock: %s: is a directory, not a client config file\n", path);
		return EL_EXIT_CONFIG;
	}
	struct cfg_file f = { .fp = fopen(path, "r"), .path = path };
	if (f.fp == NULL) {
		fprintf(stderr, "edgelock: %s: cannot open the client config: %s\n", path,
			strerror(errno));
		return EL_EXIT_CONFIG;
	}
	int line = ini_parse_stream(cfg_line, &f, on_ini, &f);
	fclose(f.fp);
	if (line == 0 && f.bad_line != 0) {
		fprintf(stderr, "edgelock: %s: line %d is longer than %d characters or holds a NUL "
			"byte\n", path, f.bad_line, f.max_len);
		return EL_EXIT_CONFIG;
	}
	if (line != 0) {
		if (line > 0)
			fprintf(stderr, "edgelock: %s: not a valid client config (line %d)\n", path,
				line);
		else /* libinih's buffer: only when built without INI_USE_STACK */
			fprintf(stderr, "edgelock: %s: out of memory reading it\n", path);
		return EL_EXIT_CONFIG;
	}
	return 0;
}

/*
 * A client key file others may read or write: a warning, not a refusal
 * (edgelockd refuses its own, el_dcfg_tls_modes). Whoever runs the CLI
 * sees stderr at once, unlike a daemon's log, and a refusal would break
 * scripts on machines where one user is all there is; libedgelock says
 * nothing (a library does not write to its application's stderr).
 */
static void warn_key_mode(const char *path)
{
	struct stat st;
	if (path == NULL || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
	    !(st.st_mode & (S_IROTH | S_IWOTH | S_IWGRP)))
		return;
	fprintf(stderr, "edgelock: warning: %s holds this client's private key and %s it "
		"(mode %04o): chmod 600 it\n", path,
		(st.st_mode & S_IROTH) ? "every user may read"
		: (st.st_mode & S_IWOTH) ? "every user may replace" : "its group may replace",
		(unsigned)(st.st_mode & 07777));
}

/* An EDGELOCK_* variable, NULL when unset or empty: `EDGELOCK_CERT=` is
 * unset as a shell user means it, as EDGELOCK_CONFIG= is (it was a
 * certificate file named "", refused as unreadable). */
static const char *env_value(const char *name)
{
	const char *v = getenv(name);
	return v != NULL && v[0] != '\0' ? v : NULL;
}

int el_cli_connect(struct el_cli *cli)
{
	int rc = load_config(cli);
	if (rc != 0)
		return rc;
	const char *env;
	if (cli->endpoints == NULL)
		cli->endpoints = (env = env_value("EDGELOCK_ENDPOINTS")) ? env : cfg_endpoints;
	if (cli->ca_file == NULL) {
		env = env_value("EDGELOCK_CA");
		cli->ca_file = env != NULL ? env : cfg_ca;
		cli->ca_from = env != NULL ? "EDGELOCK_CA" : cfg_path;
	}
	if (cli->cert_key_file == NULL)
		cli->cert_key_file = (env = env_value("EDGELOCK_CERT")) ? env : (cfg_cert[0] ? cfg_cert : NULL);
	if (cli->endpoints[0] == '\0' && cli->ca_file[0] == '\0') {
		fprintf(stderr, "edgelock: where is the cluster? give --endpoints and --ca, set "
				"EDGELOCK_ENDPOINTS and EDGELOCK_CA, or run `make run` first\n");
		return EL_EXIT_CONFIG;
	}
	if (cli->ca_file[0] == '\0') { /* the endpoints alone: say which is missing */
		fprintf(stderr, "edgelock: no CA file (the cluster's CA certificate): give --ca, set "
				"EDGELOCK_CA, or ca_file in the [client] config\n");
		return EL_EXIT_CONFIG;
	}
	if (cli->endpoints[0] == '\0') {
		fprintf(stderr, "edgelock: no endpoints: give --endpoints, set EDGELOCK_ENDPOINTS, "
				"or endpoints in the [client] config\n");
		return EL_EXIT_CONFIG;
	}
	char name[16];
	snprintf(name, sizeof name, "cli%d", (int)(getpid() % 100000));
	const struct el_client_options o = { .endpoints = cli->endpoints, .ca_file = cli->ca_file,
					     .cert_key_file = cli->cert_key_file, .name = name,
					     .timeout_ms = cli->timeout_ms };
	rc = el_client_open(&cli->client, &o);
	if (rc != EL_OK) {
		const char *why = el_client_last_error(NULL);
		fprintf(stderr, "edgelock: %s\n", why);
		/* the client's certificate is checked against the CA at load: the
		 * line blamed the certificate when the CA given was the wrong one
		 * (a CA of another cluster, in a test run after `make run`) */
		if (strstr(why, "not accepted by the cluster CA") != NULL)
			fprintf(stderr, "edgelock: check that %s (from %s) is the cluster's CA and %s "
				"a client certificate it signed\n", cli->ca_file, cli->ca_from,
				cli->cert_key_file);
		return EL_EXIT_CONFIG;
	}
	warn_key_mode(cli->cert_key_file);
	return 0;
}

/* ---- Dispatch ----------------------------------------------------------- */

/* What a command's stdout is decides what a failed write of it means.
 * report: its result is a file and stdout only a report of it (snapshot
 * save): a backup written whole still exits 0 (a script would read 74 as
 * "no backup"), with a warning naming what was written (NULL: stdout is the
 * result, and a failed write is exit 74). cmd_output: lock and elect leave
 * stdout to CMD (they write nothing on it) and exit with its status.
 * json: --json shapes its output; a command without it refuses --json
 * rather than take it and print something else. */
static const struct command {
	const char *name;
	int (*run)(struct el_cli *, int, char **);
	const char *report;
	bool cmd_output, json;
} COMMANDS[] = {
	{"lock", el_cli_lock, NULL, true, false},
	{"elect", el_cli_elect, NULL, true, false},
	{"observe", el_cli_observe, NULL, false, true},
	{"status", el_cli_status, NULL, false, true},
	{"locks", el_cli_locks, NULL, false, true},
	{"members", el_cli_members, NULL, false, true}, /* list only: el_cli_members */
	{"transfer-leader", el_cli_transfer, NULL, false, false},
	{"snapshot", el_cli_snapshot, "snapshot save: the backup", false, false},
};

bool el_cli_opt_is(const char *arg, const char *opt)
{
	const size_t n = strlen(opt);
	return strncmp(arg, opt, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

const char *el_cli_opt_value(const char *opt, int argc, char **argv, int *i)
{
	const char *a = argv[*i] + strlen(opt);
	if (*a == '=')
		return a + 1;
	/* "--" ends the options: `lock x --endpoints -- true` lacks the value,
	 * and taking "--" for it would make "true" the lock's name */
	if (*i + 1 >= argc || strcmp(argv[*i + 1], "--") == 0)
		return NULL;
	return argv[++*i];
}

/* The global options that take a value, and where each goes (NULL: the
 * --timeout duration). */
static const char *const GLOBAL_VALUED[] = {"--endpoints", "--ca", "--cert", "--config",
					    "--timeout"};
#define N_GLOBAL_VALUED (sizeof GLOBAL_VALUED / sizeof GLOBAL_VALUED[0])

/* The options of a command, which follow its name. Only the global ones
 * may come before it, as in git and consul (`git --amend commit` is refused
 * too): `edgelock --ttl 5 lock x` is refused, but with what to type instead.
 * Moving it after the command for the user would be a second grammar to
 * document, and a guess when its value is missing (`--ttl lock x`). */
static const struct command_opt {
	const char *opt, *value; /* value: what the option takes (NULL: none) */
	const char *commands[2]; /* the commands that take it (NULL: one) */
} COMMAND_OPTS[] = {
	{"--ttl", "D", {"lock", "elect"}},
	{"--wait", "D", {"lock", "elect"}},
	{"--grace", "D", {"lock", "elect"}},
	{"--lock-delay", "D", {"lock", NULL}},
	{"--shared", NULL, {"lock", NULL}},
	{"-n", "N", {"lock", NULL}},
	{"--learner", NULL, {"members add", NULL}},
};

/* The command of COMMAND_OPTS' c that word names ("members" for "members
 * add"); NULL when it is none of them. */
static const char *takes(const struct command_opt *c, const char *word)
{
	const size_t n = strlen(word);
	for (unsigned k = 0; k < 2 && c->commands[k] != NULL; k++)
		if (n > 0 && strncmp(c->commands[k], word, n) == 0 &&
		    (c->commands[k][n] == '\0' || c->commands[k][n] == ' '))
			return c->commands[k];
	return NULL;
}

/* argv[i], an option before the command that is no global one: say which
 * command takes it and how to write it there, else that it is unknown.
 * EL_EXIT_USAGE. */
static int not_global(int argc, char **argv, int i)
{
	const char *o = argv[i];
	const struct command_opt *c = NULL;
	for (size_t k = 0; k < sizeof COMMAND_OPTS / sizeof COMMAND_OPTS[0] && c == NULL; k++)
		if (o[1] == '-' ? el_cli_opt_is(o, COMMAND_OPTS[k].opt) : strcmp(o, COMMAND_OPTS[k].opt) == 0)
			c = &COMMAND_OPTS[k];
	if (c == NULL) {
		fprintf(stderr, "edgelock: unknown option %s (try edgelock --help)\n", o);
		return EL_EXIT_USAGE;
	}
	/* its value as typed, unless it is missing (`--ttl lock x`) */
	const char *v = c->value == NULL || strchr(o, '=') != NULL ? NULL
			: i + 1 < argc && argv[i + 1][0] != '-' && !takes(c, argv[i + 1]) ? argv[i + 1]
			: c->value;
	const char *example = NULL; /* the command typed, when it takes it */
	for (int j = i + 1; j < argc && example == NULL && strcmp(argv[j], "--") != 0; j++)
		example = takes(c, argv[j]);
	if (example == NULL)
		example = c->commands[0];
	char opt[4 * 32 + 1], val[4 * 32 + 1];
	fprintf(stderr, "edgelock: %s is an option of `%s`%s%s%s: put it after the command, as in "
		"edgelock %s %s%s%s ... (only --endpoints, --ca, --cert, --config, --timeout and "
		"--json go before it)\n", c->opt, c->commands[0],
		c->commands[1] != NULL ? " and `" : "", c->commands[1] != NULL ? c->commands[1] : "",
		c->commands[1] != NULL ? "`" : "", example, el_cli_text(o, strnlen(o, 32), opt, sizeof opt),
		v != NULL ? " " : "", v != NULL ? el_cli_text(v, strnlen(v, 32), val, sizeof val) : "");
	return EL_EXIT_USAGE;
}

static int global_option(struct el_cli *cli, int argc, char **argv, int *i)
{
	const char *o = argv[*i];
	const char **slots[N_GLOBAL_VALUED] = {&cli->endpoints, &cli->ca_file, &cli->cert_key_file,
					       &cli->config, NULL};
	if (strcmp(o, "--json") == 0) {
		cli->json = true;
		return 0;
	}
	if (el_cli_opt_is(o, "--json")) {
		fprintf(stderr, "edgelock: --json takes no value (write --json alone)\n");
		return EL_EXIT_USAGE;
	}
	unsigned k = 0;
	while (k < N_GLOBAL_VALUED && !el_cli_opt_is(o, GLOBAL_VALUED[k]))
		k++;
	if (k == N_GLOBAL_VALUED)
		return not_global(argc, argv, *i);
	const char *v = el_cli_opt_value(GLOBAL_VALUED[k], argc, argv, i);
	if (v == NULL) {
		fprintf(stderr, "edgelock: %s needs a value\n", GLOBAL_VALUED[k]);
		return EL_EXIT_USAGE;
	}
	if (slots[k] != NULL) {
		*slots[k] = v;
		return 0;
	}
	const int rc = el_cli_duration_arg("--timeout", v, &cli->timeout_ms);
	if (rc == 0 && cli->timeout_ms == 0) { /* the library would take 0 as its 5 s */
		fprintf(stderr, "edgelock: --timeout 0: a request's bound must be more than 0 "
			"(the default is 5s)\n");
		return EL_EXIT_USAGE;
	}
	return rc;
}

static bool is_global(const char *a)
{
	for (size_t k = 0; k < N_GLOBAL_VALUED; k++)
		if (el_cli_opt_is(a, GLOBAL_VALUED[k]))
			return true;
	return el_cli_opt_is(a, "--json");
}

/* Global options after the command count as before it (`edgelock status
 * --endpoints X` must not ask the default cluster): they are applied and
 * taken out of the command's arguments, up to a `--` (after which the
 * arguments are CMD's). The command refuses whatever else it does not know. */
static int globals_after(struct el_cli *cli, int *argc, char **argv)
{
	int out = 1, i = 1;
	for (; i < *argc && strcmp(argv[i], "--") != 0; i++) {
		if (!is_global(argv[i])) {
			argv[out++] = argv[i];
			continue;
		}
		const int rc = global_option(cli, *argc, argv, &i);
		if (rc != 0)
			return rc;
	}
	while (i < *argc)
		argv[out++] = argv[i++];
	argv[out] = NULL;
	*argc = out;
	return 0;
}

int el_cli_bad_arg(const char *command, const char *arg)
{
	fprintf(stderr, "edgelock %s: %s %s (try edgelock %s --help)\n", command,
		arg[0] == '-' ? "unknown option" : "unexpected argument", arg, command);
	return EL_EXIT_USAGE;
}

int el_cli_usage(const char *command, const char *why, const char *arg, const char *usage)
{
	char shown[4 * 64 + 1];
	if (arg != NULL)
		el_cli_text(arg, strnlen(arg, 64), shown, sizeof shown);
	fprintf(stderr, "edgelock %s: %s%s%s%s\n", command, why, arg != NULL ? " " : "",
		arg != NULL ? shown : "", arg != NULL && strlen(arg) > 64 ? "..." : "");
	fputs(usage, stderr);
	return EL_EXIT_USAGE;
}

int el_cli_name_ok(const char *command, const char *name)
{
	const size_t n = strlen(name);
	char shown[4 * EL_NAME_MAX + 1];
	el_cli_text(name, n < EL_NAME_MAX ? n : EL_NAME_MAX, shown, sizeof shown);
	if (n == 0 || n > EL_NAME_MAX)
		fprintf(stderr, "edgelock %s: NAME is 1 to %d bytes, not %zu%s%s%s\n", command,
			EL_NAME_MAX, n, n > 0 ? " (\"" : "", shown, n > 0 ? "...\")" : "");
	else if (!el_cbor_utf8_valid((const uint8_t *)name, (uint32_t)n))
		fprintf(stderr, "edgelock %s: NAME must be UTF-8 text, not \"%s\"\n", command, shown);
	else
		return 0;
	return EL_EXIT_USAGE;
}

int el_cli_flush(int rc, const char *report)
{
	static bool said;
	errno = 0;
	const bool flushed = fflush(stdout) == 0;
	if (flushed && !ferror(stdout))
		return rc;
	/* an earlier write's errno is gone, unless it was output.c's flush */
	const int err = !flushed && errno != 0 ? errno
			: el_cli_out_errno() != 0 ? el_cli_out_errno() : EIO;
	if (report != NULL) { /* the result is a file: stdout was only about it */
		if (rc == EL_EXIT_OK) /* else the failure is said already */
			fprintf(stderr, "edgelock: %s is written; its report line could not be "
				"(%s)\n", report, strerror(err));
		return rc;
	}
	if (!said)
		fprintf(stderr, "edgelock: writing the output: %s\n", strerror(err));
	said = true;
	return rc != EL_EXIT_OK ? rc : EL_EXIT_IOERR;
}

int el_cli_json_refused(const char *command)
{
	fprintf(stderr, "edgelock %s: --json is not taken here (it is the output form of "
		"status, locks, members list and observe; try edgelock %s --help)\n", command,
		command);
	return EL_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	struct el_cli cli = { .timeout_ms = 5000, .ca_from = "--ca" };
	el_cli_order_output(); /* first: before anything is written */
	/* A write to a closed pipe (`edgelock status | head -1`) is then an
	 * EPIPE, and exit 74 (el_cli_flush), not a death by SIGPIPE (141);
	 * lock and elect give CMD the default back before it runs. */
	signal(SIGPIPE, SIG_IGN);
	int i = 1;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(USAGE, stdout);
			return el_cli_flush(EL_EXIT_OK, NULL);
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("edgelock " EL_VERSION " (revision %s), client protocol %d\n",
			       el_build_revision, EL_CW_VERSION);
			return el_cli_flush(EL_EXIT_OK, NULL);
		}
		const int rc = global_option(&cli, argc, argv, &i);
		if (rc != 0)
			return rc;
	}
	if (i == argc) {
		fputs(USAGE, stderr);
		return EL_EXIT_USAGE;
	}
	for (size_t k = 0; k < sizeof COMMANDS / sizeof COMMANDS[0]; k++)
		if (strcmp(argv[i], COMMANDS[k].name) == 0) {
			const struct command *c = &COMMANDS[k];
			int n = argc - i;
			int rc = globals_after(&cli, &n, argv + i);
			if (rc == 0 && cli.json && !c->json)
				rc = el_cli_json_refused(c->name);
			if (rc == 0)
				rc = c->run(&cli, n, argv + i);
			el_client_close(cli.client);
			return c->cmd_output ? rc : el_cli_flush(rc, c->report);
		}
	fprintf(stderr, "edgelock: unknown command '%s' (try edgelock --help)\n", argv[i]);
	return EL_EXIT_USAGE;
}
