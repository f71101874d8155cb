/*
 * board.h - facts about the STM32F411xE that port/baremetal needs: the clock
 * that feeds SysTick, and where a seed's entropy comes from.
 */
#ifndef EL_BOARD_H
#define EL_BOARD_H

#include <stdint.h>

/* External interrupts in the vector table (boards/common/cortex_m_vectors.c). */
#define EL_BOARD_EXTERNAL_IRQS 86
#define EL_BOARD_NAME "stm32f411"
/* After reset the F411 runs on its 16 MHz HSI; firmware that switches to the
 * PLL (up to 100 MHz) redefines this before the clock starts. */
#ifndef EL_BOARD_CPU_HZ
#define EL_BOARD_CPU_HZ 16000000u
#endif

/* The F411 has no RNG peripheral. Its 96-bit unique device id (RM0383,
 * 24.1 at 0x1FFF7A10) differs per chip, and SysTick VAL adds the time of the
 * call; together they keep the election timeouts of two boards apart. */
static inline uint32_t el_board_entropy(void)
{
	const volatile uint32_t *uid = (const volatile uint32_t *)0x1FFF7A10u;
	uint32_t systick_val = *(volatile const uint32_t *)0xE000E018u;
	return uid[0] ^ (uid[1] * 31u) ^ (uid[2] * 131u) ^ systick_val;
}

#endif /* EL_BOARD_H */
