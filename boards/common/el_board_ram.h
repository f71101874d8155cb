/*
 * el_board_ram.h - the first thing every board's reset code does, whatever
 * the architecture: copy .data's initial values from flash and zero .bss
 * (symbols from the board's linker script).
 */
#ifndef EL_BOARD_RAM_H
#define EL_BOARD_RAM_H

/* Runs before .data and .bss exist: calls nothing in libc. */
void el_board_init_ram(void);

#endif /* EL_BOARD_RAM_H */
