/*
 * dirlock.c - the data directory lock. flock() rather than fcntl() locks:
 * flock locks belong to the open file description, so a second open in the
 * same process is refused too, and closing an unrelated descriptor of the
 * file does not silently drop the lock. The holder writes its pid into the
 * file, so that a start refused on a directory in use can name the
 * process (el_dirlock_holder); the lock, not the pid, decides.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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
			const long pid = el_dirlock_holder(dir);
			char who[40] = "";
			if (pid > 0)
				snprintf(who, sizeof who, " (pid %ld)", pid);
			el_log(EL_LOG_ERROR, "data directory %s is in use by another edgelock "
			       "process%s (lock held on %s)", dir, who, path);
			return EL_ELOCKED;
		}
		el_log(EL_LOG_ERROR, "cannot lock %s: %s", path, strerror(err));
		return EL_EIO;
	}
	/* Advisory, not through el_io (whose fault schedules count its calls):
	 * a failure here only leaves the pid unknown. */
	char pid[24];
	const int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	const bool said = ftruncate(fd, 0) == 0 && pwrite(fd, pid, (size_t)n, 0) == n;
	(void)said;
	return fd;
}

long el_dirlock_holder(const char *dir)
{
	char path[PATH_MAX], text[24] = "";
	if (snprintf(path, sizeof path, "%s/LOCK", dir) >= (int)sizeof path)
		return -1;
	const int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) { /* nobody holds it: not in use */
		close(fd);
		return -1;
	}
	const ssize_t n = errno == EWOULDBLOCK ? pread(fd, text, sizeof text - 1, 0) : -1;
	close(fd);
	if (n < 0)
		return -1;
	text[n] = '\0';
	char *end;
	const long pid = strtol(text, &end, 10);
	return end != text && (*end == '\n' || *end == '\0') && pid > 0 ? pid : 0;
}

void el_dirlock_release(int fd)
{
	if (fd >= 0)
		close(fd); /* closing the only descriptor releases the flock */
}
