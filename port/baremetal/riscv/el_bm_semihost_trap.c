/*
 * el_bm_semihost_trap.c - one semihosting request on RISC-V: the operation
 * in a0, its argument block in a1, and EBREAK between the two marker
 * instructions of the RISC-V semihosting spec (slli x0,x0,0x1f before, srai
 * x0,x0,7 after), uncompressed and inside one page, so a debugger or QEMU
 * can tell it from a plain breakpoint.
 */
#include <stdint.h>

#include "el_bm_semihost.h"

/* The host reads the block, so the compiler must write it out first. */
uint32_t el_sh_call(uint32_t op, const void *arg)
{
	register uint32_t a0 __asm("a0") = op;
	register const void *a1 __asm("a1") = arg;
	__asm volatile(".balign 16\n\t"
		       ".option push\n\t"
		       ".option norvc\n\t"
		       "slli x0, x0, 0x1f\n\t"
		       "ebreak\n\t"
		       "srai x0, x0, 7\n\t"
		       ".option pop"
		       : "+r"(a0)
		       : "r"(a1)
		       : "memory");
	return a0;
}
