/*
 * selftest_panic.c - a broken invariant on the board: EL_ASSERT must reach
 * port/baremetal's el_panic, print where, and end QEMU with status 99
 * (EL_BM_PANIC_STATUS), never fall through.
 */
/* The full report, expression included, even where the board's config makes
 * the core's checks terse (EL_ASSERT_TEXT 0): this image checks el_panic's
 * whole output. */
#undef EL_ASSERT_TEXT
#define EL_ASSERT_TEXT 1
#include "el_assert.h"
#include "el_target.h"

int main(void)
{
	el_target_begin("selftest-panic");
	el_target_end(0);
	volatile int term_went_back = 1;
	EL_ASSERT(term_went_back == 0);
	return 0; /* not reached */
}
