/*
 * test_bm_platform.c - port/baremetal's clock and seed on the board: SysTick
 * really ticks (at about 1 kHz), time never goes back, and nodes get
 * different seeds.
 */
#include <stdint.h>

#include "board.h"
#include "el_bm_clock.h"
#include "el_bm_seed.h"
#include "el_test.h"

/* Busy-wait until the clock passes target or spins run out; returns now. */
static uint64_t wait_until(uint64_t target_ms, uint32_t spins)
{
	uint64_t now = el_bm_now_ms();
	while (now < target_ms && spins-- > 0)
		now = el_bm_now_ms();
	return now;
}

static void test_clock_advances_and_is_monotonic(void)
{
	el_bm_clock_start(EL_BOARD_CPU_HZ);
	uint64_t start = el_bm_now_ms();
	uint64_t prev = start;
	for (uint32_t i = 0; i < 20000000u && prev < start + 20u; i++) {
		uint64_t now = el_bm_now_ms();
		EL_CHECK(now >= prev);
		prev = now;
	}
	EL_CHECK(prev >= start + 20u);
}

static void test_idle_wakes_on_tick(void)
{
	uint64_t before = el_bm_now_ms();
	for (int i = 0; i < 5; i++)
		el_bm_idle(); /* each returns at the next SysTick at the latest */
	EL_CHECK(wait_until(before + 1u, 1000000u) > before);
}

static void test_seeds_differ_per_node(void)
{
	uint64_t a = el_bm_seed(1), b = el_bm_seed(2), c = el_bm_seed(3);
	EL_CHECK(a != b && b != c && a != c);
	EL_CHECK(a != 0 && b != 0 && c != 0);
}

void el_suite_bm_platform(void)
{
	EL_RUN(test_clock_advances_and_is_monotonic);
	EL_RUN(test_idle_wakes_on_tick);
	EL_RUN(test_seeds_differ_per_node);
}
