/*
 * wal_newest.c - DIR/wal-newest, the record of the newest WAL segment's
 * number, so that recovery sees the newest segment deleted while older ones
 * remain (storage_recover.c: check_newest_segment). Nothing else can: the
 * older segments are whole and their batch numbers run on, yet the node
 * would start on a shorter log and an older term and vote than it
 * acknowledged (a vote given twice in one term, entries it told the leader
 * it stored forgotten).
 *
 * One line, "newest wal-<16 hex>.log crc32c CHECK\n", CHECK the CRC-32C of
 * what comes before " crc32c" (as cmd/edgelockd's owner file), so an
 * operator can read it and a flipped bit is not taken for another number.
 * Replaced whole, as the snapshot file (el_io_replace_file): written to
 * wal-newest.tmp, fsynced, renamed over, the directory fsynced, so a crash
 * leaves the old line or the new one.
 *
 * When: at each segment roll (wal.c: el_wal_new_segment), after the new
 * segment's directory entry is durable and before its first batch is
 * written. So once a segment holds a batch, the file names it or a newer
 * one, and a crash at any point leaves it naming the newest segment on
 * disk or the one before (the new one then empty, and recovery brings the
 * file up to it). Its cost is per roll (one segment_bytes, 4 MiB by
 * default), never per batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "el_crc32c.h"
#include "el_error.h"
#include "el_io.h"
#include "el_wal.h"

#define HEAD_LEN (7 + 24) /* "newest wal-<16 hex>.log" */

int el_wal_newest_line(uint64_t seq, char *out, size_t cap)
{
	char head[HEAD_LEN + 1];
	snprintf(head, sizeof head, "newest wal-%016" PRIx64 ".log", seq);
	const int n = snprintf(out, cap, "%s crc32c %08" PRIx32 "\n", head,
			       el_crc32c(0, head, HEAD_LEN));
	return n > 0 && (size_t)n < cap ? n : EL_EINVAL;
}

int el_wal_newest_write(const char *dir, int dir_fd, uint64_t seq)
{
	char line[EL_WAL_NEWEST_LINE_MAX];
	const int n = el_wal_newest_line(seq, line, sizeof line);
	if (n < 0)
		return EL_EINVAL;
	const struct el_io_buf buf = { line, (size_t)n };
	return el_io_replace_file(dir, dir_fd, EL_WAL_NEWEST_TMP, EL_WAL_NEWEST_FILE, &buf, 1);
}

/* Exactly the line el_wal_newest_line writes for the number it names. */
static bool parse(const char *text, size_t n, uint64_t *seq)
{
	char name[25], line[EL_WAL_NEWEST_LINE_MAX];
	if (n < HEAD_LEN || strncmp(text, "newest ", 7) != 0)
		return false;
	memcpy(name, text + 7, 24);
	name[24] = '\0';
	if (!el_wal_segment_name(name, seq))
		return false;
	const int len = el_wal_newest_line(*seq, line, sizeof line);
	return len > 0 && n == (size_t)len && memcmp(text, line, n) == 0;
}

/* O_NONBLOCK: a FIFO by that name would block the open for ever. */
int el_wal_newest_read(const char *dir, uint64_t *seq, bool *found)
{
	char path[PATH_MAX], text[EL_WAL_NEWEST_LINE_MAX + 1];
	struct stat sb;
	*found = false;
	if (snprintf(path, sizeof path, "%s/" EL_WAL_NEWEST_FILE, dir) >= (int)sizeof path)
		return EL_EINVAL;
	const int fd = el_io.open(path, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0)
		return errno == ENOENT ? EL_OK : EL_EIO;
	const int stat_rc = fstat(fd, &sb);
	if (stat_rc != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return stat_rc != 0 ? EL_EIO : EL_ECORRUPT;
	}
	const ssize_t n = read(fd, text, sizeof text); /* a full buffer: longer than the line */
	close(fd);
	if (n < 0)
		return EL_EIO;
	if (!parse(text, (size_t)n, seq))
		return EL_ECORRUPT;
	*found = true;
	return EL_OK;
}
