/*
 * cortex_m_vectors.c - the vector table of every Cortex-M board; the board's
 * board.h gives its number of external interrupts. Only reset and SysTick
 * have real handlers; the rest go to el_default_handler, which ends the run
 * with a status naming the exception.
 */
#include <stdint.h>

#include "board.h"
#include "cortex_m.h"

#define EXTERNAL_IRQS EL_BOARD_EXTERNAL_IRQS

typedef void (*el_vector)(void);

/* Read by the CPU, not by C code (hence the cppcheck suppressions). */
struct vector_table {
	uint32_t *initial_sp;         // cppcheck-suppress unusedStructMember
	el_vector core[15];           // cppcheck-suppress unusedStructMember
	el_vector irq[EXTERNAL_IRQS]; // cppcheck-suppress unusedStructMember
};

__attribute__((section(".vectors"), used))
static const struct vector_table vectors = {
	.initial_sp = __stack_top,
	.core = {
		el_reset_handler,   /* 1 reset */
		el_default_handler, /* 2 NMI */
		el_default_handler, /* 3 HardFault */
		el_default_handler, /* 4 MemManage */
		el_default_handler, /* 5 BusFault */
		el_default_handler, /* 6 UsageFault */
		0, 0, 0, 0,         /* 7-10 reserved */
		el_default_handler, /* 11 SVCall */
		el_default_handler, /* 12 DebugMonitor */
		0,                  /* 13 reserved */
		el_default_handler, /* 14 PendSV */
		el_systick_handler, /* 15 SysTick */
	},
	.irq = { [0 ... EXTERNAL_IRQS - 1] = el_default_handler },
};
