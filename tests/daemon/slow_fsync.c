/*
 * slow_fsync.c - an LD_PRELOAD shim for the daemon suites (ops_test.py):
 * while the file named by EL_SLOW_FSYNC_FLAG exists, each fdatasync()
 * first sleeps EL_SLOW_FSYNC_MS milliseconds (default 400). A test makes
 * one node's disk slow, then fast again, without root or a device mapper
 * (dm-delay): the WAL's batch sync (port/posix/wal.c) goes through it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int fdatasync(int fd)
{
	int (*real)(int) = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	const char *flag = getenv("EL_SLOW_FSYNC_FLAG");
	const char *ms_s = getenv("EL_SLOW_FSYNC_MS");
	if (flag != NULL && access(flag, F_OK) == 0) {
		const long ms = ms_s != NULL ? atol(ms_s) : 400;
		const struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	return real != NULL ? real(fd) : -1;
}
