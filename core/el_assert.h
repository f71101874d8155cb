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

/* Defined by the port; must not return. */
_Noreturn void el_panic(const char *file, int line, const char *expr);

/* A board short of flash defines EL_ASSERT_TERSE (boards/common's small
 * config does): a failed check then reports its file and line only, which
 * still name it exactly; the text of the core's two hundred checks costs
 * about 4.5 KB of flash on a Cortex-M3. */
#ifdef EL_ASSERT_TERSE
#define EL_ASSERT(cond) \
	((cond) ? (void)0 : el_panic(__FILE__, __LINE__, ""))
#else
#define EL_ASSERT(cond) \
	((cond) ? (void)0 : el_panic(__FILE__, __LINE__, #cond))
#endif

#endif /* EL_ASSERT_H */
