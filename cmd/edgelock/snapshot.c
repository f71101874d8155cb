/*
 * snapshot.c - `edgelock snapshot save FILE`: a backup of the cluster's lock
 * table. The leader writes its table once, after a linearizable read (so the
 * backup holds every write acknowledged before the command began), and hands
 * it out in chunks (SNAPSHOT, docs/protocol.md); the file is a header with
 * the bytes' CRC-32C (net/el_backup.h) and the table's snapshot bytes,
 * written to FILE.tmp, fsynced and renamed, so FILE is never half a backup.
 * `edgelockd restore FILE` checks it and seeds a new cluster from it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int save(struct el_cli *cli, const char *file)
{
	char tmp[4096];
	/* FILE.tmp, renamed over FILE once whole: a name too long to take the
	 * suffix would make the two one file, and a failed save destroy FILE. */
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", file) >= sizeof tmp) {
		fprintf(stderr, "edgelock: snapshot save: the path is too long (%zu bytes; at most "
			"%zu)\n", strlen(file), sizeof tmp - sizeof ".tmp");
		return EL_EXIT_USAGE;
	}
	struct el_cw_msg *m = calloc(2, sizeof(*m));
	if (m == NULL)
		return EL_EXIT_SOFTWARE;
	uint64_t index = 0;
	uint32_t total = 0;
	int rc = EL_ESTALE;
	for (int attempt = 0; attempt < ATTEMPTS && rc == EL_ESTALE; attempt++) {
		const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0) {
			fprintf(stderr, "edgelock: snapshot save: %s: %s\n", tmp, strerror(errno));
			free(m);
			return EL_EXIT_FAILED;
		}
		uint8_t head[EL_BACKUP_HEADER] = { 0 };
		uint32_t crc = 0;
		rc = write_all(fd, head, sizeof head) == 0 ? fetch(cli, m, fd, &index, &total, &crc)
							 : EL_EIO;
		el_backup_header(head, total, crc);
		if (rc == EL_OK && (pwrite(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
				    fsync(fd) != 0))
			rc = EL_EIO;
		close(fd);
	}
	free(m);
	if (rc == EL_OK && rename(tmp, file) != 0)
		rc = EL_EIO;
	if (rc != EL_OK) {
		unlink(tmp);
		if (rc == EL_EIO) {
			fprintf(stderr, "edgelock: snapshot save: writing %s: %s\n", file, strerror(errno));
			return EL_EXIT_FAILED;
		}
		if (rc == EL_EPERM) {
			fprintf(stderr, "edgelock: snapshot save: not allowed: needs the admin "
					"operation in the server's [acl]\n");
			return EL_EXIT_NOPERM;
		}
		return el_cli_fail(cli, "snapshot save", rc);
	}
	printf("snapshot of the lock table at index %" PRIu64 " (%u bytes) saved to %s\n", index,
	       total, file);
	return EL_EXIT_OK;
}

int el_cli_snapshot(struct el_cli *cli, int argc, char **argv)
{
	static const char text[] =
		"usage: edgelock snapshot save FILE\n"
		"Save a consistent backup of the cluster's lock table (sessions, locks,\n"
		"tokens, waiters) to FILE, taken by the leader after every write\n"
		"acknowledged before the command began. Needs the admin operation.\n"
		"Seed a new cluster from it with `edgelockd restore FILE -c CONF` on\n"
		"each of its nodes (docs/operations.md).\n";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(text, stdout);
			return EL_EXIT_OK;
		}
	}
	if (argc < 2)
		return el_cli_usage("snapshot", "save FILE is missing", NULL, text);
	if (strcmp(argv[1], "save") != 0)
		return el_cli_usage("snapshot", "unknown subcommand (only save):", argv[1], text);
	if (argc < 3)
		return el_cli_usage("snapshot save", "FILE is missing", NULL, text);
	if (argc > 3)
		return el_cli_usage("snapshot save", argv[3][0] == '-' ? "unknown option"
				    : "unexpected argument", argv[3], text);
	const int rc = el_cli_connect(cli);
	return rc != 0 ? rc : save(cli, argv[2]);
}
