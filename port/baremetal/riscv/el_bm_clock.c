/*
 * el_bm_clock.c - the RISC-V machine timer (mtime, in the CLINT) as the
 * 64-bit monotonic millisecond clock.
 *
 * mtime counts at EL_BOARD_MTIME_HZ and never wraps in practice, so the clock
 * needs no interrupt: now is read straight from it. RV32 reads the two halves
 * separately; reading high, low, high again and retrying when the high half
 * moved gives a consistent value. Idling arms mtimecmp one millisecond ahead
 * and waits with WFI: the machine-timer interrupt is enabled in mie but not
 * globally (mstatus.MIE stays 0), so it wakes the hart without taking a trap.
 */
#include <stdint.h>

#include "board.h"
#include "el_bm_clock.h"
#include "el_bm_div.h"
#include "riscv_csr.h"

#define MTIME_LO (*(volatile uint32_t *)(EL_BOARD_MTIME_ADDR))
#define MTIME_HI (*(volatile uint32_t *)(EL_BOARD_MTIME_ADDR + 4u))
#define MTIMECMP_LO (*(volatile uint32_t *)(EL_BOARD_MTIMECMP_ADDR))
#define MTIMECMP_HI (*(volatile uint32_t *)(EL_BOARD_MTIMECMP_ADDR + 4u))

#define MIE_MTIE (1u << 7)
#define TICKS_PER_MS (EL_BOARD_MTIME_HZ / 1000u)

static uint64_t start_ticks;

static uint64_t read_mtime(void)
{
	uint32_t hi, lo;
	do {
		hi = MTIME_HI;
		lo = MTIME_LO;
	} while (hi != MTIME_HI);
	return ((uint64_t)hi << 32) | lo;
}

void el_bm_clock_start(uint32_t cpu_hz)
{
	(void)cpu_hz; /* mtime has its own clock, EL_BOARD_MTIME_HZ */
	start_ticks = read_mtime();
}

uint64_t el_bm_now_ms(void)
{
	uint64_t ticks = read_mtime() - start_ticks;
	(void)el_bm_divmod_u64(&ticks, TICKS_PER_MS); /* no libgcc 64-bit division */
	return ticks;
}

void el_bm_idle(void)
{
	const uint64_t wake = read_mtime() + TICKS_PER_MS;
	/* Never let the compare pass through a value below wake while the two
	 * halves are written (the privileged spec's sequence). */
	MTIMECMP_HI = UINT32_MAX;
	MTIMECMP_LO = (uint32_t)wake;
	MTIMECMP_HI = (uint32_t)(wake >> 32);
	EL_CSR_SET(mie, MIE_MTIE);
	__asm volatile("wfi" ::: "memory");
}
