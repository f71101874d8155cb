/*
 * resolve.c - getaddrinfo() with a deadline (el_resolve.h).
 *
 * glibc's getaddrinfo() cannot be cancelled, so a name goes to a detached
 * thread that holds a reference to the shared job; the caller waits on a
 * condition variable until the answer or its deadline, then drops its own
 * reference. Whoever drops the last one frees the job (and, if the caller
 * had left, the addresses). getaddrinfo_a() would spare the thread, but
 * hands back a request it still writes to after a timeout, so it needs the
 * same ownership dance and is glibc-only; the thread is one per dial of a
 * name, and a dial is rare.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "el_error.h"
#include "el_resolve.h"

#define HOST_MAX 256
#define PORT_MAX 16

struct job {
	pthread_mutex_t mu;
	pthread_cond_t done_cv; /* on CLOCK_MONOTONIC */
	int refs;               /* the caller's and the thread's */
	bool done;
	bool abandoned;         /* the caller left before the answer */
	int gai;                /* getaddrinfo()'s answer, once done */
	struct addrinfo *list;  /* owned by the job until the caller takes it */
	char host[HOST_MAX];
	char port[PORT_MAX];
};

/* Lookups whose thread still runs after their caller left. */
static pthread_mutex_t stuck_mu = PTHREAD_MUTEX_INITIALIZER;
static int stuck_n;

static void stuck_add(int d)
{
	pthread_mutex_lock(&stuck_mu);
	stuck_n += d;
	pthread_mutex_unlock(&stuck_mu);
}

static bool too_many_stuck(void)
{
	pthread_mutex_lock(&stuck_mu);
	const bool full = stuck_n >= EL_RESOLVE_STUCK_MAX;
	pthread_mutex_unlock(&stuck_mu);
	return full;
}

static const struct addrinfo tcp_hints = { .ai_socktype = SOCK_STREAM,
					   .ai_flags = AI_ADDRCONFIG };

static void job_put(struct job *j)
{
	pthread_mutex_lock(&j->mu);
	const int left = --j->refs;
	pthread_mutex_unlock(&j->mu);
	if (left > 0)
		return;
	if (j->list != NULL)
		freeaddrinfo(j->list);
	pthread_cond_destroy(&j->done_cv);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

static void *resolve_main(void *arg)
{
	struct job *j = arg;
	struct addrinfo *list = NULL;
	const int gai = getaddrinfo(j->host, j->port, &tcp_hints, &list);
	pthread_mutex_lock(&j->mu);
	j->gai = gai;
	j->list = gai == 0 ? list : NULL;
	j->done = true;
	const bool abandoned = j->abandoned;
	pthread_cond_signal(&j->done_cv);
	pthread_mutex_unlock(&j->mu);
	if (abandoned)
		stuck_add(-1);
	job_put(j);
	return NULL;
}

static struct job *job_new(const char *host, const char *port)
{
	if (strlen(host) >= HOST_MAX || strlen(port) >= PORT_MAX)
		return NULL;
	struct job *j = calloc(1, sizeof *j);
	if (j == NULL)
		return NULL;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->done_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&j->mu, NULL);
	j->refs = 2;
	snprintf(j->host, sizeof j->host, "%s", host);
	snprintf(j->port, sizeof j->port, "%s", port);
	return j;
}

/* Start the job's thread, detached, with every signal blocked: the
 * application's signals are for its own threads. */
static int job_start(struct job *j)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	const int rc = pthread_create(&t, &attr, resolve_main, j);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return rc;
}

uint64_t el_resolve_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait for the job until deadline_ms; true when it is done. The deadline is
 * on CLOCK_BOOTTIME, the wait on CLOCK_MONOTONIC: the time left converts. */
static bool job_wait(struct job *j, uint64_t deadline_ms)
{
	const uint64_t now = el_resolve_now_ms();
	const uint64_t left = deadline_ms > now ? deadline_ms - now : 0;
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(left / 1000u);
	until.tv_nsec += (long)(left % 1000u) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&j->mu);
	int rc = 0;
	while (!j->done && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&j->done_cv, &j->mu, &until);
	const bool done = j->done;
	j->abandoned = !done;
	if (!done)
		stuck_add(1); /* under j->mu: the thread cannot subtract first */
	pthread_mutex_unlock(&j->mu);
	return done;
}

static int answer(int gai, const char *host, char *err, size_t cap)
{
	if (gai == 0)
		return 0;
	snprintf(err, cap, "cannot resolve %s (%s)", host, gai_strerror(gai));
	return EL_EIO;
}

int el_resolve(const char *host, const char *port, uint64_t deadline_ms,
	       struct addrinfo **out, char *err, size_t cap)
{
	*out = NULL;
	struct addrinfo numeric = tcp_hints;
	numeric.ai_flags |= AI_NUMERICHOST | AI_NUMERICSERV;
	const int gai = getaddrinfo(host, port, &numeric, out);
	if (gai != EAI_NONAME) /* an address, answered without asking anyone */
		return answer(gai, host, err, cap);
	if (deadline_ms == UINT64_MAX)
		return answer(getaddrinfo(host, port, &tcp_hints, out), host, err, cap);
	if (too_many_stuck()) {
		snprintf(err, cap, "cannot resolve %s (%d earlier lookups still wait for DNS)",
			 host, EL_RESOLVE_STUCK_MAX);
		return EL_EIO;
	}
	struct job *j = job_new(host, port);
	if (j == NULL) {
		snprintf(err, cap, "cannot resolve %s (name too long or out of memory)", host);
		return EL_EIO;
	}
	if (job_start(j) != 0) {
		j->refs = 1;
		job_put(j);
		snprintf(err, cap, "cannot resolve %s (no thread for it)", host);
		return EL_EIO;
	}
	if (!job_wait(j, deadline_ms)) {
		job_put(j); /* the thread frees the job when getaddrinfo() returns */
		snprintf(err, cap, "cannot resolve %s in time (is DNS reachable?)", host);
		return EL_ETIMEDOUT;
	}
	const int rc = answer(j->gai, host, err, cap);
	*out = j->list; /* done: only we touch it now */
	j->list = NULL;
	job_put(j);
	return rc;
}
