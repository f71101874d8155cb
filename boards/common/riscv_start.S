/*
 * riscv_start.S - the entry of every RISC-V board image (machine mode, one
 * hart): set the global pointer, the stack and the thread pointer (picolibc
 * keeps errno in thread-local storage), point mtvec at the trap entry, then
 * continue in C (el_reset_handler, riscv_reset.c). Symbols come from
 * boards/common/riscv.ld.
 */
	/* CSR instructions need Zicsr named (binutils 2.40). */
	.option arch, +zicsr

	.section .text.start, "ax", @progbits
	.globl _start
	.type _start, @function
_start:
	.option push
	.option norelax
	la	gp, __global_pointer$
	.option pop
	la	sp, __stack_top
	la	tp, __tls_base
	la	t0, el_trap_entry
	csrw	mtvec, t0
	csrw	mie, zero
	j	el_reset_handler
	.size _start, . - _start

/* Direct-mode mtvec needs a 4-byte aligned address. Nothing returns from a
 * trap here (the port uses no interrupts), so no registers are saved. */
	.balign 4
	.globl el_trap_entry
	.type el_trap_entry, @function
el_trap_entry:
	j	el_default_handler
	.size el_trap_entry, . - el_trap_entry
