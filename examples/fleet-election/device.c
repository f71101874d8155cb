/*
 * device.c - one device of the fleet-election example: it campaigns for the
 * fleet's "leader" role through libedgelock and, while it leads, writes a
 * heartbeat every 100 ms to a shared resource, a log file fenced with the
 * fence kit (core/el_fence.h): the resource keeps the highest token it has
 * accepted (in LOG.fence, examples/common/fence_file.h) and refuses any
 * write with a lower one, so a device that was paused and still believes it
 * leads cannot write after a newer leader has.
 *
 *   device NAME LOG        (EDGELOCK_ENDPOINTS, EDGELOCK_CA, EDGELOCK_CERT)
 *
 * Each line of LOG: "<time> <device> <token> accepted|refused|failed"
 * (refused: a stale token; failed: the fence file could not be read or
 * written, so the write was refused too: a fence fails closed).
 *
 * A device does not give up: when the cluster is unreachable or refuses it,
 * it retries for ever and says why on stderr, at most once every 5 s.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "edgelock.h"
#include "el_fence.h"
#include "fence_file.h"

#define COMPLAIN_EVERY_S 5.0

static const char *device;   /* this device's NAME */
static char fence_path[4096]; /* LOG.fence */

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Why a pass failed, on stderr: the first time at once, then at most once
 * every COMPLAIN_EVERY_S (a device retries for ever; its log must not fill
 * with the same line ten times a second). */
__attribute__((format(printf, 1, 2))) static void complain(const char *fmt, ...)
{
	static double last_s = -COMPLAIN_EVERY_S;
	const double now = clock_s(CLOCK_MONOTONIC);
	if (now - last_s < COMPLAIN_EVERY_S)
		return;
	last_s = now;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", device);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The fence's verdict on token, under the resource's flock: a fence file
 * that is there but unreadable refuses the write (never read as 0). */
static int fence_accept(uint64_t token)
{
	uint64_t highest;
	int rc = fence_file_load(fence_path, &highest);
	if (rc == EL_OK) {
		struct el_fence fence;
		el_fence_init(&fence, highest, fence_file_persist, fence_path);
		rc = el_fence_accept(&fence, token);
	}
	if (rc != EL_OK && rc != EL_ESTALE)
		complain("%s: %s: write refused (the fence fails closed)", fence_path,
			 el_strerror(rc));
	return rc;
}

/* One write to the resource: serialised by flock (the resource's own lock),
 * checked by the fence, logged either way. */
static int write_resource(const char *log, uint64_t token)
{
	const int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0)
		return EL_EIO;
	if (flock(fd, LOCK_EX) != 0) {
		close(fd);
		return EL_EIO;
	}
	const int rc = fence_accept(token);
	dprintf(fd, "%.3f %s %" PRIu64 " %s\n", clock_s(CLOCK_REALTIME), device, token,
		rc == EL_OK ? "accepted" : rc == EL_ESTALE ? "refused" : "failed");
	close(fd); /* drops the flock */
	return rc;
}

/* Lead: write, then check the lease, every 100 ms, until either fails.
 * Writing before checking is this example's point, not a pattern to copy:
 * a device paused past its lease (run.py SIGSTOPs one) writes once more on
 * resume, and only the fence makes that harmless (a newer leader has
 * written with a higher token, so the late write is refused). A real
 * device checks el_session_state first and stops at EL_LEASE_IN_DOUBT, and
 * still needs the fence: a pause can fall between its check and its write. */
static void lead(el_session *s, const char *log, uint64_t token)
{
	while (write_resource(log, token) == EL_OK && el_session_state(s, NULL) != EL_LEASE_LOST)
		usleep(100000);
}

/* Campaign, lead until the lease is lost, campaign again, for ever. */
static void serve(el_client *c, const char *log)
{
	for (;;) {
		el_session *s;
		uint64_t token;
		if (el_session_open(c, 2000, &s) != EL_OK) {
			complain("cannot open a session: %s", el_client_last_error(c));
			usleep(200000);
			continue;
		}
		if (el_campaign(s, "fleet/leader", device, (uint32_t)strlen(device),
				EL_WAIT_INFINITE, &token) != EL_OK) {
			complain("campaign: %s", el_client_last_error(c));
			el_session_close(s);
			usleep(200000);
			continue;
		}
		lead(s, log, token);
		el_session_close(s);
	}
}

int main(int argc, char **argv)
{
	static const char usage[] =
		"usage: fleet-device NAME LOG\n"
		"  campaigns for the fleet's leader role and, while leading, writes a\n"
		"  heartbeat with its token to LOG, fenced by LOG.fence (EDGELOCK_ENDPOINTS,\n"
		"  EDGELOCK_CA, EDGELOCK_CERT name the cluster). Runs until killed: when the\n"
		"  cluster is unreachable or refuses it, it retries, saying why on stderr\n"
		"  (at most every 5 s). exit: 64 usage; 78 bad cluster settings (stderr says which)\n";
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc != 3 || strlen(argv[2]) + sizeof ".fence" > sizeof fence_path) {
		fputs(usage, stderr);
		return 64;
	}
	device = argv[1];
	snprintf(fence_path, sizeof fence_path, "%s.fence", argv[2]);
	const struct el_client_options o = { .endpoints = getenv("EDGELOCK_ENDPOINTS"),
					     .ca_file = getenv("EDGELOCK_CA"),
					     .cert_key_file = getenv("EDGELOCK_CERT"), .name = device };
	el_client *c;
	if (el_client_open(&c, &o) != EL_OK) {
		fprintf(stderr, "%s: %s\n", device, el_client_last_error(NULL));
		return 78;
	}
	serve(c, argv[2]);
}
