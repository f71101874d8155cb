/*
 * dirlock.c - the data directory lock. flock() rather than fcntl() locks:
 * flock locks belong to the open file description, so a second open in the
 * same process is refused too, and closing an unrelated descriptor of the
 * file does not silently drop the lock. The holder writes its pid into
 * DIR/LOCK, so that a start refused on a directory in use can name the
 * process (el_dirlock_holder); the locks, not the pid, decide.
 *
 * Two locks. The directory's own (Linux allows flock on a directory opened
 * read-only): with LOCK's alone, `rm DIR/LOCK` while a node ran (someone
 * cleaning what looked like a stale pidfile) let a second edgelockd create
 * a new LOCK, lock that, and recover the live WAL beside the first (found
 * by an outside tester). A lock belongs to the inode, and a directory that
 * holds the node's files is not removed by accident. LOCK's as well: a
 * process of the previous release locks LOCK only, and LOCK keeps the pid.
 * The directory is locked first, so a refused start leaves LOCK alone.
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

static void say_refused(const char *dir, const char *held_on)
{
	const long pid = el_dirlock_holder(dir);
	char who[40] = "";
	if (pid > 0)
		snprintf(who, sizeof who, " (pid %ld)", pid);
	el_log(EL_LOG_ERROR, "data directory %s is in use by another edgelock process%s (lock "
	       "held on %s)", dir, who, held_on);
}

/* The directory's own lock into out->dir_fd. Through open(2), not el_io,
 * whose fault schedules count the storage's calls. A file system that
 * refuses flock on a directory (EL_OK, dir_fd -1) leaves LOCK alone to
 * guard it, as before, with a warning. */
static int lock_dir(const char *dir, struct el_dirlock *out)
{
	out->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (out->dir_fd < 0) {
		el_log(EL_LOG_ERROR, "cannot open data directory %s: %s", dir, strerror(errno));
		return EL_EIO;
	}
	if (flock(out->dir_fd, LOCK_EX | LOCK_NB) == 0)
		return EL_OK;
	const int err = errno;
	close(out->dir_fd);
	out->dir_fd = -1;
	if (err == EWOULDBLOCK) {
		say_refused(dir, dir);
		return EL_ELOCKED;
	}
	el_log(EL_LOG_WARN, "cannot lock data directory %s itself (%s): only %s/LOCK guards it "
	       "now, so never remove that file while a node runs", dir, strerror(err), dir);
	return EL_OK;
}

int el_dirlock_acquire(const char *dir, struct el_dirlock *out)
{
	char path[PATH_MAX];

	*out = (struct el_dirlock){ .dir_fd = -1, .file_fd = -1 };
	if (snprintf(path, sizeof path, "%s/LOCK", dir) >= (int)sizeof path)
		return EL_EINVAL;
	const int rc = lock_dir(dir, out);
	if (rc != EL_OK)
		return rc;
	out->file_fd = el_io.open(path, O_RDWR | O_CREAT, 0600);
	if (out->file_fd < 0) {
		const int err = errno;
		el_log(EL_LOG_ERROR, "cannot open lock file %s: %s", path, strerror(err));
		el_dirlock_release(out);
		(void)el_io_failure("open", path, err); /* the caller's advice goes by it (EROFS) */
		return EL_EIO;
	}
	if (flock(out->file_fd, LOCK_EX | LOCK_NB) != 0) {
		const int err = errno;
		el_dirlock_release(out);
		if (err == EWOULDBLOCK) { /* a process of an older release */
			say_refused(dir, path);
			return EL_ELOCKED;
		}
		el_log(EL_LOG_ERROR, "cannot lock %s: %s", path, strerror(err));
		return EL_EIO;
	}
	/* Advisory, not through el_io (whose fault schedules count its calls):
	 * a failure here only leaves the pid unknown. */
	char pid[24];
	const int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	const bool said = ftruncate(out->file_fd, 0) == 0 &&
			  pwrite(out->file_fd, pid, (size_t)n, 0) == n;
	(void)said;
	return EL_OK;
}

/* DIR/LOCK's holder, as el_dirlock_holder says it, from LOCK alone.
 * O_NONBLOCK: a FIFO named LOCK (a damaged directory) would block the open
 * for ever, waiting for a writer, and the start that asks with it. */
static long file_holder(const char *path)
{
	char text[24] = "";
	const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
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

long el_dirlock_holder(const char *dir)
{
	char path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s/LOCK", dir) >= (int)sizeof path)
		return -1;
	const long pid = file_holder(path);
	const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return pid;
	/* held by a process whose LOCK was removed: in use, its pid unknown */
	const bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
	close(fd);
	return held && pid < 0 ? 0 : pid;
}

void el_dirlock_release(struct el_dirlock *l)
{
	/* closing the only descriptor of each releases its flock */
	if (l->file_fd >= 0)
		close(l->file_fd);
	if (l->dir_fd >= 0)
		close(l->dir_fd);
	l->file_fd = l->dir_fd = -1;
}
