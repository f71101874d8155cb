/*
 * panic_host.c - el_panic() for host test programs: print the broken
 * invariant and abort, so the test run fails loudly.
 */
#include <stdio.h>
#include <stdlib.h>

#include "el_assert.h"

/* A terse check (a build with EL_ASSERT_TEXT 0): the caller's address. */
_Noreturn void el_panic_here(void)
{
	fprintf(stderr, "edgelock: assertion failed at %p\n", __builtin_return_address(0));
	abort();
}

_Noreturn void el_panic(const char *file, int line, const char *expr)
{
	fprintf(stderr, "edgelock: assertion failed at %s:%d: %s\n", file, line, expr);
	abort();
}
