/*
 * el_bm_cmsdk_uart.h - a polled driver for the Arm CMSDK APB UART, the UART
 * of the MPS2 AN385 image (and of QEMU's mps2-an385 model: five of them,
 * UART0 at 0x40004000). It has a one-byte holding register each way and no
 * FIFO. The driver polls: no interrupt handler, so a byte waits in the
 * receive register until the node's loop reads it, and the sender must not
 * overrun it. QEMU's model pushes back (it takes no byte from its socket
 * while the register is full); on a real board that is hardware flow
 * control (RTS/CTS) or a receive interrupt filling a ring buffer
 * (boards/mps2-an385/README.md).
 */
#ifndef EL_BM_CMSDK_UART_H
#define EL_BM_CMSDK_UART_H

#include <stdbool.h>
#include <stdint.h>

/* Enable transmit and receive at base with the given baud divisor
 * (PCLK / baud; at least 16: the CMSDK UART's minimum). */
void el_bm_uart_init(uintptr_t base, uint32_t bauddiv);
/* The byte waiting in the receive register, if one does (never blocks). */
bool el_bm_uart_getc(uintptr_t base, uint8_t *b);
/* Wait until the transmit register is free, then send b. */
void el_bm_uart_putc(uintptr_t base, uint8_t b);

#endif /* EL_BM_CMSDK_UART_H */
