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

#include "el_bm_semihost.h"

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
