/*
 * nng_threads.c - how many threads nng runs its callbacks on (el_net.h).
 *
 * nng completes every aio on a pool of task threads, two per CPU unless
 * told otherwise. In edgelockd a received frame goes from nng's poller to a
 * task thread (the TCP read), to another turn of one (the TLS record), then
 * to the node thread; a send comes back through the pool twice. With more
 * task threads than cores, most of their time goes to waking one another:
 * on this project's 2-core machine a 3-node cluster under 16 clients spent
 * more kernel time in futex and wake-up paths than in TLS, Raft and fsync
 * together. Measured with make bench-load (issue 14), 4 task threads per
 * daemon (nng's default here) against 2: 16-client cycles/s 3,182 -> 3,999,
 * server CPU per cycle 381 -> 273 us, 1-client latency unchanged.
 *
 * nng 1.7 and later take the pool size through nng_init_set_parameter().
 * nng 1.5 (Debian 12) reads it from nowhere: it sizes the pool once, at its
 * first use, as 2 x sysconf(_SC_NPROCESSORS_ONLN). For it this file defines
 * sysconf(): a definition in the executable binds before libc's for every
 * library the process loads, libnng too. It answers the number of CPUs nng
 * should see while a cap is set and hands every other question, and that
 * one when no cap is set, to glibc's __sysconf. It is linked into the
 * daemon and the UART relay only, never into libedgelock: a library must
 * not change what its host process sees.
 */
#include <unistd.h>

#include <nng/nng.h>

#include "el_net.h"

#if NNG_MAJOR_VERSION == 1 && NNG_MINOR_VERSION >= 7 /* nng 2 sets it in nng_init() */

void el_net_threads(uint32_t n)
{
	if (n == 0)
		return;
	nng_init_set_parameter(NNG_INIT_NUM_TASK_THREADS, n);
	nng_init_set_parameter(NNG_INIT_MAX_TASK_THREADS, n);
}

#elif NNG_MAJOR_VERSION == 1 && defined(__GLIBC__)

long __sysconf(int name); /* glibc's own; sysconf is its weak alias */

static long cpus_for_nng; /* 0: no cap, the truth */

long sysconf(int name)
{
	if (name == _SC_NPROCESSORS_ONLN && cpus_for_nng > 0)
		return cpus_for_nng;
	return __sysconf(name);
}

void el_net_threads(uint32_t n)
{
	/* nng 1.5 starts 2 per CPU it sees: an odd n rounds up. */
	cpus_for_nng = n == 0 ? 0 : (long)((n + 1) / 2);
}

#else /* another C library with nng 1.5, or nng 2 (not ported to): nng's default */

void el_net_threads(uint32_t n)
{
	(void)n;
}

#endif
