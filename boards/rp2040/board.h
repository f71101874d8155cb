/*
 * board.h - facts about the RP2040 that port/baremetal needs: the clock that
 * feeds SysTick, and where a seed's entropy comes from.
 */
#ifndef EL_BOARD_H
#define EL_BOARD_H

#include <stdint.h>

/* External interrupts in the vector table (boards/common/cortex_m_vectors.c):
 * the RP2040 has 26 (datasheet 2.3.2). */
#define EL_BOARD_EXTERNAL_IRQS 26
#define EL_BOARD_NAME "rp2040"
/* clk_sys after the SDK's usual start-up (PLL_SYS at 125 MHz); firmware that
 * runs at another speed redefines this before the clock starts. */
#ifndef EL_BOARD_CPU_HZ
#define EL_BOARD_CPU_HZ 125000000u
#endif

/* ROSC's RANDOMBIT (datasheet 2.17.5, ROSC_BASE 0x40060000 + 0x1c) gives one
 * bit of jitter per read; 32 reads make a word that differs per chip and per
 * boot. SysTick VAL adds the time of the call. */
static inline uint32_t el_board_entropy(void)
{
	const volatile uint32_t *randombit = (const volatile uint32_t *)0x4006001Cu;
	uint32_t v = *(volatile const uint32_t *)0xE000E018u; /* SysTick VAL */
	for (int i = 0; i < 32; i++)
		v = (v << 1) ^ (v >> 31) ^ (*randombit & 1u);
	return v;
}

#endif /* EL_BOARD_H */
