/*
 * el_bm_semihost.h - semihosting (Arm's spec, which RISC-V adopted): text
 * output and the program's exit status, through the debugger (or QEMU with
 * -semihosting-config enable=on).
 *
 * Semihosting traps (BKPT on Cortex-M, a marked EBREAK on RISC-V); on a board
 * with no debugger attached that trap is a fault, so firmware for the field
 * leaves logging off (el_bm_log_enable(false)) and exits by reset.
 */
#ifndef EL_BM_SEMIHOST_H
#define EL_BM_SEMIHOST_H

#include <stddef.h>
#include <stdint.h>

/* Write len bytes (may contain no NUL) to the host console. */
void el_sh_write(const char *buf, size_t len);
/* Write a NUL-terminated string to the host console. */
void el_sh_write0(const char *s);
/* One request: operation op with its argument block; the architecture's
 * trap (cortex-m/el_bm_semihost_trap.c, riscv/el_bm_semihost_trap.c). */
uint32_t el_sh_call(uint32_t op, const void *arg);
/* End the program; under QEMU its exit code becomes status (0..255). */
_Noreturn void el_sh_exit(int status);

#endif /* EL_BM_SEMIHOST_H */
