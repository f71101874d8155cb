/*
 * cortex_m_reset.c - the reset handler and default exception handlers every
 * Cortex-M board shares. The vector table is in cortex_m_vectors.c and
 * points it at these.
 *
 * Reset: copy .data from flash to RAM, zero .bss, switch the FPU on when the
 * image was built for one, run main(), then hand main's status to
 * el_board_exit() (a port overrides it: on QEMU, a semihosting exit).
 */
#include <stdint.h>

#include "cortex_m.h"
#include "el_board_ram.h"

int main(void);

/* Coprocessor access control and configuration control registers (System
 * Control Block). */
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)
#define SCB_CCR (*(volatile uint32_t *)0xE000ED14u)
#define SCB_CCR_UNALIGN_TRP (1u << 3)

static void enable_fpu(void)
{
#if defined(__ARM_FP)
	/* Full access to CP10 and CP11, before any floating-point code runs
	 * (a hard-float build may use FP registers anywhere). */
	SCB_CPACR |= (0xFu << 20);
	__asm volatile("dsb\n\tisb" ::: "memory");
#endif
}

/* Armv6-M (Cortex-M0/M0+) faults on every unaligned load and store: its
 * CCR.UNALIGN_TRP reads as one. An Armv6-M image sets the bit anyway, so the
 * same code run on an Armv7-M core (QEMU's mps2-an385 model, which has no
 * M0+) traps exactly where a real M0+ would, instead of quietly working. */
static void trap_unaligned(void)
{
#if defined(__ARM_ARCH_6M__)
	SCB_CCR |= SCB_CCR_UNALIGN_TRP;
	__asm volatile("dsb\n\tisb" ::: "memory");
#endif
}

_Noreturn void el_reset_handler(void)
{
	el_board_init_ram();
	enable_fpu();
	trap_unaligned();
	el_board_exit(main());
}

/* Without a port there is nobody to tell: stop here. */
__attribute__((weak)) _Noreturn void el_board_exit(int status)
{
	(void)status;
	for (;;)
		__asm volatile("wfi");
}

/* A fault or an unexpected interrupt: report it through the same exit path
 * with a status that says which, so a test run under QEMU fails visibly
 * instead of hanging until its timeout. */
_Noreturn void el_default_handler(void)
{
	uint32_t ipsr;
	__asm volatile("mrs %0, ipsr" : "=r"(ipsr));
	el_board_fault(ipsr & 0x1FFu);
}

__attribute__((weak)) _Noreturn void el_board_fault(uint32_t exception)
{
	el_board_exit(100 + (int)exception);
}

/* SysTick fires only once a port's clock starts it; the port defines this. */
__attribute__((weak)) void el_systick_handler(void)
{
	el_default_handler();
}
