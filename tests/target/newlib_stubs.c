/*
 * newlib_stubs.c - the system calls newlib's stdio needs in a test image on
 * a board: stdout/stderr go out through semihosting, the heap (printf's
 * buffers) comes from the linker script's .heap section, exit() ends the run
 * through semihosting. Only test images link this; the core and the node
 * firmware use no stdio at all.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "board.h"
#include "el_bm_semihost.h"
#include "el_target.h"

/* Prototypes for the stubs newlib calls (it declares none of them). */
int _write(int fd, const char *buf, int len);
int _read(int fd, char *buf, int len);
int _close(int fd);
int _lseek(int fd, int off, int whence);
int _fstat(int fd, struct stat *st);
int _isatty(int fd);
void *_sbrk(ptrdiff_t incr);
int _kill(int pid, int sig);
int _getpid(void);
_Noreturn void _exit(int status);

extern char __heap_start[], __heap_end[];

int _write(int fd, const char *buf, int len)
{
	if (fd != 1 && fd != 2) {
		errno = EBADF;
		return -1;
	}
	el_sh_write(buf, (size_t)len);
	return len;
}

int _read(int fd, char *buf, int len)
{
	(void)fd, (void)buf, (void)len;
	return 0; /* no input: end of file */
}

int _close(int fd)
{
	(void)fd;
	return 0;
}

int _lseek(int fd, int off, int whence)
{
	(void)fd, (void)off, (void)whence;
	return 0;
}

/* A character device, so newlib line-buffers stdout. */
int _fstat(int fd, struct stat *st)
{
	(void)fd;
	st->st_mode = S_IFCHR;
	return 0;
}

int _isatty(int fd)
{
	(void)fd;
	return 1;
}

void *_sbrk(ptrdiff_t incr)
{
	static size_t used;
	size_t room = (size_t)((uintptr_t)__heap_end - (uintptr_t)__heap_start) - used;
	if (incr < 0 || (size_t)incr > room) {
		errno = ENOMEM;
		return (void *)-1;
	}
	char *old = __heap_start + used;
	used += (size_t)incr;
	return old;
}

int _kill(int pid, int sig)
{
	(void)pid, (void)sig;
	errno = EINVAL;
	return -1;
}

int _getpid(void)
{
	return 1;
}

_Noreturn void _exit(int status)
{
	el_sh_exit(status);
}

/* ---- the image's banner and its deepest stack use ---- */

#define STACK_PAINT 0xA5u
extern uint8_t __stack_limit[], __stack_top[];

/* Fill the stack below the caller's frame, to find its deepest use later. */
static void paint_stack(void)
{
	uintptr_t sp;
	__asm volatile("mov %0, sp" : "=r"(sp));
	for (volatile uint8_t *p = __stack_limit; (uintptr_t)p < sp - 256u; p++)
		*p = STACK_PAINT;
}

static uint32_t stack_used(void)
{
	uint32_t reserve = (uint32_t)((uintptr_t)__stack_top - (uintptr_t)__stack_limit);
	uint32_t n = 0;
	while (n < reserve && __stack_limit[n] == STACK_PAINT)
		n++;
	return reserve - n;
}

void el_target_begin(const char *image)
{
	paint_stack();
	printf("# %s on %s (Cortex-M, QEMU semihosting)\n", image, EL_BOARD_NAME);
}

void el_target_report(void)
{
	printf("# deepest stack use: %u bytes (tests included)\n", (unsigned)stack_used());
}

int el_target_end(int status)
{
	fflush(stdout);
	return status;
}
