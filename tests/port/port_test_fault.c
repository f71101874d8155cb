/*
 * port_test_fault.c - fault injection at the el_io seam: count calls of each
 * operation and fail the Nth (and every later, or only the Nth) one with a
 * chosen errno; or make writes short (fewer bytes, no error).
 */
#include <errno.h>
#include <string.h>

#include "el_io.h"
#include "port_test_util.h"

const char *const pt_op_names[PT_OP_COUNT] = { "pwrite", "write", "fdatasync", "fsync",
					       "open", "rename", "ftruncate", "unlink" };

static struct el_io real;
static bool have_real, nosync, fired, once, short_writes;
static uint64_t short_rng = 1;
static unsigned calls[PT_OP_COUNT];
static int arm_op = -1, arm_err;
static unsigned arm_nth;

static bool hit(enum pt_op op)
{
	calls[op]++;
	if ((int)op != arm_op || calls[op] < arm_nth || (once && calls[op] > arm_nth))
		return false;
	fired = true;
	return true;
}

/* A short write: 1 to len/2 bytes (a signal, a full pipe, a device). */
static size_t short_len(size_t len)
{
	if (!short_writes || len < 2)
		return len;
	return 1 + (size_t)(pt_rand(&short_rng) % (len / 2));
}

static int f_open(const char *path, int flags, mode_t mode)
{
	if (hit(PT_OP_OPEN)) {
		errno = arm_err;
		return -1;
	}
	return real.open(path, flags, mode);
}

static ssize_t f_write(int fd, const void *buf, size_t len)
{
	if (hit(PT_OP_WRITE)) {
		if (len > 1)
			(void)real.write(fd, buf, len / 2);
		errno = arm_err;
		return -1;
	}
	return real.write(fd, buf, short_len(len));
}

static ssize_t f_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	if (hit(PT_OP_PWRITE)) {
		if (len > 1)
			(void)real.pwrite(fd, buf, len / 2, off);
		errno = arm_err;
		return -1;
	}
	return real.pwrite(fd, buf, short_len(len), off);
}

static int f_sync(enum pt_op op, int (*fn)(int), int fd)
{
	if (hit(op)) {
		errno = arm_err;
		return -1;
	}
	return nosync ? 0 : fn(fd);
}

static int f_fsync(int fd) { return f_sync(PT_OP_FSYNC, real.fsync, fd); }
static int f_fdatasync(int fd) { return f_sync(PT_OP_FDATASYNC, real.fdatasync, fd); }

static int f_rename(const char *from, const char *to)
{
	if (hit(PT_OP_RENAME)) {
		errno = arm_err;
		return -1;
	}
	return real.rename(from, to);
}

static int f_ftruncate(int fd, off_t len)
{
	if (hit(PT_OP_FTRUNCATE)) {
		errno = arm_err;
		return -1;
	}
	return real.ftruncate(fd, len);
}

static int f_unlink(const char *path)
{
	if (hit(PT_OP_UNLINK)) {
		errno = arm_err;
		return -1;
	}
	return real.unlink(path);
}

static void install(void)
{
	if (!have_real) {
		el_io_reset();
		real = el_io;
		have_real = true;
	}
	el_io.open = f_open;
	el_io.write = f_write;
	el_io.pwrite = f_pwrite;
	el_io.fsync = f_fsync;
	el_io.fdatasync = f_fdatasync;
	el_io.rename = f_rename;
	el_io.ftruncate = f_ftruncate;
	el_io.unlink = f_unlink;
	memset(calls, 0, sizeof calls);
	fired = false;
	once = false;
	short_writes = false;
}

void pt_fault_arm(enum pt_op op, unsigned nth, int err)
{
	install();
	arm_op = (int)op;
	arm_nth = nth;
	arm_err = err;
}

void pt_fault_count_only(void)
{
	install();
	arm_op = -1;
}

void pt_fault_arm_once(enum pt_op op, unsigned nth, int err)
{
	pt_fault_arm(op, nth, err);
	once = true;
}

void pt_fault_short_writes(void)
{
	install();
	arm_op = -1;
	short_writes = true;
}

unsigned pt_fault_calls(enum pt_op op) { return calls[op]; }
bool pt_fault_fired(void) { return fired; }

void pt_io_nosync(void)
{
	install();
	arm_op = -1;
	nosync = true;
}
