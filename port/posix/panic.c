/*
 * panic.c - el_panic() for Linux: a broken core invariant is a bug, and going
 * on could hand one lock to two holders, so log it and abort (core dump).
 */
#include <stdlib.h>

#include "el_assert.h"
#include "el_platform.h"

_Noreturn void el_panic(const char *file, int line, const char *expr)
{
	el_log(EL_LOG_ERROR, "assertion failed at %s:%d: %s", file, line, expr);
	abort();
}
