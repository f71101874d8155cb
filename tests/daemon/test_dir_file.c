/*
 * test_dir_file.c - data_dir's small files written whole
 * (cmd/edgelockd/dir_file.c, el_d_replace_file: owner, incarnation): the
 * file replaced at once or not at all, no temp file left, and a failure's
 * log line naming the step's own reason (a short write said whatever errno
 * an earlier call had left, "Success" at the first).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "el_daemon.h"
#include "el_error.h"
#include "el_test.h"

EL_TEST_MAIN_DEFINITIONS

/* The last line logged: the test's own el_log, in place of port/posix's. */
static char logged[512];

void el_log(enum el_log_level level, const char *fmt, ...)
{
	(void)level;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(logged, sizeof logged, fmt, ap);
	va_end(ap);
}

static char dir[64];

static void path_of(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", dir, name);
}

/* The file's bytes, "" when it cannot be read. */
static const char *read_back(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n = f != NULL ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f != NULL)
		fclose(f);
	buf[n] = '\0';
	return buf;
}

static bool exists(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0;
}

static void test_replaced_whole(void)
{
	char path[128], tmp[160];
	path_of(path, sizeof path, "owner");
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	EL_CHECK_EQ(el_d_replace_file(dir, path, "one\n", 4), EL_OK);
	EL_CHECK(strcmp(read_back(path), "one\n") == 0);
	EL_CHECK_EQ(el_d_replace_file(dir, path, "two two\n", 8), EL_OK);
	EL_CHECK(strcmp(read_back(path), "two two\n") == 0);
	EL_CHECK(!exists(tmp));
}

/* A file size limit cuts the first write short and fails the next with
 * EFBIG (SIGXFSZ ignored): the way a filling disk cuts one short. */
static void test_short_write_says_why(void)
{
	char path[128], tmp[160], text[4096];
	path_of(path, sizeof path, "incarnation");
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	EL_CHECK_EQ(el_d_replace_file(dir, path, "old\n", 4), EL_OK);
	memset(text, 'x', sizeof text);
	struct rlimit old, small = { 1000, 0 };
	EL_CHECK_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
	small.rlim_max = old.rlim_max;
	signal(SIGXFSZ, SIG_IGN);
	errno = 0; /* what a short write left to be logged */
	EL_CHECK_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
	const int rc = el_d_replace_file(dir, path, text, sizeof text);
	EL_CHECK_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
	EL_CHECK_EQ(rc, EL_EIO);
	printf("  logged: %s\n", logged);
	EL_CHECK(strstr(logged, strerror(EFBIG)) != NULL);
	EL_CHECK(strcmp(read_back(path), "old\n") == 0); /* untouched */
	EL_CHECK(!exists(tmp));
}

/* A directory where the file goes: the rename's reason, nothing replaced. */
static void test_rename_failure_says_why(void)
{
	char path[128], tmp[160], inner[160];
	path_of(path, sizeof path, "blocked");
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	snprintf(inner, sizeof inner, "%s/x", path);
	EL_CHECK_EQ(mkdir(path, 0700), 0);
	FILE *f = fopen(inner, "w");
	EL_CHECK(f != NULL);
	if (f != NULL)
		fclose(f);
	logged[0] = '\0';
	EL_CHECK_EQ(el_d_replace_file(dir, path, "new\n", 4), EL_EIO);
	printf("  logged: %s\n", logged);
	EL_CHECK(strstr(logged, strerror(EISDIR)) != NULL);
	EL_CHECK(exists(inner));
	EL_CHECK(!exists(tmp));
	unlink(inner);
	rmdir(path);
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/el-dir-file-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return 1;
	EL_RUN(test_replaced_whole);
	EL_RUN(test_short_write_says_why);
	EL_RUN(test_rename_failure_says_why);
	char cmd[96];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("  cannot remove %s\n", dir);
	return el_test_end();
}
