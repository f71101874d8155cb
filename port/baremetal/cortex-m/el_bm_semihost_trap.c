/*
 * el_bm_semihost_trap.c - one semihosting request on Cortex-M: the operation
 * in r0, its argument block in r1, BKPT 0xAB (ARM's semihosting spec).
 */
#include <stdint.h>

#include "el_bm_semihost.h"

/* The host reads the block, so the compiler must write it out first. */
uint32_t el_sh_call(uint32_t op, const void *arg)
{
	register uint32_t r0 __asm("r0") = op;
	register const void *r1 __asm("r1") = arg;
	__asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
	return r0;
}
