/*
 * main.c - edgelockd: flags, config, signals; the loop lives in daemon.c.
 *
 * Exit status: 0 a clean stop (SIGTERM/SIGINT) or --help/--check-config ok;
 * 1 usage or config errors (a --bootstrap without this node among [peers]
 * too; a node removed from the cluster started again on its data; a node
 * that stopped for good on a newer incarnation's hello); 2 could
 * not start (data dir in use or on a read-only file system, storage, [tls]
 * files, listen, an open-files limit too low); 3 stopped by a storage
 * failure while running.
 */
#include <errno.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#ifdef __GLIBC__ /* mallopt */
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "el_d_http.h"
#include "el_daemon.h"
#include "el_error.h"
#include "el_net.h"
#include "el_peer_hello.h"
#include "el_platform.h"
#include "el_version.h"

static volatile int stop_signal, reload_signal;

/* Only flags: the loop acts on them (daemon.c), outside the handler. */
static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_signal = 1;
	else
		stop_signal = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: edgelockd -c FILE [--bootstrap | --join] [flags]\n"
		"       edgelockd --check-config FILE\n"
		"       edgelockd restore BACKUP -c FILE [flags]\n"
		"\n"
		"Runs one edgelock node: Raft over TLS with its peers, the client\n"
		"protocol (docs/protocol.md) on its client address. Without --bootstrap\n"
		"or --join, the data directory must hold state (a restart).\n"
		"\n"
		"  -c, --config FILE     the config file (INI; see dist/edgelockd.conf.example)\n"
		"  --check-config FILE   validate FILE, its [tls] files and whose data\n"
		"                        data_dir holds as the start does, print what is\n"
		"                        wrong, exit (0: valid, 1: not)\n"
		"  --bootstrap           start a NEW cluster of the [peers] members; the data\n"
		"                        directory must be empty\n"
		"  --join                start with an empty data directory and wait to be\n"
		"                        added (`edgelock members add ID ...` on the leader);\n"
		"                        ignored, with a warning, once the directory holds\n"
		"                        state (a restart: the node is the member it was)\n"
		"  --force-new-cluster   LOST QUORUM ONLY: restart this node from its data\n"
		"                        as the one voter of a new cluster (docs/operations.md)\n"
		"  --id N                [node] id\n"
		"  --data-dir DIR        [node] data_dir\n"
		"  --peer-addr URL       [node] peer_addr   (tls+tcp://HOST:PORT)\n"
		"  --client-addr URL     [node] client_addr (tls+tcp://HOST:PORT)\n"
		"  --metrics URL         [node] metrics (http://HOST:PORT/PATH: Prometheus)\n"
		"  --peer ID=URL         [peers] ID = URL (repeatable)\n"
		"  --ca-file F           [tls] ca_file\n"
		"  --cert-key-file F     [tls] cert_key_file (certificate and key, PEM)\n"
		"  --crl-file F          [tls] crl_file (revoked certificates, PEM or DER)\n"
		"  --log-level L         [log] level: debug, info, warn (warning), error\n"
		"  -h, --help            this text\n"
		"  --version             version, protocol and capacity profile\n"
		"restore BACKUP: seed the empty data directory from `edgelock snapshot save`\n"
		"as a new cluster of the [peers] voters, then exit; start normally after\n"
		"(edgelockd restore --help).\n"
		"Flags override the file. SIGTERM: a leader hands over leadership, then\n"
		"the node exits 0. SIGHUP: re-read the [tls] CA, certificate and CRL files\n"
		"for new connections' identity proofs (nothing else of the config).\n"
		"Exit: 1 usage or config error, a data_dir refused as it is (another\n"
		"node's, removed, damaged, empty without --bootstrap/--join) or another\n"
		"node's certificate: no restart helps; 2 a start failure that may pass (data_dir in use or read-only,\n"
		"address, files); 3 storage failure.\n");
}

static const char RESTORE_USAGE[] =
	"usage: edgelockd restore BACKUP -c FILE [--token-floor N] [flags]\n"
	"\n"
	"Seed the node's empty data directory from BACKUP (a file `edgelock\n"
	"snapshot save` wrote) as a new cluster whose voters are the [peers], then\n"
	"exit. Run it on every node of the new cluster with the same BACKUP, then\n"
	"start the nodes normally (no --bootstrap): their next tokens are above\n"
	"every token in BACKUP (docs/operations.md, \"Backup and restore\").\n"
	"Every node needs the same BACKUP and the same [peers] list (in any order):\n"
	"nodes restored with other lists are two clusters and refuse each other.\n"
	"Sessions do not survive a restore: the backup's are ended, their clients\n"
	"get EEXPIRED (LOST) and must open new sessions; each lock a session held\n"
	"at the backup stays in lock-delay (refused, EDELAYED) for 60 s (the\n"
	"lock-delay cap) from the restored cluster's first leader.\n"
	"--token-floor N: tokens granted after the backup are not in it; with N\n"
	"the highest token the old cluster may have granted (a fenced resource's\n"
	"highest, or the last `edgelock_commit_index` seen), every token from now\n"
	"on is above N. Give every node the same N (another N: another cluster).\n"
	"The other flags are edgelockd's (edgelockd --help) and override the file.\n"
	"Refused (exit 1, nothing written) when another node of [peers] answers\n"
	"at its address: a restore is for a whole cluster that is down; one lost\n"
	"node of a running cluster comes back with --join and members add.\n"
	"Exit: 0 restored; 1 usage or config error, or a node of [peers] runs;\n"
	"2 BACKUP damaged or foreign,\n"
	"the data directory not empty, or a write failed (what restore wrote is\n"
	"removed: the directory is empty again).\n";

/* restore's own flag, --token-floor N or --token-floor=N (1 .. 2^52: the
 * tokens granted after it stay exact in JSON, under 2^53), taken out of
 * argv before the daemon's flags are parsed; nonzero (said) on a bad one. */
static int take_token_floor(int *argc, char **argv, uint64_t *floor)
{
	static const char opt[] = "--token-floor";
	for (int i = 1; i < *argc; i++) {
		const bool joined = strncmp(argv[i], opt, sizeof opt - 1) == 0 &&
				    argv[i][sizeof opt - 1] == '=';
		if (strcmp(argv[i], opt) != 0 && !joined)
			continue;
		char *end = NULL;
		errno = 0;
		const char *v = joined ? argv[i] + sizeof opt : i + 1 < *argc ? argv[i + 1] : "";
		const int taken = joined ? 1 : 2;
		const unsigned long long n = strtoull(v, &end, 10);
		if (v[0] < '0' || v[0] > '9' || *end != '\0' || errno != 0 || n == 0 ||
		    n > (1ull << 52)) {
			fprintf(stderr, "edgelockd: restore: --token-floor wants a number from 1 to "
				"2^52 (the highest token the old cluster may have granted), not '%s'\n",
				v);
			return -1;
		}
		*floor = n;
		memmove(&argv[i], &argv[i + taken], (size_t)(*argc - i - taken + 1) * sizeof *argv);
		*argc -= taken;
		return 0;
	}
	return 0;
}

/* `edgelockd restore ... --help` (or -h) anywhere before a `--`? */
static bool asks_help(int argc, char **argv)
{
	for (int i = 2; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return true;
	return false;
}

struct flag {
	const char *name, *section, *key;
};

static const struct flag flags[] = {
	{ "--id", "node", "id" },
	{ "--data-dir", "node", "data_dir" },
	{ "--peer-addr", "node", "peer_addr" },
	{ "--client-addr", "node", "client_addr" },
	{ "--metrics", "node", "metrics" },
	{ "--ca-file", "tls", "ca_file" },
	{ "--cert-key-file", "tls", "cert_key_file" },
	{ "--crl-file", "tls", "crl_file" },
	{ "--log-level", "log", "level" },
};

/* Apply a flag with a value; 1 if argv[i] was one, 0 if not, -1 for a bad
 * value, -2 for a missing one (a usage error). */
static int apply_flag(struct el_dcfg *c, int argc, char **argv, int *i)
{
	for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++) {
		if (strcmp(argv[*i], flags[k].name) != 0)
			continue;
		if (*i + 1 >= argc) {
			fprintf(stderr, "edgelockd: %s needs a value (try --help)\n", argv[*i]);
			return -2;
		}
		(*i)++;
		return el_dcfg_set(c, flags[k].section, flags[k].key, argv[*i], flags[k].name) ==
			       EL_OK ? 1 : -1;
	}
	if (strcmp(argv[*i], "--peer") == 0 && *i + 1 < argc) {
		char buf[160];
		snprintf(buf, sizeof buf, "%s", argv[++(*i)]);
		char *eq = strchr(buf, '=');
		if (eq == NULL) {
			fprintf(stderr, "edgelockd: --peer wants ID=URL\n");
			return -1;
		}
		*eq = '\0';
		return el_dcfg_set(c, "peers", buf, eq + 1, "--peer") == EL_OK ? 1 : -1;
	}
	return 0;
}

struct opts {
	const char *config;
	bool check, bootstrap, join, force;
};

/* --check-config: data_dir holding another node's state (or a damaged
 * owner file) is refused as the start refuses it (owner.c), said as the
 * other findings. */
static bool owner_refused(const struct el_dcfg *c, const char *where)
{
	char why[1200], fix[1200];
	if (c->data_dir[0] == '\0' || el_d_owner_check(c->data_dir, c->id,
		el_d_has_state(c->data_dir), why, fix, sizeof why) == EL_OK)
		return false;
	fprintf(stderr, "edgelockd: %s: %s\nedgelockd: %s: %s\n", where, why, where, fix);
	return true;
}

/* The whole config, as the start will check it: the file and flags, the
 * [tls] files and data_dir's owner under --check-config, this node among
 * the --bootstrap voters.
 * 0 if the config can start a node; errors are already said. */
static int check(struct el_dcfg *c, const struct opts *o, bool loaded)
{
	int errors = 0;
	const char *where = o->config != NULL ? o->config : "flags";
	if (loaded && el_dcfg_check(c, where) != EL_OK)
		errors++;
	if (loaded && el_dcfg_check_host(c, where, o->check) != EL_OK)
		errors++;
	if ((int)o->bootstrap + (int)o->join + (int)o->force > 1) {
		fprintf(stderr, "edgelockd: --bootstrap, --join and --force-new-cluster exclude "
			"each other\n");
		errors++;
	}
	struct el_conf voters;
	if (errors == 0 && o->bootstrap && el_d_conf_of(c, &voters, "--bootstrap") != EL_OK)
		errors++;
	struct el_ident *ident = NULL;
	char why[700];
	/* said as the other findings, "edgelockd: FILE: ...", not as a log line */
	if (errors == 0 && loaded && o->check && el_d_load_ident(c, &ident, false, why, sizeof why) != EL_OK) {
		fprintf(stderr, "edgelockd: %s: %s\n", where, why);
		errors++;
	}
	el_ident_free(ident);
	if (errors == 0 && loaded && o->check && owner_refused(c, where))
		errors++;
	return errors;
}

/* 0: go on; otherwise the exit status + 1. */
static int parse(struct el_dcfg *c, struct opts *o, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) { /* the file first, so flags override it */
		const bool file = !strcmp(argv[i], "-c") || !strcmp(argv[i], "--config") ||
				  !strcmp(argv[i], "--check-config");
		if (file && i + 1 < argc) {
			o->check = o->check || !strcmp(argv[i], "--check-config");
			o->config = argv[++i];
		} else if (file) {
			fprintf(stderr, "edgelockd: %s needs a FILE (try --help)\n", argv[i]);
			return 2; /* exit 1: a usage error */
		}
	}
	const int load = o->config != NULL ? el_dcfg_load(c, o->config) : EL_OK;
	int errors = load != EL_OK, usage_errors = 0, n_flags = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 1;
		}
		if (!strcmp(argv[i], "--version")) {
			printf("edgelockd " EL_VERSION " (revision %s), client protocol %d, "
			       "capacity profile %016llx (%u sessions, %u locks, %u waiters, "
			       "%u requests in flight), node state %zu bytes\n", el_build_revision,
			       EL_CW_VERSION,
			       (unsigned long long)el_peer_profile(), (unsigned)EL_SESSIONS_MAX, (unsigned)EL_LOCKS_MAX,
			       (unsigned)EL_WAITERS_MAX, (unsigned)EL_PENDING_MAX, sizeof(struct el_node));
			return 1;
		}
		int f = apply_flag(c, argc, argv, &i);
		n_flags += f != 0;
		if (f == -2)
			usage_errors++;
		else if (f < 0)
			errors++;
		else if (f == 0 && !strcmp(argv[i], "--bootstrap"))
			o->bootstrap = true;
		else if (f == 0 && !strcmp(argv[i], "--join"))
			o->join = true;
		else if (f == 0 && !strcmp(argv[i], "--force-new-cluster"))
			o->force = true;
		else if (f == 0 && (!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config") ||
				    !strcmp(argv[i], "--check-config")))
			i++;
		else if (f == 0) {
			fprintf(stderr, "edgelockd: unknown argument %s (try --help)\n", argv[i]);
			usage_errors++;
		}
	}
	if (usage_errors == 0 && o->config == NULL && n_flags == 0) {
		fprintf(stderr, "edgelockd: no config: give -c FILE (try --help)\n");
		usage_errors++;
	}
	if (usage_errors) /* what is missing from a config nobody meant to give */
		return 2;
	/* a file not read whole (not opened, or cut at a bad line) has nothing
	 * to check: the keys after that line were never read, not missing */
	errors += check(c, o, load != EL_EIO);
	errors += el_dcfg_config_mode(o->config) != EL_OK;
	if (errors)
		return 2;
	if (o->check) {
		el_dcfg_root_note(c, o->config);
		printf("%s: valid\n", o->config);
		return 1;
	}
	return 0;
}

/* glibc gives each thread that allocates an arena of its own, up to 8 per
 * core on 64-bit: nng's dozen threads, when the daemon used nng, kept four
 * here (64 MiB reserved and 80 to 160 KiB resident each, idle). Two arenas,
 * shared by all threads, are enough for the loop, the handshake thread and
 * the metrics server. Measured with make bench-load
 * (issue 14): about 120 KiB less resident idle; 16-client cycles/s moved
 * less than the run-to-run noise. */
static void fewer_malloc_arenas(void)
{
#ifdef M_ARENA_MAX
	mallopt(M_ARENA_MAX, 2);
#endif
}

/*
 * The open-files limit must hold every descriptor the node may need at once,
 * or a flood of connections takes the ones storage needs: its next open
 * fails with EMFILE and the node stops (exit 3). So the client connections
 * (max_clients, handshakes included) get only what is left once these are
 * set aside: el_net's own (el_net_fds_reserved: peer handshakes, dials,
 * name lookups), the peer connections the loop keeps (EL_D_INBOUND_MAX, and
 * one being refused), the metrics server's (EL_D_HTTP_FDS), and FD_RESERVE
 * for storage (LOCK and the directory's lock, the directory, the WAL
 * segment and the next one, snapshot.tmp, the parent directory at
 * creation), stdio, the notify socket and the certificate and CRL files
 * SIGHUP reads.
 *
 * A limit too low lowers max_clients, with a warning naming the numbers,
 * rather than refusing to start: the node is a Raft voter first, and a
 * voter that serves fewer clients (the others are refused at accept, as
 * over max_clients, and go to another node) is worth more to the cluster
 * than one that does not run. Only a limit that leaves fewer than
 * FD_CLIENTS_MIN client connections refuses to start (exit 2).
 */
#define FD_RESERVE 32u
#define FD_CLIENTS_MIN 16u

static int fd_budget(struct el_dcfg *c)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return EL_OK; /* cannot tell: as before */
	const rlim_t hard = rl.rlim_max, was = rl.rlim_cur;
	if (rl.rlim_cur < hard) { /* the soft limit is only a default: take what is allowed */
		rl.rlim_cur = hard;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			rl.rlim_cur = was;
	}
	const uint64_t limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
	const uint64_t peers = el_net_fds_reserved() + EL_D_INBOUND_MAX + 1u;
	const uint64_t metrics = c->metrics[0] != '\0' ? EL_D_HTTP_FDS : 0u;
	const uint64_t others = peers + metrics + FD_RESERVE;
	if (limit >= others + c->max_clients)
		return EL_OK;
	const uint64_t room = limit > others ? limit - others : 0;
	el_log(room < FD_CLIENTS_MIN ? EL_LOG_ERROR : EL_LOG_WARN, "open files limit %llu "
	       "(RLIMIT_NOFILE, hard %llu) is below [limits] max_clients = %u + %llu descriptors "
	       "kept for peers (%llu), metrics (%llu), storage and the rest (%u): %s%llu; raise "
	       "LimitNOFILE= (dist/edgelockd.service) or ulimit -n to %llu", (unsigned long long)limit,
	       (unsigned long long)hard, c->max_clients, (unsigned long long)others,
	       (unsigned long long)peers, (unsigned long long)metrics, FD_RESERVE,
	       room < FD_CLIENTS_MIN ? "not starting: that leaves client connections for "
				     : "max_clients lowered to ",
	       (unsigned long long)room, (unsigned long long)(others + c->max_clients));
	if (room < FD_CLIENTS_MIN)
		return EL_EINVAL;
	c->max_clients = (uint32_t)room;
	return EL_OK;
}

int main(int argc, char **argv)
{
	static struct el_daemon d; /* large: static, not on the stack */
	struct opts o = { 0 };
	fewer_malloc_arenas(); /* before any thread starts */
	el_dcfg_defaults(&d.cfg);
	const char *restore = NULL;
	uint64_t token_floor = 0;
	if (argc >= 2 && strcmp(argv[1], "restore") == 0) { /* a subcommand, then flags */
		if (asks_help(argc, argv)) {
			fputs(RESTORE_USAGE, stdout);
			return 0;
		}
		if (argc < 3 || argv[2][0] == '-') {
			fprintf(stderr, "edgelockd: restore needs the backup file (try --help)\n");
			return 1;
		}
		restore = argv[2];
		argv[2] = argv[0];
		argc -= 2;
		argv += 2;
		if (take_token_floor(&argc, argv, &token_floor) != 0)
			return 1;
	}
	int p = parse(&d.cfg, &o, argc, argv);
	if (p != 0)
		return p - 1;
	el_log_set_level((enum el_log_level)d.cfg.log_level);
	char tag[24];
	snprintf(tag, sizeof tag, "node%u", d.cfg.id);
	el_log_set_tag(tag);
	if (restore != NULL) {
		if (el_d_restore_peers_down(&d.cfg) != EL_OK)
			return 1; /* a node of the cluster runs: a person must decide */
		return el_d_restore(&d.cfg, restore, token_floor) == EL_OK ? 0 : 2;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (fd_budget(&d.cfg) != EL_OK)
		return 2;
	d.force_new_cluster = o.force;
	/* First: which build a log is of, when a fleet runs two mid-upgrade. */
	el_log(EL_LOG_INFO, "edgelockd " EL_VERSION " (revision %s) starting", el_build_revision);
	const int opened = el_d_open(&d, o.bootstrap, o.join);
	if (opened != EL_OK) {
		el_d_close(&d);
		return opened == EL_ESTOPPED ? 1 : 2; /* removed or refused: no restart can help */
	}
	int rc = el_d_run(&d, &stop_signal, &reload_signal);
	el_d_close(&d);
	if (rc == EL_OK && d.stale_stop) { /* a unit must not show it as a clean stop */
		el_log(EL_LOG_ERROR, "exit: stopped for good on a newer incarnation (above): a "
		       "person must act");
		return 1;
	}
	el_log(rc == EL_OK ? EL_LOG_INFO : EL_LOG_ERROR, "exit: %s", el_strerror(rc));
	return rc == EL_OK ? 0 : 3;
}
