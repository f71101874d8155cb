/*
 * board_ram.c - el_board_init_ram(): .data and .bss before main, with plain
 * word loops (nothing in libc is called before .data and .bss exist).
 */
#include <stdint.h>

#include "el_board_ram.h"

extern uint32_t __data_start[], __data_end[], __data_load[];
extern uint32_t __bss_start[], __bss_end[];

/* Words between two linker symbols (distinct objects to C, so compared as
 * addresses rather than as pointers). */
static uint32_t words_between(const uint32_t *start, const uint32_t *end)
{
	return (uint32_t)(((uintptr_t)end - (uintptr_t)start) / sizeof(uint32_t));
}

static void copy_data(void)
{
	uint32_t n = words_between(__data_start, __data_end);
	for (uint32_t i = 0; i < n; i++)
		__data_start[i] = __data_load[i];
}

static void zero_bss(void)
{
	uint32_t n = words_between(__bss_start, __bss_end);
	for (uint32_t i = 0; i < n; i++)
		__bss_start[i] = 0;
}

void el_board_init_ram(void)
{
	copy_data();
	zero_bss();
}
