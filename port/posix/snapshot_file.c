/*
 * snapshot_file.c - snapshot files, written whole through
 * el_io_replace_file (snapshot.tmp, fsync, rename, directory fsync), and
 * their checked reading. A crash at any point leaves either the old
 * snapshot or the new one under DIR/snapshot, never a mix; a leftover
 * snapshot.tmp is garbage.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "el_bytes.h"
#include "el_crc32c.h"
#include "el_error.h"
#include "el_io.h"
#include "el_platform.h"
#include "el_snapshot_file.h"

#define SNAP_MAGIC 0x4e534c45u /* "ELSN" */
#define SNAP_VERSION 1u
#define SNAP_HEAD_MAX (4 + 4 + 8 + 8 + 1 + 5 * EL_NODES_MAX + 4)

static size_t head_encode(const struct el_snapshot_meta *meta, uint8_t *p)
{
	size_t off = 25;
	el_put32(p, SNAP_MAGIC);
	el_put32(p + 4, SNAP_VERSION);
	el_put64(p + 8, meta->index);
	el_put64(p + 16, meta->term);
	p[24] = meta->conf.n;
	for (unsigned i = 0; i < meta->conf.n; i++, off += 5) {
		el_put32(p + off, meta->conf.m[i].id);
		p[off + 4] = meta->conf.m[i].role;
	}
	el_put32(p + off, meta->len);
	return off + 4;
}

int el_snapshot_file_write(const char *dir, int dir_fd, const struct el_snapshot_meta *meta,
			   const uint8_t *data)
{
	uint8_t head[SNAP_HEAD_MAX], crc[4];

	if (meta->conf.n > EL_NODES_MAX || meta->len > EL_SNAPSHOT_MAX ||
	    (meta->len > 0 && data == NULL))
		return EL_EINVAL;
	const size_t head_len = head_encode(meta, head);
	el_put32(crc, el_crc32c(el_crc32c(0, head, head_len), data, meta->len));
	const struct el_io_buf bufs[] = { { head, head_len }, { data, meta->len }, { crc, 4 } };
	return el_io_replace_file(dir, dir_fd, EL_SNAPSHOT_TMP, EL_SNAPSHOT_FILE, bufs,
				  sizeof bufs / sizeof bufs[0]);
}

static int corrupt(const char *path, const char *why)
{
	el_log(EL_LOG_ERROR, "snapshot file %s is corrupt (%s); refusing to start", path, why);
	return EL_ECORRUPT;
}

/* Check and unpack a whole file image of n bytes. */
static int parse(const char *path, const uint8_t *b, size_t n, struct el_snapshot_meta *meta,
		 uint8_t *data)
{
	size_t off = 25;
	if (n < 25 + 4 + 4)
		return corrupt(path, "too short");
	if (el_get32(b + n - 4) != el_crc32c(0, b, n - 4))
		return corrupt(path, "checksum mismatch");
	if (el_get32(b) != SNAP_MAGIC || el_get32(b + 4) != SNAP_VERSION)
		return corrupt(path, "bad magic or version");
	memset(meta, 0, sizeof *meta);
	meta->index = el_get64(b + 8);
	meta->term = el_get64(b + 16);
	meta->conf.n = b[24];
	if (meta->conf.n > EL_NODES_MAX || n < off + 5u * meta->conf.n + 8)
		return corrupt(path, "bad member count");
	for (unsigned i = 0; i < meta->conf.n; i++, off += 5) {
		meta->conf.m[i].id = el_get32(b + off);
		meta->conf.m[i].role = b[off + 4];
	}
	meta->len = el_get32(b + off);
	off += 4;
	if (meta->len > EL_SNAPSHOT_MAX || n - off - 4 != meta->len)
		return corrupt(path, "bad data length");
	memcpy(data, b + off, meta->len);
	return EL_OK;
}

int el_snapshot_file_read(const char *dir, struct el_snapshot_meta *meta, uint8_t *data,
			  bool *found)
{
	char path[PATH_MAX];
	size_t cap = SNAP_HEAD_MAX + EL_SNAPSHOT_MAX + 4 + 1, n = 0;
	uint8_t *buf;
	ssize_t got;
	int fd, rc;

	*found = false;
	if (snprintf(path, sizeof path, "%s/" EL_SNAPSHOT_FILE, dir) >= (int)sizeof path)
		return EL_EINVAL;
	/* O_NONBLOCK: a FIFO by that name (a damaged directory) would block the
	 * open for ever, waiting for a writer; it is refused below. */
	fd = el_io.open(path, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0 && errno == ENOENT)
		return EL_OK;
	if (fd < 0) {
		el_log(EL_LOG_ERROR, "cannot open %s: %s", path, strerror(errno));
		return EL_EIO;
	}
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return corrupt(path, "not a regular file");
	}
	buf = malloc(cap);
	rc = buf ? EL_OK : EL_EIO;
	while (rc == EL_OK && n < cap && (got = read(fd, buf + n, cap - n)) != 0) {
		if (got < 0 && errno != EINTR)
			rc = EL_EIO;
		else if (got > 0)
			n += (size_t)got;
	}
	close(fd);
	if (rc == EL_OK)
		rc = n == cap ? corrupt(path, "larger than any snapshot") : parse(path, buf, n, meta, data);
	free(buf);
	*found = rc == EL_OK;
	return rc;
}
