/*
 * owner.c - whose data a data directory holds: DATA_DIR/owner names the
 * node that writes state there, and no other node starts on that state.
 *
 * Found by an outside tester: node 3's config started with --data-dir of
 * node 2's directory ran, and won an election as node 3 with node 2's
 * term, votes and log: one disk voting as two members, so a quorum could
 * be counted that never was. The data recorded no owner. etcd refuses a
 * member-ID mismatch; so does edgelockd now. Every start that may write
 * state (--bootstrap, --join, a restart, --force-new-cluster, restore)
 * records this node's id before it writes any, under the directory's
 * lock (el_d_owner_guard with record), and a start on a directory with
 * state that names another node is refused (check_start_mode, daemon.c,
 * before storage opens; --check-config says the same, main.c).
 *
 * A directory without state may hold another node's file (a --join that
 * never got the cluster's state, a wiped log): nothing of that node's
 * would run, so the file is rewritten. A directory with state and no file
 * is data of the release before this file: accepted as this node's (it was
 * started on it before) and recorded from then on.
 *
 * The file is one line, "node ID crc32c CHECK\n", CHECK the CRC-32C of
 * "node ID" in 8 lowercase hex digits, and nothing else: any other byte,
 * or a checksum that does not match, is damage, refused with a message
 * (a flipped digit could name another node). Written whole: a temp file
 * synced, renamed over the old one, the directory synced.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "el_crc32c.h"
#include "el_daemon.h"
#include "el_error.h"

#define OWNER_FILE "owner"
#define OWNER_LINE_MAX 40 /* "node 4294967295 crc32c 0123abcd\n" is 32 */
#define OWNER_PATH_MAX (EL_DCFG_PATH_MAX + sizeof OWNER_FILE + 1)

enum owner_read { OWNER_NONE, OWNER_READ, OWNER_DAMAGED, OWNER_UNREADABLE };

static void path_of(const char *dir, char *path, size_t cap)
{
	snprintf(path, cap, "%s/%s", dir, OWNER_FILE);
}

/* The file's one line for id, its length. */
static int owner_line(el_id_t id, char *line, size_t cap)
{
	char head[16];
	const int n = snprintf(head, sizeof head, "node %u", id);
	return snprintf(line, cap, "%s crc32c %08x\n", head, el_crc32c(0, head, (size_t)n));
}

/* The id path names, strictly: exactly the line owner_line writes for it. */
static enum owner_read load(const char *path, el_id_t *id)
{
	char text[OWNER_LINE_MAX + 1], line[OWNER_LINE_MAX];
	const int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? OWNER_NONE : OWNER_UNREADABLE;
	const ssize_t n = read(fd, text, sizeof text - 1); /* past OWNER_LINE_MAX: damaged */
	const int err = errno;
	close(fd);
	if (n < 0) {
		errno = err;
		return OWNER_UNREADABLE;
	}
	text[n] = '\0';
	if (strncmp(text, "node ", 5) != 0 || !isdigit((unsigned char)text[5]))
		return OWNER_DAMAGED;
	char *end;
	errno = 0;
	const unsigned long v = strtoul(text + 5, &end, 10);
	if (errno != 0 || v == 0 || v > UINT32_MAX)
		return OWNER_DAMAGED;
	*id = (el_id_t)v;
	const int len = owner_line(*id, line, sizeof line);
	return n == len && memcmp(text, line, (size_t)len) == 0 ? OWNER_READ : OWNER_DAMAGED;
}

int el_d_owner_check(const char *dir, el_id_t id, bool has_state, char *why, char *fix,
		     size_t cap)
{
	char path[OWNER_PATH_MAX];
	el_id_t owner = 0;
	path_of(dir, path, sizeof path);
	const enum owner_read r = has_state ? load(path, &owner) : OWNER_NONE;
	if (r == OWNER_NONE || (r == OWNER_READ && owner == id))
		return EL_OK;
	if (r == OWNER_READ) {
		snprintf(why, cap, "data_dir %s holds node %u's data (%s), not node %u's ([node] "
			 "id): refusing to start on it, as node %u would run on node %u's term, "
			 "votes and log", dir, owner, path, id, id, owner);
		snprintf(fix, cap, "node %u: point [node] data_dir (or --data-dir) at node %u's own "
			 "directory, and start this one only with node %u's config; to make it "
			 "node %u's instead, wipe it and start node %u with --join (docs/"
			 "operations.md, replacing a board)", id, id, owner, id, id);
	} else if (r == OWNER_DAMAGED) {
		snprintf(why, cap, "%s is damaged (not the one line \"node ID crc32c CHECKSUM\" "
			 "with its checksum): it names the node whose data data_dir %s holds, so "
			 "node %u does not start on it", path, dir, id);
		snprintf(fix, cap, "node %u: if data_dir %s is node %u's own (the directory its "
			 "config has always named), remove %s and start again: the start records "
			 "node %u in it", id, dir, id, path, id);
	} else {
		snprintf(why, cap, "cannot read %s: %s (it names the node whose data data_dir "
			 "%s holds)", path, strerror(errno), dir);
		snprintf(fix, cap, "node %u: make it readable by the user edgelockd runs as, "
			 "as the rest of data_dir", id);
	}
	return EL_EINVAL;
}

int el_d_owner_guard(const char *dir, el_id_t id, bool has_state, bool record)
{
	char why[1200], fix[1200], path[OWNER_PATH_MAX], line[OWNER_LINE_MAX];
	if (el_d_owner_check(dir, id, has_state, why, fix, sizeof why) != EL_OK) {
		el_log(EL_LOG_ERROR, "%s", why); /* two lines: one would lose its end */
		el_log(EL_LOG_ERROR, "%s", fix);
		return EL_EINVAL;
	}
	if (!record)
		return EL_OK;
	el_id_t owner = 0;
	path_of(dir, path, sizeof path);
	const enum owner_read r = load(path, &owner);
	if (r == OWNER_READ && owner == id)
		return EL_OK;
	if (r == OWNER_NONE && has_state) /* the previous release wrote none */
		el_log(EL_LOG_INFO, "data_dir %s has no %s file (data of an earlier release): "
		       "recording node %u as the node whose data it is", dir, OWNER_FILE, id);
	return el_d_replace_file(dir, path, line, (size_t)owner_line(id, line, sizeof line));
}
