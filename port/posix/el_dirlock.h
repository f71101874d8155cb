/*
 * el_dirlock.h - one process per data directory: an exclusive flock() on
 * the directory itself and on DIR/LOCK, released by the kernel when the
 * process dies (even by SIGKILL). The directory's lock holds even when
 * someone removes DIR/LOCK (taking it for a stale pidfile) while the
 * process runs; LOCK's own lock keeps a process of an older release, which
 * locks LOCK only, out too, and LOCK holds the pid for messages.
 */
#ifndef EL_DIRLOCK_H
#define EL_DIRLOCK_H

/* Both descriptors stay open while the directory is in use. */
struct el_dirlock {
	int dir_fd;  /* the directory, flock()ed; -1 where its file system refuses flock */
	int file_fd; /* DIR/LOCK, flock()ed, the pid written in it */
};

/* EL_OK with *out holding both locks, EL_ELOCKED when another process (or
 * another open of this process) holds either, or EL_EIO (logged). */
int el_dirlock_acquire(const char *dir, struct el_dirlock *out);
/* Releases what acquire took; safe on a zeroed-out lock of -1s. */
void el_dirlock_release(struct el_dirlock *l);
/* Whether another process holds dir's lock: its pid (> 0) as it wrote it
 * into DIR/LOCK, 0 when held but the pid is unknown (DIR/LOCK removed or
 * emptied), -1 when not held (or it cannot tell). Changes nothing. */
long el_dirlock_holder(const char *dir);

#endif /* EL_DIRLOCK_H */
