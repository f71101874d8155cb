/*
 * replace_file.c - el_io_replace_file: the one way port/posix replaces a
 * file whole (DIR/snapshot, DIR/wal-newest), so the order of its steps and
 * their error handling, on which a power cut's outcome rests, live in one
 * place. See el_io.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "el_error.h"
#include "el_io.h"

/* Write, fsync and close DIR/TMP_NAME. */
static int write_tmp(const char *tmp, const struct el_io_buf *bufs, size_t n)
{
	const int fd = el_io.open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return el_io_failure("create", tmp, errno);
	int rc = EL_OK;
	for (size_t i = 0; i < n && rc == EL_OK; i++)
		if (el_io_write_all(fd, bufs[i].p, bufs[i].len) != 0)
			rc = el_io_failure("write", tmp, errno);
	/* Never retried: after a failed fsync Linux may mark the pages clean,
	 * unwritten, so a second one that succeeds proves nothing (README). */
	if (rc == EL_OK && el_io.fsync(fd) != 0)
		rc = el_io_failure("fsync", tmp, errno);
	close(fd);
	return rc;
}

int el_io_replace_file(const char *dir, int dir_fd, const char *tmp_name, const char *name,
		       const struct el_io_buf *bufs, size_t n)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s/%s", dir, tmp_name) >= (int)sizeof tmp ||
	    snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
		return EL_EINVAL;
	/* Synced before the rename: a file system may make the rename durable
	 * before the data, and a crash then leaves NAME short or empty. */
	const int rc = write_tmp(tmp, bufs, n);
	if (rc != EL_OK)
		return rc;
	if (el_io.rename(tmp, path) != 0)
		return el_io_failure("rename", tmp, errno);
	/* The rename is durable only once the directory is. */
	if (el_io.fsync(dir_fd) != 0)
		return el_io_failure("directory fsync", dir, errno);
	return EL_OK;
}
