/*
 * dir_file.c - a small file of data_dir written whole: to a temp file,
 * synced, renamed over the old one, the directory synced. A crash leaves
 * the old file or the new one, never a part (incarnation.c, owner.c).
 *
 * The steps of port/posix's el_io_replace_file, kept apart on purpose:
 * that one goes through the storage's I/O seam (whose fault schedules count
 * the storage's calls) and records its failure as the storage's own
 * (el_io_last_failure); and it leaves its temp file for the storage's open
 * to remove, while nothing removes owner.tmp or incarnation.tmp but this.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "el_daemon.h"
#include "el_error.h"

/* Write all n bytes of text to fd: a short write (a full disk, say) goes
 * on, as write(2) allows, until the call that fails says why. */
static bool write_all(int fd, const char *text, size_t n)
{
	while (n > 0) {
		const ssize_t w = write(fd, text, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC; /* no progress and no reason: say the likely one */
			return false;
		}
		text += w;
		n -= (size_t)w;
	}
	return true;
}

int el_d_replace_file(const char *dir, const char *path, const void *text, size_t n)
{
	char tmp[EL_DCFG_PATH_MAX + 64];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
		return EL_EINVAL;
	const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	bool ok = fd >= 0 && write_all(fd, text, n) && fsync(fd) == 0;
	int err = errno; /* the failed step's, kept past the closes below */
	if (fd >= 0)
		close(fd);
	if (ok) {
		ok = rename(tmp, path) == 0;
		err = errno;
	}
	int dfd = -1;
	if (ok) {
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		ok = dfd >= 0 && fsync(dfd) == 0;
		err = errno;
	}
	if (dfd >= 0)
		close(dfd);
	if (!ok) {
		el_log(EL_LOG_ERROR, "cannot write %s: %s", path, strerror(err));
		(void)unlink(tmp);
		return EL_EIO;
	}
	return EL_OK;
}
