/*
 * el_bm_panic.c - el_panic() on a board: a broken invariant in the core.
 * Say where (always, even with logging off: this is the last word) and stop
 * through semihosting with status EL_BM_PANIC_STATUS, so a QEMU run fails.
 * Continuing could hand one lock to two holders; on a field board a
 * watchdog or the debugger's reset takes over from the semihosting trap.
 */
#include "el_assert.h"
#include "el_bm_panic.h"
#include "el_bm_semihost.h"

static void write_decimal(int v)
{
	char digits[12];
	int n = 0;
	unsigned int u = v < 0 ? 0u : (unsigned int)v;
	do {
		digits[n++] = (char)('0' + u % 10u);
		u /= 10u;
	} while (u != 0u && n < 11);
	char out[12];
	for (int i = 0; i < n; i++)
		out[i] = digits[n - 1 - i];
	el_sh_write(out, (size_t)n);
}

/* A terse check (EL_ASSERT_TEXT 0): where it was is the address the call
 * returns to; `addr2line -e node.elf ADDR` gives the file and line. */
_Noreturn void el_panic_here(void)
{
	const uintptr_t pc = (uintptr_t)__builtin_return_address(0);
	char out[2 * sizeof(pc)];
	for (unsigned i = 0; i < sizeof(out); i++) {
		/* a digit by arithmetic, not a second copy of the log's table:
		 * the mixed-cluster image has bytes, not tens of them, to spare */
		const unsigned d = (unsigned)(pc >> (4 * (sizeof(out) - 1 - i))) & 0xfu;
		out[i] = (char)(d < 10u ? '0' + d : 'a' + d - 10u);
	}
	el_sh_write0("edgelock: assertion failed at pc 0x");
	el_sh_write(out, sizeof(out));
	el_sh_write0(" (addr2line -e the image names the check)\n");
	el_sh_exit(EL_BM_PANIC_STATUS);
}

_Noreturn void el_panic(const char *file, int line, const char *expr)
{
	el_sh_write0("edgelock: assertion failed at ");
	el_sh_write0(file);
	el_sh_write0(":");
	write_decimal(line);
	el_sh_write0(": ");
	el_sh_write0(expr);
	el_sh_write0("\n");
	el_sh_exit(EL_BM_PANIC_STATUS);
}
