/*
 * riscv.h - what a RISC-V board's startup code and the port share about the
 * entry path: the C entry after riscv_start.S, the trap handler, and the two
 * exit hooks a port may override (weak defaults spin).
 */
#ifndef EL_RISCV_H
#define EL_RISCV_H

#include <stdint.h>

_Noreturn void el_reset_handler(void);
/* Every trap the image does not handle (mtvec points here). */
_Noreturn void el_default_handler(void);

/* el_board_exit() and el_board_fault(), the hooks every board shares. */
#include "el_board_hooks.h"

#endif /* EL_RISCV_H */
