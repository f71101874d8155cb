/*
 * clock.c - el_now_ms(): the monotonic time every core call carries.
 */
#include <time.h>

#include "el_assert.h"
#include "el_platform.h"

uint64_t el_now_ms(void)
{
	struct timespec ts;
	/* CLOCK_MONOTONIC cannot fail on Linux with a valid pointer. */
	int rc = clock_gettime(CLOCK_MONOTONIC, &ts);
	EL_ASSERT(rc == 0);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
