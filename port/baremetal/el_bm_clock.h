/*
 * el_bm_clock.h - the monotonic millisecond clock of a board: SysTick
 * interrupting once per millisecond, counted in 64 bits (never wraps).
 */
#ifndef EL_BM_CLOCK_H
#define EL_BM_CLOCK_H

#include <stdint.h>

/* Start SysTick at 1 kHz from the core clock cpu_hz (EL_BOARD_CPU_HZ). */
void el_bm_clock_start(uint32_t cpu_hz);
/* Milliseconds since el_bm_clock_start(). */
uint64_t el_bm_now_ms(void);
/* Sleep until the next interrupt (SysTick at the latest): a tickless loop
 * calls it while now < the core's deadline. */
void el_bm_idle(void);

#endif /* EL_BM_CLOCK_H */
