/*
 * cortex_m.h - what a board's startup code and a port share about the Cortex-M
 * entry path: the handlers the vector table names, and the two exit hooks a
 * port may override (weak defaults spin).
 */
#ifndef EL_CORTEX_M_H
#define EL_CORTEX_M_H

#include <stdint.h>

/* Top of the main stack, from the linker script. */
extern uint32_t __stack_top[];

_Noreturn void el_reset_handler(void);
/* Every exception and interrupt the image does not handle. */
_Noreturn void el_default_handler(void);

/* el_board_exit() and el_board_fault(), the hooks every board shares. */
#include "el_board_hooks.h"

/* SysTick, the only interrupt the port uses; weak, defined by the port. */
void el_systick_handler(void);

#endif /* EL_CORTEX_M_H */
