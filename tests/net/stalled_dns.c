/*
 * stalled_dns.c - getaddrinfo() wrapped at link time (stalled_dns.h).
 */
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "el_resolve.h"
#include "stalled_dns.h"

int __real_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		       struct addrinfo **res);
int __wrap_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		       struct addrinfo **res);

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int running;
static bool missing_found;

void missing_dns_resolves(bool yes)
{
	pthread_mutex_lock(&mu);
	missing_found = yes;
	pthread_mutex_unlock(&mu);
}

/* MISSING_DNS_NAME: not known, or 127.0.0.1 once it resolves. */
static int missing(const char *service, const struct addrinfo *hints, struct addrinfo **res)
{
	pthread_mutex_lock(&mu);
	const bool found = missing_found;
	pthread_mutex_unlock(&mu);
	return found ? __real_getaddrinfo("127.0.0.1", service, hints, res) : EAI_NONAME;
}

static void nap_ms(long ms)
{
	const struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&t, NULL);
}

int __wrap_getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		       struct addrinfo **res)
{
	if (node != NULL && strcmp(node, MISSING_DNS_NAME) == 0)
		return missing(service, hints, res);
	/* An address-only lookup answers at once, as the real one does. */
	if (node == NULL || strcmp(node, STALLED_DNS_NAME) != 0 ||
	    (hints != NULL && (hints->ai_flags & AI_NUMERICHOST)))
		return __real_getaddrinfo(node, service, hints, res);
	pthread_mutex_lock(&mu);
	running++;
	pthread_mutex_unlock(&mu);
	nap_ms(STALLED_DNS_MS);
	pthread_mutex_lock(&mu);
	running--;
	pthread_mutex_unlock(&mu);
	return EAI_AGAIN;
}

bool stalled_dns_wait_idle(void)
{
	for (int waited = 0; waited <= 2 * STALLED_DNS_MS; waited += 20) {
		pthread_mutex_lock(&mu);
		const int n = running;
		pthread_mutex_unlock(&mu);
		if (n == 0 && el_resolve_stuck() == 0) {
			nap_ms(50);
			return true;
		}
		nap_ms(20);
	}
	return false;
}
