/*
 * selftest_fault.c - an undefined instruction on the board: the fault must
 * reach the default handler and end QEMU with status 100 + 3 on Cortex-M
 * (HardFault, as UsageFault is not enabled) or 100 + 2 on RISC-V (illegal
 * instruction), not hang until the timeout.
 */
#include "el_target.h"

int main(void)
{
	el_target_begin("selftest-fault");
	el_target_end(0);
#if defined(__riscv)
	__asm volatile("unimp");
#else
	__asm volatile("udf #0");
#endif
	return 0; /* not reached */
}
