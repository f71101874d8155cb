/*
 * picolibc_stubs.c - what picolibc's stdio needs in a test image on a RISC-V
 * board: stdout and stderr go out through semihosting, a line at a time, and
 * exit() ends the run through semihosting. picolibc's malloc takes its heap
 * from the linker script's __heap_start and __heap_end. Only test images link
 * this; the core and the node firmware use no stdio at all.
 */
#include <stdio.h>

#include "el_bm_semihost.h"

#define LINE_MAX_BYTES 128

static char line[LINE_MAX_BYTES];
static size_t line_len;

static int flush_line(FILE *f)
{
	(void)f;
	el_sh_write(line, line_len);
	line_len = 0;
	return 0;
}

static int put_char(char c, FILE *f)
{
	line[line_len++] = c;
	if (c == '\n' || line_len == sizeof(line))
		flush_line(f);
	return (unsigned char)c;
}

static FILE semihost_out = FDEV_SETUP_STREAM(put_char, NULL, flush_line, _FDEV_SETUP_WRITE);
FILE *const stdout = &semihost_out;
FILE *const stderr = &semihost_out;
FILE *const stdin = NULL;

_Noreturn void _exit(int status)
{
	flush_line(stdout);
	el_sh_exit(status);
}
