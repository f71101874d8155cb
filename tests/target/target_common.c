/*
 * target_common.c - what every test image on a board shares, whichever C
 * library it links (newlib_stubs.c on Cortex-M, picolibc_stubs.c on RISC-V):
 * the banner, and the deepest stack use the run reached.
 */
#include <stdint.h>
#include <stdio.h>

#include "board.h"
#include "el_target.h"

#if defined(__riscv)
#define EL_BOARD_ARCH "RISC-V"
#else
#define EL_BOARD_ARCH "Cortex-M"
#endif

/* ---- the image's banner and its deepest stack use ---- */

#define STACK_PAINT 0xA5u
extern uint8_t __stack_limit[], __stack_top[];

/* Fill the stack below the caller's frame, to find its deepest use later. */
static void paint_stack(void)
{
	/* This frame's address: at or above sp, on every architecture. */
	const uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	for (volatile uint8_t *p = __stack_limit; (uintptr_t)p < sp - 256u; p++)
		*p = STACK_PAINT;
}

static uint32_t stack_used(void)
{
	uint32_t reserve = (uint32_t)((uintptr_t)__stack_top - (uintptr_t)__stack_limit);
	uint32_t n = 0;
	while (n < reserve && __stack_limit[n] == STACK_PAINT)
		n++;
	return reserve - n;
}

void el_target_begin(const char *image)
{
	paint_stack();
	printf("# %s on %s (%s, QEMU semihosting)\n", image, EL_BOARD_NAME, EL_BOARD_ARCH);
}

void el_target_report(void)
{
	printf("# deepest stack use: %u bytes (tests included)\n", (unsigned)stack_used());
}

int el_target_end(int status)
{
	fflush(stdout);
	return status;
}
