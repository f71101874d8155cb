/*
 * el_io.h - the I/O seam: every call of port/posix that changes the disk goes
 * through this table, so tests can make the Nth write or fsync fail with
 * ENOSPC or EIO. The default entries are the real system calls.
 */
#ifndef EL_IO_H
#define EL_IO_H

#include <stddef.h>
#include <sys/types.h>

struct el_io {
	int (*open)(const char *path, int flags, mode_t mode);
	ssize_t (*write)(int fd, const void *buf, size_t len);
	ssize_t (*pwrite)(int fd, const void *buf, size_t len, off_t off);
	int (*fsync)(int fd);
	int (*fdatasync)(int fd);
	int (*rename)(const char *from, const char *to);
	int (*ftruncate)(int fd, off_t len);
	int (*unlink)(const char *path);
};

extern struct el_io el_io;

/* Put the real system calls back. */
void el_io_reset(void);

/* Write all of buf at off (pwrite loops over short writes and EINTR);
 * 0, or -1 with errno set. */
int el_io_pwrite_all(int fd, const void *buf, size_t len, off_t off);
int el_io_write_all(int fd, const void *buf, size_t len);

/* An errno from a failed write/fsync as an EL_E* code: ENOSPC and EDQUOT are
 * EL_ENOSPC, everything else EL_EIO. */
int el_io_error(int err);

/* Remember what failed ("fdatasync", path, errno) and return el_io_error(err),
 * so the storage can log the failure once, in one line, with its cause. */
int el_io_failure(const char *what, const char *path, int err);
/* "fdatasync of PATH: Input/output error", or "" when nothing failed. */
const char *el_io_last_failure(void);
/* That failure's errno (0: none), so that a message can say what to do
 * about it: a full disk, the open-files limit, an I/O error. */
int el_io_last_errno(void);

/* One piece of a file's contents. */
struct el_io_buf {
	const void *p;
	size_t len;
};

/* replace_file.c: DIR/NAME replaced whole by the n pieces of bufs, one
 * after the other: written to DIR/TMP_NAME (created or truncated, 0600),
 * fsynced, closed, renamed over DIR/NAME, then dir_fd (DIR's) fsynced. A
 * crash at any point leaves the old file or the new one under NAME, never
 * a mix, and perhaps TMP_NAME, garbage the open removes (storage_recover.c:
 * remove_tmp). 0; EL_EINVAL (a path too long, nothing done); or the code of
 * the step that failed, recorded with el_io_failure ("create", "write",
 * "fsync", "rename" of DIR/TMP_NAME, "directory fsync" of DIR), not retried,
 * nothing done after it, TMP_NAME left. */
int el_io_replace_file(const char *dir, int dir_fd, const char *tmp_name, const char *name,
		       const struct el_io_buf *bufs, size_t n);

#endif /* EL_IO_H */
