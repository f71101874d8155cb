/*
 * snapshot.c - `edgelock snapshot save FILE`: a backup of the cluster's lock
 * table. The leader writes its table once, after a linearizable read (so the
 * backup holds every write acknowledged before the command began), and hands
 * it out in chunks (SNAPSHOT, docs/protocol.md); the file is a header with
 * the bytes' CRC-32C (net/el_backup.h) and the table's snapshot bytes.
 *
 * They go to a new file of FILE's directory, FILE.tmp-XXXXXX (mkstemp:
 * created, never opened if something is there, so a symlink planted at a
 * predictable name cannot redirect the write), mode 0600, fsynced, renamed
 * over FILE, and the directory fsynced: FILE is never half a backup. FILE
 * itself must be a regular file or absent: a device, FIFO, directory or
 * symlink there is refused, since the rename would replace it, not write
 * through it (a symlink: give the path it points to).
 * `edgelockd restore FILE` checks it and seeds a new cluster from it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <libgen.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "el_backup.h"
#include "el_cli.h"
#include "el_client_wire.h"
#include "el_crc32c.h"
#include "el_error.h"
#include "edgelock.h"

#define ATTEMPTS 3 /* a leader change between chunks starts the copy over */

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		const ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Fetch the whole snapshot into fd after the header's room; EL_OK,
 * EL_ESTALE (start over) or an error; *index, *total and *crc say what was
 * fetched. */
static int fetch(struct el_cli *cli, struct el_cw_msg *m, int fd, uint64_t *index,
		 uint32_t *total, uint32_t *crc)
{
	uint32_t offset = 0;
	*index = 0;
	*crc = 0;
	do {
		memset(m, 0, 2 * sizeof(*m));
		m->type = EL_CW_SNAPSHOT;
		m->index = *index;
		m->offset = offset;
		int rc = el_client_request(cli->client, m, m + 1);
		if (rc == EL_OK)
			rc = m[1].err;
		/* the leader's refusal is its [acl]'s; a refusal at the connection
		 * (a revoked certificate, none given) keeps the library's words */
		if (rc == EL_EPERM && m[1].err == EL_EPERM)
			cli->why = "not allowed: needs the admin operation in the server's [acl]";
		if (rc != EL_OK)
			return rc;
		if (m[1].offset != offset || (*index != 0 && m[1].index != *index) ||
		    m[1].index == 0 || (m[1].chunk_len == 0 && offset < m[1].total))
			return EL_EDECODE; /* not the chunk asked for */
		*index = m[1].index;
		*total = m[1].total;
		if (write_all(fd, m[1].chunk, m[1].chunk_len) != 0)
			return EL_EIO;
		*crc = el_crc32c(*crc, m[1].chunk, m[1].chunk_len);
		offset += m[1].chunk_len;
	} while (offset < *total);
	return EL_OK;
}

/* FILE may be replaced: absent, or a regular file. 0, or EL_EXIT_FAILED
 * after saying why (nothing written). */
static int target_ok(const char *file)
{
	struct stat st;
	if (lstat(file, &st) != 0) {
		if (errno == ENOENT)
			return 0;
		fprintf(stderr, "edgelock: snapshot save: %s: %s\n", file, strerror(errno));
		return EL_EXIT_FAILED;
	}
	if (S_ISREG(st.st_mode))
		return 0;
	fprintf(stderr, "edgelock: snapshot save: %s is %s, not a regular file; refused: the backup "
		"replaces FILE%s\n", file,
		S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISDIR(st.st_mode) ? "a directory"
		: S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)
		? "a device" : "a socket or other special file",
		S_ISLNK(st.st_mode) ? " (give the path the link points to)" : "");
	return EL_EXIT_FAILED;
}

/* fsync FILE's directory, so the rename survives a crash. */
static int sync_dir(const char *file)
{
	char copy[PATH_MAX];
	snprintf(copy, sizeof copy, "%s", file);
	const int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	const int rc = fsync(fd);
	close(fd);
	return rc;
}

/* The snapshot into fd (a new file), from its start; a leader change
 * between chunks starts the copy over. EL_OK, EL_EIO (errno says why) or
 * the cluster's error; *index and *total say what was written. */
static int fill(struct el_cli *cli, int fd, uint64_t *index, uint32_t *total)
{
	struct el_cw_msg *m = calloc(2, sizeof(*m));
	if (m == NULL)
		return EL_EFULL;
	int rc = EL_ESTALE;
	for (int attempt = 0; attempt < ATTEMPTS && rc == EL_ESTALE; attempt++) {
		uint8_t head[EL_BACKUP_HEADER] = { 0 };
		uint32_t crc = 0;
		rc = ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0 &&
				     write_all(fd, head, sizeof head) == 0
			     ? fetch(cli, m, fd, index, total, &crc) : EL_EIO;
		el_backup_header(head, *total, crc);
		if (rc == EL_OK && (pwrite(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
				    fsync(fd) != 0))
			rc = EL_EIO;
	}
	free(m);
	return rc;
}

/* Say why a save failed; its exit code. */
static int save_failed(struct el_cli *cli, const char *file, int rc, int err)
{
	if (rc == EL_EIO) {
		fprintf(stderr, "edgelock: snapshot save: writing %s: %s\n", file, strerror(err));
		return EL_EXIT_FAILED;
	}
	if (rc == EL_ESTALE) { /* the library has no message of its own for it */
		fprintf(stderr, "edgelock: snapshot save: the leader's snapshot changed %d times "
			"during the copy (a leader change, another backup); try again\n", ATTEMPTS);
		return EL_EXIT_FAILED;
	}
	return el_cli_fail(cli, "snapshot save", rc);
}

static int save(struct el_cli *cli, const char *file)
{
	char tmp[4096];
	/* FILE.tmp-XXXXXX, renamed over FILE once whole: a name too long to
	 * take the suffix would make the two one file, and a failed save
	 * destroy FILE. */
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", file) >= sizeof tmp) {
		fprintf(stderr, "edgelock: snapshot save: the path is too long (%zu bytes; at most "
			"%zu)\n", strlen(file), sizeof tmp - sizeof ".tmp-XXXXXX");
		return EL_EXIT_USAGE;
	}
	int rc = target_ok(file);
	if (rc != 0 || (rc = el_cli_connect(cli)) != 0)
		return rc;
	const int fd = mkstemp(tmp); /* O_CREAT | O_EXCL, 0600 */
	if (fd < 0) {
		fprintf(stderr, "edgelock: snapshot save: creating %s: %s\n", tmp, strerror(errno));
		return EL_EXIT_FAILED;
	}
	uint64_t index = 0;
	uint32_t total = 0;
	rc = fill(cli, fd, &index, &total);
	int err = errno;
	if (close(fd) != 0 && rc == EL_OK)
		rc = EL_EIO, err = errno;
	/* checked again: FILE may have become something else meanwhile */
	if (rc == EL_OK && target_ok(file) != 0) {
		unlink(tmp);
		return EL_EXIT_FAILED;
	}
	if (rc == EL_OK && rename(tmp, file) != 0)
		rc = EL_EIO, err = errno;
	if (rc != EL_OK) {
		unlink(tmp);
		return save_failed(cli, file, rc, err);
	}
	if (sync_dir(file) != 0) /* FILE is whole; its name may not outlive a crash */
		return save_failed(cli, file, EL_EIO, errno);
	char shown[4 * 256 + 1];
	printf("snapshot of the lock table at index %" PRIu64 " (%u bytes) saved to %s%s\n", index,
	       total, el_cli_text(file, strnlen(file, 256), shown, sizeof shown),
	       strlen(file) > 256 ? "..." : "");
	return EL_EXIT_OK;
}

int el_cli_snapshot(struct el_cli *cli, int argc, char **argv)
{
	static const char text[] =
		"usage: edgelock snapshot save FILE\n"
		"Save a consistent backup of the cluster's lock table (sessions, locks,\n"
		"tokens, waiters) to FILE, taken by the leader after every write\n"
		"acknowledged before the command began. Needs the admin operation.\n"
		"Written to a new FILE.tmp-XXXXXX (0600), fsynced, then renamed over\n"
		"FILE: FILE must be absent or a regular file (a symlink, device, FIFO\n"
		"or directory is refused, exit 1).\n"
		"Seed a new cluster from it with `edgelockd restore FILE -c CONF` on\n"
		"each of its nodes (docs/operations.md).\n";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(text, stdout);
			return EL_EXIT_OK;
		}
	}
	if (argc < 2)
		return el_cli_usage("snapshot", "a subcommand is missing (snapshot save FILE)", NULL,
				    text);
	if (strcmp(argv[1], "save") != 0)
		return el_cli_usage("snapshot", "unknown subcommand (only save):", argv[1], text);
	if (argc < 3)
		return el_cli_usage("snapshot save", "FILE is missing", NULL, text);
	if (argc > 3)
		return el_cli_usage("snapshot save", argv[3][0] == '-' ? "unknown option"
				    : "unexpected argument", argv[3], text);
	return save(cli, argv[2]);
}
