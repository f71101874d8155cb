/*
 * io.c - the default I/O seam (the real system calls) and small helpers that
 * write a whole buffer through it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "el_error.h"
#include "el_io.h"

static int real_open(const char *path, int flags, mode_t mode)
{
	return open(path, flags | O_CLOEXEC, mode);
}

#define IO_DEFAULT                                                         \
	{                                                                  \
		.open = real_open, .write = write, .pwrite = pwrite,       \
		.fsync = fsync, .fdatasync = fdatasync, .rename = rename,  \
		.ftruncate = ftruncate, .unlink = unlink,                  \
	}

static const struct el_io io_default = IO_DEFAULT;

struct el_io el_io = IO_DEFAULT;

void el_io_reset(void) { el_io = io_default; }

int el_io_pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = el_io.pwrite(fd, p, len, off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) { /* no progress: treat as a full device */
			errno = ENOSPC;
			return -1;
		}
		p += n;
		off += n;
		len -= (size_t)n;
	}
	return 0;
}

int el_io_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = el_io.write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = ENOSPC;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int el_io_error(int err)
{
	return (err == ENOSPC || err == EDQUOT) ? EL_ENOSPC : EL_EIO;
}

static char last_failure[512];
static int last_errno;

int el_io_failure(const char *what, const char *path, int err)
{
	snprintf(last_failure, sizeof last_failure, "%s of %s: %s", what, path, strerror(err));
	last_errno = err;
	return el_io_error(err);
}

const char *el_io_last_failure(void) { return last_failure; }

int el_io_last_errno(void) { return last_errno; }
