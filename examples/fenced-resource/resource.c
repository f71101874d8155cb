/*
 * resource.c - the fenced-resource example's resource server: it stores one
 * value and accepts a write only when the fence kit (core/el_fence.h) accepts
 * the write's fencing token, so a lock holder that lost its lock (paused past
 * its lease) cannot overwrite what a newer holder wrote. The highest token
 * is made durable through the kit's persistence hook (DIR/fence, written,
 * fsynced and renamed before the kit accepts a higher token,
 * examples/common/fence_file.h), so a restarted server still refuses every
 * token it had fenced off. A DIR/fence or DIR/value that is there but
 * damaged stops it at start (exit 65): it never falls back to 0.
 *
 *   fenced-resource DIR [--no-fence]   serves DIR/sock; keeps DIR/fence and DIR/value
 *
 * A line protocol on the Unix socket, one request per connection, served
 * one at a time; a connection that sends no line within RECV_TIMEOUT_S is
 * closed unanswered, so a silent client cannot hold the others off:
 *   WRITE <token> <value> [CLIENT]  ->  OK <token> | STALE <highest> | ERR <why>
 *   READ                            ->  VALUE <token> <value>   (token 0: none yet)
 *   READ <token>                    ->  the same, once the fence accepted token,
 *                                       else STALE <highest> | ERR <why>
 * STALE is the fence's refusal: a token lower than one already accepted. A
 * fenced READ advances the fence too, so a read-modify-write holds together:
 * a writer whose token is older than a read since is refused.
 *
 * Every accepted write is appended to DIR/writes.jsonl, one JSON object per
 * line: {"t": CLOCK_MONOTONIC seconds, "token", "value", "client"} (the chaos
 * suite's checker reads it, tests/chaos/README.md). --no-fence accepts every
 * token: the control of tests/chaos, which must then see lost updates.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "el_error.h"
#include "el_fence.h"
#include "fence_file.h"

#define VALUE_MAX 64
#define RECV_TIMEOUT_S 2 /* for a connection to send its request line */

struct resource {
	char dir[200];
	char fence_path[256]; /* DIR/fence: the highest token */
	struct el_fence fence;
	uint64_t value_token; /* the token of the write that stored value */
	char value[VALUE_MAX];
	bool no_fence; /* the control: accept every token */
	FILE *writes;  /* DIR/writes.jsonl: every accepted write */
};

/* The value and its token from DIR/value: EL_OK (no file: none yet, "-"
 * with token 0), EL_EIO or EL_ECORRUPT. */
static int load_value(struct resource *r, const char *path)
{
	r->value_token = 0;
	strcpy(r->value, "-");
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return errno == ENOENT ? EL_OK : EL_EIO;
	const bool ok = fscanf(f, "%" SCNu64 " %63s", &r->value_token, r->value) == 2;
	fclose(f);
	return ok ? EL_OK : EL_ECORRUPT;
}

/* Restore what a previous run left: the highest token (DIR/fence) and the
 * value with its token (DIR/value); no files: a new resource. A file that
 * is there but cannot be read or parsed stops the server, since starting
 * at 0 would accept every stale token. The fence starts at the higher of
 * the two tokens: the value's token was accepted too. */
static int load_state(struct resource *r)
{
	char value_path[256];
	snprintf(value_path, sizeof value_path, "%s/value", r->dir);
	uint64_t highest;
	const char *bad = r->fence_path;
	int rc = fence_file_load(r->fence_path, &highest);
	if (rc == EL_OK) {
		bad = value_path;
		rc = load_value(r, value_path);
	}
	if (rc != EL_OK) {
		fprintf(stderr, "fenced-resource: %s: %s: refusing to start (a fence read as 0 "
				"would accept stale tokens; write the highest token accepted into %s)\n",
			bad, el_strerror(rc), r->fence_path);
		return rc;
	}
	el_fence_init(&r->fence, highest > r->value_token ? highest : r->value_token,
		      fence_file_persist, r->fence_path);
	return EL_OK;
}

/* The fence's verdict on token (every token passes with --no-fence). */
static int fence(struct resource *r, uint64_t token)
{
	return r->no_fence ? EL_OK : el_fence_accept(&r->fence, token);
}

/* One line of DIR/writes.jsonl, flushed at once (the checker may read it
 * while the server runs). */
static void record_write(const struct resource *r, uint64_t token, const char *client)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(r->writes, "{\"t\": %.6f, \"token\": %" PRIu64 ", \"value\": \"%s\", \"client\": \"%s\"}\n",
		(double)ts.tv_sec + (double)ts.tv_nsec / 1e9, token, r->value, client);
	fflush(r->writes);
}

/* A refusal's reply (STALE for a stale token, ERR naming any other
 * reason) when rc is not EL_OK; false when there is none. */
static bool refused(const struct resource *r, int rc, char *reply, size_t cap)
{
	if (rc == EL_ESTALE)
		snprintf(reply, cap, "STALE %" PRIu64 "\n", el_fence_highest(&r->fence));
	else if (rc != EL_OK)
		snprintf(reply, cap, "ERR %s\n", el_strerror(rc));
	return rc != EL_OK;
}

/* WRITE: the fence first (which records a higher token durably), then the
 * value. */
static void do_write(struct resource *r, uint64_t token, const char *value, const char *client,
		     char *reply, size_t cap)
{
	if (!refused(r, fence(r, token), reply, cap)) {
		char text[VALUE_MAX + 32], path[256];
		snprintf(text, sizeof text, "%" PRIu64 " %s\n", token, value);
		snprintf(path, sizeof path, "%s/value", r->dir);
		if (durable_write(path, text) != EL_OK) {
			snprintf(reply, cap, "ERR storage\n");
			return;
		}
		r->value_token = token;
		snprintf(r->value, sizeof r->value, "%s", value);
		snprintf(reply, cap, "OK %" PRIu64 "\n", token);
		record_write(r, token, client);
	}
	printf("resource: WRITE token %" PRIu64 " value %s: %s", token, value, reply);
}

/* One request line -> one reply line. */
static void handle(struct resource *r, const char *line, char *reply, size_t cap)
{
	uint64_t token;
	char value[VALUE_MAX], client[VALUE_MAX] = "-";
	if (sscanf(line, "WRITE %" SCNu64 " %63s %63s", &token, value, client) >= 2) {
		do_write(r, token, value, client, reply, cap);
	} else if (strncmp(line, "READ", 4) != 0) {
		snprintf(reply, cap, "ERR bad request\n");
	} else if (sscanf(line, "READ %" SCNu64, &token) != 1 ||
		   !refused(r, fence(r, token), reply, cap)) { /* READ <token>: fenced */
		snprintf(reply, cap, "VALUE %" PRIu64 " %s\n", r->value_token, r->value);
	}
}

/* Read one line (up to cap - 1 bytes, or until the peer stops sending);
 * -1 when the read fails or the connection's receive timeout passes. */
static ssize_t read_line(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	while (n + 1 < cap) {
		const ssize_t got = read(fd, buf + n, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -1;
		if (got == 0 || buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return (ssize_t)n;
}

static int listen_on(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof a.sun_path)
		return -1;
	strcpy(a.sun_path, path);
	unlink(path);
	const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0)
		return -1;
	return fd;
}

int main(int argc, char **argv)
{
	static const char usage[] =
		"usage: fenced-resource DIR [--no-fence]\n"
		"  a resource server on the fence kit: serves DIR/sock, keeps the value and\n"
		"  the highest token in DIR, logs accepted writes to DIR/writes.jsonl;\n"
		"  --no-fence accepts every token (the chaos suite's control).\n"
		"  A connection has %d s to send its line, then it is closed.\n"
		"  exit: 64 usage; 65 DIR/fence or DIR/value is there but damaged or\n"
		"  unreadable (it says which; it never starts from 0); 71 cannot listen on\n"
		"  DIR/sock; 73 cannot open DIR/writes.jsonl\n";
	static struct resource r;
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		printf(usage, RECV_TIMEOUT_S);
		return 0;
	}
	r.no_fence = argc == 3 && strcmp(argv[2], "--no-fence") == 0;
	if ((argc != 2 && !r.no_fence) || strlen(argv[1]) >= sizeof r.dir - 16) {
		fprintf(stderr, usage, RECV_TIMEOUT_S);
		return 64;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(r.dir, sizeof r.dir, "%s", argv[1]);
	snprintf(r.fence_path, sizeof r.fence_path, "%s/fence", r.dir);
	if (load_state(&r) != EL_OK)
		return 65;
	char path[256];
	snprintf(path, sizeof path, "%s/writes.jsonl", r.dir);
	r.writes = fopen(path, "a");
	if (r.writes == NULL) {
		perror(path);
		return 73;
	}
	char sock[256];
	snprintf(sock, sizeof sock, "%s/sock", r.dir);
	const int lfd = listen_on(sock);
	if (lfd < 0) {
		perror("fenced-resource: listen");
		return 71;
	}
	printf("resource: serving %s, highest token %" PRIu64 ", value %s (token %" PRIu64 ")\n",
	       sock, el_fence_highest(&r.fence), r.value, r.value_token);
	/* One request per connection, one at a time: writes are serialised. A
	 * client that connects and stays silent (stopped, hung) would hold every
	 * other one off; the receive timeout drops it after RECV_TIMEOUT_S. */
	const struct timeval recv_timeout = { .tv_sec = RECV_TIMEOUT_S };
	for (;;) {
		const int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		char line[256];
		if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &recv_timeout, sizeof recv_timeout) == 0 &&
		    read_line(fd, line, sizeof line) > 0) {
			char reply[128];
			handle(&r, line, reply, sizeof reply);
			if (send(fd, reply, strlen(reply), MSG_NOSIGNAL) < 0)
				perror("fenced-resource: reply");
		}
		close(fd);
	}
}
