/*
 * wake.c - the CLI's wake pipe (the self-pipe trick): how a signal handler,
 * or a thread, wakes the main thread asleep in poll(2). A signal may land
 * on any thread, the library's too, so the main thread's poll need not see
 * an EINTR: it sees a byte on the pipe instead. Used by lock and elect
 * (run.c: signals, a job's end, CMD's end) and observe (show.c: signals).
 */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "el_cli.h"

static volatile sig_atomic_t wake_wfd = -1;
static int wake_rfd = -1;

void el_cli_wake(void)
{
	const int saved = errno;
	if (wake_wfd >= 0 && write(wake_wfd, "", 1) < 0) {
		/* full (EAGAIN): the waiter has wake-ups enough to read */
	}
	errno = saved;
}

/* The pipe stays open for the process's life: a signal handler on another
 * thread could still be about to write to it. */
int el_cli_wake_fd(void)
{
	int fds[2];
	if (wake_rfd < 0 && pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
		wake_rfd = fds[0];
		wake_wfd = fds[1];
	}
	return wake_rfd;
}

void el_cli_nap(uint64_t ms)
{
	if (ms > 1000u)
		ms = 1000u;
	if (wake_rfd < 0) {
		const struct timespec ts = { 0, (long)(ms < 20u ? ms : 20u) * 1000000L };
		nanosleep(&ts, NULL);
		return;
	}
	struct pollfd p = { .fd = wake_rfd, .events = POLLIN };
	if (poll(&p, 1, (int)ms) > 0) {
		char drain[64];
		while (read(wake_rfd, drain, sizeof drain) > 0)
			;
	}
}
