/*
 * el_bm_semihost.h - Arm semihosting: text output and the program's exit
 * status, through the debugger (or QEMU with -semihosting-config enable=on).
 *
 * Semihosting traps with BKPT; on a board with no debugger attached that
 * trap is a HardFault, so firmware for the field leaves logging off
 * (el_bm_log_enable(false)) and exits by reset.
 */
#ifndef EL_BM_SEMIHOST_H
#define EL_BM_SEMIHOST_H

#include <stddef.h>

/* Write len bytes (may contain no NUL) to the host console. */
void el_sh_write(const char *buf, size_t len);
/* Write a NUL-terminated string to the host console. */
void el_sh_write0(const char *s);
/* End the program; under QEMU its exit code becomes status (0..255). */
_Noreturn void el_sh_exit(int status);

#endif /* EL_BM_SEMIHOST_H */
