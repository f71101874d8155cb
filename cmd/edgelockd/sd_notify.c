/*
 * sd_notify.c - systemd's service notification protocol, spoken without
 * libsystemd: sd_notify(3) and sd_watchdog_enabled(3) as edgelockd uses them.
 *
 * The protocol (sd_notify(3), "Notes"; systemd's interface stability promise):
 * the service manager passes an AF_UNIX datagram socket in $NOTIFY_SOCKET, a
 * file system path ("/run/systemd/notify") or an abstract name ("@name": a
 * leading NUL byte in sun_path); each notification is one datagram of
 * newline-separated VAR=value assignments. The watchdog is on when
 * $WATCHDOG_USEC holds the timeout in microseconds and $WATCHDOG_PID, if set,
 * is our pid.
 *
 * Why our own code: systemd documents the protocol as the stable interface and
 * recommends reimplementing it rather than linking libsystemd for sd_notify
 * alone. Linking it cost edgelockd 7 shared libraries (libsystemd, libgcrypt,
 * libgpg-error, liblzma, libzstd, liblz4, libcap) and about 1 MiB of resident
 * memory on every board, for two functions.
 *
 * Errors are returned, never fatal: notify.c logs them and the node runs on.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "el_sd_notify.h"

int el_sd_notify_addr(const char *name, struct sockaddr_un *sa, socklen_t *len)
{
	size_t n = strlen(name);
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (n == 0 || (name[0] == '@' && n == 1))
		return -EINVAL;
	if (name[0] != '/' && name[0] != '@')
		return -EAFNOSUPPORT;
	/* A path needs its NUL inside sun_path; an abstract name is its bytes
	 * after the leading NUL, counted by the address length, no NUL after. */
	if (name[0] == '/' ? n >= sizeof(sa->sun_path) : n > sizeof(sa->sun_path))
		return -EINVAL;
	memcpy(sa->sun_path, name, n);
	if (name[0] == '@')
		sa->sun_path[0] = '\0';
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (name[0] == '/'));
	return 0;
}

int el_sd_notify(const char *msg)
{
	const char *name = getenv("NOTIFY_SOCKET");
	if (name == NULL)
		return 0;
	struct sockaddr_un sa;
	socklen_t len;
	int rc = el_sd_notify_addr(name, &sa, &len);
	if (rc < 0)
		return rc;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	size_t n = strlen(msg);
	ssize_t sent = sendto(fd, msg, n, MSG_NOSIGNAL, (const struct sockaddr *)&sa, len);
	rc = sent < 0 ? -errno : (size_t)sent != n ? -EMSGSIZE : 1;
	close(fd);
	return rc;
}

/* A decimal number, digits only (no sign, space or base prefix), that fits
 * MAX: 0 and *out, or -EINVAL. */
static int parse_decimal(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	if (*s == '\0')
		return -EINVAL;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		uint64_t d = (uint64_t)(*s - '0');
		if (v > (max - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int el_sd_watchdog_parse(const char *usec_s, const char *pid_s, pid_t self, uint64_t *usec)
{
	uint64_t u, pid;
	if (usec_s == NULL)
		return 0;
	/* 0 and UINT64_MAX (systemd's USEC_INFINITY) are not a timeout. */
	if (parse_decimal(usec_s, UINT64_MAX - 1, &u) < 0 || u == 0)
		return -EINVAL;
	if (pid_s != NULL) {
		/* pid_t is int on Linux: at most INT32_MAX, and never 0. */
		if (parse_decimal(pid_s, INT32_MAX, &pid) < 0 || pid == 0)
			return -EINVAL;
		if ((pid_t)pid != self)
			return 0;
	}
	*usec = u;
	return 1;
}

int el_sd_watchdog_enabled(uint64_t *usec)
{
	return el_sd_watchdog_parse(getenv("WATCHDOG_USEC"), getenv("WATCHDOG_PID"), getpid(),
				    usec);
}
