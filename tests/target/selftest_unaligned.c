/*
 * selftest_unaligned.c - a 32-bit load from an odd address. An M0+ (Armv6-M)
 * faults on it, so the M0+ image must too, run where it runs (QEMU's M3
 * model, with CCR.UNALIGN_TRP set by the reset code) or the M0+ suites would
 * miss the unaligned accesses a real M0+ traps. An Armv7-M or RISC-V image
 * without trapping just reads the word and exits 0.
 */
#include <stdint.h>

#include "el_target.h"

static uint8_t bytes[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
/* Read through a volatile pointer, so the compiler cannot see the address is
 * odd and split the load into bytes itself. */
static uint8_t *volatile odd_address = &bytes[1];

int main(void)
{
	el_target_begin("selftest-unaligned");
	el_target_end(0);
	const volatile uint32_t *odd = (const volatile uint32_t *)(uintptr_t)odd_address;
	return *odd == 0u ? 2 : 0;
}
