/*
 * fence_file.c - a fence's highest token kept in a file (fence_file.h).
 * Rewriting the file in place (fopen "w") would not do: a crash between
 * the truncation and the write leaves it empty, and an empty fence is a
 * fence at 0 that accepts a paused holder's stale token.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "el_error.h"
#include "fence_file.h"

/* fsync the directory holding path: the rename is durable only then. */
static int sync_dir(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	if (slash == NULL)
		snprintf(dir, sizeof dir, ".");
	else /* keep the slash: "/x" lives in "/" */
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path + 1), path);
	const int fd = open(dir, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		return EL_EIO;
	const int rc = fsync(fd);
	close(fd);
	return rc == 0 ? EL_OK : EL_EIO;
}

int durable_write(const char *path, const char *text)
{
	char tmp[4096];
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
		return EL_EIO;
	FILE *f = fopen(tmp, "w");
	if (f == NULL)
		return EL_EIO;
	const bool ok = fputs(text, f) >= 0 && fflush(f) == 0 && fsync(fileno(f)) == 0;
	if (fclose(f) != 0 || !ok || rename(tmp, path) != 0)
		return EL_EIO;
	return sync_dir(path);
}

int fence_file_persist(void *ctx, uint64_t highest)
{
	char text[32];
	snprintf(text, sizeof text, "%" PRIu64 "\n", highest);
	return durable_write(ctx, text);
}

int fence_file_load(const char *path, uint64_t *highest)
{
	*highest = 0;
	FILE *f = fopen(path, "r");
	struct stat st;
	if (f == NULL) /* only a missing file is 0: not a dangling symlink (a
			* state partition that did not mount), which would be */
		return errno == ENOENT && lstat(path, &st) != 0 ? EL_OK : EL_EIO;
	char text[32];
	const size_t n = fread(text, 1, sizeof text - 1, f);
	const bool failed = ferror(f) != 0;
	fclose(f);
	if (failed)
		return EL_EIO;
	text[n] = '\0';
	/* Digits and one optional newline, as fence_file_persist writes: an
	 * empty, torn or foreign file is no token. */
	char *end;
	errno = 0;
	const unsigned long long v = strtoull(text, &end, 10);
	if (text[0] < '0' || text[0] > '9' || errno != 0 || (strcmp(end, "\n") != 0 && *end != '\0'))
		return EL_ECORRUPT;
	*highest = v;
	return EL_OK;
}
