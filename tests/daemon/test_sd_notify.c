/*
 * test_sd_notify.c - edgelockd's own systemd notify client
 * (cmd/edgelockd/sd_notify.c): NOTIFY_SOCKET's two address forms and its bad
 * values, a datagram really arriving at a path and at an abstract socket, and
 * the watchdog variables read as sd_watchdog_enabled(3) reads them.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "el_sd_notify.h"
#include "el_test.h"

EL_TEST_MAIN_DEFINITIONS

static void test_address_forms(void)
{
	struct sockaddr_un sa;
	socklen_t len = 0;
	const socklen_t base = (socklen_t)offsetof(struct sockaddr_un, sun_path);
	EL_CHECK_EQ(el_sd_notify_addr("/run/systemd/notify", &sa, &len), 0);
	EL_CHECK_EQ(len, base + 20); /* the path and its NUL */
	EL_CHECK(strcmp(sa.sun_path, "/run/systemd/notify") == 0);
	EL_CHECK_EQ(el_sd_notify_addr("@sd-notify", &sa, &len), 0);
	EL_CHECK_EQ(len, base + 10); /* a NUL, then the name without one */
	EL_CHECK(sa.sun_path[0] == '\0' && memcmp(sa.sun_path + 1, "sd-notify", 9) == 0);
}

static void test_address_refusals(void)
{
	struct sockaddr_un sa;
	socklen_t len = 0;
	char big[sizeof(sa.sun_path) + 2];
	EL_CHECK_EQ(el_sd_notify_addr("", &sa, &len), -EINVAL);
	EL_CHECK_EQ(el_sd_notify_addr("@", &sa, &len), -EINVAL);
	EL_CHECK_EQ(el_sd_notify_addr("run/notify", &sa, &len), -EAFNOSUPPORT);
	EL_CHECK_EQ(el_sd_notify_addr("vsock:2:1234", &sa, &len), -EAFNOSUPPORT);
	/* A path fills sun_path with its NUL; an abstract name may fill it all. */
	memset(big, 'a', sizeof(big));
	big[0] = '/';
	big[sizeof(sa.sun_path) - 1] = '\0';
	EL_CHECK_EQ(el_sd_notify_addr(big, &sa, &len), 0);
	big[sizeof(sa.sun_path) - 1] = 'a';
	big[sizeof(sa.sun_path)] = '\0';
	EL_CHECK_EQ(el_sd_notify_addr(big, &sa, &len), -EINVAL);
	big[0] = '@';
	EL_CHECK_EQ(el_sd_notify_addr(big, &sa, &len), 0);
	big[sizeof(sa.sun_path)] = 'a';
	big[sizeof(sa.sun_path) + 1] = '\0';
	EL_CHECK_EQ(el_sd_notify_addr(big, &sa, &len), -EINVAL);
}

/* Binds NAME (as NOTIFY_SOCKET spells it), sends MSG through el_sd_notify and
 * checks that it arrives whole as one datagram. */
static void send_and_receive(const char *name, const char *msg)
{
	struct sockaddr_un sa;
	socklen_t len;
	char got[256];
	EL_CHECK_EQ(el_sd_notify_addr(name, &sa, &len), 0);
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	EL_CHECK(fd >= 0);
	EL_CHECK_EQ(bind(fd, (const struct sockaddr *)&sa, len), 0);
	setenv("NOTIFY_SOCKET", name, 1);
	EL_CHECK_EQ(el_sd_notify(msg), 1);
	ssize_t n = recv(fd, got, sizeof(got), MSG_DONTWAIT);
	EL_CHECK_EQ(n, (ssize_t)strlen(msg));
	EL_CHECK(n > 0 && memcmp(got, msg, (size_t)n) == 0);
	close(fd);
	unsetenv("NOTIFY_SOCKET");
}

static void test_send(void)
{
	char dir[] = "/tmp/el-sd-notify-XXXXXX", path[64], abstract[64];
	EL_CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/notify", dir);
	send_and_receive(path, "READY=1\nSTATUS=node 1: leader, term 2");
	unlink(path);
	snprintf(abstract, sizeof(abstract), "@el-sd-notify-test-%ld", (long)getpid());
	send_and_receive(abstract, "WATCHDOG=1");
	/* Nobody listening: an error to log, not a crash or a silent success. */
	setenv("NOTIFY_SOCKET", path, 1);
	EL_CHECK_EQ(el_sd_notify("WATCHDOG=1"), -ENOENT);
	setenv("NOTIFY_SOCKET", "relative", 1);
	EL_CHECK_EQ(el_sd_notify("WATCHDOG=1"), -EAFNOSUPPORT);
	unsetenv("NOTIFY_SOCKET");
	EL_CHECK_EQ(el_sd_notify("WATCHDOG=1"), 0); /* not under systemd */
	rmdir(dir);
}

static void test_watchdog_values(void)
{
	uint64_t us = 7;
	EL_CHECK_EQ(el_sd_watchdog_parse(NULL, NULL, 42, &us), 0);
	EL_CHECK_EQ(el_sd_watchdog_parse(NULL, "42", 42, &us), 0);
	EL_CHECK_EQ(us, 7u); /* untouched when off */
	EL_CHECK_EQ(el_sd_watchdog_parse("400000", NULL, 42, &us), 1);
	EL_CHECK_EQ(us, 400000u);
	EL_CHECK_EQ(el_sd_watchdog_parse("10000000", "42", 42, &us), 1);
	EL_CHECK_EQ(us, 10000000u);
	EL_CHECK_EQ(el_sd_watchdog_parse("18446744073709551614", NULL, 42, &us), 1);
	EL_CHECK_EQ(us, UINT64_MAX - 1);
	us = 7;
	EL_CHECK_EQ(el_sd_watchdog_parse("400000", "43", 42, &us), 0); /* another's */
	EL_CHECK_EQ(us, 7u);
	EL_CHECK_EQ(el_sd_watchdog_parse("400000", "2147483647", 42, &us), 0);
}

static void test_watchdog_refusals(void)
{
	static const char *const bad_usec[] = {
		"", "0", "-1", "+5", " 5", "5 ", "5s", "0x10", "1e6", "4.5",
		"18446744073709551615", /* USEC_INFINITY */
		"18446744073709551616", "99999999999999999999999",
	};
	static const char *const bad_pid[] = {
		"", "0", "-42", "+42", " 42", "42 ", "42x", "2147483648", "99999999999999999999",
	};
	uint64_t us = 7;
	for (size_t i = 0; i < sizeof(bad_usec) / sizeof(bad_usec[0]); i++) {
		if (el_sd_watchdog_parse(bad_usec[i], NULL, 42, &us) != -EINVAL)
			fprintf(stderr, "  WATCHDOG_USEC=\"%s\" accepted\n", bad_usec[i]);
		EL_CHECK_EQ(el_sd_watchdog_parse(bad_usec[i], NULL, 42, &us), -EINVAL);
	}
	for (size_t i = 0; i < sizeof(bad_pid) / sizeof(bad_pid[0]); i++) {
		if (el_sd_watchdog_parse("400000", bad_pid[i], 42, &us) != -EINVAL)
			fprintf(stderr, "  WATCHDOG_PID=\"%s\" accepted\n", bad_pid[i]);
		EL_CHECK_EQ(el_sd_watchdog_parse("400000", bad_pid[i], 42, &us), -EINVAL);
	}
	EL_CHECK_EQ(us, 7u);
}

static void test_watchdog_environment(void)
{
	char pid[24];
	uint64_t us = 0;
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	setenv("WATCHDOG_USEC", "400000", 1);
	setenv("WATCHDOG_PID", pid, 1);
	EL_CHECK_EQ(el_sd_watchdog_enabled(&us), 1);
	EL_CHECK_EQ(us, 400000u);
	snprintf(pid, sizeof(pid), "%ld", (long)getppid());
	setenv("WATCHDOG_PID", pid, 1);
	EL_CHECK_EQ(el_sd_watchdog_enabled(&us), 0);
	unsetenv("WATCHDOG_PID");
	setenv("WATCHDOG_USEC", "soon", 1);
	EL_CHECK_EQ(el_sd_watchdog_enabled(&us), -EINVAL);
	unsetenv("WATCHDOG_USEC");
	EL_CHECK_EQ(el_sd_watchdog_enabled(&us), 0);
}

int main(void)
{
	EL_RUN(test_address_forms);
	EL_RUN(test_address_refusals);
	EL_RUN(test_send);
	EL_RUN(test_watchdog_values);
	EL_RUN(test_watchdog_refusals);
	EL_RUN(test_watchdog_environment);
	return el_test_end();
}
