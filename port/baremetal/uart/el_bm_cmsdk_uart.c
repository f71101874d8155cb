/*
 * el_bm_cmsdk_uart.c - the CMSDK APB UART, polled (el_bm_cmsdk_uart.h).
 * Registers (Cortex-M System Design Kit TRM, "APB UART"): DATA, STATE
 * (bit 0 TX full, bit 1 RX full), CTRL (bit 0 TX enable, bit 1 RX enable),
 * INTSTATUS/INTCLEAR, BAUDDIV.
 */
#include "el_bm_cmsdk_uart.h"

#define REG(base, off) (*(volatile uint32_t *)((base) + (off)))
#define UART_DATA 0x00u
#define UART_STATE 0x04u
#define UART_CTRL 0x08u
#define UART_INTCLEAR 0x0Cu
#define UART_BAUDDIV 0x10u
#define STATE_TX_FULL 0x1u
#define STATE_RX_FULL 0x2u
#define STATE_OVERRUNS 0xCu /* TX and RX overrun: write 1 to clear */
#define CTRL_TX_EN 0x1u
#define CTRL_RX_EN 0x2u

void el_bm_uart_init(uintptr_t base, uint32_t bauddiv)
{
	REG(base, UART_CTRL) = 0;
	REG(base, UART_BAUDDIV) = bauddiv < 16u ? 16u : bauddiv;
	REG(base, UART_STATE) = STATE_OVERRUNS;
	REG(base, UART_INTCLEAR) = 0xFu;
	REG(base, UART_CTRL) = CTRL_TX_EN | CTRL_RX_EN; /* no interrupts: polled */
}

bool el_bm_uart_getc(uintptr_t base, uint8_t *b)
{
	if ((REG(base, UART_STATE) & STATE_RX_FULL) == 0)
		return false;
	*b = (uint8_t)REG(base, UART_DATA);
	return true;
}

void el_bm_uart_putc(uintptr_t base, uint8_t b)
{
	while ((REG(base, UART_STATE) & STATE_TX_FULL) != 0)
		;
	REG(base, UART_DATA) = b;
}
