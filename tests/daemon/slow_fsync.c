/*
 * slow_fsync.c - an LD_PRELOAD shim for the daemon suites (ops_test.py):
 * while the file named by EL_SLOW_FSYNC_FLAG exists, each fdatasync()
 * first sleeps EL_SLOW_FSYNC_MS milliseconds (default 400). A test makes
 * one node's disk slow, then fast again, without root or a device mapper
 * (dm-delay): the WAL's batch sync (port/posix/wal.c) goes through it.
 *
 * And while the file named by EL_EROFS_FLAG exists, every open() for
 * writing of a path under EL_EROFS_DIR fails with EROFS, while statvfs and
 * access() still call the file system writable: what ext4's
 * errors=remount-ro does since Linux 6.12 (it no longer sets the mount
 * read-only), which no test can mount.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
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

static int refused(const char *path, int flags)
{
	const char *dir = getenv("EL_EROFS_DIR"), *flag = getenv("EL_EROFS_FLAG");
	return dir != NULL && flag != NULL && (flags & (O_WRONLY | O_RDWR | O_CREAT)) != 0 &&
	       strncmp(path, dir, strlen(dir)) == 0 && access(flag, F_OK) == 0;
}

static int open_as(const char *name, const char *path, int flags, mode_t mode)
{
	int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, name);
	if (refused(path, flags)) {
		errno = EROFS;
		return -1;
	}
	return real != NULL ? real(path, flags, mode) : -1;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	const mode_t mode = (flags & O_CREAT) != 0 ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	return open_as("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	const mode_t mode = (flags & O_CREAT) != 0 ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	return open_as("open64", path, flags, mode);
}
