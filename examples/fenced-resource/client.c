/*
 * client.c - the fenced-resource example's client: it takes the lock
 * "example/resource" through libedgelock (waiting up to 30 s), writes a value
 * to the resource server (resource.c) with the lock's fencing token, then
 * writes once more with the same token for every line it reads on stdin,
 * until EOF or the first write that is not accepted. It does not check its
 * lease before those writes (it only prints the lease state it sees), as a
 * client paused (SIGSTOP, a long GC, a suspended VM) between its check and
 * its write would not: the resource's fence is what refuses the late write.
 *
 *   fenced-client NAME SOCKET VALUE    (EDGELOCK_ENDPOINTS, EDGELOCK_CA, EDGELOCK_CERT)
 *
 * Prints one line per step. Exits 0 when every write was accepted, 3 when one
 * was refused by the fence (a stale token), 1 on any other error (no
 * cluster, no lock within 30 s, the resource did not answer or answered ERR).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "edgelock.h"

#define LOCK_NAME "example/resource"
#define TTL_MS 2000
#define EXIT_STALE 3

static const char *who;

/* One request to the resource: send line, read the reply line. */
static int request(const char *sock, const char *line, char *reply, size_t cap)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
	const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
	    send(fd, line, strlen(line), MSG_NOSIGNAL) < 0) { /* closed: no SIGPIPE */
		if (fd >= 0)
			close(fd);
		return -1;
	}
	const ssize_t n = read(fd, reply, cap - 1);
	close(fd);
	if (n <= 0)
		return -1;
	reply[n] = '\0';
	reply[strcspn(reply, "\n")] = '\0';
	return 0;
}

static const char *lease_name(el_session *s)
{
	switch (el_session_state(s, NULL)) {
	case EL_LEASE_OK:
		return "ok";
	case EL_LEASE_IN_DOUBT:
		return "in doubt";
	default:
		return "LOST";
	}
}

/* Write value with token; 0 accepted, EXIT_STALE refused by the fence, 1 error. */
static int write_value(el_session *s, const char *sock, uint64_t token, const char *value)
{
	char line[128], reply[128];
	snprintf(line, sizeof line, "WRITE %" PRIu64 " %s\n", token, value);
	printf("%s: writing %s with token %" PRIu64 " (lease as this client sees it: %s)\n", who,
	       value, token, lease_name(s));
	if (request(sock, line, reply, sizeof reply) != 0) {
		printf("%s: the resource did not answer\n", who);
		return 1;
	}
	if (strncmp(reply, "OK", 2) == 0) {
		printf("%s: write %s token %" PRIu64 " accepted\n", who, value, token);
		return 0;
	}
	if (strncmp(reply, "STALE", 5) == 0) {
		printf("%s: write %s token %" PRIu64 " REFUSED by the fence (%s)\n", who, value,
		       token, reply);
		return EXIT_STALE;
	}
	printf("%s: write %s failed: %s\n", who, value, reply);
	return 1;
}

static el_client *open_client(void)
{
	const struct el_client_options o = { .endpoints = getenv("EDGELOCK_ENDPOINTS"),
					     .ca_file = getenv("EDGELOCK_CA"),
					     .cert_key_file = getenv("EDGELOCK_CERT"),
					     .name = who };
	el_client *c = NULL;
	if (el_client_open(&c, &o) != EL_OK) {
		fprintf(stderr, "%s: %s\n", who, el_client_last_error(NULL));
		return NULL;
	}
	return c;
}

/* Write once per stdin line with the same token, until EOF or the first
 * write not accepted (a later one with the same token would fare no better). */
static int write_loop(el_session *s, const char *sock, uint64_t token, const char *first)
{
	int rc = write_value(s, sock, token, first);
	char line[80];
	while (rc == 0 && fgets(line, sizeof line, stdin) != NULL) {
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] != '\0')
			rc = write_value(s, sock, token, line);
	}
	return rc;
}

int main(int argc, char **argv)
{
	static const char usage[] =
		"usage: fenced-client NAME SOCKET VALUE\n"
		"  takes the lock example/resource (waits up to 30 s), writes VALUE with its\n"
		"  fencing token to the resource server at SOCKET, then one more write with\n"
		"  the same token per line of stdin, until EOF or a write is not accepted.\n"
		"  It never checks its lease before writing: the resource's fence refuses a\n"
		"  stale token. EDGELOCK_ENDPOINTS, EDGELOCK_CA, EDGELOCK_CERT name the cluster.\n"
		"  exit: 0 every write accepted; 3 a write refused by the fence (stale token);\n"
		"  1 other errors (no cluster, no lock, the resource did not answer or said ERR);\n"
		"  64 usage\n";
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc != 4) {
		fputs(usage, stderr);
		return 64;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	who = argv[1];
	el_client *c = open_client();
	el_session *s;
	uint64_t token;
	if (c == NULL || el_session_open(c, TTL_MS, &s) != EL_OK)
		return 1;
	if (el_lock(s, LOCK_NAME, false, 30000, &token) != EL_OK) {
		fprintf(stderr, "%s: lock: %s\n", who, el_client_last_error(c));
		return 1;
	}
	printf("%s: holds %s, session %" PRIu64 ", token %" PRIu64 "\n", who, LOCK_NAME,
	       el_session_id(s), token);
	const int rc = write_loop(s, argv[2], token, argv[3]);
	el_unlock(s, LOCK_NAME, token); /* refused when the session expired: fine */
	el_session_close(s);
	el_client_close(c);
	return rc;
}
