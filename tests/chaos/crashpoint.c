/*
 * crashpoint.c - a power cut for a real edgelockd, at the port's I/O seam
 * (port/posix/el_io.h). Linked into build/chaos/edgelockd (the chaos suite's
 * daemon, otherwise the real one). It tracks, per file the port writes, how
 * much of it was synced; SIGUSR2 arms it, and the next WAL fdatasync is not
 * done: the bytes written since the file's last sync are damaged the way a
 * power cut leaves them, and the process dies by SIGKILL before it could
 * persist, send or acknowledge anything of that batch. The damage, picked
 * at random (CHAOS_SEED):
 *   lost     the unsynced bytes are gone (truncated to the synced size);
 *   torn     a random prefix of them survives (a torn append);
 *   bitflip  they all survive but one bit of them is flipped.
 * One line on stderr says which: "chaos-crashpoint: <kind> ...".
 * Without SIGUSR2 nothing changes: every call goes to the real one.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "el_io.h"

#define MAX_FDS 1024

static off_t synced_size[MAX_FDS]; /* per fd: its size at the last sync */
static volatile sig_atomic_t armed;
static uint64_t rng;
static int (*real_open)(const char *, int, mode_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static off_t size_of(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? st.st_size : 0;
}

static int cp_open(const char *path, int flags, mode_t mode)
{
	const int fd = real_open(path, flags, mode);
	if (fd >= 0 && fd < MAX_FDS)
		synced_size[fd] = size_of(fd); /* what is there was synced before */
	return fd;
}

static int cp_fsync(int fd)
{
	const int rc = real_fsync(fd);
	if (rc == 0 && fd >= 0 && fd < MAX_FDS)
		synced_size[fd] = size_of(fd);
	return rc;
}

/* Damage fd's unsynced bytes [synced, size) and die. */
static void power_cut(int fd)
{
	const off_t from = synced_size[fd], size = size_of(fd);
	const off_t n = size - from;
	const unsigned kind = n > 0 ? (unsigned)(next_random() % 3) : 0;
	if (kind == 0) {
		if (ftruncate(fd, from) != 0)
			perror("chaos-crashpoint: ftruncate");
		fprintf(stderr, "chaos-crashpoint: lost %lld unsynced bytes\n", (long long)n);
	} else if (kind == 1) {
		const off_t keep = (off_t)(next_random() % (uint64_t)n);
		if (ftruncate(fd, from + keep) != 0)
			perror("chaos-crashpoint: ftruncate");
		fprintf(stderr, "chaos-crashpoint: torn: %lld of %lld unsynced bytes kept\n",
			(long long)keep, (long long)n);
	} else {
		const off_t at = from + (off_t)(next_random() % (uint64_t)n);
		unsigned char b;
		if (pread(fd, &b, 1, at) == 1) {
			b ^= (unsigned char)(1u << (next_random() % 8));
			if (pwrite(fd, &b, 1, at) != 1)
				perror("chaos-crashpoint: pwrite");
		}
		fprintf(stderr, "chaos-crashpoint: bitflip at byte %lld of %lld unsynced bytes\n",
			(long long)(at - from), (long long)n);
	}
	raise(SIGKILL);
}

static int cp_fdatasync(int fd)
{
	if (armed && fd >= 0 && fd < MAX_FDS)
		power_cut(fd);
	const int rc = real_fdatasync(fd);
	if (rc == 0 && fd >= 0 && fd < MAX_FDS)
		synced_size[fd] = size_of(fd);
	return rc;
}

static void on_usr2(int sig)
{
	(void)sig;
	armed = 1;
}

__attribute__((constructor)) static void crashpoint_install(void)
{
	const char *seed = getenv("CHAOS_SEED");
	rng = (seed ? strtoull(seed, NULL, 10) : 0) * 2654435761u + (uint64_t)getpid() + 1u;
	real_open = el_io.open;
	real_fsync = el_io.fsync;
	real_fdatasync = el_io.fdatasync;
	el_io.open = cp_open;
	el_io.fsync = cp_fsync;
	el_io.fdatasync = cp_fdatasync;
	const struct sigaction sa = { .sa_handler = on_usr2 };
	sigaction(SIGUSR2, &sa, NULL);
}
