/*
 * output.c - the CLI's stdout and stderr reach a reader in the order they
 * were written.
 *
 * stdout on a pipe or a file is fully buffered and stderr is not, so
 * `edgelock status 2>&1 | cat` showed status's warnings (stderr, written
 * last) above the node lines (stdout, written first, flushed at exit).
 * Every stderr write now flushes stdout first: stderr becomes a stream of
 * our own (fopencookie) whose writes do that, then write(2) to fd 2. This
 * covers every command and every message, and stdout stays fully buffered
 * (a `locks --json` of many locks is still a few writes, not one a line).
 * Line-buffering stdout instead would also order them, but glibc drops a
 * line whose write failed and its errno with it, so the final flush could
 * no longer say "Broken pipe" (el_cli_flush).
 */
#define _GNU_SOURCE /* fopencookie */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "el_cli.h"

/* Why a flush of stdout made here failed (0: none did): el_cli_flush says
 * it, as its own flush may then find nothing left to write. */
static atomic_int out_errno;

static ssize_t err_write(void *cookie, const char *buf, size_t n)
{
	(void)cookie;
	errno = 0;
	if (fflush(stdout) != 0) {
		int none = 0;
		atomic_compare_exchange_strong(&out_errno, &none, errno != 0 ? errno : EIO);
	}
	size_t done = 0;
	while (done < n) {
		const ssize_t w = write(STDERR_FILENO, buf + done, n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break; /* short: the stream marks its error; nobody else to tell */
		done += (size_t)w;
	}
	return (ssize_t)done;
}

void el_cli_order_output(void)
{
	static const cookie_io_functions_t io = { .write = err_write };
	FILE *f = fopencookie(NULL, "w", io);
	if (f == NULL) /* no memory: messages stay right, only their order may not */
		return;
	setvbuf(f, NULL, _IONBF, 0); /* each message out at once, as stderr's */
	stderr = f;
}

int el_cli_out_errno(void)
{
	return atomic_load(&out_errno);
}
