/*
 * resolve.c - getaddrinfo() on a thread, waited for or polled (el_resolve.h).
 *
 * glibc's getaddrinfo() cannot be cancelled, so a name goes to a detached
 * thread that holds a reference to the shared job; the caller holds the
 * other. Whoever drops the last one frees the job (and, if the caller had
 * left, the addresses). getaddrinfo_a() would spare the thread, but it
 * hands back a request it still writes to after a timeout, so it needs the
 * same ownership, and it is glibc's alone; a lookup is one per dial of a
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
#include <unistd.h>

#include "el_error.h"
#include "el_resolve.h"

#define HOST_MAX 256
#define PORT_MAX 16

struct el_resolve_job {
	pthread_mutex_t mu;
	pthread_cond_t done_cv; /* on CLOCK_MONOTONIC */
	int refs;               /* the caller's and the thread's */
	bool done;
	bool abandoned;         /* the caller left before the answer */
	int wake_fd;            /* -1 once abandoned */
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

int el_resolve_stuck(void)
{
	pthread_mutex_lock(&stuck_mu);
	const int n = stuck_n;
	pthread_mutex_unlock(&stuck_mu);
	return n;
}

static bool too_many_stuck(void)
{
	return el_resolve_stuck() >= EL_RESOLVE_STUCK_MAX;
}

static const struct addrinfo tcp_hints = { .ai_socktype = SOCK_STREAM,
					   .ai_flags = AI_ADDRCONFIG };

static void job_put(struct el_resolve_job *j)
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
	struct el_resolve_job *j = arg;
	struct addrinfo *list = NULL;
	const int gai = getaddrinfo(j->host, j->port, &tcp_hints, &list);
	pthread_mutex_lock(&j->mu);
	j->gai = gai;
	j->list = gai == 0 ? list : NULL;
	j->done = true;
	const bool abandoned = j->abandoned;
	if (j->wake_fd >= 0) { /* under mu: a drop cannot close it meanwhile */
		const uint64_t one = 1;
		ssize_t rc = write(j->wake_fd, &one, sizeof one);
		(void)rc; /* EAGAIN: already woken */
	}
	pthread_cond_signal(&j->done_cv);
	pthread_mutex_unlock(&j->mu);
	if (abandoned)
		stuck_add(-1);
	job_put(j);
	return NULL;
}

static struct el_resolve_job *job_new(const char *host, const char *port, int wake_fd)
{
	struct el_resolve_job *j = calloc(1, sizeof *j);
	if (j == NULL)
		return NULL;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->done_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&j->mu, NULL);
	j->refs = 1;
	j->wake_fd = wake_fd;
	snprintf(j->host, sizeof j->host, "%s", host);
	snprintf(j->port, sizeof j->port, "%s", port);
	return j;
}

/* Start the job's thread, detached, with every signal blocked: the
 * application's signals are for its own threads. */
static int job_thread(struct el_resolve_job *j)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	j->refs = 2;
	pthread_t t;
	const int rc = pthread_create(&t, &attr, resolve_main, j);
	if (rc != 0)
		j->refs = 1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return rc;
}

struct el_resolve_job *el_resolve_start(const char *host, const char *port, int wake_fd,
					char *err, size_t cap)
{
	if (strlen(host) >= HOST_MAX || strlen(port) >= PORT_MAX) {
		snprintf(err, cap, "cannot resolve %.64s (name too long)", host);
		return NULL;
	}
	struct el_resolve_job *j = job_new(host, port, wake_fd);
	if (j == NULL) {
		snprintf(err, cap, "cannot resolve %s (out of memory)", host);
		return NULL;
	}
	struct addrinfo numeric = tcp_hints;
	numeric.ai_flags |= AI_NUMERICHOST | AI_NUMERICSERV;
	const int gai = getaddrinfo(host, port, &numeric, &j->list);
	if (gai != EAI_NONAME) { /* an address, answered without asking anyone */
		j->gai = gai;
		j->done = true;
		return j;
	}
	if (too_many_stuck()) {
		snprintf(err, cap, "cannot resolve %s (%d earlier lookups still wait for DNS)",
			 host, EL_RESOLVE_STUCK_MAX);
	} else if (job_thread(j) != 0) {
		snprintf(err, cap, "cannot resolve %s (no thread for it)", host);
	} else {
		return j;
	}
	job_put(j);
	return NULL;
}

int el_resolve_take(struct el_resolve_job *j, struct addrinfo **out, char *err, size_t cap)
{
	pthread_mutex_lock(&j->mu);
	const bool done = j->done;
	pthread_mutex_unlock(&j->mu);
	if (!done)
		return 0;
	const int gai = j->gai; /* done: the thread writes nothing more */
	*out = j->list;
	j->list = NULL;
	if (gai != 0)
		snprintf(err, cap, "cannot resolve %s (%s)", j->host, gai_strerror(gai));
	job_put(j);
	return gai == 0 ? 1 : EL_EIO;
}

void el_resolve_drop(struct el_resolve_job *j)
{
	pthread_mutex_lock(&j->mu);
	if (!j->done) {
		j->abandoned = true;
		stuck_add(1); /* under j->mu: the thread cannot subtract first */
	}
	j->wake_fd = -1;
	pthread_mutex_unlock(&j->mu);
	job_put(j);
}

static uint64_t boottime_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait for the job until deadline_ms (UINT64_MAX: no deadline); true when
 * it is done. The deadline is on CLOCK_BOOTTIME, the wait on
 * CLOCK_MONOTONIC: the time left converts. */
static bool job_wait(struct el_resolve_job *j, uint64_t deadline_ms)
{
	const uint64_t now = boottime_ms();
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
	while (!j->done && rc != ETIMEDOUT) {
		if (deadline_ms == UINT64_MAX)
			rc = pthread_cond_wait(&j->done_cv, &j->mu);
		else
			rc = pthread_cond_timedwait(&j->done_cv, &j->mu, &until);
	}
	const bool done = j->done;
	pthread_mutex_unlock(&j->mu);
	return done;
}

int el_resolve(const char *host, const char *port, uint64_t deadline_ms,
	       struct addrinfo **out, char *err, size_t cap)
{
	*out = NULL;
	struct el_resolve_job *j = el_resolve_start(host, port, -1, err, cap);
	if (j == NULL)
		return EL_EIO;
	if (!job_wait(j, deadline_ms)) {
		el_resolve_drop(j); /* the thread frees the job when getaddrinfo() returns */
		snprintf(err, cap, "cannot resolve %s in time (is DNS reachable?)", host);
		return EL_ETIMEDOUT;
	}
	const int rc = el_resolve_take(j, out, err, cap);
	return rc == 1 ? 0 : rc;
}
