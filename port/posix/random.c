/*
 * random.c - el_random_seed(): a seed for the core's election timers from the
 * kernel's CSPRNG, so two boards booted together do not time out in step.
 */
#include <errno.h>
#include <sys/random.h>

#include "el_error.h"
#include "el_platform.h"

int el_random_seed(uint64_t *seed)
{
	uint64_t v = 0;
	ssize_t n;
	do {
		n = getrandom(&v, sizeof v, 0);
	} while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof v) {
		el_log(EL_LOG_ERROR, "getrandom failed: %s", n < 0 ? "error" : "short read");
		return EL_EIO;
	}
	*seed = v;
	return EL_OK;
}
