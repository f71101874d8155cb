/*
 * el_board_hooks.h - the two exit hooks every board's startup code calls and
 * a port may override (weak defaults spin): the end of main, and a fault.
 * Shared by the Cortex-M (cortex_m.h) and RISC-V (riscv.h) entry paths.
 */
#ifndef EL_BOARD_HOOKS_H
#define EL_BOARD_HOOKS_H

#include <stdint.h>

/* main() returned status: end the program (semihosting exit on QEMU). */
_Noreturn void el_board_exit(int status);
/* An unhandled exception or trap; default: spin. The port exits with status
 * 100 + (exception & 0x7F): on Cortex-M the exception number from IPSR, on
 * RISC-V the mcause code. */
_Noreturn void el_board_fault(uint32_t exception);

#endif /* EL_BOARD_HOOKS_H */
