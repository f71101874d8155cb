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

extern uint32_t __data_start[], __data_end[], __data_load[];
extern uint32_t __bss_start[], __bss_end[];

int main(void);

/* Coprocessor access control register (System Control Block). */
#define SCB_CPACR (*(volatile uint32_t *)0xE000ED88u)

/* Words between two linker symbols (distinct objects to C, so compared as
 * addresses rather than as pointers). */
static uint32_t words_between(const uint32_t *start, const uint32_t *end)
{
	return (uint32_t)(((uintptr_t)end - (uintptr_t)start) / sizeof(uint32_t));
}

/* Plain word loops: nothing in libc is called before .data and .bss exist. */
static void copy_data(void)
{
	uint32_t n = words_between(__data_start, __data_end);
	for (uint32_t i = 0; i < n; i++)
		__data_start[i] = __data_load[i];
}

static void zero_bss(void)
{
	uint32_t n = words_between(__bss_start, __bss_end);
	for (uint32_t i = 0; i < n; i++)
		__bss_start[i] = 0;
}

static void enable_fpu(void)
{
#if defined(__ARM_FP)
	/* Full access to CP10 and CP11, before any floating-point code runs
	 * (a hard-float build may use FP registers anywhere). */
	SCB_CPACR |= (0xFu << 20);
	__asm volatile("dsb\n\tisb" ::: "memory");
#endif
}

_Noreturn void el_reset_handler(void)
{
	copy_data();
	zero_bss();
	enable_fpu();
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
