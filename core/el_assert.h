/*
 * el_assert.h - invariant checks of the core, on in every build.
 *
 * An assertion names a bug in edgelock, never bad input: input from outside is
 * answered with an EL_E* code. A failed assertion calls el_panic(), which each
 * port defines (log and abort on Linux, semihosting exit or reset on a board):
 * continuing with a broken invariant could hand one lock to two holders.
 */
#ifndef EL_ASSERT_H
#define EL_ASSERT_H

#include "el_config.h"

/* Defined by the port; must not return. */
_Noreturn void el_panic(const char *file, int line, const char *expr);

#if EL_ASSERT_TEXT
#define EL_ASSERT(cond) ((cond) ? (void)0 : el_panic(__FILE__, __LINE__, #cond))
#else
#define EL_ASSERT(cond) ((cond) ? (void)0 : el_panic(__FILE__, __LINE__, ""))
#endif

#endif /* EL_ASSERT_H */
