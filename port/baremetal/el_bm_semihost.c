/*
 * el_bm_semihost.c - the few semihosting calls edgelock uses on a board:
 * SYS_WRITE0 for text and SYS_EXIT_EXTENDED for an exit status that QEMU
 * passes on as its own exit code, so a test run's pass/fail survives.
 * The trap that makes a request is the architecture's (cortex-m/, riscv/).
 */
#include <stdint.h>

#include "el_bm_semihost.h"

enum {
	SYS_WRITE0 = 0x04,
	SYS_EXIT = 0x18,
	SYS_EXIT_EXTENDED = 0x20,
};

/* Reason codes of SYS_EXIT (the "ADP_Stopped_*" values). */
enum {
	ADP_STOPPED_RUN_TIME_ERROR = 0x20023,
	ADP_STOPPED_APPLICATION_EXIT = 0x20026,
};

void el_sh_write0(const char *s)
{
	el_sh_call(SYS_WRITE0, s);
}

#define PIECE_MAX 64

/* SYS_WRITE0 needs a NUL, so text goes out in NUL-terminated pieces. */
void el_sh_write(const char *buf, size_t len)
{
	char piece[PIECE_MAX + 1];
	for (size_t done = 0; done < len;) {
		size_t n = 0;
		while (n < PIECE_MAX && done < len)
			piece[n++] = buf[done++];
		piece[n] = '\0';
		el_sh_write0(piece);
	}
}

_Noreturn void el_sh_exit(int status)
{
	/* The extended call carries the status; a host that lacks it returns,
	 * and the plain call can still tell success from failure. */
	const uint32_t block[2] = { ADP_STOPPED_APPLICATION_EXIT, (uint32_t)status };
	el_sh_call(SYS_EXIT_EXTENDED, block);
	el_sh_call(SYS_EXIT, (const void *)(uintptr_t)(status == 0 ? ADP_STOPPED_APPLICATION_EXIT
									 : ADP_STOPPED_RUN_TIME_ERROR));
	for (;;) {
	}
}
