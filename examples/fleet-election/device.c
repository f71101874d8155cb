/*
 * device.c - one device of the fleet-election example: it campaigns for the
 * fleet's "leader" role through libedgelock and, while it leads, writes a
 * heartbeat every 100 ms to a shared resource, a log file fenced with the
 * fence kit (core/el_fence.h): the resource keeps the highest token it has
 * accepted (in LOG.fence) and refuses any write with a lower one, so a
 * device that was paused and still believes it leads cannot write after a
 * newer leader has.
 *
 *   device NAME LOG        (EDGELOCK_ENDPOINTS, EDGELOCK_CA, EDGELOCK_CERT)
 *
 * Each line of LOG: "<time> <device> <token> accepted|refused".
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "edgelock.h"
#include "el_fence.h"

static const char *fence_path;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The resource's persistence hook: the highest token, durable. */
static int save_highest(void *ctx, uint64_t highest)
{
	(void)ctx;
	FILE *f = fopen(fence_path, "w");
	if (f == NULL)
		return EL_EIO;
	const bool ok = fprintf(f, "%" PRIu64 "\n", highest) > 0 && fflush(f) == 0 &&
			fsync(fileno(f)) == 0;
	return fclose(f) == 0 && ok ? EL_OK : EL_EIO;
}

/* One write to the resource: serialised by flock (the resource's own lock),
 * checked by the fence, logged either way. */
static int write_resource(const char *log, const char *device, uint64_t token)
{
	int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0 || flock(fd, LOCK_EX) != 0)
		return EL_EIO;
	uint64_t highest = 0;
	FILE *f = fopen(fence_path, "r");
	if (f != NULL) {
		if (fscanf(f, "%" SCNu64, &highest) != 1)
			highest = 0;
		fclose(f);
	}
	struct el_fence fence;
	el_fence_init(&fence, highest, save_highest, NULL);
	const int rc = el_fence_accept(&fence, token);
	dprintf(fd, "%.3f %s %" PRIu64 " %s\n", now_s(), device, token,
		rc == EL_OK ? "accepted" : "refused");
	close(fd); /* drops the flock */
	return rc;
}

int main(int argc, char **argv)
{
	static const char usage[] =
		"usage: fleet-device NAME LOG\n"
		"  campaigns for the fleet's leader role and, while leading, writes a\n"
		"  heartbeat with its token to LOG, fenced by LOG.fence (EDGELOCK_ENDPOINTS,\n"
		"  EDGELOCK_CA, EDGELOCK_CERT name the cluster). exit: 64 usage; 69 no cluster\n";
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc != 3) {
		fputs(usage, stderr);
		return 64;
	}
	static char fp[4096];
	snprintf(fp, sizeof fp, "%s.fence", argv[2]);
	fence_path = fp;
	const struct el_client_options o = { .endpoints = getenv("EDGELOCK_ENDPOINTS"),
					     .ca_file = getenv("EDGELOCK_CA"),
					     .cert_key_file = getenv("EDGELOCK_CERT"), .name = argv[1] };
	el_client *c;
	if (el_client_open(&c, &o) != EL_OK) {
		fprintf(stderr, "%s: %s\n", argv[1], el_client_last_error(NULL));
		return 69;
	}
	for (;;) { /* campaign, lead until the lease is lost, campaign again */
		el_session *s;
		uint64_t token;
		if (el_session_open(c, 2000, &s) != EL_OK) {
			usleep(200000);
			continue;
		}
		if (el_campaign(s, "fleet/leader", argv[1], (uint32_t)strlen(argv[1]),
				EL_WAIT_INFINITE, &token) != EL_OK) {
			el_session_close(s);
			continue;
		}
		/* Lead: write while the lease holds, as a device would. A device
		 * paused past its lease writes once more on resume; the fence
		 * refuses that write. */
		while (write_resource(argv[2], argv[1], token) == EL_OK &&
		       el_session_state(s, NULL) != EL_LEASE_LOST)
			usleep(100000);
		el_session_close(s);
	}
}
