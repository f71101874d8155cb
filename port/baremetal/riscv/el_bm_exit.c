/*
 * el_bm_exit.c - the board hooks that end a program on RISC-V (see
 * boards/common/el_board_hooks.h): main's status and unhandled traps leave
 * through semihosting, so QEMU's exit code carries them (100 + mcause).
 */
#include "el_board_hooks.h"
#include "el_bm_semihost.h"

_Noreturn void el_board_exit(int status)
{
	el_sh_exit(status);
}

_Noreturn void el_board_fault(uint32_t exception)
{
	/* mcause exception codes of the privileged spec, 0 to 7. */
	static const char *const names[] = {
		"instruction address misaligned", "instruction access fault",
		"illegal instruction", "breakpoint", "load address misaligned",
		"load access fault", "store address misaligned", "store access fault",
	};
	el_sh_write0("edgelock: unhandled exception ");
	el_sh_write0(exception < sizeof names / sizeof names[0] ? names[exception] : "trap");
	el_sh_write0("\n");
	el_sh_exit(100 + (int)(exception & 0x7Fu));
}
