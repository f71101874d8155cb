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
 * Each line of LOG: "<time> <device> <token> accepted|refused|failed <left>"
 * (refused: a stale token; failed: the fence file could not be read or
 * written, so the write was refused too: a fence fails closed; left: the
 * lease in ms the device had left when the resource decided, 0 when its
 * local deadline had passed: run.py checks that it never has).
 *
 * On stdout, one line when it starts leading and one when it steps down,
 * with why. When the cluster is unreachable it retries for ever, backing
 * off to one try every 5 s, and says why on stderr at most once every 5 s;
 * when the cluster refuses it for good (EL_EPERM: its certificate, or an
 * [acl] rule that does not grant its CN elect on fleet/leader) it exits 77
 * saying what to fix: retrying cannot help.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
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
#define ROLE "fleet/leader"
#define TTL_MS 2000u
/* A write starts only with more lease left than this: far more than a
 * write's worst expected duration (open, flock, the fence file's fsync,
 * rename and directory fsync: milliseconds on a local disk, tens of them on
 * a slow SD card), and less than what a renewed lease leaves (the library
 * renews from TTL/3 on, so about 2/3 of the TTL is left while it renews). */
#define WRITE_GUARD_MS 500u
#define WRITE_EVERY_US 100000u
#define BACKOFF_MIN_US 200000u
#define BACKOFF_MAX_US 5000000u
#define EXIT_REFUSED 77 /* EX_NOPERM, as the edgelock CLI */

static const char *device;   /* this device's NAME */
static char fence_path[4096]; /* LOG.fence */

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* usleep may refuse a second or more (POSIX): nanosleep takes any. */
static void sleep_us(uint64_t us)
{
	struct timespec ts = { .tv_sec = (time_t)(us / 1000000u),
			       .tv_nsec = (long)(us % 1000000u) * 1000 };
	nanosleep(&ts, NULL);
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
 * checked by the fence, logged either way with the lease s had left when
 * the fence decided. */
static int write_resource(el_session *s, const char *log, uint64_t token)
{
	const int fd = open(log, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0)
		return EL_EIO;
	if (flock(fd, LOCK_EX) != 0) {
		close(fd);
		return EL_EIO;
	}
	const int rc = fence_accept(token);
	uint64_t left_ms = 0;
	el_session_state(s, &left_ms);
	dprintf(fd, "%.3f %s %" PRIu64 " %s %" PRIu64 "\n", clock_s(CLOCK_REALTIME), device, token,
		rc == EL_OK ? "accepted" : rc == EL_ESTALE ? "refused" : "failed", left_ms);
	close(fd); /* drops the flock */
	return rc;
}

/* run.py's pause between the lease check and the write, the one a real
 * device may suffer (a scheduler stall, a swap-in, a VM migration): with
 * FLEET_DEVICE_TEST_PAUSE set, a file LOG.pause-NAME makes the device stop
 * itself (SIGSTOP) right there, once. Off unless the variable is set. */
static void test_pause(const char *log)
{
	static char path[4200];
	if (getenv("FLEET_DEVICE_TEST_PAUSE") == NULL)
		return;
	snprintf(path, sizeof path, "%s.pause-%s", log, device);
	if (unlink(path) == 0)
		raise(SIGSTOP);
}

/* Lead: every 100 ms, sleep, check the lease, write at once; until the
 * lease left is under WRITE_GUARD_MS or a write fails. Returns why it
 * stepped down.
 * The check comes right before the write, never a sleep before it: a
 * device that checked, slept 100 ms and then wrote could write up to 100 ms
 * after its local deadline under a plain network cut, when the cluster may
 * already have expired its session and let the next leader write. And the
 * check asks for WRITE_GUARD_MS left, not merely "not lost", so the write
 * also ends before the deadline. The fence is still needed: a pause between
 * the check and the write (run.py makes one, test_pause) can outlast the
 * lease, and then only the fence, seeing a newer leader's higher token,
 * refuses the late write. */
static const char *lead(el_session *s, const char *log, uint64_t token)
{
	static char why[96];
	for (;;) {
		sleep_us(WRITE_EVERY_US);
		uint64_t left_ms;
		if (el_session_state(s, &left_ms) == EL_LEASE_LOST)
			return "lease lost";
		if (left_ms < WRITE_GUARD_MS) {
			snprintf(why, sizeof why, "lease left %" PRIu64 " ms, under the %u ms write guard",
				 left_ms, WRITE_GUARD_MS);
			return why;
		}
		test_pause(log);
		const int rc = write_resource(s, log, token);
		if (rc == EL_ESTALE)
			return "the fence refused token (a newer leader has written)";
		if (rc != EL_OK) {
			snprintf(why, sizeof why, "the write failed: %s", el_strerror(rc));
			return why;
		}
	}
}

/* The cluster refused this device for good: say what to fix and exit. */
static void refused(const char *what, const char *err)
{
	fprintf(stderr,
		"%s: %s: refused (EL_EPERM): %s\n"
		"%s: the cluster will refuse it again: give this device's certificate (its CN, "
		"EDGELOCK_CERT) elect on %s in the daemons' [acl] (e.g. sensor-* = lock, elect, "
		"observe : %s), or use a certificate the cluster accepts (not revoked, OU=client); "
		"docs/security.md\n",
		device, what, err, device, ROLE, ROLE);
	exit(EXIT_REFUSED);
}

/* After a failed open or campaign (err: the library's words for it): exit
 * if the cluster refused this device (retrying cannot help), else wait,
 * doubling the wait up to 5 s. */
static void retry_after(int rc, const char *what, const char *err, uint64_t *backoff_us)
{
	if (rc == EL_EPERM)
		refused(what, err);
	complain("%s: %s", what, err);
	sleep_us(*backoff_us);
	*backoff_us = *backoff_us * 2 > BACKOFF_MAX_US ? BACKOFF_MAX_US : *backoff_us * 2;
}

/* Campaign, lead until it steps down, campaign again, for ever. */
static void serve(el_client *c, const char *log)
{
	uint64_t backoff_us = BACKOFF_MIN_US;
	for (;;) {
		el_session *s;
		uint64_t token;
		int rc = el_session_open(c, TTL_MS, &s);
		if (rc != EL_OK) {
			retry_after(rc, "cannot open a session", el_client_last_error(c), &backoff_us);
			continue;
		}
		rc = el_campaign(s, ROLE, device, (uint32_t)strlen(device), EL_WAIT_INFINITE, &token);
		if (rc != EL_OK) {
			char err[512]; /* el_session_close may replace the last error */
			snprintf(err, sizeof err, "%s", el_client_last_error(c));
			el_session_close(s);
			retry_after(rc, "campaign", err, &backoff_us);
			continue;
		}
		backoff_us = BACKOFF_MIN_US;
		printf("%s: leading %s, token %" PRIu64 "\n", device, ROLE, token);
		fflush(stdout);
		const char *why = lead(s, log, token);
		printf("%s: stepped down: %s\n", device, why);
		fflush(stdout);
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
		"  cluster is unreachable, it retries, saying why on stderr (at most every\n"
		"  5 s). exit: 64 usage; 77 refused by the cluster (EL_EPERM: its [acl] or\n"
		"  the certificate; stderr says what to fix); 78 bad cluster settings\n";
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
