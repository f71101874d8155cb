/*
 * fuzz_posix_storage.c - libFuzzer target for recovery: the input becomes a
 * data directory (a snapshot file and one or two WAL segments), which is
 * opened and loaded. Recovery must never crash or misbehave; when it accepts
 * the directory, the visited log must be contiguous after the snapshot, and
 * opening the directory a second time must find nothing more to cut and
 * return the very same state (recovery is idempotent). A directory
 * el_storage_holds_nothing says holds nothing must recover as empty.
 *
 * Input: flags u8 | [snapshot length u16, snapshot bytes] if flags & 2 |
 *        [split u16] if flags & 4 | [newest u8 (, bytes)] if flags & 8 |
 *        WAL bytes (split in two segments).
 * newest < 0x80 writes wal-newest naming that segment number, as the port
 * writes it; else the file is the next (newest & 0x7f) bytes, raw.
 * flags & 1 repairs every checksum first, so the fuzzer reaches the replay
 * logic (truncations, hard state, odd indices) instead of stopping at CRCs.
 */
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
#include "el_platform.h"
#include "el_storage.h"
#include "el_wal.h"
#include "port_test_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[PATH_MAX];

struct seen {
	bool snap;
	uint64_t next, count, hash;
	struct el_hard_state hs;
	int hs_calls;
};

static int v_snapshot(void *ctx, const struct el_snapshot_meta *m, const uint8_t *d)
{
	struct seen *s = ctx;
	if (s->snap || s->count || m->len > EL_SNAPSHOT_MAX || (m->len && !d))
		abort();
	s->snap = true;
	s->next = m->index + 1;
	return EL_OK;
}

static int v_entry(void *ctx, const struct el_entry *e)
{
	struct seen *s = ctx;
	if ((s->count || s->snap) && e->index != s->next)
		abort(); /* the log handed back must be contiguous */
	if (e->len > EL_ENTRY_DATA_MAX)
		abort();
	s->next = e->index + 1;
	s->count++;
	s->hash = el_crc32c((uint32_t)s->hash, e, offsetof(struct el_entry, data) + e->len);
	return EL_OK;
}

static int v_hard_state(void *ctx, const struct el_hard_state *hs)
{
	struct seen *s = ctx;
	s->hs = *hs;
	s->hs_calls++;
	return EL_OK;
}

/* Re-seal every record that frames correctly, so checksums never stop us. */
static void repair_records(uint8_t *b, size_t n)
{
	size_t off = 0;
	while (n - off >= EL_REC_HEADER) {
		uint32_t len = el_get32(b + off);
		if (len < 1 || len > EL_REC_LEN_MAX || n - off - EL_REC_HEADER < len)
			return;
		uint32_t crc = el_crc32c(el_crc32c(0, b + off, 4), b + off + EL_REC_HEADER, len);
		el_put32(b + off + 4, crc);
		off += EL_REC_HEADER + len;
	}
}

static void put_file(const char *name, const uint8_t *b, size_t n)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || (n && write(fd, b, n) != (ssize_t)n))
		abort();
	close(fd);
}

/* wal-newest from data[off]: a line naming a segment, or raw bytes. */
static size_t put_newest(const uint8_t *data, size_t size, size_t off)
{
	const uint8_t k = data[off++];
	if (k < 0x80) {
		char line[EL_WAL_NEWEST_LINE_MAX];
		const int n = el_wal_newest_line(k, line, sizeof line);
		if (n < 0)
			abort();
		put_file(EL_WAL_NEWEST_FILE, (const uint8_t *)line, (size_t)n);
		return off;
	}
	size_t n = k & 0x7fu;
	if (n > size - off)
		n = size - off;
	put_file(EL_WAL_NEWEST_FILE, data + off, n);
	return off + n;
}

static int open_load(struct seen *s)
{
	struct el_storage *st;
	memset(s, 0, sizeof *s);
	const struct el_storage_visitor v = { s, v_snapshot, v_entry, v_hard_state };
	int rc = el_storage_open(&st, dir, NULL);
	if (rc != EL_OK)
		return rc;
	rc = el_storage_load(st, &v);
	if (rc == EL_OK && (s->hs_calls != 1 || (s->count && el_storage_last_index(st) != s->next - 1)))
		abort();
	el_storage_close(st);
	return rc;
}

static void layout(const uint8_t *data, size_t size, uint8_t *buf)
{
	uint8_t flags = data[0];
	size_t off = 1, split = SIZE_MAX;
	if ((flags & 2) && size - off >= 2) {
		size_t snap_len = el_get16(data + off);
		off += 2;
		if (snap_len > size - off)
			snap_len = size - off;
		memcpy(buf, data + off, snap_len);
		if ((flags & 1) && snap_len >= 4)
			el_put32(buf + snap_len - 4, el_crc32c(0, buf, snap_len - 4));
		put_file("snapshot", buf, snap_len);
		off += snap_len;
	}
	if ((flags & 4) && size - off >= 2) {
		split = el_get16(data + off);
		off += 2;
	}
	if ((flags & 8) && size - off >= 1)
		off = put_newest(data, size, off);
	size_t n = size - off;
	memcpy(buf, data + off, n);
	if (flags & 1)
		repair_records(buf, n);
	if (split < n) {
		put_file("wal-0000000000000001.log", buf, split);
		put_file("wal-0000000000000002.log", buf + split, n - split);
	} else {
		put_file("wal-0000000000000001.log", buf, n);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct seen a, b;
	if (!ready) {
		const char *base = getenv("FUZZ_POSIX_DIR");
		pt_tmpdir(base ? base : "/tmp", "fuzz-posix", dir, sizeof dir);
		el_log_set_level(EL_LOG_OFF);
		pt_io_nosync();
		ready = true;
	}
	if (size < 1 || size > 1 << 20)
		return 0;
	uint8_t *buf = malloc(size);
	pt_rmrf(dir);
	mkdir(dir, 0700);
	layout(data, size, buf);
	free(buf);
	/* a directory said to hold nothing recovers as an empty one (the
	 * daemon bootstraps over it): nothing refused, nothing loaded */
	const bool nothing = el_storage_holds_nothing(dir);
	int rc = open_load(&a);
	if (nothing && (rc != EL_OK || a.snap || a.count != 0 || a.hs.term != 0 ||
			a.hs.vote != 0 || a.hs.commit != 0))
		abort();
	if (rc == EL_OK) {
		unsigned long warns = el_log_count(EL_LOG_WARN);
		if (open_load(&b) != EL_OK || el_log_count(EL_LOG_WARN) != warns ||
		    a.count != b.count || a.hash != b.hash || a.next != b.next ||
		    memcmp(&a.hs, &b.hs, sizeof a.hs) != 0)
			abort(); /* a second recovery must change nothing */
	}
	return 0;
}
