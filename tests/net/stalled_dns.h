/*
 * stalled_dns.h - a resolver that sits on one name, for the tests of
 * el_resolve's deadline. Link with -Wl,--wrap=getaddrinfo: a lookup of
 * STALLED_DNS_NAME takes STALLED_DNS_MS and fails (EAI_AGAIN), as one does
 * when no DNS server answers; one of MISSING_DNS_NAME fails at once
 * (EAI_NONAME, "Name or service not known") until missing_dns_resolves()
 * makes it 127.0.0.1 (a name added to DNS); every other name goes to the
 * real resolver.
 */
#ifndef STALLED_DNS_H
#define STALLED_DNS_H

#include <stdbool.h>

#define STALLED_DNS_NAME "stalled.test"
#define STALLED_DNS_MS 2000

/* Wait until no stalled lookup is running and el_resolve counts none as
 * stuck, then a little more for their threads to free what they hold;
 * false if one still runs after twice STALLED_DNS_MS. */
bool stalled_dns_wait_idle(void);

#define MISSING_DNS_NAME "missing.test"

/* From now on MISSING_DNS_NAME resolves (to 127.0.0.1), or again not. */
void missing_dns_resolves(bool yes);

#endif /* STALLED_DNS_H */
