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
/* A microcontroller image: each check is its condition and one call (4
 * bytes of Thumb, against about 14 with a file, a line and a text to pass;
 * some 3 KiB over the core). The port reports the address the call returns
 * to, and `addr2line -e node.elf ADDR` names the file and line of the check,
 * as Zephyr and most RTOS images do. Defined by the port; must not return. */
_Noreturn void el_panic_here(void);
#define EL_ASSERT(cond) ((cond) ? (void)0 : el_panic_here())
#endif

#endif /* EL_ASSERT_H */
