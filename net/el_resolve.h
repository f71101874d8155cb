/*
 * el_resolve.h - a host name to addresses, bounded by a deadline, for
 * libedgelock's link and the daemon's dialer. getaddrinfo() blocks for as
 * long as the resolver likes (5 s per DNS server and try by default), far
 * beyond a client's deadline when DNS is down; so a name is resolved on a
 * short-lived thread and the caller stops waiting at its deadline. Not
 * installed.
 */
#ifndef EL_RESOLVE_H
#define EL_RESOLVE_H

#include <netdb.h>
#include <stddef.h>
#include <stdint.h>

/* Resolve host:port (TCP) by deadline_ms (CLOCK_BOOTTIME ms; UINT64_MAX:
 * none). 0 with *out a list the caller frees with freeaddrinfo(), or
 * EL_ETIMEDOUT / EL_EIO with a message in err. An address is answered at
 * once, without a thread. A resolution that outlives its deadline finishes
 * on its thread, which then frees what it found; while EL_RESOLVE_STUCK_MAX
 * of those are still waiting, a name fails at once (EL_EIO), so a dead DNS
 * cannot pile up threads. */
#define EL_RESOLVE_STUCK_MAX 8

/* The clock of deadline_ms: CLOCK_BOOTTIME in ms. */
uint64_t el_resolve_now_ms(void);

int el_resolve(const char *host, const char *port, uint64_t deadline_ms,
	       struct addrinfo **out, char *err, size_t cap);

#endif /* EL_RESOLVE_H */
