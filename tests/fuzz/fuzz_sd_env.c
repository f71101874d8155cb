/*
 * fuzz_sd_env.c - libFuzzer target for what edgelockd reads from systemd's
 * environment (cmd/edgelockd/sd_notify.c): the input, split at NUL bytes
 * into WATCHDOG_USEC, WATCHDOG_PID and NOTIFY_SOCKET values, must give a
 * watchdog only for a decimal timeout other than 0 and infinity whose pid
 * (if any) is ours, and an address only of a form systemd uses, that fits.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "el_sd_notify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_watchdog(const char *usec_s, const char *pid_s)
{
	uint64_t us = 0;
	int rc = el_sd_watchdog_parse(usec_s, pid_s, 42, &us);
	if (rc != 1 && rc != 0 && rc != -EINVAL)
		abort();
	if (rc == 1) {
		/* Accepted: digits only, the value they spell, a real timeout. */
		if (strspn(usec_s, "0123456789") != strlen(usec_s) || us == 0 || us == UINT64_MAX)
			abort();
		if (strtoull(usec_s, NULL, 10) != us)
			abort();
		if (pid_s != NULL && strtoull(pid_s, NULL, 10) != 42)
			abort();
	}
}

static void check_address(const char *name)
{
	struct sockaddr_un sa;
	socklen_t len = 0;
	size_t n = strlen(name);
	if (el_sd_notify_addr(name, &sa, &len) != 0)
		return;
	size_t base = offsetof(struct sockaddr_un, sun_path);
	if (sa.sun_family != AF_UNIX || len <= base || len > sizeof(sa))
		abort();
	if (name[0] == '/' && (len != base + n + 1 || strcmp(sa.sun_path, name) != 0))
		abort();
	if (name[0] == '@' && (len != base + n || n < 2 || sa.sun_path[0] != '\0' ||
			       memcmp(sa.sun_path + 1, name + 1, n - 1) != 0))
		abort();
	if (name[0] != '/' && name[0] != '@')
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[512];
	const char *part[3] = {buf, NULL, NULL}; /* a missing part is an unset variable */
	if (size >= sizeof(buf))
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (int i = 1; i < 3; i++) {
		const char *end = part[i - 1] != NULL ? part[i - 1] + strlen(part[i - 1]) : NULL;
		part[i] = end != NULL && end < buf + size ? end + 1 : NULL;
	}
	check_watchdog(part[0], part[1]);
	check_watchdog(part[0], NULL);
	check_address(part[2] != NULL ? part[2] : part[0]);
	return 0;
}
