/*
 * riscv_reset.c - the C half of a RISC-V board's start (after riscv_start.S)
 * and its trap handler.
 *
 * Reset: copy .data (and the thread-local .tdata after it) from flash, zero
 * .bss, run main(), then hand main's status to el_board_exit() (a port
 * overrides it: on QEMU, a semihosting exit).
 */
#include <stdint.h>

#include "el_board_ram.h"
#include "riscv.h"
#include "riscv_csr.h"

int main(void);

_Noreturn void el_reset_handler(void)
{
	el_board_init_ram();
	el_board_exit(main());
}

/* Without a port there is nobody to tell: stop here. */
__attribute__((weak)) _Noreturn void el_board_exit(int status)
{
	(void)status;
	for (;;)
		__asm volatile("wfi");
}

/* A trap nobody expects (the port enables no interrupt): report it through
 * the same exit path with a status that says which, so a test run under QEMU
 * fails visibly instead of hanging until its timeout. */
_Noreturn void el_default_handler(void)
{
	uint32_t cause;
	EL_CSR_READ(mcause, cause);
	el_board_fault(cause & 0x7FFFFFFFu);
}

__attribute__((weak)) _Noreturn void el_board_fault(uint32_t exception)
{
	(void)exception;
	for (;;)
		__asm volatile("wfi");
}
