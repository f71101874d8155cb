/*
 * selftest_fault.c - an undefined instruction on the board: the fault must
 * reach the default handler and end QEMU with status 100 + 3 (HardFault,
 * as UsageFault is not enabled), not hang until the timeout.
 */
#include "el_target.h"

int main(void)
{
	el_target_begin("selftest-fault");
	el_target_end(0);
	__asm volatile("udf #0");
	return 0; /* not reached */
}
