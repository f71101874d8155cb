/*
 * riscv_csr.h - reading and setting machine CSRs from C. The compiler is
 * given -march=rv32imac (the multilib Debian's picolibc ships), and the
 * assembler of binutils 2.40 wants the Zicsr extension named for CSR
 * instructions, so each one switches it on for itself.
 */
#ifndef EL_RISCV_CSR_H
#define EL_RISCV_CSR_H

#include <stdint.h>

#define EL_CSR_READ(csr, out) \
	__asm volatile(".option push\n\t.option arch, +zicsr\n\tcsrr %0, " #csr "\n\t.option pop" \
		       : "=r"(out))
#define EL_CSR_SET(csr, bits) \
	__asm volatile(".option push\n\t.option arch, +zicsr\n\tcsrs " #csr ", %0\n\t.option pop" \
		       ::"r"(bits))

#endif /* EL_RISCV_CSR_H */
