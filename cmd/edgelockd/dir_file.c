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

int el_d_replace_file(const char *dir, const char *path, const void *text, size_t n)
{
	char tmp[EL_DCFG_PATH_MAX + 64];
	if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
		return EL_EINVAL;
	const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	bool ok = fd >= 0 && write(fd, text, n) == (ssize_t)n && fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	ok = ok && rename(tmp, path) == 0;
	const int dfd = ok ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	ok = ok && dfd >= 0 && fsync(dfd) == 0;
	if (dfd >= 0)
		close(dfd);
	if (!ok) {
		el_log(EL_LOG_ERROR, "cannot write %s: %s", path, strerror(errno));
		(void)unlink(tmp);
		return EL_EIO;
	}
	return EL_OK;
}
