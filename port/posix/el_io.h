/*
 * el_io.h - the I/O seam: every call of port/posix that changes the disk goes
 * through this table, so tests can make the Nth write or fsync fail with
 * ENOSPC or EIO. The default entries are the real system calls.
 */
#ifndef EL_IO_H
#define EL_IO_H

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

#endif /* EL_IO_H */
