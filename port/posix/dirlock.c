/*
 * dirlock.c - the data directory lock. flock() rather than fcntl() locks:
 * flock locks belong to the open file description, so a second open in the
 * same process is refused too, and closing an unrelated descriptor of the
 * file does not silently drop the lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "el_dirlock.h"
#include "el_error.h"
#include "el_io.h"
#include "el_platform.h"

int el_dirlock_acquire(const char *dir)
{
	char path[PATH_MAX];
	int fd;

	if (snprintf(path, sizeof path, "%s/LOCK", dir) >= (int)sizeof path)
		return EL_EINVAL;
	fd = el_io.open(path, O_RDWR | O_CREAT, 0600);
	if (fd < 0) {
		el_log(EL_LOG_ERROR, "cannot open lock file %s: %s", path, strerror(errno));
		return EL_EIO;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int err = errno;
		close(fd);
		if (err == EWOULDBLOCK) {
			el_log(EL_LOG_ERROR, "data directory %s is in use by another edgelock process "
			       "(lock held on %s)", dir, path);
			return EL_ELOCKED;
		}
		el_log(EL_LOG_ERROR, "cannot lock %s: %s", path, strerror(err));
		return EL_EIO;
	}
	return fd;
}

void el_dirlock_release(int fd)
{
	if (fd >= 0)
		close(fd); /* closing the only descriptor releases the flock */
}
