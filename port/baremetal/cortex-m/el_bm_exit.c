/*
 * el_bm_exit.c - the board hooks that end a program (see boards/common/
 * el_board_hooks.h): main's status and unhandled faults leave through semihosting,
 * so QEMU's exit code carries them. Without this file a board spins.
 */
#include "cortex_m.h"
#include "el_bm_semihost.h"

_Noreturn void el_board_exit(int status)
{
	el_sh_exit(status);
}

_Noreturn void el_board_fault(uint32_t exception)
{
	static const char *const names[] = { "?", "reset", "NMI", "HardFault", "MemManage",
					     "BusFault", "UsageFault" };
	el_sh_write0("edgelock: unhandled exception ");
	el_sh_write0(exception < sizeof names / sizeof names[0] ? names[exception] : "interrupt");
	el_sh_write0("\n");
	el_sh_exit(100 + (int)(exception & 0x7Fu));
}
