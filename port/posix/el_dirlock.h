/*
 * el_dirlock.h - one process per data directory: an exclusive flock() on
 * DIR/LOCK, released by the kernel when the process dies (even by SIGKILL).
 */
#ifndef EL_DIRLOCK_H
#define EL_DIRLOCK_H

/* The LOCK file's descriptor (>= 0), EL_ELOCKED when another process (or
 * another open of this process) holds it, or EL_EIO. */
int el_dirlock_acquire(const char *dir);
void el_dirlock_release(int fd);
/* Whether another process holds dir's lock: its pid (> 0) as it wrote it
 * into DIR/LOCK, 0 when held but the pid is unknown, -1 when not held (or
 * it cannot tell). Changes nothing. */
long el_dirlock_holder(const char *dir);

#endif /* EL_DIRLOCK_H */
