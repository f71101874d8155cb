/*
 * procs.c - the processes the bench starts and stops by PID, and what /proc
 * says about them (on-CPU time, resident memory), plus small file helpers.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000u, .tv_nsec = (long)(ms % 1000u) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

pid_t bench_spawn(char *const argv[], const char *log)
{
	const pid_t pid = fork();
	if (pid != 0)
		return pid;
	/* Should the bench die (a crash, Ctrl-C), its daemons die with it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	const int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
		close(fd);
	}
	execvp(argv[0], argv);
	_exit(127);
}

/* Reap pid, waiting up to ms; true when it is gone. */
static bool reap_within(pid_t pid, unsigned ms)
{
	for (unsigned waited = 0;; waited += 10) {
		const pid_t r = waitpid(pid, NULL, WNOHANG);
		if (r == pid || (r < 0 && errno == ECHILD))
			return true;
		if (waited >= ms)
			return false;
		bench_sleep_ms(10);
	}
}

void bench_stop_pid(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	if (!reap_within(pid, 10000))
		bench_kill_pid(pid);
}

void bench_kill_pid(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	reap_within(pid, 10000);
}

/* utime + stime of every thread, the exited ones included (/proc/PID/stat,
 * in clock ticks: 10 ms, fine over phases of seconds). schedstat would be
 * finer but counts the main thread only. */
uint64_t bench_cpu_ns(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	size_t n = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f != NULL)
		fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* the name may hold spaces */
	unsigned long long ut = 0, st = 0;
	if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
				&ut, &st) != 2)
		return 0;
	return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

uint64_t bench_rss_kib(pid_t pid, bool peak)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	unsigned long kib = 0;
	const char *key = peak ? "VmHWM:" : "VmRSS:";
	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0)
			kib = strtoul(line + strlen(key), NULL, 10);
	if (f != NULL)
		fclose(f);
	return kib;
}

long bench_file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

int bench_mkdir_p(const char *path)
{
	char buf[512];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *p = buf + 1; *p != '\0'; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(buf, 0755);
			*p = '/';
		}
	return mkdir(buf, 0755) == 0 || errno == EEXIST ? 0 : -1;
}

/* rm -rf by a child process: the trees are the bench's own run directories. */
int bench_rm_rf(const char *path)
{
	char *const argv[] = { "/bin/rm", "-rf", (char *)path, NULL };
	const pid_t pid = bench_spawn(argv, "/dev/null");
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}
