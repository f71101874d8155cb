/*
 * el_resolve.h - a host name to addresses without waiting past a deadline,
 * for libedgelock's link and the daemon's dialer. getaddrinfo() blocks for
 * as long as the resolver likes (5 s per DNS server and try by default),
 * far beyond a client's deadline when DNS is down, and it cannot be
 * cancelled; so a name is resolved on a short-lived thread, and the caller
 * either waits for it until a deadline (el_resolve) or polls it
 * (el_resolve_start / el_resolve_take / el_resolve_drop). Not installed.
 */
#ifndef EL_RESOLVE_H
#define EL_RESOLVE_H

#include <netdb.h>
#include <stddef.h>
#include <stdint.h>

/* Lookups still running after their caller gave up on them. While this
 * many are, a new name fails at once (EL_EIO), so a dead DNS cannot pile
 * up threads. */
#define EL_RESOLVE_STUCK_MAX 8

/* How many lookups run now after their caller gave up on them. */
int el_resolve_stuck(void);

/* Resolve host:port (TCP) by deadline_ms (CLOCK_BOOTTIME ms, as
 * el_link.h's deadlines; UINT64_MAX: none). 0 with *out a
 * list the caller frees with freeaddrinfo(), or EL_ETIMEDOUT / EL_EIO with
 * a message in err. An address is answered at once, without a thread. */
int el_resolve(const char *host, const char *port, uint64_t deadline_ms,
	       struct addrinfo **out, char *err, size_t cap);

/* One lookup under way, polled. */
struct el_resolve_job;

/* Start resolving host:port; NULL with a message in err when it cannot
 * start (name too long, no memory, no thread, too many stuck). When it is
 * done, 1 is added to the eventfd wake_fd (-1: none), unless the job was
 * dropped before. An address is done at once. */
struct el_resolve_job *el_resolve_start(const char *host, const char *port, int wake_fd,
					char *err, size_t cap);

/* 0 while the lookup runs; once it is done, 1 with *out the list (the
 * caller's to free), or EL_EIO with a message in err. Ends the job either
 * way, as el_resolve_drop does. */
int el_resolve_take(struct el_resolve_job *j, struct addrinfo **out, char *err, size_t cap);

/* Give the job up: a lookup still running finishes on its thread, frees
 * what it found and counts as stuck until then; wake_fd is not written. */
void el_resolve_drop(struct el_resolve_job *j);

#endif /* EL_RESOLVE_H */
