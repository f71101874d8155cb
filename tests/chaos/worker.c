/*
 * worker.c - a chaos-suite client (tests/chaos/README.md): it takes a lock
 * (or campaigns in an election) through libedgelock and, while holding it,
 * does read-modify-writes on a fenced resource (examples/fenced-resource),
 * recording every operation with invoke and complete times (CLOCK_MONOTONIC)
 * as JSON Lines in its history file.
 *
 *   chaos-worker lock ID     acquire, a few read-modify-writes, release; forever
 *   chaos-worker elect ID    the same with campaign/resign
 *   chaos-worker cmd ID      the CMD of `edgelock lock NAME -- CMD`: a few
 *                            read-modify-writes with $EDGELOCK_TOKEN, then exit
 *
 * Environment: CHAOS_SOCK (the resource's socket), CHAOS_HISTORY (the file
 * appended to), CHAOS_LOCK, CHAOS_TTL_MS, CHAOS_LOCK_DELAY_MS, and the
 * cluster as for the CLI (EDGELOCK_ENDPOINTS, EDGELOCK_CA, EDGELOCK_CERT).
 *
 * Like a careful application, it checks its lease before each
 * read-modify-write, but not between the read and the write (where a pause
 * can land): the resource's fence must refuse what such a late write does.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "edgelock.h"

static const char *who, *sock_path, *lock_name;
static int history_fd = -1;
static volatile sig_atomic_t stopping;
static unsigned rng;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(unsigned ms)
{
	const struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static unsigned rand_below(unsigned n)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 8) % n;
}

/* One history line: {"t": now, "proc": who, "type": type, "f": f, <fields>}.
 * One write(2) on an O_APPEND file, so a SIGKILL loses at most that line. */
static void record(const char *type, const char *f, const char *fmt, ...)
{
	char fields[256] = "", line[512];
	if (fmt != NULL) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(fields, sizeof fields, fmt, ap);
		va_end(ap);
	}
	const int n = snprintf(line, sizeof line,
			       "{\"t\": %.6f, \"proc\": \"%s\", \"type\": \"%s\", \"f\": \"%s\", "
			       "\"lock\": \"%s\"%s%s}\n",
			       now_s(), who, type, f, lock_name, fields[0] ? ", " : "", fields);
	if (n > 0 && write(history_fd, line, (size_t)n) < 0)
		perror("chaos-worker: history");
}

/* One request line to the resource, one reply line back; -1: no answer. */
static int request(const char *line, char *reply, size_t cap)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s", sock_path);
	snprintf(reply, cap, "no answer"); /* what the history says when none came */
	const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	ssize_t n = -1;
	/* MSG_NOSIGNAL: the resource closes a connection silent for 2 s (this
	 * worker paused after connect), and a SIGPIPE would kill the worker. */
	if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    send(fd, line, strlen(line), MSG_NOSIGNAL) > 0)
		n = read(fd, reply, cap - 1);
	close(fd);
	if (n <= 0)
		return -1;
	reply[n] = '\0';
	reply[strcspn(reply, "\n")] = '\0';
	return 0;
}

/* Read the value with token, wait a moment, write value + 1 with token.
 * Returns 0 when the write was accepted, 1 when the fence refused. */
static int read_modify_write(uint64_t token, double valid_until)
{
	char line[128], reply[128];
	long value = 0;
	uint64_t stored;
	record("invoke", "read", "\"token\": %" PRIu64, token);
	snprintf(line, sizeof line, "READ %" PRIu64 "\n", token);
	if (request(line, reply, sizeof reply) != 0 ||
	    sscanf(reply, "VALUE %" SCNu64 " %ld", &stored, &value) < 1) {
		record("fail", "read", "\"token\": %" PRIu64 ", \"error\": \"%s\"", token, reply);
		return 1;
	}
	record("ok", "read", "\"token\": %" PRIu64 ", \"value\": %ld", token, value);
	sleep_ms(rand_below(40)); /* the window a pause can land in */
	record("invoke", "write", "\"token\": %" PRIu64 ", \"value\": %ld, \"valid_until\": %.6f",
	       token, value + 1, valid_until);
	snprintf(line, sizeof line, "WRITE %" PRIu64 " %ld %s\n", token, value + 1, who);
	if (request(line, reply, sizeof reply) == 0 && strncmp(reply, "OK", 2) == 0) {
		record("ok", "write", "\"token\": %" PRIu64 ", \"value\": %ld", token, value + 1);
		return 0;
	}
	record("fail", "write", "\"token\": %" PRIu64 ", \"value\": %ld, \"error\": \"%s\"", token,
	       value + 1, reply);
	return 1;
}

/* While the lease holds, a few read-modify-writes; records "lost" when the
 * library says the lease is gone. Returns 1 when the session is lost. */
static int use_lock(el_session *s, uint64_t token)
{
	const unsigned rounds = 1 + rand_below(5);
	double valid_until = 0;
	for (unsigned i = 0; i < rounds && !stopping; i++) {
		uint64_t left_ms = 0;
		const double t = now_s();
		if (el_session_state(s, &left_ms) == EL_LEASE_LOST) {
			record("info", "lost", "\"token\": %" PRIu64 ", \"deadline\": %.6f", token,
			       valid_until);
			return 1;
		}
		valid_until = t + (double)left_ms / 1000.0;
		if (read_modify_write(token, valid_until) != 0)
			break;
		sleep_ms(rand_below(20));
	}
	return 0;
}

static el_client *open_client(void)
{
	const struct el_client_options o = { .endpoints = getenv("EDGELOCK_ENDPOINTS"),
					     .ca_file = getenv("EDGELOCK_CA"),
					     .cert_key_file = getenv("EDGELOCK_CERT"),
					     .name = who };
	el_client *c = NULL;
	while (!stopping && el_client_open(&c, &o) != EL_OK)
		sleep_ms(200);
	return c;
}

/* A new session, retried until one opens (or the worker is stopped). */
static el_session *open_session(el_client *c, uint32_t ttl_ms, uint32_t delay_ms)
{
	el_session *s = NULL;
	while (!stopping) {
		record("invoke", "open", NULL);
		const int rc = el_session_open(c, ttl_ms, &s);
		if (rc == EL_OK) {
			el_session_set_lock_delay(s, delay_ms);
			record("ok", "open", "\"session\": %" PRIu64, el_session_id(s));
			return s;
		}
		record("info", "open", "\"error\": \"%s\"", el_strerror(rc));
		sleep_ms(200);
	}
	return NULL;
}

static int acquire(el_session *s, bool elect, uint64_t *token)
{
	if (elect)
		return el_campaign(s, lock_name, who, (uint32_t)strlen(who), 4000, token);
	return el_lock(s, lock_name, false, 4000, token);
}

/* One round: acquire, use, release. Returns 1 when the session must be
 * replaced (lost, expired, or an outcome the worker cannot know). */
static int round_once(el_session *s, bool elect)
{
	const char *f = elect ? "campaign" : "acquire";
	uint64_t token = 0;
	record("invoke", f, "\"session\": %" PRIu64, el_session_id(s));
	const int rc = acquire(s, elect, &token);
	if (rc == EL_EBUSY || rc == EL_EDELAYED) {
		record("fail", f, "\"error\": \"%s\"", el_strerror(rc));
		return 0;
	}
	if (rc != EL_OK) { /* maybe granted, maybe not: a new session drops it */
		record("info", f, "\"error\": \"%s\"", el_strerror(rc));
		return 1;
	}
	record("ok", f, "\"token\": %" PRIu64 ", \"session\": %" PRIu64, token, el_session_id(s));
	if (use_lock(s, token) != 0)
		return 1;
	f = elect ? "resign" : "release";
	record("invoke", f, "\"token\": %" PRIu64, token);
	const int urc = elect ? el_resign(s, lock_name, token) : el_unlock(s, lock_name, token);
	if (urc == EL_OK) {
		record("ok", f, "\"token\": %" PRIu64, token);
		sleep_ms(rand_below(30));
		return 0;
	}
	record("info", f, "\"token\": %" PRIu64 ", \"error\": \"%s\"", token, el_strerror(urc));
	return 1;
}

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

static int run_loop(bool elect)
{
	const uint32_t ttl_ms = (uint32_t)atoi(getenv("CHAOS_TTL_MS") ? getenv("CHAOS_TTL_MS") : "2000");
	const char *d = getenv("CHAOS_LOCK_DELAY_MS");
	const uint32_t delay_ms = (uint32_t)atoi(d ? d : "0");
	el_client *c = open_client();
	while (c != NULL && !stopping) {
		el_session *s = open_session(c, ttl_ms, delay_ms);
		while (s != NULL && !stopping && round_once(s, elect) == 0)
			;
		if (s != NULL) {
			record("invoke", "close", "\"session\": %" PRIu64, el_session_id(s));
			const int rc = el_session_close(s);
			record(rc == EL_OK ? "ok" : "info", "close", "\"error\": \"%s\"",
			       el_strerror(rc));
		}
	}
	if (c != NULL)
		el_client_close(c);
	return 0;
}

/* Under `edgelock lock -- CMD`: read-modify-writes with its token. */
static int run_cmd(void)
{
	const char *tok = getenv("EDGELOCK_TOKEN");
	const uint64_t token = tok ? strtoull(tok, NULL, 10) : 0;
	record("info", "cmd-start", "\"token\": %" PRIu64, token);
	const unsigned rounds = 1 + rand_below(4);
	for (unsigned i = 0; i < rounds; i++) {
		if (read_modify_write(token, 0) != 0)
			return 3;
		sleep_ms(rand_below(20));
	}
	record("info", "cmd-end", "\"token\": %" PRIu64, token);
	return 0;
}

int main(int argc, char **argv)
{
	static const char usage[] =
		"usage: chaos-worker lock|elect|cmd ID\n"
		"  one client of tests/chaos (see its README): takes the lock CHAOS_LOCK, or\n"
		"  campaigns, and does fenced read-modify-writes on the resource at CHAOS_SOCK,\n"
		"  appending every operation to the history file CHAOS_HISTORY.\n"
		"  exit: 0 stopped by SIGTERM; 64 usage; 73 cannot open the history\n";
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc != 3 || getenv("CHAOS_SOCK") == NULL || getenv("CHAOS_HISTORY") == NULL) {
		fputs(usage, stderr);
		return 64;
	}
	who = argv[2];
	sock_path = getenv("CHAOS_SOCK");
	lock_name = getenv("CHAOS_LOCK") ? getenv("CHAOS_LOCK") : "chaos/rmw";
	rng = (unsigned)getpid() ^ (unsigned)(now_s() * 1000);
	history_fd = open(getenv("CHAOS_HISTORY"), O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (history_fd < 0) {
		perror(getenv("CHAOS_HISTORY"));
		return 73;
	}
	const struct sigaction sa = { .sa_handler = on_term };
	sigaction(SIGTERM, &sa, NULL);
	if (strcmp(argv[1], "cmd") == 0)
		return run_cmd();
	return run_loop(strcmp(argv[1], "elect") == 0);
}
