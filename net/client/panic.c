/*
 * panic.c - el_panic() for libedgelock: the client codec asserts its own
 * invariants (el_assert.h); a broken one is a bug in edgelock, reported and
 * ended here. Weak, so an application that links the daemon's port (or its
 * own handler) keeps that one.
 */
#include <stdio.h>
#include <stdlib.h>

#include "el_assert.h"

__attribute__((weak)) _Noreturn void el_panic(const char *file, int line, const char *expr)
{
	fprintf(stderr, "libedgelock: assertion failed at %s:%d: %s\n", file, line, expr);
	abort();
}
