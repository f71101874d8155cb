/*
 * board.h - facts about QEMU's RISC-V `virt` machine that port/baremetal
 * needs: where the machine timer is, how fast it counts, and where a seed's
 * entropy comes from.
 */
#ifndef EL_BOARD_H
#define EL_BOARD_H

#include <stdint.h>

#define EL_BOARD_NAME "qemu-rv32"
/* Not used on RISC-V (mtime has its own clock); kept for the shared code. */
#define EL_BOARD_CPU_HZ 0u

/* The CLINT of `virt` (QEMU hw/riscv/virt.c): mtimecmp of hart 0 at
 * 0x02004000, mtime at 0x0200BFF8, counting at 10 MHz. */
#define EL_BOARD_MTIMECMP_ADDR 0x02004000u
#define EL_BOARD_MTIME_ADDR 0x0200BFF8u
#define EL_BOARD_MTIME_HZ 10000000u

/* `virt` has no RNG device reachable without a driver; mtime's low bits at
 * the time of the call (QEMU runs it on the host's clock) spread the seed.
 * A seed only spreads election timeouts, so a weak source is acceptable; the
 * port also mixes in the node id. */
static inline uint32_t el_board_entropy(void)
{
	return *(volatile const uint32_t *)EL_BOARD_MTIME_ADDR;
}

#endif /* EL_BOARD_H */
