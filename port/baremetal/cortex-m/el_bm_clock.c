/*
 * el_bm_clock.c - SysTick as the 1 kHz monotonic clock.
 *
 * The interrupt adds one to a 64-bit count. A Cortex-M3/M4 cannot load 64
 * bits atomically, so a reader takes the count twice and retries when the
 * interrupt slipped in between (the handler only ever adds, so two equal
 * reads are a consistent value).
 */
#include "cortex_m.h"
#include "el_bm_clock.h"

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

enum {
	CSR_ENABLE = 1u << 0,
	CSR_TICKINT = 1u << 1,
	CSR_CLKSOURCE_CPU = 1u << 2,
};

static volatile uint64_t ticks_ms;

void el_systick_handler(void)
{
	ticks_ms = ticks_ms + 1u;
}

void el_bm_clock_start(uint32_t cpu_hz)
{
	SYST_CSR = 0;
	SYST_RVR = cpu_hz / 1000u - 1u; /* 24 bits: fine up to 16.7 GHz / 1000 */
	SYST_CVR = 0;
	SYST_CSR = CSR_ENABLE | CSR_TICKINT | CSR_CLKSOURCE_CPU;
}

uint64_t el_bm_now_ms(void)
{
	uint64_t a, b;
	do {
		a = ticks_ms;
		b = ticks_ms;
	} while (a != b);
	return a;
}

void el_bm_idle(void)
{
	__asm volatile("wfi" ::: "memory");
}
