/*
 * board.h - facts about the MPS2 AN385 that port/baremetal needs: the clock
 * that feeds SysTick, and where a seed's entropy comes from.
 */
#ifndef EL_BOARD_H
#define EL_BOARD_H

#include <stdint.h>

/* External interrupts in the vector table (boards/common/cortex_m_vectors.c). */
#define EL_BOARD_EXTERNAL_IRQS 32
#ifndef EL_BOARD_NAME
#define EL_BOARD_NAME "mps2-an385"
#endif
/* SYSCLK of the AN385 image (QEMU models the same 25 MHz). */
#define EL_BOARD_CPU_HZ 25000000u

/* UART0 (CMSDK APB UART): a mixed-cluster node's link to its gateway
 * (examples/firmware/mixed_node_main.c; QEMU's first -serial). */
#define EL_BOARD_LINK_UART 0x40004000u

/* The AN385 has no random-number generator, and QEMU starts every run in the
 * same state, so the only varying input is the SysTick count at the time of
 * the call (it runs on the host's clock under QEMU). A seed only spreads
 * election timeouts, so a weak source is acceptable; the port also mixes in
 * the node id, which keeps nodes of one image apart. */
static inline uint32_t el_board_entropy(void)
{
	return *(volatile const uint32_t *)0xE000E018u; /* SysTick VAL */
}

#endif /* EL_BOARD_H */
