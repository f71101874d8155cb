/*
 * resource.c - the fenced-resource example's resource server: it stores one
 * value and accepts a write only when the fence kit (core/el_fence.h) accepts
 * the write's fencing token, so a lock holder that lost its lock (paused past
 * its lease) cannot overwrite what a newer holder wrote. The highest token
 * is made durable through the kit's persistence hook (DIR/fence, written and
 * fsynced before the kit accepts a higher token), so a restarted server still
 * refuses every token it had fenced off.
 *
 *   fenced-resource DIR [--no-fence]   serves DIR/sock; keeps DIR/fence and DIR/value
 *
 * A line protocol on the Unix socket, one request per connection:
 *   WRITE <token> <value> [CLIENT]  ->  OK <token> | STALE <highest> | ERR <why>
 *   READ                            ->  VALUE <token> <value>   (token 0: none yet)
 *   READ <token>                    ->  the same, once the fence accepted token
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
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "el_error.h"
#include "el_fence.h"

#define VALUE_MAX 64

struct resource {
	char dir[200];
	struct el_fence fence;
	uint64_t value_token; /* the token of the write that stored value */
	char value[VALUE_MAX];
	bool no_fence; /* the control: accept every token */
	FILE *writes;  /* DIR/writes.jsonl: every accepted write */
};

/* Write text to DIR/name durably: a temporary file, fsync, rename. */
static int save_file(const char *dir, const char *name, const char *text)
{
	char tmp[256], path[256];
	snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(tmp, "w");
	if (f == NULL)
		return EL_EIO;
	const int ok = fputs(text, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
	if (fclose(f) != 0 || !ok || rename(tmp, path) != 0)
		return EL_EIO;
	return EL_OK;
}

/* The fence kit's persistence hook: the highest token, durable. */
static int persist_highest(void *ctx, uint64_t highest)
{
	const struct resource *r = ctx;
	char text[32];
	snprintf(text, sizeof text, "%" PRIu64 "\n", highest);
	return save_file(r->dir, "fence", text);
}

/* Restore the highest token and the value a previous run left (none: 0). */
static void load_state(struct resource *r)
{
	char path[256];
	uint64_t highest = 0;
	snprintf(path, sizeof path, "%s/fence", r->dir);
	FILE *f = fopen(path, "r");
	if (f != NULL) {
		if (fscanf(f, "%" SCNu64, &highest) != 1)
			highest = 0;
		fclose(f);
	}
	el_fence_init(&r->fence, highest, persist_highest, r);
	snprintf(path, sizeof path, "%s/value", r->dir);
	f = fopen(path, "r");
	if (f == NULL || fscanf(f, "%" SCNu64 " %63s", &r->value_token, r->value) != 2) {
		r->value_token = 0;
		strcpy(r->value, "-");
	}
	if (f != NULL)
		fclose(f);
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

/* WRITE: the fence first (which records a higher token durably), then the
 * value. */
static void do_write(struct resource *r, uint64_t token, const char *value, const char *client,
		     char *reply, size_t cap)
{
	const int rc = fence(r, token);
	if (rc == EL_ESTALE) {
		snprintf(reply, cap, "STALE %" PRIu64 "\n", el_fence_highest(&r->fence));
	} else if (rc != EL_OK) {
		snprintf(reply, cap, "ERR %s\n", el_strerror(rc));
	} else {
		char text[VALUE_MAX + 32];
		snprintf(text, sizeof text, "%" PRIu64 " %s\n", token, value);
		if (save_file(r->dir, "value", text) != EL_OK) {
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
	int rc;
	if (sscanf(line, "WRITE %" SCNu64 " %63s %63s", &token, value, client) >= 2)
		do_write(r, token, value, client, reply, cap);
	else if (sscanf(line, "READ %" SCNu64, &token) == 1 && (rc = fence(r, token)) != EL_OK)
		snprintf(reply, cap, rc == EL_ESTALE ? "STALE %" PRIu64 "\n" : "ERR %" PRIu64 "\n",
			 el_fence_highest(&r->fence));
	else if (strncmp(line, "READ", 4) == 0)
		snprintf(reply, cap, "VALUE %" PRIu64 " %s\n", r->value_token, r->value);
	else
		snprintf(reply, cap, "ERR bad request\n");
}

/* Read one line (up to cap - 1 bytes, or until the peer stops sending). */
static ssize_t read_line(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	while (n + 1 < cap) {
		const ssize_t got = read(fd, buf + n, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0 || buf[n] == '\n')
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
		"  exit: 64 usage; 73 cannot open or listen in DIR\n";
	static struct resource r;
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	r.no_fence = argc == 3 && strcmp(argv[2], "--no-fence") == 0;
	if ((argc != 2 && !r.no_fence) || strlen(argv[1]) >= sizeof r.dir - 16) {
		fputs(usage, stderr);
		return 64;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(r.dir, sizeof r.dir, "%s", argv[1]);
	load_state(&r);
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
	for (;;) { /* one request per connection, one at a time: writes are serialised */
		const int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		char line[256];
		if (read_line(fd, line, sizeof line) > 0) {
			char reply[128];
			handle(&r, line, reply, sizeof reply);
			if (send(fd, reply, strlen(reply), MSG_NOSIGNAL) < 0)
				perror("fenced-resource: reply");
		}
		close(fd);
	}
}
